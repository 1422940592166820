/*
 * A program whose page tables change in every way the kernel model follows, between many
 * repeated references, for the sampled-recording test (crates/vmlab-cli/tests/record.rs).
 *
 * usage: churn ROUNDS
 *
 * Maps 256 pages and, each round, sweeps them with loads and stores (many references per page,
 * so a sampled recording skips most); between rounds it drops pages (MADV_DONTNEED), unmaps
 * and maps again, write-protects and unprotects, grows and shrinks the heap, and in the
 * middle round forks a child that reads and writes some pages (copy-on-write) and exits. A
 * thread sweeps a region of its own while the first round runs.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define PAGES 256

static void sweep(volatile uint64_t *p, int pages, int passes, uint64_t seed)
{
    for (int pass = 0; pass < passes; pass++) {
        for (int i = 0; i < pages * 8; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (seed >> 33) % ((size_t)pages * PAGE / 8);
            if (seed & (1ull << 20)) {
                p[at] += 1;
            } else {
                (void)p[at];
            }
        }
    }
}

static void *thread_main(void *region)
{
    sweep(region, 32, 4, 7);
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 6;
    volatile uint64_t *p = mmap(NULL, PAGES * PAGE, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void *own = mmap(NULL, 32 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || own == MAP_FAILED) {
        return 3;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, thread_main, own) != 0) {
        return 4;
    }
    for (int round = 0; round < rounds; round++) {
        sweep(p, PAGES, 4, (uint64_t)round);
        if (round == 0) {
            pthread_join(thread, NULL);
        }
        switch (round % 4) {
        case 0:
            madvise((void *)(p + 16 * PAGE / 8), 64 * PAGE, MADV_DONTNEED);
            break;
        case 1:
            munmap((void *)(p + 128 * PAGE / 8), 64 * PAGE);
            if (mmap((void *)(p + 128 * PAGE / 8), 64 * PAGE, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
                return 5;
            }
            break;
        case 2:
            mprotect((void *)p, 32 * PAGE, PROT_READ);
            sweep(p, 0, 1, 0);
            mprotect((void *)p, 32 * PAGE, PROT_READ | PROT_WRITE);
            break;
        default: {
            char *top = sbrk(0);
            if (sbrk(64 * PAGE) == (void *)-1) {
                return 6;
            }
            for (int i = 0; i < 64; i++) {
                top[i * PAGE] = 1;
            }
            sbrk(-64 * PAGE);
            break;
        }
        }
        if (round == rounds / 2) {
            pid_t child = fork();
            if (child == 0) {
                sweep(p, PAGES / 2, 2, 99);
                _exit(0);
            }
            waitpid(child, NULL, 0);
        }
    }
    return 0;
}
