/*
 * XSBench-style cross-section lookups (the HPC proxy's unionized-grid-free "nuclide grid"
 * variant, written from its description: for each lookup, a random energy and material; for
 * each nuclide of the material, a binary search of that nuclide's energy grid and an
 * interpolation of its five cross sections). Used to validate sampled recordings
 * (apps/sampling/validate.sh).
 *
 * usage: xsbench NUCLIDES GRIDPOINTS LOOKUPS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    double energy, total, elastic, absorption, fission, nu_fission;
} point;

static uint64_t state = 0x9E3779B97F4A7C15ull;
static double uniform(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(state >> 11) / (double)(1ull << 53);
}

static int by_energy(const void *a, const void *b)
{
    double x = ((const point *)a)->energy, y = ((const point *)b)->energy;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int nuclides = argc > 1 ? atoi(argv[1]) : 68;
    long points = argc > 2 ? atol(argv[2]) : 2000;
    long lookups = argc > 3 ? atol(argv[3]) : 100000;
    point **grid = malloc(nuclides * sizeof *grid);
    for (int n = 0; n < nuclides; n++) {
        grid[n] = malloc(points * sizeof **grid);
        for (long i = 0; i < points; i++) {
            point *p = &grid[n][i];
            p->energy = uniform();
            p->total = uniform();
            p->elastic = uniform();
            p->absorption = uniform();
            p->fission = uniform();
            p->nu_fission = uniform();
        }
        qsort(grid[n], points, sizeof **grid, by_energy);
    }
    /* Materials: 12, the first (fuel) with many nuclides, the rest with few. */
    int materials = 12, *count = malloc(materials * sizeof *count);
    int **members = malloc(materials * sizeof *members);
    for (int m = 0; m < materials; m++) {
        count[m] = m == 0 ? nuclides / 2 : 1 + nuclides / 20;
        members[m] = malloc(count[m] * sizeof **members);
        for (int k = 0; k < count[m]; k++) {
            members[m][k] = (int)(uniform() * nuclides);
        }
    }
    double checksum = 0;
    for (long l = 0; l < lookups; l++) {
        double e = uniform();
        int m = uniform() < 0.5 ? 0 : 1 + (int)(uniform() * (materials - 1));
        double xs[5] = { 0 };
        for (int k = 0; k < count[m]; k++) {
            const point *g = grid[members[m][k]];
            long lo = 0, hi = points - 1;
            while (hi - lo > 1) {
                long mid = (lo + hi) / 2;
                if (g[mid].energy > e) {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            double f = (g[hi].energy - e) / (g[hi].energy - g[lo].energy + 1e-300);
            xs[0] += g[hi].total - f * (g[hi].total - g[lo].total);
            xs[1] += g[hi].elastic - f * (g[hi].elastic - g[lo].elastic);
            xs[2] += g[hi].absorption - f * (g[hi].absorption - g[lo].absorption);
            xs[3] += g[hi].fission - f * (g[hi].fission - g[lo].fission);
            xs[4] += g[hi].nu_fission - f * (g[hi].nu_fission - g[lo].nu_fission);
        }
        checksum += xs[0] + xs[1] + xs[2] + xs[3] + xs[4];
    }
    printf("%.6f\n", checksum);
    return 0;
}
