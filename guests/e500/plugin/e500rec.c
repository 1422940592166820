/*
 * e500rec: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) that records what a
 * PowerPC e500v2 Linux guest asks of a hypervisor, in guest execution order.
 * The format is documented in docs/e500-trace.md; the reader is
 * crates/vmlab-core/src/trace/e500/.
 *
 * Plugin arguments: out=PATH (trace, written through `zstd`), map=System.map,
 * phases=FILE (id<TAB>name lines), meta=FILE (key=value provenance lines).
 *
 * API v1 has no register access, so the plugin reads the vCPU's CPUPPCState
 * directly: QEMU's generated code keeps the env pointer in TCG_AREG0 (%rbp on an
 * x86-64 host) and calls instruction callbacks directly, so a tiny assembly
 * trampoline hands %rbp to the callback. The SPR array's offset is found once by
 * searching env for the e500v2 PVR with TLB0CFG (512 entries, 4-way) at its
 * architected distance; the GPRs are the struct's first member, checked on every
 * phase marker by a magic value in r3. Callbacks that read registers are registered
 * with QEMU_PLUGIN_CB_R_REGS so TCG writes its cached guest registers back first.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stddef.h>

/* ---- the few QEMU plugin API v1 declarations used (include/qemu/qemu-plugin.h, 7.2) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef struct {
    const char *target_name;
    struct { int min; int cur; } version;
    bool system_emulation;
    union { struct { int smp_vcpus; int max_vcpus; } system; };
} qemu_info_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
struct qemu_plugin_hwaddr;
typedef uint32_t qemu_plugin_meminfo_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_mem_rw { QEMU_PLUGIN_MEM_R = 1, QEMU_PLUGIN_MEM_W, QEMU_PLUGIN_MEM_RW };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_mem_cb_t)(unsigned int vcpu_index, qemu_plugin_meminfo_t info,
                                          uint64_t vaddr, void *userdata);
#define QEMU_PLUGIN_EXPORT __attribute__((visibility("default")))
QEMU_PLUGIN_EXPORT int qemu_plugin_version = 1;
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_vcpu_insn_exec_inline(struct qemu_plugin_insn *insn, enum qemu_plugin_op op,
                                                void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, qemu_plugin_vcpu_mem_cb_t cb,
                                      enum qemu_plugin_cb_flags flags, enum qemu_plugin_mem_rw rw,
                                      void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
unsigned int qemu_plugin_mem_size_shift(qemu_plugin_meminfo_t info);
bool qemu_plugin_mem_is_store(qemu_plugin_meminfo_t info);
struct qemu_plugin_hwaddr *qemu_plugin_get_hwaddr(qemu_plugin_meminfo_t info, uint64_t vaddr);
bool qemu_plugin_hwaddr_is_io(const struct qemu_plugin_hwaddr *haddr);
uint64_t qemu_plugin_hwaddr_phys_addr(const struct qemu_plugin_hwaddr *haddr);
void qemu_plugin_outs(const char *string);

/* ---- trace format (docs/e500-trace.md) ---- */
#define TRACE_MAGIC "VMLE500T"
#define TRACE_VERSION 1u
enum {
    TAG_PRIV = 0x01, TAG_USER_SC = 0x02, TAG_EXC = 0x03, TAG_MARK = 0x04, TAG_BOOT_END = 0x05,
    TAG_MEM = 0x10, /* | 0x08 store | size shift (0..3) */
    TAG_END = 0xFF,
};
#define KERNEL_BASE 0xC0000000u
#define MARK_MAGIC 0x7E500000u
#define BOOT_END_MARK 0x7FFFu      /* the marker that ends the boot (userland/phases.h) */
#define MARK_WORD 0x7F7BDB78u /* or r27,r27,r27: the phase-marker no-op */
#define PVR_E500V2_MASK 0xFFFF0000u
#define PVR_E500V2 0x80210000u
enum { SPR_SRR0 = 26, SPR_SRR1 = 27, SPR_CSRR0 = 58, SPR_CSRR1 = 59, SPR_DEAR = 61, SPR_ESR = 62,
       SPR_PVR = 287, SPR_MAS0 = 624, SPR_MAS1 = 625, SPR_MAS2 = 626, SPR_MAS3 = 627,
       SPR_TLB0CFG = 688, SPR_MAS7 = 944 };

static FILE *out;
static uint32_t crc = 0xFFFFFFFFu;
static uint32_t crc_table[256];
static uint64_t insns_user, insns_kernel;      /* bumped inline before each instruction */
static uint64_t last_user, last_kernel, last_pc, last_vaddr, n_records;
static long spr_offset = -1;                   /* byte offset of spr[0] in CPUPPCState */
static bool boot_end_seen;
static uint64_t branch_to_vector;              /* target of the last `b <vector>` executed */

struct vector { uint64_t pc; int kind; };
static struct vector vectors[64];
static int n_vectors;
static uint64_t text_start, text_end;

static void put(const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) {
        crc = crc_table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
    }
    if (fwrite(p, 1, n, out) != n) {
        fprintf(stderr, "e500rec: write failed\n");
        exit(1);
    }
}
static void put_u8(uint8_t v) { put(&v, 1); }
static void put_varint(uint64_t v)
{
    uint8_t b[10];
    int n = 0;
    do {
        b[n] = v & 0x7F;
        v >>= 7;
        if (v) {
            b[n] |= 0x80;
        }
        n++;
    } while (v);
    put(b, n);
}
static void put_signed(int64_t v) { put_varint(((uint64_t)v << 1) ^ (uint64_t)(v >> 63)); }
static void put_u32le(uint32_t v)
{
    uint8_t b[4] = { v, v >> 8, v >> 16, v >> 24 };
    put(b, 4);
}
static void put_blob(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (path && !f) {
        fprintf(stderr, "e500rec: cannot read %s\n", path);
        exit(1);
    }
    char *buf = NULL;
    size_t len = 0;
    if (f) {
        fseek(f, 0, SEEK_END);
        len = ftell(f);
        fseek(f, 0, SEEK_SET);
        buf = malloc(len + 1);
        if (fread(buf, 1, len, f) != len) {
            exit(1);
        }
        fclose(f);
    }
    put_varint(len);
    put(buf, len);
    free(buf);
}

/* Every record starts with its tag and the instructions retired since the previous one. */
static void record_head_raw(uint8_t tag)
{
    put_u8(tag);
    put_varint(insns_user - last_user);
    put_varint(insns_kernel - last_kernel);
    last_user = insns_user;
    last_kernel = insns_kernel;
    n_records++;
}

/* Kernel loads and stores between two other records are grouped by (pc, 4 KiB page,
 * direction, size) in order of first occurrence, each group written once with its first
 * address and a repeat count: loops over a page become one record. */
struct mem_group { uint64_t pc, vaddr, paddr; uint32_t count; uint8_t tag; };
#define MAX_GROUPS 64
static struct mem_group groups[MAX_GROUPS];
static int n_groups;
static void put_pc(uint64_t pc);

static void flush_groups(void)
{
    for (int i = 0; i < n_groups; i++) {
        struct mem_group *g = &groups[i];
        record_head_raw(g->tag);
        put_pc(g->pc);
        put_signed((int64_t)(g->vaddr - last_vaddr));
        last_vaddr = g->vaddr;
        /* Zero for the kernel's linear map (virtual KERNEL_BASE + x = physical x). */
        put_signed((int64_t)(g->paddr - (uint32_t)(g->vaddr - KERNEL_BASE)));
        put_varint(g->count);
    }
    n_groups = 0;
}

static void record_head(uint8_t tag)
{
    flush_groups();
    record_head_raw(tag);
}

static void put_pc(uint64_t pc)
{
    put_signed((int64_t)(pc - last_pc));
    last_pc = pc;
}

static uint32_t spr(void *env, int n) { return *(uint32_t *)((char *)env + spr_offset + 4 * n); }
static uint32_t gpr(void *env, int n) { return ((uint32_t *)env)[n]; }

static void find_sprs(void *env)
{
    if (spr_offset >= 0) {
        return;
    }
    for (long off = 0; off < 256 * 1024; off += 4) {
        uint32_t pvr = *(uint32_t *)((char *)env + off + 4 * SPR_PVR);
        uint32_t cfg = *(uint32_t *)((char *)env + off + 4 * SPR_TLB0CFG);
        if ((pvr & PVR_E500V2_MASK) == PVR_E500V2 && (cfg & 0xFFF) == 512 && (cfg >> 24) == 4) {
            spr_offset = off;
            return;
        }
    }
    fprintf(stderr, "e500rec: cannot find the SPR array in the vCPU state (not e500v2 on x86-64?)\n");
    exit(1);
}

/* Called by the trampolines below with QEMU's env pointer as third argument. */
struct priv_site { uint64_t pc; uint32_t word; bool gprs_known; };

__attribute__((used)) void on_priv(unsigned vcpu, void *udata, void *env)
{
    struct priv_site *s = udata;
    uint32_t w = s->word;
    unsigned op = w >> 26, xo = (w >> 1) & 0x3FF;
    unsigned rs = (w >> 21) & 31, ra = (w >> 16) & 31, rb = (w >> 11) & 31;
    uint32_t vals[5];
    int n = 0;
    bool unknown = false;
    find_sprs(env);
    if (op == 19 && xo == 50) {                 /* rfi: where it returns to */
        vals[n++] = spr(env, SPR_SRR0);
        vals[n++] = spr(env, SPR_SRR1);
    } else if (op == 19 && xo == 51) {          /* rfci */
        vals[n++] = spr(env, SPR_CSRR0);
        vals[n++] = spr(env, SPR_CSRR1);
    } else if (op == 31 && (xo == 146 || xo == 467 || xo == 131)) { /* mtmsr, mtspr, wrtee */
        if (s->gprs_known) {
            vals[n++] = gpr(env, rs);
        } else {
            unknown = true;
        }
    } else if (op == 31 && (xo == 914 || xo == 786)) { /* tlbsx, tlbivax: effective address */
        if (s->gprs_known) {
            vals[n++] = (ra ? gpr(env, ra) : 0) + gpr(env, rb);
        } else {
            unknown = true;
        }
    } else if (op == 31 && xo == 978) {         /* tlbwe: the MAS registers it writes */
        vals[n++] = spr(env, SPR_MAS0);
        vals[n++] = spr(env, SPR_MAS1);
        vals[n++] = spr(env, SPR_MAS2);
        vals[n++] = spr(env, SPR_MAS3);
        vals[n++] = spr(env, SPR_MAS7);
    }
    record_head(TAG_PRIV);
    put_pc(s->pc);
    put_u32le(w);
    put_u8(n | (unknown ? 0x80 : 0));
    for (int i = 0; i < n; i++) {
        put_varint(vals[i]);
    }
}

__attribute__((used)) void on_user_sc(unsigned vcpu, void *udata, void *env)
{
    struct priv_site *s = udata;
    record_head(TAG_USER_SC);
    put_pc(s->pc);
    put_varint(s->gprs_known ? gpr(env, 0) : 0xFFFFFFFFu);
}

__attribute__((used)) void on_vector(unsigned vcpu, void *udata, void *env)
{
    struct vector *v = udata;
    bool by_branch = branch_to_vector == v->pc;
    branch_to_vector = 0;
    find_sprs(env);
    record_head(TAG_EXC);
    put_u8(v->kind | (by_branch ? 0x80 : 0));
    put_pc(v->pc);
    bool critical = v->kind == 0 || v->kind == 12 || v->kind == 15;
    put_varint(spr(env, critical ? SPR_CSRR0 : SPR_SRR0));
    put_varint(spr(env, critical ? SPR_CSRR1 : SPR_SRR1));
    put_varint(spr(env, SPR_DEAR));
    put_varint(spr(env, SPR_ESR));
}

__attribute__((used)) void on_branch_to_vector(unsigned vcpu, void *udata, void *env)
{
    branch_to_vector = (uintptr_t)udata;
}

__attribute__((used)) void on_mark(unsigned vcpu, void *udata, void *env)
{
    struct priv_site *s = udata;
    uint32_t r3 = gpr(env, 3);
    if (!s->gprs_known || (r3 & 0xFFFF0000u) != MARK_MAGIC) {
        fprintf(stderr, "e500rec: phase marker at %#lx without the magic in r3 (%#x); "
                "markers must start a translation block (see userland/phases.h)\n",
                (unsigned long)s->pc, r3);
        exit(1);
    }
    if ((r3 & 0xFFFF) == BOOT_END_MARK) {
        /* The end of the boot, once: the guest's `vmlab-mark boot` at the login shell. */
        if (!boot_end_seen) {
            boot_end_seen = true;
            record_head(TAG_BOOT_END);
            put_pc(s->pc);
        }
        return;
    }
    record_head(TAG_MARK);
    put_varint(r3 & 0xFFFF);
}

static void on_mem(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
    uint64_t pc = (uintptr_t)udata;
    uint8_t tag = TAG_MEM | (qemu_plugin_mem_is_store(info) ? 0x08 : 0) |
                  (qemu_plugin_mem_size_shift(info) & 3);
    for (int i = n_groups - 1; i >= 0; i--) {
        struct mem_group *g = &groups[i];
        if (g->pc == pc && g->tag == tag && (g->vaddr >> 12) == (vaddr >> 12)) {
            g->count++;
            return;
        }
    }
    if (n_groups == MAX_GROUPS) {
        flush_groups();
    }
    struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
    struct mem_group *g = &groups[n_groups++];
    g->pc = pc;
    g->vaddr = vaddr;
    g->paddr = hw ? qemu_plugin_hwaddr_phys_addr(hw) : 0;
    g->count = 1;
    g->tag = tag;
}

/* Trampolines: pass %rbp (QEMU's env pointer at a direct call from generated code). */
#define TRAMPOLINE(name, target)                                                   \
    void name(unsigned, void *);                                                   \
    __asm__(".text\n.type " #name ",@function\n" #name ":\n"                       \
            "\tmovq %rbp, %rdx\n\tjmp " #target "\n");
TRAMPOLINE(tr_priv, on_priv)
TRAMPOLINE(tr_user_sc, on_user_sc)
TRAMPOLINE(tr_vector, on_vector)
TRAMPOLINE(tr_branch_to_vector, on_branch_to_vector)
TRAMPOLINE(tr_mark, on_mark)

/* Kernel code: the linear map, and the first 16 KiB where head_85xx.S starts before it
 * switches to KERNEL_BASE. User programs are linked far above. */
static bool is_kernel(uint64_t pc) { return pc >= KERNEL_BASE || pc < 0x4000; }

static bool is_privileged(uint32_t w)
{
    unsigned op = w >> 26, xo = (w >> 1) & 0x3FF;
    if (op == 19) {
        return xo == 50 || xo == 51 || xo == 38 || xo == 39; /* rfi rfci rfmci rfdi */
    }
    if (op != 31) {
        return false;
    }
    switch (xo) {
    case 83: case 146: case 131: case 163:          /* mfmsr mtmsr wrtee wrteei */
    case 978: case 946: case 914: case 786: case 566: /* tlbwe tlbre tlbsx tlbivax tlbsync */
    case 470: case 334: case 462:                    /* dcbi mfpmr mtpmr */
        return true;
    case 339: case 467: {                            /* mfspr mtspr */
        unsigned sprn = ((w >> 16) & 31) | (((w >> 11) & 31) << 5);
        return (sprn & 0x10) != 0;                   /* Book E: SPR bit 5 set = privileged */
    }
    }
    return false;
}

static struct vector *vector_at(uint64_t pc)
{
    for (int i = 0; i < n_vectors; i++) {
        if (vectors[i].pc == pc) {
            return &vectors[i];
        }
    }
    return NULL;
}

/* QEMU 7.2 calls plugin callbacks without writing TCG's cached guest registers back to
 * env, so a GPR read in a callback is only current if no instruction since the start of
 * the TB, or since the last D-form load/store (TCG syncs registers before every memory
 * op), may have written it. Conservatively, an instruction may write the registers named
 * in its bits 6-10 and 11-15; lmw (opcode 46) may write any. */
static uint32_t may_write(uint32_t w)
{
    unsigned op = w >> 26;
    if (op == 46) {
        return 0xFFFFFFFFu;
    }
    return 1u << ((w >> 21) & 31) | 1u << ((w >> 16) & 31);
}
static bool is_dform_mem(uint32_t w)
{
    unsigned op = w >> 26;
    return op >= 32 && op <= 55;
}

static struct priv_site *site(uint64_t pc, uint32_t w, bool known)
{
    struct priv_site *s = malloc(sizeof *s);
    s->pc = pc;
    s->word = w;
    s->gprs_known = known;
    return s;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
    size_t n = qemu_plugin_tb_n_insns(tb);
    uint32_t dirty = 0;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        const uint8_t *d = qemu_plugin_insn_data(insn);
        uint32_t w = (uint32_t)d[0] << 24 | d[1] << 16 | d[2] << 8 | d[3];
        bool kernel = is_kernel(pc);
        if (is_dform_mem(w)) {
            dirty = 0;
        }
        uint32_t read = 1u << ((w >> 21) & 31) | 1u << ((w >> 16) & 31) | 1u << ((w >> 11) & 31);
        bool known = (dirty & read) == 0;
        dirty |= may_write(w);
        qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64,
                                                   kernel ? &insns_kernel : &insns_user, 1);
        if (w == MARK_WORD) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, tr_mark, QEMU_PLUGIN_CB_R_REGS,
                                                   site(pc, w, known));
        }
        if (!kernel) {
            if ((w & 0xFC000002u) == 0x44000002u) { /* sc */
                qemu_plugin_register_vcpu_insn_exec_cb(insn, tr_user_sc, QEMU_PLUGIN_CB_R_REGS,
                                                       site(pc, w, known));
            }
            continue;
        }
        struct vector *v = vector_at(pc);
        if (v) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, tr_vector, QEMU_PLUGIN_CB_R_REGS, v);
        }
        if ((w >> 26) == 18 && (w & 3) == 0) {  /* b: relative, no link */
            int32_t off = (int32_t)(w << 6) >> 6 & ~3;
            uint64_t target = (uint32_t)(pc + off);
            if (vector_at(target)) {
                qemu_plugin_register_vcpu_insn_exec_cb(insn, tr_branch_to_vector,
                                                       QEMU_PLUGIN_CB_R_REGS,
                                                       (void *)(uintptr_t)target);
            }
        }
        if (is_privileged(w)) {
            qemu_plugin_register_vcpu_insn_exec_cb(insn, tr_priv, QEMU_PLUGIN_CB_R_REGS,
                                                   site(pc, w, known));
        }
        qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
                                         (void *)(uintptr_t)pc);
    }
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
    flush_groups();
    put_u8(TAG_END);
    put_varint(n_records);
    put_varint(insns_user);
    put_varint(insns_kernel);
    uint32_t final = crc ^ 0xFFFFFFFFu;
    put_u32le(final);
    if (pclose(out) != 0) {
        fprintf(stderr, "e500rec: zstd failed\n");
    }
    char msg[160];
    snprintf(msg, sizeof msg, "e500rec: %lu records, %lu user + %lu kernel instructions\n",
             (unsigned long)n_records, (unsigned long)insns_user, (unsigned long)insns_kernel);
    qemu_plugin_outs(msg);
}

/* Exception vectors by their head_85xx.S names; the kind is the IVOR number. */
static const struct { const char *name; int kind; } vector_names[] = {
    { "CriticalInput", 0 }, { "MachineCheck", 1 }, { "DataStorage", 2 },
    { "InstructionStorage", 3 }, { "ExternalInput", 4 }, { "Alignment", 5 },
    { "Program", 6 }, { "FloatingPointUnavailable", 7 }, { "SystemCall", 8 },
    { "AuxillaryProcessorUnavailable", 9 }, { "Decrementer", 10 },
    { "FixedIntervalTimer", 11 }, { "WatchdogTimer", 12 }, { "DataTLBError", 13 },
    { "InstructionTLBError", 14 }, { "DebugCrit", 15 }, { "SPEUnavailable", 32 },
    { "SPEFloatingPointData", 33 }, { "SPEFloatingPointRound", 34 },
    { "PerformanceMonitor", 35 },
};

static void load_map(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "e500rec: cannot read System.map %s\n", path);
        exit(1);
    }
    char line[512], name[400], type;
    unsigned long addr;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx %c %399s", &addr, &type, name) != 3) {
            continue;
        }
        if (!strcmp(name, "_stext")) {
            text_start = addr;
        } else if (!strcmp(name, "_etext")) {
            text_end = addr;
        }
        for (size_t i = 0; i < sizeof vector_names / sizeof vector_names[0]; i++) {
            if (!strcmp(name, vector_names[i].name) && n_vectors < 64) {
                vectors[n_vectors].pc = addr;
                vectors[n_vectors].kind = vector_names[i].kind;
                n_vectors++;
            }
        }
    }
    fclose(f);
    if (n_vectors < 16 || !text_start || !text_end) {
        fprintf(stderr, "e500rec: %s lacks the exception vectors or _stext/_etext\n", path);
        exit(1);
    }
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                           int argc, char **argv)
{
    const char *path = NULL, *map = NULL, *phases = NULL, *meta = NULL;
    const char *level = "12";
    for (int i = 0; i < argc; i++) {
        if (!strncmp(argv[i], "out=", 4)) {
            path = argv[i] + 4;
        } else if (!strncmp(argv[i], "map=", 4)) {
            map = argv[i] + 4;
        } else if (!strncmp(argv[i], "phases=", 7)) {
            phases = argv[i] + 7;
        } else if (!strncmp(argv[i], "meta=", 5)) {
            meta = argv[i] + 5;
        } else if (!strncmp(argv[i], "zstd=", 5)) {
            level = argv[i] + 5;
        } else {
            fprintf(stderr, "e500rec: unknown argument %s (out= map= phases= meta= zstd=)\n", argv[i]);
            return -1;
        }
    }
    if (!path || !map || strcmp(info->target_name, "ppc") || !info->system_emulation) {
        fprintf(stderr, "e500rec: needs out= and map=, on qemu-system-ppc\n");
        return -1;
    }
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        crc_table[i] = c;
    }
    load_map(map);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "zstd -q -f -%s -o '%s'", level, path);
    out = popen(cmd, "w");
    if (!out) {
        fprintf(stderr, "e500rec: cannot start %s\n", cmd);
        return -1;
    }
    setvbuf(out, NULL, _IOFBF, 1 << 20);
    put(TRACE_MAGIC, 8);
    put_u32le(TRACE_VERSION);
    put_blob(meta);
    put_blob(map);
    put_blob(phases);
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
