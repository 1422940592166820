/* vmlab-bench: runs every benchmark of phases.def between phase markers. The console's
 * login shell starts it once the system has booted (rootfs/etc/profile.d/vmlab.sh). */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "phases.h"

enum {
#define PHASE(id, name, ops) P_##name = id, N_##name = ops,
#include "phases.def"
#undef PHASE
};

static void die(const char *what)
{
    perror(what);
    exit(1);
}

static void spawn_wait(char *const argv[], int quiet)
{
    pid_t pid = fork();
    if (pid < 0) {
        die("fork");
    }
    if (pid == 0) {
        if (quiet) {
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 1);
        }
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
}

/* A shell loop spawning /bin/echo (busybox, dynamically linked) N_echo_spawn times. The
 * phase includes the one shell's start, about one spawn's worth. */
static void echo_spawn(void)
{
    char loop[160];
    snprintf(loop, sizeof loop,
             "i=0; while [ $i -lt %d ]; do /bin/echo hello; i=$((i + 1)); done", N_echo_spawn);
    char *argv[] = { "/bin/sh", "-c", loop, NULL };
    mark(P_echo_spawn);
    spawn_wait(argv, 1);
    mark(P_echo_spawn | PHASE_END);
}

/* find (busybox) over the tree the rc scripts unpacked on the data file system: one
 * lstat per entry, a getdents loop per directory. */
static void find(void)
{
    char *argv[] = { "/usr/bin/find", "/data/tree", "-name", "no-such-file", NULL };
    mark(P_find);
    spawn_wait(argv, 0);
    mark(P_find | PHASE_END);
}

static void handler(int sig)
{
    (void)sig;
}

static void lmbench_simple(void)
{
    int null = open("/dev/null", O_WRONLY);
    int word = 0;
    mark(P_null_syscall);
    for (int i = 0; i < N_null_syscall; i++) {
        write(null, &word, sizeof word);
    }
    mark(P_null_syscall | PHASE_END);

    struct stat st;
    mark(P_stat);
    for (int i = 0; i < N_stat; i++) {
        stat("/bin/hello", &st);
    }
    mark(P_stat | PHASE_END);

    mark(P_fstat);
    for (int i = 0; i < N_fstat; i++) {
        fstat(null, &st);
    }
    mark(P_fstat | PHASE_END);

    mark(P_open_close);
    for (int i = 0; i < N_open_close; i++) {
        close(open("/bin/hello", O_RDONLY));
    }
    mark(P_open_close | PHASE_END);

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    mark(P_sig_install);
    for (int i = 0; i < N_sig_install; i++) {
        sigaction(SIGUSR1, &sa, NULL);
    }
    mark(P_sig_install | PHASE_END);
    close(null);
}

static void pipe_rtt(void)
{
    int ab[2], ba[2];
    if (pipe(ab) || pipe(ba)) {
        die("pipe");
    }
    pid_t pid = fork();
    int token = 0;
    if (pid == 0) {
        close(ab[1]); /* or the read below never sees end of file */
        close(ba[0]);
        while (read(ab[0], &token, sizeof token) == sizeof token) {
            write(ba[1], &token, sizeof token);
        }
        _exit(0);
    }
    close(ab[0]);
    close(ba[1]);
    mark(P_pipe_rtt);
    for (int i = 0; i < N_pipe_rtt; i++) {
        write(ab[1], &token, sizeof token);
        read(ba[0], &token, sizeof token);
    }
    mark(P_pipe_rtt | PHASE_END);
    close(ab[1]);
    waitpid(pid, NULL, 0);
    close(ba[0]);
}

static void forks(void)
{
    mark(P_fork_exit);
    for (int i = 0; i < N_fork_exit; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            _exit(0);
        }
        waitpid(pid, NULL, 0);
    }
    mark(P_fork_exit | PHASE_END);

    char *hello[] = { "/bin/hello", NULL };
    mark(P_fork_exec);
    for (int i = 0; i < N_fork_exec; i++) {
        spawn_wait(hello, 0);
    }
    mark(P_fork_exec | PHASE_END);

    char *sh[] = { "/bin/sh", "-c", "hello", NULL };
    mark(P_fork_sh);
    for (int i = 0; i < N_fork_sh; i++) {
        spawn_wait(sh, 0);
    }
    mark(P_fork_sh | PHASE_END);
}

/* Touches `kb` KiB of the process's own buffer, as lmbench's lat_ctx does per token. */
static void touch(volatile char *buf, int kb)
{
    for (int i = 0; i < kb * 1024; i += 64) {
        buf[i]++;
    }
}

/* lat_ctx: `procs` processes in a ring of pipes pass one token `rounds` times around. */
static void ctx(unsigned phase, int procs, int kb, int passes)
{
    static char buf[32 * 1024];
    int p[16][2];
    for (int i = 0; i < procs; i++) {
        if (pipe(p[i])) {
            die("pipe");
        }
    }
    pid_t kids[16];
    int rounds = passes / procs;
    for (int i = 1; i < procs; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int token;
            for (int r = 0; r < rounds; r++) {
                read(p[i - 1][0], &token, sizeof token);
                touch(buf, kb);
                write(p[i][1], &token, sizeof token);
            }
            _exit(0);
        }
    }
    int token = 0;
    touch(buf, kb);
    mark(phase);
    for (int r = 0; r < rounds; r++) {
        write(p[0][1], &token, sizeof token);
        read(p[procs - 1][0], &token, sizeof token);
        touch(buf, kb);
    }
    mark(phase | PHASE_END);
    for (int i = 1; i < procs; i++) {
        waitpid(kids[i], NULL, 0);
    }
    for (int i = 0; i < procs; i++) {
        close(p[i][0]);
        close(p[i][1]);
    }
}

int main(void)
{
    printf("vmlab e500 guest: benchmarks start\n");
    echo_spawn();
    find();
    lmbench_simple();
    printf("%s done\n", "lmbench_simple");
    fflush(stdout);
    pipe_rtt();
    printf("%s done\n", "pipe_rtt");
    fflush(stdout);
    forks();
    printf("%s done\n", "forks");
    fflush(stdout);
    ctx(P_ctx_2p_0k, 2, 0, N_ctx_2p_0k);
    ctx(P_ctx_2p_16k, 2, 16, N_ctx_2p_16k);
    ctx(P_ctx_2p_32k, 2, 32, N_ctx_2p_32k);
    ctx(P_ctx_8p_0k, 8, 0, N_ctx_8p_0k);
    ctx(P_ctx_8p_16k, 8, 16, N_ctx_8p_16k);
    ctx(P_ctx_8p_32k, 8, 32, N_ctx_8p_32k);
    ctx(P_ctx_16p_0k, 16, 0, N_ctx_16p_0k);
    ctx(P_ctx_16p_16k, 16, 16, N_ctx_16p_16k);
    ctx(P_ctx_16p_32k, 16, 32, N_ctx_16p_32k);
    printf("vmlab e500 guest: benchmarks done\n");
    fflush(stdout);
    return 0;
}
