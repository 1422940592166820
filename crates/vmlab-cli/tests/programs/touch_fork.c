/*
 * A program with known memory behaviour, for the recorder and replay tests
 * (crates/vmlab-cli/tests/record.rs).
 *
 * usage: touch_fork NN MM (two digits each, so every run has the same argument layout)
 *
 * Maps 64 pages of anonymous memory at 0x200000000000, writes one byte to each of the first NN
 * pages, forks; the child writes one byte to each of the first MM pages and exits; the parent
 * waits, unmaps the upper 32 pages and reads one byte from each of the lower 32, then exits.
 */
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BASE ((char *)0x200000000000ul)
#define PAGE 4096
#define PAGES 64

int main(int argc, char **argv)
{
    if (argc != 3) {
        return 2;
    }
    int n = atoi(argv[1]), m = atoi(argv[2]);
    volatile char *p = mmap(BASE, PAGES * PAGE, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (p != (volatile char *)BASE) {
        return 3;
    }
    for (int i = 0; i < n; i++) {
        p[i * PAGE] = 1;
    }
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < m; i++) {
            p[i * PAGE] = 2;
        }
        _exit(0);
    }
    waitpid(child, NULL, 0);
    munmap((char *)p + PAGES / 2 * PAGE, PAGES / 2 * PAGE);
    int sum = 0;
    for (int i = 0; i < PAGES / 2; i++) {
        sum += p[i * PAGE];
    }
    return sum == n ? 0 : 4;
}
