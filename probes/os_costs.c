/*
 * os_costs.c - measure per-operation costs of the running Linux kernel.
 *
 * Part of vmlab's probes/ (see probes/README.md).  Prints one JSON object on
 * stdout.  Every measurement is taken pinned to one CPU, repeated, and
 * reported as median + min + repetition count, timed with
 * clock_gettime(CLOCK_MONOTONIC).
 *
 * Usage: os_costs [--exec-bin PATH] [--exec-kind TEXT] [--compiler TEXT]
 *                 [--cpu N]
 *
 * C11 + POSIX/Linux system calls only (libc, no other libraries).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define KIB 1024UL
#define MIB (1024UL * 1024UL)

/* ------------------------------------------------------------------ */
/* small helpers                                                        */
/* ------------------------------------------------------------------ */

static void die(const char *what)
{
    fprintf(stderr, "os_costs: %s: %s\n", what, strerror(errno));
    exit(1);
}

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Keep the compiler from dropping or merging stores into memory. */
static inline void clobber(void) { __asm__ __volatile__("" ::: "memory"); }

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct stat_result {
    double median;
    double min;
    int reps;
};

/* Sorts v in place. */
static struct stat_result summarize(double *v, int n)
{
    struct stat_result r;
    qsort(v, (size_t)n, sizeof v[0], cmp_double);
    r.min = v[0];
    r.median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    r.reps = n;
    return r;
}

/* Anonymous private mapping with transparent huge pages disabled. */
static char *map_anon(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        die("mmap");
    if (madvise(p, len, MADV_NOHUGEPAGE) != 0)
        die("madvise(MADV_NOHUGEPAGE)");
    return p;
}

static void touch_pages(char *p, size_t len)
{
    volatile char *vp = p;
    for (size_t off = 0; off < len; off += PAGE)
        vp[off] = 1;
}

static long rss_kib(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * (long)(sysconf(_SC_PAGESIZE) / 1024);
}

static int vma_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return -1;
    int n = 0, ch, prev = '\n';
    while ((ch = fgetc(f)) != EOF) {
        if (ch == '\n')
            n++;
        prev = ch;
    }
    if (prev != '\n')
        n++;
    fclose(f);
    return n;
}

static void wait_child(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR)
            die("waitpid");
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "os_costs: child %d failed (status 0x%x)\n", (int)pid, st);
        exit(1);
    }
}

static void write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            die("write");
        }
        p += w;
        n -= (size_t)w;
    }
}

static void read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            die("read");
        }
        if (r == 0) {
            fprintf(stderr, "os_costs: unexpected EOF on pipe\n");
            exit(1);
        }
        p += r;
        n -= (size_t)r;
    }
}

/* ------------------------------------------------------------------ */
/* JSON output                                                          */
/* ------------------------------------------------------------------ */

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c == '\n')
            fputs("\\n", stdout);
        else if (c == '\t')
            fputs("\\t", stdout);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_stat(const char *indent, struct stat_result r, const char *unit)
{
    printf("%s\"unit\": ", indent);
    json_str(unit);
    printf(",\n%s\"median\": %.4g,\n%s\"min\": %.4g,\n%s\"reps\": %d",
           indent, r.median, indent, r.min, indent, r.reps);
}

/* One measured quantity as a JSON member: its statistics and where they come from.
 * `last` omits the trailing comma. */
static void json_measure(const char *key, struct stat_result r, const char *unit,
                         const char *source, int last)
{
    printf("  \"%s\": {\n", key);
    json_stat("    ", r, unit);
    printf(",\n    \"source\": ");
    json_str(source);
    printf("\n  }%s\n", last ? "" : ",");
}

/* ------------------------------------------------------------------ */
/* measurements                                                         */
/* ------------------------------------------------------------------ */

/* 0. timer overhead: back-to-back clock_gettime pairs */
static struct stat_result m_timer(void)
{
    enum { REPS = 15, N = 200000 };
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < N; i++)
            (void)now_ns();
        v[r] = (double)(now_ns() - t0) / N;
    }
    return summarize(v, REPS);
}

/* 1. first-touch anonymous page fault, per 4 KiB page */
#define PF_REGION (64 * MIB)
static struct stat_result m_page_fault(void)
{
    enum { REPS = 15 };
    double v[REPS];
    size_t pages = PF_REGION / PAGE;
    for (int r = 0; r < REPS; r++) {
        char *p = map_anon(PF_REGION);
        uint64_t t0 = now_ns();
        touch_pages(p, PF_REGION);
        uint64_t t1 = now_ns();
        v[r] = (double)(t1 - t0) / (double)pages;
        if (munmap(p, PF_REGION) != 0)
            die("munmap");
    }
    return summarize(v, REPS);
}

/* 2. memset of one already-mapped, warm 4 KiB page, looping over buf_len */
static struct stat_result m_clear_page(size_t buf_len)
{
    enum { REPS = 15 };
    double v[REPS];
    size_t pages = buf_len / PAGE;
    char *p = map_anon(buf_len);
    memset(p, 0xa5, buf_len); /* fault everything in */
    for (size_t i = 0; i < pages; i++) { /* warm-up pass, same shape */
        memset(p + i * PAGE, 0, PAGE);
        clobber();
    }
    for (int r = 0; r < REPS; r++) {
        int byte = r & 1; /* alternate 0/1 so no pass is a no-op rewrite */
        uint64_t t0 = now_ns();
        for (size_t i = 0; i < pages; i++) {
            memset(p + i * PAGE, byte, PAGE);
            clobber();
        }
        uint64_t t1 = now_ns();
        v[r] = (double)(t1 - t0) / (double)pages;
    }
    munmap(p, buf_len);
    return summarize(v, REPS);
}

/* 3. fork + child _exit(0) + waitpid, as a function of resident size */
static const size_t FORK_SIZES[] = {4 * KIB, 64 * KIB, 1 * MIB,
                                    16 * MIB, 64 * MIB, 256 * MIB};
#define N_FORK_SIZES (sizeof FORK_SIZES / sizeof FORK_SIZES[0])

struct fork_point {
    size_t bytes;
    long rss_kib;
    struct stat_result us;
};

/* Samples are taken in FORK_ROUNDS rounds; each round maps+touches every
 * size in turn, forks reps_per_round times and unmaps, so slow drift of the
 * (shared, virtualized) host hits all sizes alike instead of biasing one. */
enum { FORK_ROUNDS = 5, FORK_MAXREPS = 200 };

static int fork_reps_per_round(size_t bytes)
{
    return bytes >= 256 * MIB ? 6 : bytes >= 64 * MIB ? 10 : bytes >= 16 * MIB ? 20 : 40;
}

static void m_fork_exit_all(struct fork_point *fp)
{
    static double v[N_FORK_SIZES][FORK_MAXREPS];
    int nv[N_FORK_SIZES] = {0};
    for (int round = 0; round < FORK_ROUNDS; round++) {
        for (size_t s = 0; s < N_FORK_SIZES; s++) {
            size_t bytes = FORK_SIZES[s];
            char *p = map_anon(bytes);
            touch_pages(p, bytes);
            if (round == 0) {
                fp[s].bytes = bytes;
                fp[s].rss_kib = rss_kib();
            }
            for (int r = 0; r < fork_reps_per_round(bytes); r++) {
                uint64_t t0 = now_ns();
                pid_t pid = fork();
                if (pid < 0)
                    die("fork");
                if (pid == 0)
                    _exit(0);
                wait_child(pid);
                uint64_t t1 = now_ns();
                v[s][nv[s]++] = (double)(t1 - t0) / 1000.0;
            }
            if (munmap(p, bytes) != 0)
                die("munmap");
        }
    }
    for (size_t s = 0; s < N_FORK_SIZES; s++)
        fp[s].us = summarize(v[s], nv[s]);
}

/* 4. copy-on-write fault in the child, per 4 KiB page, 64 MiB region */
#define COW_REGION (64 * MIB)
static struct stat_result m_cow_fault(void)
{
    enum { REPS = 10 };
    double v[REPS];
    size_t pages = COW_REGION / PAGE;
    char *p = map_anon(COW_REGION);
    touch_pages(p, COW_REGION);
    for (int r = 0; r < REPS; r++) {
        int fds[2];
        if (pipe(fds) != 0)
            die("pipe");
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            close(fds[0]);
            volatile char *vp = p;
            uint64_t t0 = now_ns();
            for (size_t off = 0; off < COW_REGION; off += PAGE)
                vp[off] = 2;
            uint64_t t1 = now_ns();
            double per_page = (double)(t1 - t0) / (double)pages;
            write_full(fds[1], &per_page, sizeof per_page);
            _exit(0);
        }
        close(fds[1]);
        read_full(fds[0], &v[r], sizeof v[r]);
        close(fds[0]);
        wait_child(pid);
    }
    munmap(p, COW_REGION);
    return summarize(v, REPS);
}

/* Minor page faults one side of a fork + waitpid round takes, from getrusage(who) around the
 * round, for a child that calls _exit(0) at once:
 * - RUSAGE_CHILDREN: the child's, for all of its life (so its exit path counts too);
 * - RUSAGE_SELF: the parent's, its own writes after fork to pages fork write-protected (its
 *   stack, libc's data). */
static struct stat_result m_fork_faults(int who)
{
    enum { REPS = 15 };
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        struct rusage before, after;
        getrusage(who, &before);
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0)
            _exit(0);
        wait_child(pid);
        getrusage(who, &after);
        v[r] = (double)(after.ru_minflt - before.ru_minflt);
    }
    return summarize(v, REPS);
}

/* 5. fork + execve(bin) + waitpid */
static struct stat_result m_fork_exec(const char *bin, int reps)
{
    double *v = malloc(sizeof(double) * (size_t)reps);
    if (!v)
        die("malloc");
    char *const argv[] = {(char *)bin, NULL};
    char *const envp[] = {NULL};
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = now_ns();
        pid_t pid = fork();
        if (pid < 0)
            die("fork");
        if (pid == 0) {
            execve(bin, argv, envp);
            _exit(127);
        }
        wait_child(pid);
        uint64_t t1 = now_ns();
        v[r] = (double)(t1 - t0) / 1000.0;
    }
    struct stat_result s = summarize(v, reps);
    free(v);
    return s;
}

/* 6. mmap 1 MiB anonymous + touch each page + munmap, per iteration */
static struct stat_result m_mmap_munmap(void)
{
    enum { REPS = 300 };
    const size_t len = 1 * MIB;
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            die("mmap");
        touch_pages(p, len);
        if (munmap(p, len) != 0)
            die("munmap");
        uint64_t t1 = now_ns();
        v[r] = (double)(t1 - t0) / 1000.0;
    }
    return summarize(v, REPS);
}

/* 7. context switch: token ping-pong between two processes on one CPU */
enum { CTX_ROUNDS = 10000 };

static struct stat_result m_ctxsw(void)
{
    enum { REPS = 15 };
    double v[REPS];
    int a[2], b[2]; /* a: parent -> child, b: child -> parent */
    if (pipe(a) != 0 || pipe(b) != 0)
        die("pipe");
    pid_t pid = fork(); /* inherits the single-CPU affinity */
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(a[1]);
        close(b[0]);
        char c;
        for (;;) {
            ssize_t n = read(a[0], &c, 1);
            if (n <= 0)
                _exit(n == 0 ? 0 : 1);
            if (write(b[1], &c, 1) != 1)
                _exit(1);
        }
    }
    close(a[0]);
    close(b[1]);
    char c = 'x';
    for (int i = 0; i < 1000; i++) { /* warm-up */
        write_full(a[1], &c, 1);
        read_full(b[0], &c, 1);
    }
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < CTX_ROUNDS; i++) {
            write_full(a[1], &c, 1);
            read_full(b[0], &c, 1);
        }
        uint64_t t1 = now_ns();
        /* one round trip = two switches */
        v[r] = (double)(t1 - t0) / 1000.0 / (2.0 * CTX_ROUNDS);
    }
    close(a[1]); /* child sees EOF and exits */
    wait_child(pid);
    close(b[0]);
    return summarize(v, REPS);
}

/* 7b. the pipe overhead inside ctxsw, without switching: one process
 * writes one byte to a pipe and reads it back (lmbench-style overhead). */
static struct stat_result m_pipe_overhead(void)
{
    enum { REPS = 15 };
    double v[REPS];
    int p[2];
    if (pipe(p) != 0)
        die("pipe");
    char c = 'x';
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < CTX_ROUNDS; i++) {
            write_full(p[1], &c, 1);
            read_full(p[0], &c, 1);
        }
        uint64_t t1 = now_ns();
        /* one write+read pair per switch, as in the ctxsw loop */
        v[r] = (double)(t1 - t0) / 1000.0 / CTX_ROUNDS;
    }
    close(p[0]);
    close(p[1]);
    return summarize(v, REPS);
}

/* 8. getppid() system call */
static struct stat_result m_syscall(void)
{
    enum { REPS = 15, N = 1000000 };
    double v[REPS];
    for (int r = 0; r < REPS; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < N; i++)
            (void)syscall(SYS_getppid); /* raw syscall: no libc caching */
        uint64_t t1 = now_ns();
        v[r] = (double)(t1 - t0) / N;
    }
    return summarize(v, REPS);
}

/* ------------------------------------------------------------------ */
/* machine facts                                                        */
/* ------------------------------------------------------------------ */

static void cpu_model(char *out, size_t n)
{
    snprintf(out, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = 0;
                snprintf(out, n, "%s", colon);
            }
            break;
        }
    }
    fclose(f);
}

static int cpu_has_flag(const char *flag)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return -1;
    char line[8192];
    int found = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) == 0) {
            for (char *tok = strtok(strchr(line, ':') + 1, " \t\n"); tok;
                 tok = strtok(NULL, " \t\n"))
                if (strcmp(tok, flag) == 0)
                    found = 1;
            break;
        }
    }
    fclose(f);
    return found;
}

static void read_line_file(const char *path, char *out, size_t n)
{
    snprintf(out, n, "unavailable");
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    if (fgets(out, (int)n, f))
        out[strcspn(out, "\n")] = 0;
    fclose(f);
}

/* steal ticks (USER_HZ) of one CPU from /proc/stat; -1 if unavailable */
static long long steal_ticks(int cpu)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[512], name[32];
    snprintf(name, sizeof name, "cpu%d ", cpu);
    long long v[8], res = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, name, strlen(name)) == 0) {
            if (sscanf(line + strlen(name), "%lld %lld %lld %lld %lld %lld %lld %lld",
                       &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) == 8)
                res = v[7];
            break;
        }
    }
    fclose(f);
    return res;
}

/* ------------------------------------------------------------------ */

static int pick_cpu(int requested)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0)
        die("sched_getaffinity");
    int cpu = requested;
    if (cpu < 0) { /* default: highest allowed CPU (away from CPU 0 IRQs) */
        for (int i = CPU_SETSIZE - 1; i >= 0; i--)
            if (CPU_ISSET(i, &set)) {
                cpu = i;
                break;
            }
    }
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0)
        die("sched_setaffinity");
    return cpu;
}

int main(int argc, char **argv)
{
    const char *exec_bin = "/bin/true";
    const char *exec_kind = "fallback: /bin/true (dynamically linked)";
    const char *compiler = "unknown";
    const char *linkage = "dynamically linked";
    int cpu_req = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--exec-bin") == 0)
            exec_bin = argv[i + 1];
        else if (strcmp(argv[i], "--exec-kind") == 0)
            exec_kind = argv[i + 1];
        else if (strcmp(argv[i], "--compiler") == 0)
            compiler = argv[i + 1];
        else if (strcmp(argv[i], "--linkage") == 0)
            linkage = argv[i + 1];
        else if (strcmp(argv[i], "--cpu") == 0)
            cpu_req = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "os_costs: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (sysconf(_SC_PAGESIZE) != (long)PAGE) {
        fprintf(stderr, "os_costs: page size is not 4 KiB\n");
        return 1;
    }
    int cpu = pick_cpu(cpu_req);
    uint64_t run_t0 = now_ns();
    long long steal0 = steal_ticks(cpu);

    /* --- measurements (order: cheap first, big RSS last) --- */
    fprintf(stderr, "os_costs: timer\n");
    struct stat_result timer = m_timer();
    fprintf(stderr, "os_costs: syscall\n");
    struct stat_result sys = m_syscall();
    struct stat_result child_faults = m_fork_faults(RUSAGE_CHILDREN);
    struct stat_result parent_faults = m_fork_faults(RUSAGE_SELF);
    fprintf(stderr, "os_costs: page fault\n");
    struct stat_result pf = m_page_fault();
    fprintf(stderr, "os_costs: clear page\n");
    struct stat_result clr = m_clear_page(16 * MIB);
    struct stat_result clr_big = m_clear_page(128 * MIB);
    fprintf(stderr, "os_costs: mmap/munmap\n");
    struct stat_result mm = m_mmap_munmap();
    fprintf(stderr, "os_costs: ctxsw\n");
    struct stat_result cs = m_ctxsw();
    struct stat_result pipe_ovh = m_pipe_overhead();
    fprintf(stderr, "os_costs: fork+exec\n");
    struct stat_result fe = m_fork_exec(exec_bin, 200);
    int have_dyn_true = access("/bin/true", X_OK) == 0 &&
                        strcmp(exec_bin, "/bin/true") != 0;
    struct stat_result fe_dyn = {0, 0, 0};
    if (have_dyn_true)
        fe_dyn = m_fork_exec("/bin/true", 100);
    fprintf(stderr, "os_costs: fork+exit\n");
    long base_rss = rss_kib();
    int base_vmas = vma_count(); /* region adds one more VMA while mapped */
    struct fork_point fork_pts[N_FORK_SIZES];
    m_fork_exit_all(fork_pts);
    fprintf(stderr, "os_costs: cow fault\n");
    struct stat_result cow = m_cow_fault();
    double run_s = (double)(now_ns() - run_t0) / 1e9;
    long long steal1 = steal_ticks(cpu);
    long long steal = (steal0 >= 0 && steal1 >= 0) ? steal1 - steal0 : -1;

    /* least squares: median_us = base_us + slope * pages */
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    int n = (int)N_FORK_SIZES;
    for (int i = 0; i < n; i++) {
        double x = (double)(fork_pts[i].bytes / PAGE), y = fork_pts[i].us.median;
        sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y;
    }
    double slope_us = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    double base_us = (sy - slope_us * sx) / n;
    double ss_tot = syy - sy * sy / n, ss_res = 0;
    for (int i = 0; i < n; i++) {
        double x = (double)(fork_pts[i].bytes / PAGE);
        double e = fork_pts[i].us.median - (base_us + slope_us * x);
        ss_res += e * e;
    }
    double r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;

    /* weighted least squares, weights 1/y^2 (minimizes relative error), so
     * the small-RSS points pin the base and the large ones the slope */
    double w_s = 0, w_x = 0, w_y = 0, w_xx = 0, w_xy = 0;
    for (int i = 0; i < n; i++) {
        double x = (double)(fork_pts[i].bytes / PAGE), y = fork_pts[i].us.median;
        double w = 1.0 / (y * y);
        w_s += w; w_x += w * x; w_y += w * y; w_xx += w * x * x; w_xy += w * x * y;
    }
    double rslope_us = (w_s * w_xy - w_x * w_y) / (w_s * w_xx - w_x * w_x);
    double rbase_us = (w_y - rslope_us * w_x) / w_s;
    double max_rel_err = 0;
    for (int i = 0; i < n; i++) {
        double x = (double)(fork_pts[i].bytes / PAGE), y = fork_pts[i].us.median;
        double e = (rbase_us + rslope_us * x - y) / y;
        if (e < 0) e = -e;
        if (e > max_rel_err) max_rel_err = e;
    }

    /* --- machine facts --- */
    struct utsname u;
    uname(&u);
    char model[256], thp[256], thp_defrag[256], date[64];
    cpu_model(model, sizeof model);
    read_line_file("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
    read_line_file("/sys/kernel/mm/transparent_hugepage/defrag", thp_defrag,
                   sizeof thp_defrag);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int hv = cpu_has_flag("hypervisor");

    const char *I = "    ";
    printf("{\n");
    printf("  \"probe\": \"vmlab probes/os_costs.c\",\n");
    printf("  \"machine\": {\n");
    printf("    \"uname_r\": "); json_str(u.release); printf(",\n");
    printf("    \"uname_m\": "); json_str(u.machine); printf(",\n");
    printf("    \"cpu_model\": "); json_str(model); printf(",\n");
    printf("    \"online_cpus\": %ld,\n", ncpu);
    printf("    \"cpuinfo_hypervisor_flag\": %s,\n", hv == 1 ? "true" : "false");
    printf("    \"thp_enabled\": "); json_str(thp); printf(",\n");
    printf("    \"thp_defrag\": "); json_str(thp_defrag); printf(",\n");
    printf("    \"date_utc\": "); json_str(date); printf(",\n");
    printf("    \"compiler\": "); json_str(compiler); printf(",\n");
    printf("    \"pinned_cpu\": %d,\n", cpu);
    printf("    \"clock\": \"clock_gettime(CLOCK_MONOTONIC)\",\n");
    printf("    \"run_seconds\": %.1f,\n", run_s);
    printf("    \"steal_ticks_on_pinned_cpu_during_run\": %lld,\n", steal);
    printf("    \"user_hz\": %ld\n", sysconf(_SC_CLK_TCK));
    printf("  },\n");

    json_measure("clock_gettime_ns", timer, "ns per call",
                 "200000 back-to-back clock_gettime(CLOCK_MONOTONIC) calls per rep (vDSO); timing overhead, not a kernel cost", 0);

    json_measure("page_fault_ns", pf, "ns per 4 KiB page",
                 "mmap 64 MiB MAP_PRIVATE|MAP_ANONYMOUS, madvise(MADV_NOHUGEPAGE), write 1 byte per 4 KiB page, total/16384; includes trap, page allocation, zeroing, PTE install (and page-table page allocation); munmap not timed", 0);

    json_measure("clear_page_ns", clr, "ns per 4 KiB page",
                 "memset(4 KiB) over each page of an already-faulted 16 MiB buffer (> 1 MiB L2, < 32 MiB L3), warm, per page", 0);

    json_measure("clear_page_ns_128m", clr_big, "ns per 4 KiB page",
                 "same as clear_page_ns with a 128 MiB buffer (> L3): memory-bandwidth bound variant", 0);

    printf("  \"fork_exit_us\": {\n");
    printf("    \"unit\": \"us per fork + child _exit(0) + parent waitpid\",\n");
    printf("    \"source\": \"region mmap'd MAP_PRIVATE|MAP_ANONYMOUS, MADV_NOHUGEPAGE, every 4 KiB page touched before forking; sizes interleaved over 5 rounds (map, touch, fork reps, unmap); rss_kib is the whole process RSS (region + baseline %ld KiB); process has %d VMAs + the region; binary is %s\",\n",
           base_rss, base_vmas, linkage);
    printf("    \"points\": [\n");
    for (int i = 0; i < n; i++) {
        printf("      {\"region_bytes\": %zu, \"region_pages\": %zu, \"rss_kib\": %ld, "
               "\"median\": %.4g, \"min\": %.4g, \"reps\": %d}%s\n",
               fork_pts[i].bytes, fork_pts[i].bytes / PAGE, fork_pts[i].rss_kib,
               fork_pts[i].us.median, fork_pts[i].us.min, fork_pts[i].us.reps,
               i + 1 < n ? "," : "");
    }
    printf("    ],\n");
    printf("    \"fit\": {\"base_us\": %.4g, \"ns_per_resident_page\": %.4g, \"r2\": %.5f, "
           "\"method\": \"ordinary least squares of median_us on region_pages over the %d points (dominated by the 64M/256M points)\"},\n",
           base_us, slope_us * 1000.0, r2, n);
    printf("    \"fit_relative\": {\"base_us\": %.4g, \"ns_per_resident_page\": %.4g, \"max_rel_err\": %.3f, "
           "\"method\": \"weighted least squares, weights 1/median^2 (minimizes relative error; base set by small-RSS points, slope by large)\"}\n",
           rbase_us, rslope_us * 1000.0, max_rel_err);
    printf("  },\n");

    json_measure("cow_fault_ns", cow, "ns per 4 KiB page",
                 "parent touches 64 MiB (MADV_NOHUGEPAGE) then forks; child writes 1 byte per page, times it, reports per-page ns through a pipe; includes write-protect fault, 4 KiB allocation + copy, PTE update", 0);

    printf("  \"fork_exec_us\": {\n");
    json_stat(I, fe, "us per fork + execve + waitpid");
    printf(",\n    \"exec_target\": "); json_str(exec_bin);
    printf(",\n    \"exec_target_kind\": "); json_str(exec_kind);
    printf(",\n    \"source\": \"parent RSS small (no large regions mapped); child calls execve(target, {target}, {}) at once\"\n  }");
    if (have_dyn_true) {
        printf(",\n  \"fork_exec_dynamic_bin_true_us\": {\n");
        json_stat(I, fe_dyn, "us per fork + execve + waitpid");
        printf(",\n    \"source\": \"same as fork_exec_us but exec of dynamically linked /bin/true (adds ld.so + libc mapping); for comparison\"\n  }");
    }
    printf(",\n");

    json_measure("mmap_munmap_us", mm, "us per iteration",
                 "mmap 1 MiB MAP_PRIVATE|MAP_ANONYMOUS, write 1 byte to each of 256 pages, munmap; whole iteration timed (so it contains 256 first-touch faults)", 0);

    printf("  \"ctxsw_us\": {\n");
    json_stat(I, cs, "us per switch (round trip / 2)");
    printf(",\n    \"pipe_overhead_us\": {\"median\": %.4g, \"min\": %.4g, \"reps\": %d},\n",
           pipe_ovh.median, pipe_ovh.min, pipe_ovh.reps);
    printf("    \"minus_pipe_overhead_us\": %.4g,\n", cs.median - pipe_ovh.median);
    printf("    \"source\": \"two processes on the same CPU pass 1 byte through two pipes, %d round trips per rep, working set 0 (lat_ctx style); median includes the pipe write+read; pipe_overhead_us is the median of a 1-byte write+read on one pipe in one process (no switch), per switch\"\n  },\n",
           CTX_ROUNDS);

    json_measure("syscall_ns", sys, "ns per call",
                 "syscall(SYS_getppid) in a loop, 1000000 calls per rep", 0);
    json_measure("fork_child_page_faults", child_faults, "minor faults per child",
                 "a child that calls _exit(0) at once after fork; the parent's RUSAGE_CHILDREN ru_minflt before and after waitpid", 0);
    json_measure("fork_parent_page_faults", parent_faults, "minor faults of the parent per fork",
                 "the parent's RUSAGE_SELF ru_minflt around fork() + waitpid of a child that calls _exit(0) at once", 1);
    printf("}\n");
    return 0;
}
