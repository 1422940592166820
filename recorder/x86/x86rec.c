/*
 * x86rec: a QEMU TCG plugin (plugin API version 1, QEMU 7.2, linux-user) that records an
 * x86-64 Linux program for vmlab: every data reference (address, size, load or store), the
 * instructions retired between references, the code pages fetched from, every system call
 * with its arguments and result, and the memory the kernel writes on the program's behalf.
 *
 * One process image writes one raw file, <dir>/<host pid>-<monotonic ns>.raw; `vmlab record`
 * merges the raw files of a recording into one trace (crates/vmlab-core/src/record/, format
 * in docs/x86-trace.md, "Raw files"). A fork child opens its own raw file when its fork
 * returns; an exec'd program is a new QEMU (recorder/x86/exec.c relaunches the emulator), so
 * a new image.
 *
 * Threads: QEMU runs each guest thread on a host thread, so each thread fills a buffer of its
 * own and writes it out as one block, stamped with the time its first record was made; the
 * merge orders blocks by that stamp. Blocks are flushed when full and at every system call,
 * so threads and processes interleave at least at system-call granularity.
 *
 * In linux-user mode on an x86-64 host QEMU runs the guest with guest_base 0 ("Locating guest
 * address space @ 0x0"), so guest addresses are host addresses: the plugin reads the guest's
 * iovecs and clone3 arguments directly.
 *
 * Plugin arguments: dir=DIR (where raw files go), maps=PATH (the -d page log QEMU writes for
 * this image, named in the raw header), root=1 (the recording's first program). A sampled
 * recording's settings are in DIR/sampling ("PERIOD:WINDOW:WARM"), which every image reads: the
 * program's environment stays as in a full recording, so both record the same run.
 *
 * Sampling: each thread's references are numbered; the last WINDOW of every PERIOD form a
 * window, recorded in full between REC_WINDOW records. Outside windows only what shapes the
 * page tables is written: the first reference to each 4 KiB page and the first store to it
 * (store marks are cleared at fork and mprotect, touch marks where the kernel drops pages:
 * munmap, madvise, mremap, brk, a new mapping), and the first fetch from each code page.
 * System calls, kernel writes, forks and exits are always written. Before each window the
 * thread's last WARM references are summarized as the distinct cache lines they used, in
 * order of last use (REC_WARM), from which the replay rebuilds TLB and cache state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* ---- the QEMU plugin API v1 declarations used (include/qemu/qemu-plugin.h, 7.2) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef struct {
    const char *target_name;
    struct { int min; int cur; } version;
    bool system_emulation;
    union { struct { int smp_vcpus; int max_vcpus; } system; };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);
typedef void (*qemu_plugin_vcpu_syscall_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_index,
                                              int64_t num, uint64_t a1, uint64_t a2, uint64_t a3,
                                              uint64_t a4, uint64_t a5, uint64_t a6, uint64_t a7,
                                              uint64_t a8);
typedef void (*qemu_plugin_vcpu_syscall_ret_cb_t)(qemu_plugin_id_t id, unsigned int vcpu_idx,
                                                  int64_t num, int64_t ret);
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_vcpu_syscall_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_syscall_cb_t cb);
void qemu_plugin_register_vcpu_syscall_ret_cb(qemu_plugin_id_t id,
                                              qemu_plugin_vcpu_syscall_ret_cb_t cb);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
const char *qemu_plugin_path_to_binary(void);

/* ---- raw format (docs/x86-trace.md, "Raw files") ---- */
#define RAW_MAGIC "VMLXRAW1"
#define BLOCK_MAGIC 0x314b4c42u /* "BLK1" */
enum { IMAGE_ROOT = 0, IMAGE_EXEC = 1, IMAGE_FORK = 2 };
enum {
    /* 0x00-0x7F: a reference: bits 0-1 size shift, bit 2 store, bits 3-6 instructions since
     * the thread's previous reference (15: a varint follows); then the zigzag varint delta of
     * the address from the thread's previous reference in this block. */
    REC_CODE_PAGE = 0x80,  /* varint page number */
    REC_SYSCALL = 0x81,    /* varint nr, 6 varint args (at entry) */
    REC_SYSRET = 0x82,     /* varint nr, zigzag ret (at return) */
    REC_KWRITE = 0x83,     /* varint addr, varint len */
    REC_FORK_POINT = 0x84, /* varint ordinal: this image's n-th fork starts here */
    REC_EXIT_GROUP = 0x85, /* zigzag status */
    REC_THREAD_EXIT = 0x86,
    REC_WINDOW = 0x87,     /* open byte (0/1), varint references not written since the last,
                            * varint instructions since the last written reference */
    REC_WARM = 0x88,       /* count byte (1-8), varint first line, zigzag line deltas */
};
#define WARM_PER_RECORD 8
#define BUF_BYTES (256u << 10)
#define BUF_SLACK 128u /* the longest record */

struct thread {
    uint32_t tid;
    uint64_t icount;   /* instructions retired by this thread */
    uint64_t tb_base;  /* icount at the start of the running translation block */
    uint64_t last_pos; /* icount at the previous reference */
    uint64_t last_addr;
    uint64_t code_page;
    uint64_t stamp;    /* when the block's first record was made */
    uint64_t sc_args[6];
    int64_t sc_nr;
    /* Sampling: references made, whether in a window, references not written since the last
     * REC_WINDOW, the ring of the last WARM references' lines, and the page last checked. */
    uint64_t refs;
    bool in_window;
    uint64_t skipped;
    uint64_t *ring;
    uint64_t *seen;   /* the summary's set of lines (open addressing, 2 * WARM slots) */
    uint64_t *order;  /* the summary's lines, newest first */
    uint64_t checked_page;
    uint8_t checked_flags;
    uint64_t checked_epoch;
    uint32_t len;
    struct thread *next;
    uint8_t buf[BUF_BYTES];
};

static const char *dir;
static const char *maps_path = "";
static bool root;
static int out_fd = -1;
static pid_t proc_pid;
static uint32_t forks; /* fork points of this image so far */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread *threads;
static __thread struct thread *self;

/* ---- sampling state: the period, window and warm-up summary, and page marks ---- */
static uint64_t period, window_len, warm_len, seen_slots;
static uint64_t brk_now; /* the program break after the last brk call (0: not known yet) */
static bool sampling;
enum { PAGE_TOUCHED = 1, PAGE_STORED = 2, PAGE_CODE = 4 };
/* Page marks of this process: a two-level table over the 47-bit user space, leaves of
 * 2^16 pages made on demand; each mark byte is set atomically (threads share it). */
#define LEAF_BITS 16
#define TOP_BITS (47 - 12 - LEAF_BITS)
static uint8_t **marks;
/* Bumped whenever marks are cleared, so a thread re-reads its cached page. */
static uint64_t marks_epoch;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "x86rec: %s: %s\n", what, strerror(errno));
    _exit(125);
}

static void write_all(const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n > 0) {
        ssize_t w = write(out_fd, b, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            die("cannot write the raw file");
        }
        b += w;
        n -= (size_t)w;
    }
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Opens this image's raw file and writes its header: magic, kind, host pid, parent host pid,
 * fork ordinal, creation stamp, then the program path and the maps log path (u32 length and
 * bytes each). */
static void open_raw(uint32_t kind, uint32_t parent, uint32_t ordinal)
{
    char path[4096];
    uint64_t stamp = now_ns();
    proc_pid = getpid();
    snprintf(path, sizeof path, "%s/%d-%020llu.raw", dir, (int)proc_pid,
             (unsigned long long)stamp);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        die(path);
    }
    if (out_fd >= 0) {
        close(out_fd);
    }
    out_fd = fd;
    const char *program = qemu_plugin_path_to_binary();
    program = program ? program : "";
    const char *maps = kind == IMAGE_FORK ? "" : maps_path;
    uint8_t head[8 + 4 * 4 + 8];
    memcpy(head, RAW_MAGIC, 8);
    put_u32(head + 8, kind);
    put_u32(head + 12, (uint32_t)proc_pid);
    put_u32(head + 16, parent);
    put_u32(head + 20, ordinal);
    put_u64(head + 24, stamp);
    write_all(head, sizeof head);
    uint8_t n[4];
    put_u32(n, (uint32_t)strlen(program));
    write_all(n, 4);
    write_all(program, strlen(program));
    put_u32(n, (uint32_t)strlen(maps));
    write_all(n, 4);
    write_all(maps, strlen(maps));
}

/* Writes the thread's buffer out as one block: magic, host tid, stamp, length, records.
 * Every block starts from a fresh delta state, so blocks decode alone. */
static void flush(struct thread *t)
{
    if (t->len == 0) {
        return;
    }
    uint8_t head[4 + 4 + 8 + 4];
    put_u32(head, BLOCK_MAGIC);
    put_u32(head + 4, t->tid);
    put_u64(head + 8, t->stamp);
    put_u32(head + 16, t->len);
    pthread_mutex_lock(&lock);
    write_all(head, sizeof head);
    write_all(t->buf, t->len);
    pthread_mutex_unlock(&lock);
    t->len = 0;
    t->last_addr = 0;
    t->code_page = 0;
}

static struct thread *thread_self(void)
{
    if (self) {
        return self;
    }
    struct thread *t = calloc(1, sizeof *t);
    if (!t) {
        die("out of memory");
    }
    t->tid = (uint32_t)syscall(SYS_gettid);
    pthread_mutex_lock(&lock);
    t->next = threads;
    threads = t;
    pthread_mutex_unlock(&lock);
    self = t;
    return t;
}

/* Room for one more record; stamps a new block. */
static uint8_t *reserve(struct thread *t)
{
    if (t->len > BUF_BYTES - BUF_SLACK) {
        flush(t);
    }
    if (t->len == 0) {
        t->stamp = now_ns();
    }
    return t->buf + t->len;
}

static uint8_t *varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *zigzag(uint8_t *p, int64_t v)
{
    return varint(p, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void commit(struct thread *t, uint8_t *end) { t->len = (uint32_t)(end - t->buf); }

static void record_kwrite(struct thread *t, uint64_t addr, uint64_t len)
{
    if (addr == 0 || len == 0) {
        return;
    }
    uint8_t *p = reserve(t);
    *p++ = REC_KWRITE;
    p = varint(p, addr);
    commit(t, varint(p, len));
}


/* ---- sampling ---- */

static uint8_t *mark_of(uint64_t page, bool make)
{
    uint64_t top = page >> LEAF_BITS;
    if (top >= (1ull << TOP_BITS)) {
        return NULL;
    }
    uint8_t *leaf = __atomic_load_n(&marks[top], __ATOMIC_ACQUIRE);
    if (!leaf && make) {
        uint8_t *fresh = calloc(1ull << LEAF_BITS, 1);
        if (!fresh) {
            die("out of memory");
        }
        uint8_t *expected = NULL;
        if (__atomic_compare_exchange_n(&marks[top], &expected, fresh, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            leaf = fresh;
        } else {
            free(fresh);
            leaf = expected;
        }
    }
    return leaf ? &leaf[page & ((1ull << LEAF_BITS) - 1)] : NULL;
}

/* Clears `bits` of the marks of [start, start + len). */
static void clear_marks(uint64_t start, uint64_t len, uint8_t bits)
{
    if (!sampling || len == 0) {
        return;
    }
    uint64_t first = start >> 12, end = (start + len + 4095) >> 12;
    for (uint64_t page = first; page < end; page++) {
        uint8_t *m = mark_of(page, false);
        if (m) {
            __atomic_fetch_and(m, (uint8_t)~bits, __ATOMIC_RELAXED);
        } else {
            /* A whole leaf not made: skip to the next. */
            page |= (1ull << LEAF_BITS) - 1;
        }
    }
    __atomic_fetch_add(&marks_epoch, 1, __ATOMIC_RELEASE);
}

/* Clears `bits` of every page's marks. */
static void clear_all_marks(uint8_t bits)
{
    for (uint64_t top = 0; top < (1ull << TOP_BITS); top++) {
        uint8_t *leaf = marks[top];
        for (uint64_t i = 0; leaf && i < (1ull << LEAF_BITS); i++) {
            leaf[i] &= (uint8_t)~bits;
        }
    }
    __atomic_fetch_add(&marks_epoch, 1, __ATOMIC_RELEASE);
}

/* Sets `want` on the page's marks; true if any of it was not set (the reference must be
 * written, so the replay sees the fault it causes). */
static bool first_use(struct thread *t, uint64_t page, uint8_t want)
{
    uint64_t epoch = __atomic_load_n(&marks_epoch, __ATOMIC_ACQUIRE);
    if (t->checked_page == page && t->checked_epoch == epoch && (t->checked_flags & want) == want) {
        return false;
    }
    uint8_t *m = mark_of(page, true);
    if (!m) {
        return true;
    }
    uint8_t was = __atomic_fetch_or(m, want, __ATOMIC_RELAXED);
    t->checked_page = page;
    t->checked_epoch = epoch;
    t->checked_flags = was | want;
    return (was & want) != want;
}

/* A window opens or closes at instruction `pos` of the thread: the instructions since the
 * last written reference go with it, so a window's first reference carries only its own. */
static void record_window(struct thread *t, bool open, uint64_t pos)
{
    uint8_t *p = reserve(t);
    *p++ = REC_WINDOW;
    *p++ = open ? 1 : 0;
    p = varint(p, t->skipped);
    commit(t, varint(p, pos > t->last_pos ? pos - t->last_pos : 0));
    if (pos > t->last_pos) {
        t->last_pos = pos;
    }
    t->skipped = 0;
}

/* The thread's last WARM references as distinct lines of touched pages, oldest last use
 * first: replayed in this order they leave LRU structures as the references did. */
static void record_warm(struct thread *t)
{
    uint64_t have = t->refs < warm_len ? t->refs : warm_len;
    uint64_t slots = seen_slots;
    memset(t->seen, 0, slots * sizeof *t->seen);
    uint64_t n = 0;
    for (uint64_t i = 0; i < have; i++) {
        uint64_t line = t->ring[(t->refs - 1 - i) % warm_len];
        uint64_t key = line + 1; /* 0 marks an empty slot */
        uint64_t h = (line * 0x9e3779b97f4a7c15ull) >> 20;
        for (;; h++) {
            uint64_t *slot = &t->seen[h & (slots - 1)];
            if (*slot == key) {
                break;
            }
            if (*slot == 0) {
                *slot = key;
                uint8_t *m = mark_of(line >> 6, false);
                if (m && (*m & PAGE_TOUCHED)) {
                    t->order[n++] = line;
                }
                break;
            }
        }
    }
    for (uint64_t i = n; i > 0;) {
        uint64_t count = i < WARM_PER_RECORD ? i : WARM_PER_RECORD;
        uint8_t *p = reserve(t);
        *p++ = REC_WARM;
        *p++ = (uint8_t)count;
        uint64_t prev = t->order[--i];
        p = varint(p, prev);
        for (uint64_t k = 1; k < count; k++) {
            uint64_t line = t->order[--i];
            p = zigzag(p, (int64_t)(line - prev));
            prev = line;
        }
        commit(t, p);
    }
}

/* Counts the reference and says whether to write it: always in a window, outside only a
 * first touch or first store of its page. Opens and closes windows. */
static bool sampled(struct thread *t, uint64_t vaddr, bool store, uint64_t pos)
{
    if (!t->ring) {
        t->ring = malloc(warm_len * sizeof *t->ring);
        t->seen = malloc(seen_slots * sizeof *t->seen);
        t->order = malloc(warm_len * sizeof *t->order);
        if (!t->ring || !t->seen || !t->order) {
            die("out of memory for the warm-up summary");
        }
    }
    uint64_t phase = t->refs % period;
    if (phase == period - window_len) {
        record_warm(t);
        record_window(t, true, pos - 1);
        t->in_window = true;
    }
    t->ring[t->refs % warm_len] = vaddr >> 6;
    t->refs++;
    bool first = first_use(t, vaddr >> 12, store ? PAGE_TOUCHED | PAGE_STORED : PAGE_TOUCHED);
    if (t->in_window || first) {
        return true;
    }
    t->skipped++;
    return false;
}

/* After a reference in a window: the window closes with the period. */
static void window_step(struct thread *t)
{
    if (t->in_window && t->refs % period == 0) {
        record_window(t, false, t->last_pos);
        t->in_window = false;
    }
}

/* ---- callbacks ---- */

static void tb_exec(unsigned int vcpu, void *udata)
{
    struct thread *t = thread_self();
    uint64_t n_insns = (uint64_t)(uintptr_t)udata >> 52;
    uint64_t page = ((uint64_t)(uintptr_t)udata & ((1ull << 52) - 1)) >> 12;
    t->tb_base = t->icount;
    t->icount += n_insns;
    if (page != t->code_page) {
        t->code_page = page;
        if (sampling && !t->in_window && !first_use(t, page, PAGE_CODE)) {
            return;
        }
        uint8_t *p = reserve(t);
        *p++ = REC_CODE_PAGE;
        commit(t, varint(p, page));
    }
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    struct thread *t = thread_self();
    uint64_t pos = t->tb_base + (uint64_t)(uintptr_t)udata + 1;
    if (sampling && !sampled(t, vaddr, qemu_plugin_mem_is_store(info), pos)) {
        return;
    }
    uint64_t insns = pos - t->last_pos;
    t->last_pos = pos;
    uint8_t *p = reserve(t);
    unsigned shift = qemu_plugin_mem_size_shift(info);
    /* QEMU 7.2 splits accesses wider than 8 bytes; a wider one would be counted as 8. */
    uint8_t tag = (uint8_t)(shift < 3 ? shift : 3);
    if (qemu_plugin_mem_is_store(info)) {
        tag |= 4;
    }
    if (insns < 15) {
        *p++ = tag | (uint8_t)(insns << 3);
    } else {
        *p++ = tag | (15 << 3);
        p = varint(p, insns);
    }
    p = zigzag(p, (int64_t)(vaddr - t->last_addr));
    t->last_addr = vaddr;
    commit(t, p);
    if (sampling) {
        window_step(t);
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    if (out_fd < 0) {
        /* Not at install: the program's path is known only once a vCPU runs it. */
        open_raw(root ? IMAGE_ROOT : IMAGE_EXEC, 0, 0);
    }
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint64_t vaddr = qemu_plugin_tb_vaddr(tb);
    /* The block's length and first page in one word: user addresses fit in 47 bits. */
    uint64_t packed = ((uint64_t)(n < 4095 ? n : 4095) << 52) | (vaddr & ((1ull << 52) - 1));
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS,
                                         (void *)(uintptr_t)packed);
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
                                         QEMU_PLUGIN_MEM_RW, (void *)(uintptr_t)i);
    }
}

enum {
    NR_READ = 0, NR_STAT = 4, NR_FSTAT = 5, NR_LSTAT = 6, NR_POLL = 7, NR_RT_SIGACTION = 13,
    NR_RT_SIGPROCMASK = 14, NR_PREAD64 = 17, NR_READV = 19, NR_PIPE = 22, NR_ACCEPT = 43,
    NR_RECVFROM = 45, NR_RECVMSG = 47, NR_GETSOCKNAME = 51, NR_GETPEERNAME = 52,
    NR_SOCKETPAIR = 53, NR_CLONE = 56, NR_FORK = 57, NR_VFORK = 58, NR_EXECVE = 59, NR_EXIT = 60,
    NR_WAIT4 = 61, NR_UNAME = 63, NR_GETCWD = 79, NR_READLINK = 89, NR_GETTIMEOFDAY = 96,
    NR_GETRLIMIT = 97, NR_SYSINFO = 99, NR_STATFS = 137, NR_FSTATFS = 138, NR_TIME = 201,
    NR_GETDENTS64 = 217, NR_CLOCK_GETTIME = 228, NR_CLOCK_GETRES = 229, NR_EXIT_GROUP = 231,
    NR_EPOLL_WAIT = 232, NR_NEWFSTATAT = 262, NR_READLINKAT = 267, NR_PPOLL = 271,
    NR_EPOLL_PWAIT = 281, NR_ACCEPT4 = 288, NR_PIPE2 = 293, NR_PREADV = 295, NR_PRLIMIT64 = 302,
    NR_GETRANDOM = 318, NR_PREADV2 = 327, NR_STATX = 332, NR_CLONE3 = 435,
    NR_MMAP = 9, NR_MPROTECT = 10, NR_MUNMAP = 11, NR_BRK = 12, NR_MREMAP = 25, NR_MADVISE = 28,
};
enum { MADV_DONTNEED = 4, MADV_REMOVE = 9 };

/* A successful call that drops pages or makes new ones clears their marks: the next touch
 * faults again. Stores after mprotect are written again (the protection may have changed). */
static void update_marks(int64_t nr, const uint64_t *a, int64_t ret)
{
    const uint8_t all = PAGE_TOUCHED | PAGE_STORED;
    switch (nr) {
    case NR_MMAP:
        clear_marks((uint64_t)ret, a[1], all);
        break;
    case NR_MUNMAP:
        clear_marks(a[0], a[1], all);
        break;
    case NR_MREMAP:
        clear_marks(a[0], a[1], all);
        clear_marks((uint64_t)ret, a[2], all);
        break;
    case NR_MADVISE:
        if (a[2] == MADV_DONTNEED || a[2] == MADV_REMOVE) {
            clear_marks(a[0], a[1], all);
        }
        break;
    case NR_MPROTECT:
        clear_marks(a[0], a[1], PAGE_STORED);
        break;
    case NR_BRK:
        if (brk_now && (uint64_t)ret < brk_now) {
            clear_marks((uint64_t)ret, brk_now - (uint64_t)ret, all);
        }
        brk_now = (uint64_t)ret;
        break;
    default:
        break;
    }
}


/* A clone that makes a process: without CLONE_VM, or with CLONE_VFORK, which QEMU turns into
 * a fork (posix_spawn and popen clone with CLONE_VM | CLONE_VFORK). */
static bool makes_process(uint64_t flags)
{
    return !(flags & CLONE_VM) || (flags & CLONE_VFORK);
}

static bool is_fork(int64_t nr, const uint64_t *a)
{
    switch (nr) {
    case NR_FORK:
    case NR_VFORK:
        return true;
    case NR_CLONE:
        return makes_process(a[0]);
    case NR_CLONE3:
        /* QEMU 7.2 refuses clone3 (ENOSYS) and the C library falls back to clone: a fork
         * point here would be a process that never was. */
        return false;
    default:
        return false;
    }
}

static void syscall_entry(qemu_plugin_id_t id, unsigned int vcpu, int64_t nr, uint64_t a1,
                          uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5, uint64_t a6,
                          uint64_t a7, uint64_t a8)
{
    struct thread *t = thread_self();
    uint64_t a[6] = { a1, a2, a3, a4, a5, a6 };
    memcpy(t->sc_args, a, sizeof a);
    if (sampling && !t->in_window && t->skipped > 0) {
        /* The references not written so far are counted here: the thread may not return. */
        record_window(t, false, t->icount);
    }
    t->sc_nr = nr;
    uint8_t *p = reserve(t);
    *p++ = REC_SYSCALL;
    p = varint(p, (uint64_t)nr);
    for (int i = 0; i < 6; i++) {
        p = varint(p, a[i]);
    }
    commit(t, p);
    if (is_fork(nr, a)) {
        p = reserve(t);
        *p++ = REC_FORK_POINT;
        commit(t, varint(p, forks++));
    } else if (nr == NR_EXIT_GROUP) {
        p = reserve(t);
        *p++ = REC_EXIT_GROUP;
        commit(t, zigzag(p, (int64_t)a1));
    } else if (nr == NR_EXIT) {
        p = reserve(t);
        *p++ = REC_THREAD_EXIT;
        commit(t, p);
    }
    /* Every call may block or switch: out with the block, so the merge sees it in time. */
    flush(t);
    if (nr == NR_EXECVE) {
        /* A successful execve ends this QEMU without its exit callbacks. */
        pthread_mutex_lock(&lock);
        for (struct thread *o = threads; o; o = o->next) {
            if (o != t && o->len) {
                pthread_mutex_unlock(&lock);
                flush(o);
                pthread_mutex_lock(&lock);
            }
        }
        pthread_mutex_unlock(&lock);
    }
}

struct iov { uint64_t base, len; };

static void kwrite_iov(struct thread *t, uint64_t iov, uint64_t count, int64_t bytes)
{
    const struct iov *v = (const struct iov *)(uintptr_t)iov;
    for (uint64_t i = 0; i < count && bytes > 0; i++) {
        uint64_t n = v[i].len < (uint64_t)bytes ? v[i].len : (uint64_t)bytes;
        record_kwrite(t, v[i].base, n);
        bytes -= (int64_t)n;
    }
}

/* The user memory the kernel wrote for a successful call (what copy_to_user touched). */
static void kernel_writes(struct thread *t, int64_t nr, const uint64_t *a, int64_t ret)
{
    switch (nr) {
    case NR_READ: case NR_PREAD64: case NR_RECVFROM: case NR_GETDENTS64: case NR_READLINK:
        record_kwrite(t, a[1], (uint64_t)ret);
        break;
    case NR_GETRANDOM: case NR_GETCWD:
        record_kwrite(t, a[0], (uint64_t)ret);
        break;
    case NR_READLINKAT:
        record_kwrite(t, a[2], (uint64_t)ret);
        break;
    case NR_READV: case NR_PREADV: case NR_PREADV2:
        kwrite_iov(t, a[1], a[2], ret);
        break;
    case NR_RECVMSG: {
        const uint64_t *msg = (const uint64_t *)(uintptr_t)a[1];
        kwrite_iov(t, msg[2], msg[3], ret); /* msg_iov, msg_iovlen */
        break;
    }
    case NR_STAT: case NR_FSTAT: case NR_LSTAT:
        record_kwrite(t, a[1], 144);
        break;
    case NR_NEWFSTATAT:
        record_kwrite(t, a[2], 144);
        break;
    case NR_STATX:
        record_kwrite(t, a[4], 256);
        break;
    case NR_STATFS: case NR_FSTATFS:
        record_kwrite(t, a[1], 120);
        break;
    case NR_CLOCK_GETTIME: case NR_CLOCK_GETRES:
        record_kwrite(t, a[1], 16);
        break;
    case NR_GETTIMEOFDAY:
        record_kwrite(t, a[0], 16);
        break;
    case NR_TIME:
        record_kwrite(t, a[0], 8);
        break;
    case NR_PIPE: case NR_PIPE2:
        record_kwrite(t, a[0], 8);
        break;
    case NR_SOCKETPAIR:
        record_kwrite(t, a[3], 8);
        break;
    case NR_WAIT4:
        record_kwrite(t, a[1], 4);
        break;
    case NR_UNAME:
        record_kwrite(t, a[0], 390);
        break;
    case NR_SYSINFO:
        record_kwrite(t, a[0], 112);
        break;
    case NR_GETRLIMIT:
        record_kwrite(t, a[1], 16);
        break;
    case NR_PRLIMIT64:
        record_kwrite(t, a[3], 16);
        break;
    case NR_RT_SIGACTION:
        record_kwrite(t, a[2], 32);
        break;
    case NR_RT_SIGPROCMASK:
        record_kwrite(t, a[2], 8);
        break;
    case NR_POLL: case NR_PPOLL:
        record_kwrite(t, a[0], a[1] * 8);
        break;
    case NR_EPOLL_WAIT: case NR_EPOLL_PWAIT:
        record_kwrite(t, a[1], (uint64_t)ret * 12);
        break;
    case NR_ACCEPT: case NR_ACCEPT4: case NR_GETSOCKNAME: case NR_GETPEERNAME:
        if (a[1] && a[2]) {
            record_kwrite(t, a[1], *(const uint32_t *)(uintptr_t)a[2]);
            record_kwrite(t, a[2], 4);
        }
        break;
    default:
        break;
    }
}

static void syscall_return(qemu_plugin_id_t id, unsigned int vcpu, int64_t nr, int64_t ret)
{
    struct thread *t = thread_self();
    if (ret == 0 && is_fork(nr, t->sc_args) && getpid() != proc_pid) {
        /* The child of a fork: a raw file of its own; the parent's other threads are gone. */
        pid_t parent = proc_pid;
        t->len = 0;
        t->tid = (uint32_t)syscall(SYS_gettid);
        threads = t;
        t->next = NULL;
        pthread_mutex_init(&lock, NULL);
        uint32_t ordinal = forks - 1;
        forks = 0;
        open_raw(IMAGE_FORK, (uint32_t)parent, ordinal);
    }
    if (sampling && ret > 0 && is_fork(nr, t->sc_args) && getpid() == proc_pid) {
        /* Parent and child pages are now copy-on-write: each one's first store faults. */
        clear_all_marks(PAGE_STORED);
    } else if (sampling && ret == 0 && is_fork(nr, t->sc_args)) {
        clear_all_marks(PAGE_STORED);
    }
    uint8_t *p = reserve(t);
    *p++ = REC_SYSRET;
    p = varint(p, (uint64_t)nr);
    commit(t, zigzag(p, ret));
    if (ret >= 0 && nr == t->sc_nr) {
        kernel_writes(t, nr, t->sc_args, ret);
        if (sampling) {
            update_marks(nr, t->sc_args, ret);
        }
    }
}

static void at_exit(qemu_plugin_id_t id, void *udata)
{
    for (struct thread *t = threads; t; t = t->next) {
        if (sampling && !t->in_window && t->skipped > 0) {
            record_window(t, false, t->icount);
        }
        flush(t);
    }
}

/* Reads DIR/sampling if the recording is sampled; nonzero if it is malformed. */
static int read_sampling(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sampling", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        return 0;
    }
    unsigned long long p, w, n;
    int got = fscanf(f, "%llu:%llu:%llu", &p, &w, &n);
    fclose(f);
    if (got != 3 || w == 0 || w > p || n == 0) {
        fprintf(stderr, "x86rec: %s must be PERIOD:WINDOW:WARM with 0 < WINDOW <= PERIOD and "
                        "WARM > 0\n", path);
        return -1;
    }
    period = p;
    window_len = w;
    warm_len = n;
    for (seen_slots = 1; seen_slots < 2 * warm_len; seen_slots <<= 1) {
    }
    marks = calloc(1ull << TOP_BITS, sizeof *marks);
    if (!marks) {
        die("out of memory");
    }
    sampling = true;
    return 0;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                           char **argv)
{
    if (info->system_emulation || strcmp(info->target_name, "x86_64") != 0) {
        fprintf(stderr, "x86rec: records x86_64 programs under qemu-x86_64 only\n");
        return -1;
    }
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "dir=", 4) == 0) {
            dir = argv[i] + 4;
        } else if (strncmp(argv[i], "maps=", 5) == 0) {
            maps_path = argv[i] + 5;
        } else if (strcmp(argv[i], "root=1") == 0) {
            root = true;

        } else {
            fprintf(stderr, "x86rec: unknown argument %s\n", argv[i]);
            return -1;
        }
    }
    if (!dir) {
        fprintf(stderr, "x86rec: dir=DIR is required\n");
        return -1;
    }
    if (read_sampling() != 0) {
        return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_vcpu_syscall_cb(id, syscall_entry);
    qemu_plugin_register_vcpu_syscall_ret_cb(id, syscall_return);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
