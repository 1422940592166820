/*
 * Random updates over a table (GUPS-like: half loads, half read-modify-writes), with a 1 MiB
 * allocation made, touched and freed every 2^20 updates (mmap and munmap through malloc), for
 * validating sampled recordings (apps/sampling/validate.sh).
 *
 * usage: gups-churn TABLE_MIB UPDATES
 */
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
int main(int argc, char **argv) {
    size_t n = (argc > 1 ? atol(argv[1]) : 64) << 20;
    long iters = argc > 2 ? atol(argv[2]) : 5000000;
    uint64_t *a = malloc(n);
    size_t words = n / 8;
    uint64_t x = 88172645463325252ull, s = 0;
    for (long i = 0; i < iters; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        size_t j = x % words;
        if (i & 1) a[j] += i; else s += a[j];
        if ((i & 0xfffff) == 0) { void *p = malloc(1 << 20); ((char*)p)[0]=1; free(p); }
    }
    printf("%lu\n", (unsigned long)s);
    return 0;
}
