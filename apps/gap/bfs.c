/*
 * GAP-style breadth-first search on a synthetic Kronecker graph: a small C implementation
 * of what the GAP Benchmark Suite's `bfs -g SCALE` does (Beamer, Asanovic and Patterson,
 * "The GAP Benchmark Suite", 2015), written from its description for recording under QEMU
 * (apps/record.sh):
 *
 * - the graph: Graph500's Kronecker (R-MAT) generator, 2^SCALE vertices and DEGREE x 2^SCALE
 *   undirected edges, initiator probabilities A = 0.57, B = 0.19, C = 0.19, vertex numbers
 *   randomly permuted (as GAP's generator does);
 * - the build: a CSR graph of both directions of every edge (GAP's builder also drops
 *   self-loops and duplicate edges, which needs a sort of every neighbour list; this one drops
 *   self-loops only: duplicates cost a few percent of edges and change no access pattern);
 * - the kernel: GAP's direction-optimizing BFS: top-down steps over a queue while the
 *   frontier is small, bottom-up steps over a bitmap of the frontier once the frontier's edges
 *   exceed the unexplored edges / ALPHA (15), back to top-down once the frontier has fewer
 *   than n / BETA (18) vertices; the parent array is the result, from TRIALS random sources
 *   of non-zero degree, as GAP's `-n` trials.
 *
 * Single-threaded (GAP's kernels use OpenMP; recording one thread keeps the trace's
 * interleaving simple). Prints the vertices reached per trial.
 *
 * usage: bfs SCALE DEGREE TRIALS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static double uniform(void)
{
    return (double)(next() >> 11) / (double)(1ull << 53);
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 20;
    long degree = argc > 2 ? atol(argv[2]) : 16;
    int trials = argc > 3 ? atoi(argv[3]) : 4;
    if (scale < 1 || scale > 30 || degree < 1 || trials < 1) {
        fprintf(stderr, "usage: bfs SCALE DEGREE TRIALS\n");
        return 2;
    }
    int64_t n = 1ll << scale, m = degree * n;
    /* Kronecker edge list, then a random permutation of the vertex numbers. */
    int32_t *src = malloc(m * sizeof *src), *dst = malloc(m * sizeof *dst);
    int32_t *perm = malloc(n * sizeof *perm);
    if (!src || !dst || !perm) {
        fprintf(stderr, "bfs: out of memory\n");
        return 1;
    }
    const double a = 0.57, b = 0.19, c = 0.19;
    for (int64_t e = 0; e < m; e++) {
        int64_t u = 0, v = 0;
        for (int bit = 0; bit < scale; bit++) {
            double r = uniform();
            int ub = r > a + b, vb = (r > a && r <= a + b) || r > a + b + c;
            u = 2 * u + ub;
            v = 2 * v + vb;
        }
        src[e] = (int32_t)u;
        dst[e] = (int32_t)v;
    }
    for (int64_t i = 0; i < n; i++) {
        perm[i] = (int32_t)i;
    }
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(next() % (uint64_t)(i + 1));
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    /* CSR of both directions. */
    int64_t *offset = calloc(n + 1, sizeof *offset);
    for (int64_t e = 0; e < m; e++) {
        src[e] = perm[src[e]];
        dst[e] = perm[dst[e]];
        if (src[e] != dst[e]) {
            offset[src[e] + 1]++;
            offset[dst[e] + 1]++;
        }
    }
    free(perm);
    for (int64_t i = 0; i < n; i++) {
        offset[i + 1] += offset[i];
    }
    int64_t edges = offset[n];
    int32_t *adj = malloc(edges * sizeof *adj);
    int64_t *fill = malloc(n * sizeof *fill);
    memcpy(fill, offset, n * sizeof *fill);
    for (int64_t e = 0; e < m; e++) {
        if (src[e] != dst[e]) {
            adj[fill[src[e]]++] = dst[e];
            adj[fill[dst[e]]++] = src[e];
        }
    }
    free(fill);
    free(src);
    free(dst);

    int64_t *parent = malloc(n * sizeof *parent);
    int32_t *queue = malloc(n * sizeof *queue);
    uint64_t *front = malloc((n / 64 + 1) * sizeof *front);
    uint64_t *nextf = malloc((n / 64 + 1) * sizeof *nextf);
    for (int t = 0; t < trials; t++) {
        int64_t source;
        do {
            source = (int64_t)(next() % (uint64_t)n);
        } while (offset[source + 1] == offset[source]);
        for (int64_t i = 0; i < n; i++) {
            /* GAP's convention: -degree for unvisited, so bottom-up can stop early. */
            parent[i] = offset[i + 1] == offset[i] ? -1 : -(offset[i + 1] - offset[i]);
        }
        parent[source] = source;
        int64_t head = 0, tail = 0, reached = 1;
        queue[tail++] = (int32_t)source;
        int64_t edges_to_check = edges, scout = offset[source + 1] - offset[source];
        while (head < tail) {
            if (scout > edges_to_check / 15) {
                /* Bottom-up: queue to bitmap, steps until the frontier shrinks. */
                memset(front, 0, (n / 64 + 1) * sizeof *front);
                for (int64_t q = head; q < tail; q++) {
                    front[queue[q] / 64] |= 1ull << (queue[q] % 64);
                }
                int64_t awake = tail - head, old;
                do {
                    old = awake;
                    awake = 0;
                    memset(nextf, 0, (n / 64 + 1) * sizeof *nextf);
                    for (int64_t u = 0; u < n; u++) {
                        if (parent[u] >= 0) {
                            continue;
                        }
                        for (int64_t k = offset[u]; k < offset[u + 1]; k++) {
                            int32_t v = adj[k];
                            if (front[v / 64] & (1ull << (v % 64))) {
                                parent[u] = v;
                                nextf[u / 64] |= 1ull << (u % 64);
                                awake++;
                                break;
                            }
                        }
                    }
                    uint64_t *swap = front;
                    front = nextf;
                    nextf = swap;
                    reached += awake;
                } while (awake >= old || awake > n / 18);
                /* Bitmap back to queue. */
                head = tail = 0;
                scout = 0;
                for (int64_t u = 0; u < n; u++) {
                    if (front[u / 64] & (1ull << (u % 64))) {
                        queue[tail++] = (int32_t)u;
                        scout += offset[u + 1] - offset[u];
                    }
                }
            } else {
                /* Top-down: one level from the queue. */
                int64_t end = tail;
                scout = 0;
                for (; head < end; head++) {
                    int32_t u = queue[head];
                    for (int64_t k = offset[u]; k < offset[u + 1]; k++) {
                        int32_t v = adj[k];
                        int64_t cur = parent[v];
                        if (cur < 0) {
                            parent[v] = u;
                            queue[tail++] = v;
                            scout += -cur;
                            edges_to_check += cur;
                            reached++;
                        }
                    }
                }
            }
        }
        printf("trial %d: source %lld, %lld of %lld vertices reached\n", t, (long long)source,
               (long long)reached, (long long)n);
    }
    return 0;
}
