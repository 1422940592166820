//! The `sigsys` stub: a SIGSYS handler that runs inside each guest process, copied there by the
//! guest kernel at every exec.
//!
//! It is position-independent machine code (assembled into this binary between two symbols and
//! copied byte for byte) that uses no libc, no thread-local storage and no stack beyond the
//! signal frame. On a SIGSYS from the seccomp filter it hands the call to the guest kernel
//! through its process's *channel*, a shared page, and puts the answer in the interrupted
//! context's `rax`:
//!
//! 1. the channel's address is in the stub's data page; the data page is wiped in a forked
//!    child (MADV_WIPEONFORK), so a process without one makes its own: memfd_create, ftruncate,
//!    mmap shared, then registers it with a `prctl(REGISTER, fd, address)` that the notify filter
//!    sends to the guest kernel (which takes the descriptor from the process and maps it too);
//! 2. it takes the channel's lock (threads of one process share it), writes the call number and
//!    arguments, sets the state to REQUEST and wakes the guest kernel (futex);
//! 3. it waits (futex) for the state REPLY, copies the result, frees the channel and the lock.
//!
//! The id calls do not go round: getpid, getuid, geteuid, getgid and getegid are read from the
//! channel, where the guest kernel writes them at registration and after every call that
//! changes them (the stub only reads and counts), and getppid runs on the host from the stub's
//! page, which the first filter lets through (in the guest's pid namespace the host's answer is
//! the guest's, and stays right when a parent dies). With `--strace` the guest kernel turns this
//! off, so that it sees and prints every call.
//!
//! rt_sigprocmask and rt_sigaction(SIGSYS) are trapped too and answered by the stub alone:
//! the host kills a thread whose SIGSYS is blocked (or not handled) when the filter traps, so
//! the stub keeps SIGSYS out of the mask the interrupted context gets back at sigreturn and does
//! not let the guest replace the handler (C libraries block every signal around vfork and reset
//! every handler in the child). Their pointers are the guest's, possibly bad: the stub reads or
//! writes one only after the host has (rt_sigaction of SIGKILL reads a struct sigaction and
//! refuses, or writes SIGKILL's SIG_DFL one; rt_sigpending writes a set), so a bad pointer
//! fails the call with EFAULT, as natively.
//!
//! Every system call it makes (memfd_create, ftruncate, mmap, close, futex, getppid,
//! rt_sigaction of SIGKILL, rt_sigpending, rt_sigreturn) is
//! one any guest code may make; the only one the guest kernel acts on is the registration, which
//! it accepts only from the stub's code page and only for the calling process. So the stub needs
//! no privilege, and a guest that rewrites it, replaces the handler or forges a channel can lie
//! only to itself: the calls trapped this way are the ones the guest kernel answers entirely by
//! itself (ids, uname), never ones it runs on the host.

use std::arch::global_asm;

/// Where the guest kernel maps the stub in every guest process (code page, then data page).
pub(crate) const BASE: u64 = 0x3e5a_0000_0000;
/// The stub's code page and data page, in bytes.
pub(crate) const LEN: u64 = 0x2000;
/// The data page: the channel's address (u64) at offset 0; the injector's scratch after it.
pub(crate) const DATA: u64 = BASE + 0x1000;
/// The `prctl` option with which the stub registers its process's channel.
pub(crate) const REGISTER: u64 = 0x766d_6c62;

/// Channel layout (shared with the guest kernel): lock u32 (the stub's own), state u32, nr u64,
/// 6 args, result; then what the stub answers by itself: whether it may (u32), how many calls
/// it answered (u64), and the process's guest pid, uid, euid, gid and egid (u64 each).
pub(crate) const CH_STATE: usize = 4;
pub(crate) const CH_NR: usize = 8;
pub(crate) const CH_ARGS: usize = 16;
pub(crate) const CH_RESULT: usize = 64;
pub(crate) const CH_LOCAL: usize = 72;
pub(crate) const CH_COUNT: usize = 80;
pub(crate) const CH_PID: usize = 88;
pub(crate) const CH_IDS: usize = 96;
/// Channel states (idle is 0).
pub(crate) const REQUEST: u32 = 1;
pub(crate) const REPLY: u32 = 2;

// ucontext_t on x86-64: uc_mcontext.gregs starts at byte 40; R8=0 R9=1 R10=2 RDI=8 RSI=9
// RDX=12 RAX=13. siginfo_t's si_syscall (SIGSYS) is at byte 24.
global_asm!(
    ".pushsection .text.vmlab_stub,\"ax\",@progbits",
    ".p2align 4",
    ".globl vmlab_stub_start",
    "vmlab_stub_start:",
    "    mov r12, rsi",
    "    mov r13, rdx",
    // A call of the i386 ABI (`int 0x80`; si_arch, byte 28, AUDIT_ARCH_I386), which syscall
    // user dispatch sends here too: its numbers mean other calls, so it is refused (ENOSYS)
    // rather than run as the x86-64 call with the same number.
    "    cmp dword ptr [r12 + 28], 0x40000003",
    "    jne 1f",
    "    mov qword ptr [r13 + 144], -38",
    "    ret",
    "1:",
    "    lea r14, [rip + vmlab_stub_start]",
    "    add r14, 0x1000",
    // The signal-mask calls are answered here, in the process, on the mask the interrupted
    // context gets back at sigreturn (uc_sigmask, byte 296): SIGSYS must never be blocked.
    "    mov eax, [r12 + 24]",
    "    cmp eax, 14",
    "    je 20f",
    // si_code SYS_USER_DISPATCH (2): syscall user dispatch sent every call here.
    "    cmp dword ptr [r12 + 8], 2",
    "    je 50f",
    "    cmp eax, 13",
    "    je 10f",
    "40:",
    "    mov r15, [r14]",
    "    test r15, r15",
    "    jnz 3f",
    // No channel in this process yet: make and register one.
    "    lea rdi, [rip + 9f]",
    // MFD_CLOEXEC | MFD_ALLOW_SEALING: the guest kernel seals it against shrinking.
    "    mov esi, 3",
    "    mov eax, 319",
    "    syscall",
    "    test rax, rax",
    "    js 8f",
    "    mov rbx, rax",
    "    mov rdi, rbx",
    "    mov esi, 4096",
    "    mov eax, 77",
    "    syscall",
    "    test rax, rax",
    "    jnz 7f",
    "    xor edi, edi",
    "    mov esi, 4096",
    "    mov edx, 3",
    "    mov r10d, 1",
    "    mov r8, rbx",
    "    xor r9d, r9d",
    "    mov eax, 9",
    "    syscall",
    "    cmp rax, -4095",
    "    jae 7f",
    "    mov r15, rax",
    "    mov edi, 0x766d6c62",
    "    mov rsi, rbx",
    "    mov rdx, r15",
    "    xor r10d, r10d",
    "    xor r8d, r8d",
    "    mov eax, 157",
    "    syscall",
    "    mov rbp, rax",
    "    mov rdi, rbx",
    "    mov eax, 3",
    "    syscall",
    "    test rbp, rbp",
    "    jnz 8f",
    "    mov [r14], r15",
    // The id calls are answered here from the channel, where the guest kernel keeps this
    // process's ids (unless it asked to see every call: --strace); getppid runs on the host
    // from this page, which the filter lets through: in the guest's pid namespace the host's
    // answer is the guest's, reparenting included.
    "3:",
    "    mov eax, [r12 + 24]",
    "    cmp dword ptr [r15 + 72], 0",
    "    je 30f",
    "    mov ecx, 88",
    "    cmp eax, 39",
    "    je 48f",
    "    mov ecx, 96",
    "    cmp eax, 102",
    "    je 48f",
    "    mov ecx, 104",
    "    cmp eax, 107",
    "    je 48f",
    "    mov ecx, 112",
    "    cmp eax, 104",
    "    je 48f",
    "    mov ecx, 120",
    "    cmp eax, 108",
    "    je 48f",
    "    cmp eax, 110",
    "    jne 30f",
    "    syscall",
    "    jmp 49f",
    "48:",
    "    mov rax, [r15 + rcx]",
    "49:",
    "    lock inc qword ptr [r15 + 80]",
    "    mov [r13 + 144], rax",
    "    ret",
    // Take the lock (0 -> 1), waiting on it while another thread holds it.
    "30:",
    "    xor eax, eax",
    "    mov ecx, 1",
    "    lock cmpxchg [r15], ecx",
    "    jz 4f",
    "    mov rdi, r15",
    "    xor esi, esi",
    "    mov edx, 1",
    "    xor r10d, r10d",
    "    mov eax, 202",
    "    syscall",
    "    jmp 30b",
    "4:",
    "    mov eax, [r12 + 24]",
    "    mov [r15 + 8], rax",
    "    mov rax, [r13 + 104]",
    "    mov [r15 + 16], rax",
    "    mov rax, [r13 + 112]",
    "    mov [r15 + 24], rax",
    "    mov rax, [r13 + 136]",
    "    mov [r15 + 32], rax",
    "    mov rax, [r13 + 56]",
    "    mov [r15 + 40], rax",
    "    mov rax, [r13 + 40]",
    "    mov [r15 + 48], rax",
    "    mov rax, [r13 + 48]",
    "    mov [r15 + 56], rax",
    "    mov dword ptr [r15 + 4], 1",
    "    lea rdi, [r15 + 4]",
    "    mov esi, 1",
    "    mov edx, 1",
    "    mov eax, 202",
    "    syscall",
    // Wait for the reply.
    "5:",
    "    cmp dword ptr [r15 + 4], 2",
    "    je 6f",
    "    lea rdi, [r15 + 4]",
    "    xor esi, esi",
    "    mov edx, 1",
    "    xor r10d, r10d",
    "    mov eax, 202",
    "    syscall",
    "    jmp 5b",
    "6:",
    "    mov rax, [r15 + 64]",
    "    mov [r13 + 144], rax",
    "    mov dword ptr [r15 + 4], 0",
    "    mov dword ptr [r15], 0",
    "    mov rdi, r15",
    "    mov esi, 1",
    "    mov edx, 1",
    "    mov eax, 202",
    "    syscall",
    "    ret",
    // Failure: close the descriptor if there is one, and fail the call with ENOSYS.
    "7:",
    "    mov rdi, rbx",
    "    mov eax, 3",
    "    syscall",
    "8:",
    "    mov qword ptr [r13 + 144], -38",
    "    ret",
    // rt_sigaction(SIGSYS, act, oldact, size): the guest's own SIGSYS disposition is not
    // installed; it reads back as SIG_DFL. The stub touches no guest pointer itself: the host
    // reads act (90) and writes oldact (SIGKILL's action, SIG_DFL), so a bad pointer fails
    // the call with EFAULT, as the host's own rt_sigaction would, instead of faulting here.
    "10:",
    "    cmp qword ptr [r13 + 56], 8",
    "    jne 29f",
    "    mov rsi, [r13 + 112]",
    "    test rsi, rsi",
    "    jz 11f",
    "    call 90f",
    "    test rax, rax",
    "    jnz 12f",
    "11:",
    "    xor eax, eax",
    "    mov rdx, [r13 + 136]",
    "    test rdx, rdx",
    "    jz 12f",
    "    mov edi, 9",
    "    xor esi, esi",
    "    mov r10d, 8",
    "    mov eax, 13",
    "    syscall",
    "12:",
    "    mov [r13 + 144], rax",
    "    ret",
    // rt_sigprocmask(how, set, oldset, size), checked in the host's order: the size, set read
    // (EFAULT), how (EINVAL), the new mask, oldset written (EFAULT, the mask changed all the
    // same). set is read only once the host has read it (92), and oldset written only once
    // the host has written it (rt_sigpending), so a bad pointer fails with EFAULT.
    "20:",
    "    cmp qword ptr [r13 + 56], 8",
    "    jne 29f",
    "    mov rbx, [r13 + 296]",
    "    mov rsi, [r13 + 112]",
    "    test rsi, rsi",
    "    jz 27f",
    "    call 92f",
    "    test rax, rax",
    "    jnz 28f",
    "    mov rsi, [r13 + 112]",
    "    mov r9, [rsi]",
    "    mov r8, rbx",
    "    mov rcx, [r13 + 104]",
    "    cmp rcx, 0",
    "    je 23f",
    "    cmp rcx, 1",
    "    je 24f",
    "    cmp rcx, 2",
    "    je 25f",
    "    jmp 29f",
    "23:",
    "    or r8, r9",
    "    jmp 26f",
    "24:",
    "    not r9",
    "    and r8, r9",
    "    jmp 26f",
    "25:",
    "    mov r8, r9",
    "26:",
    // Never SIGSYS (bit 30), SIGKILL (8) or SIGSTOP (18).
    "    mov rcx, 0xffffffffbffbfeff",
    "    and r8, rcx",
    "    mov [r13 + 296], r8",
    "27:",
    "    xor eax, eax",
    "    mov rdi, [r13 + 136]",
    "    test rdi, rdi",
    "    jz 28f",
    "    mov esi, 8",
    "    mov eax, 127",
    "    syscall",
    "    test rax, rax",
    "    jnz 28f",
    "    mov rdi, [r13 + 136]",
    "    mov [rdi], rbx",
    "28:",
    "    mov [r13 + 144], rax",
    "    ret",
    "29:",
    "    mov qword ptr [r13 + 144], -22",
    "    ret",
    // Syscall user dispatch: the calls the guest kernel answers go the channel way (above);
    // every other call runs here, from this page, which dispatch lets through (and the seccomp
    // filter below still sees), with the interrupted context's arguments and signal mask.
    "50:",
    "    cmp eax, 13",
    "    je 55f",
    "    cmp eax, 15",
    "    je 60f",
    "    cmp eax, 56",
    "    je 70f",
    "    cmp eax, 58",
    "    je 75f",
    "    cmp eax, 512",
    "    jae 52f",
    "    lea rcx, [rip + vmlab_stub_trapped]",
    "    bt dword ptr [rcx], eax",
    "    jc 40b",
    // Run call eax under the guest's signal mask (a blocking call stays interruptible; the
    // mask comes back from the context at sigreturn anyway).
    "52:",
    "    mov ebx, eax",
    "    call 58f",
    "    mov eax, ebx",
    "    mov rdi, [r13 + 104]",
    "    mov rsi, [r13 + 112]",
    "    mov rdx, [r13 + 136]",
    "    mov r10, [r13 + 56]",
    "    mov r8, [r13 + 40]",
    "    mov r9, [r13 + 48]",
    "    syscall",
    ".globl vmlab_stub_site_call",
    "vmlab_stub_site_call:",
    "    mov [r13 + 144], rax",
    "    ret",
    // rt_sigaction: SIGSYS as above; any other signal with SIGSYS taken out of its handler's
    // mask (the host kills a thread whose SIGSYS is blocked when it dispatches).
    // The handler's mask is copied from act once the host has read act (90): a bad act fails
    // with EFAULT; a bad size goes to the host as it is (EINVAL there).
    "55:",
    "    cmp dword ptr [r13 + 104], 31",
    "    je 10b",
    "    mov rsi, [r13 + 112]",
    "    test rsi, rsi",
    "    jz 52b",
    "    cmp qword ptr [r13 + 56], 8",
    "    jne 52b",
    "    call 90f",
    "    test rax, rax",
    "    jnz 56f",
    "    mov rsi, [r13 + 112]",
    "    sub rsp, 32",
    "    mov rax, [rsi]",
    "    mov [rsp], rax",
    "    mov rax, [rsi + 8]",
    "    mov [rsp + 8], rax",
    "    mov rax, [rsi + 16]",
    "    mov [rsp + 16], rax",
    "    mov rax, [rsi + 24]",
    "    btr rax, 30",
    "    mov [rsp + 24], rax",
    "    call 58f",
    "    mov rdi, [r13 + 104]",
    "    mov rsi, rsp",
    "    mov rdx, [r13 + 136]",
    "    mov r10, [r13 + 56]",
    "    mov eax, 13",
    "    syscall",
    ".globl vmlab_stub_site_sigaction",
    "vmlab_stub_site_sigaction:",
    "    add rsp, 32",
    "56:",
    "    mov [r13 + 144], rax",
    "    ret",
    // rt_sigprocmask(SIG_SETMASK, the context's mask, NULL, 8).
    "58:",
    "    mov edi, 2",
    "    lea rsi, [r13 + 296]",
    "    xor edx, edx",
    "    mov r10d, 8",
    "    mov eax, 14",
    "    syscall",
    "    ret",
    // rt_sigreturn of a guest handler: from the guest's own frame, here.
    "60:",
    "    mov rsp, [r13 + 160]",
    "    mov eax, 15",
    "    syscall",
    // clone with CLONE_VM and a stack: the child must not come back through this signal frame
    // (its parent's, which the parent is about to leave). The context it starts from goes
    // below its stack, signals stay blocked until it has moved below that, then it takes the
    // guest's mask and registers and jumps to where the call was made.
    // A stack whose 104 bytes below cannot be written (72 probes the lowest and the highest
    // word) would fault here, in the parent. Natively the child would fault at its first use
    // of that stack: so the clone goes ahead with a stack pointer in the kernel's half of the
    // address space instead (73; a non-canonical one would raise SIGBUS, not SIGSEGV), and the
    // child, at 71, faults on its first read of it, before it runs anything else.
    "70:",
    "    mov rcx, [r13 + 104]",
    "    test ecx, 0x100",
    "    jz 52b",
    "    mov rsi, [r13 + 112]",
    "    test rsi, rsi",
    "    jz 52b",
    "    lea rdx, [rsi - 104]",
    "    call 72f",
    "    jnz 73f",
    "    mov rdx, [r13 + 112]",
    "    sub rdx, 8",
    "    call 72f",
    "    jnz 73f",
    "    mov rsi, [r13 + 112]",
    "    mov rax, [r13 + 168]",
    "    mov [rsi - 8], rax",
    "    mov rax, [r13 + 128]",
    "    mov [rsi - 16], rax",
    "    mov rax, [r13 + 120]",
    "    mov [rsi - 24], rax",
    "    mov rax, [r13 + 72]",
    "    mov [rsi - 32], rax",
    "    mov rax, [r13 + 80]",
    "    mov [rsi - 40], rax",
    "    mov rax, [r13 + 88]",
    "    mov [rsi - 48], rax",
    "    mov rax, [r13 + 96]",
    "    mov [rsi - 56], rax",
    "    mov rax, [r13 + 104]",
    "    mov [rsi - 64], rax",
    "    mov rax, [r13 + 136]",
    "    mov [rsi - 72], rax",
    "    mov rax, [r13 + 40]",
    "    mov [rsi - 80], rax",
    "    mov rax, [r13 + 48]",
    "    mov [rsi - 88], rax",
    "    mov rax, [r13 + 56]",
    "    mov [rsi - 96], rax",
    "    mov rax, [r13 + 296]",
    "    mov [rsi - 104], rax",
    "74:",
    "    mov eax, 56",
    "    mov rdi, [r13 + 104]",
    "    mov rdx, [r13 + 136]",
    "    mov r10, [r13 + 56]",
    "    mov r8, [r13 + 40]",
    "    mov r9, [r13 + 48]",
    "    syscall",
    ".globl vmlab_stub_site_clone",
    "vmlab_stub_site_clone:",
    "    test rax, rax",
    "    jz 71f",
    "    mov [r13 + 144], rax",
    "    ret",
    "71:",
    "    sub rsp, 128",
    "    mov edi, 2",
    "    lea rsi, [rsp + 24]",
    "    xor edx, edx",
    "    mov r10d, 8",
    "    mov eax, 14",
    "    syscall",
    "    mov rbx, [rsp + 112]",
    "    mov rbp, [rsp + 104]",
    "    mov r12, [rsp + 96]",
    "    mov r13, [rsp + 88]",
    "    mov r14, [rsp + 80]",
    "    mov r15, [rsp + 72]",
    "    mov rdi, [rsp + 64]",
    "    mov rdx, [rsp + 56]",
    "    mov r8, [rsp + 48]",
    "    mov r9, [rsp + 40]",
    "    mov r10, [rsp + 32]",
    "    mov rcx, [rsp + 120]",
    "    lea rsi, [rsp + 128]",
    "    mov rsp, rsi",
    "    xor eax, eax",
    "    jmp rcx",
    // rt_sigprocmask(SIG_BLOCK, NULL, rdx, 8): writes the mask, 8 bytes, at rdx or fails
    // with EFAULT, changing nothing; ZF is set when it wrote.
    "72:",
    "    xor edi, edi",
    "    xor esi, esi",
    "    mov r10d, 8",
    "    mov eax, 14",
    "    syscall",
    "    test rax, rax",
    "    ret",
    "73:",
    "    mov rsi, -4096",
    "    jmp 74b",
    // vfork: a child with its parent's memory would come back through the parent's signal
    // frame and overwrite it; clone(CLONE_VFORK | SIGCHLD) instead: the parent still waits
    // for the child's exec or exit, the child has a copy of the memory.
    "75:",
    "    call 58b",
    "    mov edi, 0x4011",
    "    xor esi, esi",
    "    xor edx, edx",
    "    xor r10d, r10d",
    "    xor r8d, r8d",
    "    mov eax, 56",
    "    syscall",
    ".globl vmlab_stub_site_vfork",
    "vmlab_stub_site_vfork:",
    "    mov [r13 + 144], rax",
    "    ret",
    // Whether the host can read the 32 bytes at rsi (a struct sigaction): rax 0, else
    // -EFAULT. rt_sigaction(SIGKILL, rsi, NULL, 8) reads them, then refuses with EINVAL:
    // SIGKILL's action never changes.
    "90:",
    "    mov edi, 9",
    "    xor edx, edx",
    "    mov r10d, 8",
    "    mov eax, 13",
    "    syscall",
    "    cmp rax, -14",
    "    je 91f",
    "    xor eax, eax",
    "91:",
    "    ret",
    // Whether the host can read the 8 bytes at rsi (a sigset_t): rax 0, else -EFAULT. Either
    // the 32 bytes from rsi or the 32 up to rsi + 8 lie in pages that hold those 8 (two page
    // boundaries never fall within 56 bytes), and neither window can be read if they cannot.
    "92:",
    "    mov rbp, rsi",
    "    call 90b",
    "    test rax, rax",
    "    jz 93f",
    "    lea rsi, [rbp - 24]",
    "    call 90b",
    "93:",
    "    ret",
    ".globl vmlab_stub_restorer",
    "vmlab_stub_restorer:",
    "    mov eax, 15",
    "    syscall",
    "9:",
    "    .asciz \"vmlab-sigsys\"",
    // Dispatch's selector: always "block" (the stub's own calls are in its allowed range).
    ".globl vmlab_stub_selector",
    "vmlab_stub_selector:",
    "    .byte 1",
    // One bit per call number below 512: the calls the guest kernel answers (filled in by the
    // guest kernel when it copies the stub).
    ".p2align 3",
    ".globl vmlab_stub_trapped",
    "vmlab_stub_trapped:",
    "    .zero 64",
    ".globl vmlab_stub_end",
    "vmlab_stub_end:",
    ".popsection",
);

extern "C" {
    static vmlab_stub_start: u8;
    static vmlab_stub_restorer: u8;
    static vmlab_stub_selector: u8;
    static vmlab_stub_trapped: u8;
    static vmlab_stub_end: u8;
    static vmlab_stub_site_call: u8;
    static vmlab_stub_site_sigaction: u8;
    static vmlab_stub_site_clone: u8;
    static vmlab_stub_site_vfork: u8;
}

/// Offsets in the stub's code just after the `syscall` instructions that run a guest's call
/// for dispatch (where a notification's instruction pointer is), as opposed to the stub's own.
pub(crate) fn guest_call_sites() -> [u64; 4] {
    let start = std::ptr::addr_of!(vmlab_stub_start) as u64;
    [
        std::ptr::addr_of!(vmlab_stub_site_call) as u64 - start,
        std::ptr::addr_of!(vmlab_stub_site_sigaction) as u64 - start,
        std::ptr::addr_of!(vmlab_stub_site_clone) as u64 - start,
        std::ptr::addr_of!(vmlab_stub_site_vfork) as u64 - start,
    ]
}

/// Offsets in the stub's code of dispatch's selector byte and of the trapped-calls bitmap.
pub(crate) fn data_offsets() -> (u64, u64) {
    let start = std::ptr::addr_of!(vmlab_stub_start) as u64;
    (std::ptr::addr_of!(vmlab_stub_selector) as u64 - start, std::ptr::addr_of!(vmlab_stub_trapped) as u64 - start)
}

/// The stub's machine code, and the offset of its signal restorer (rt_sigreturn) in it.
pub(crate) fn code() -> (&'static [u8], u64) {
    // SAFETY: the three symbols are labels in one contiguous section of this binary, in this
    // order; the bytes between them are the assembled stub, read-only.
    unsafe {
        let start = std::ptr::addr_of!(vmlab_stub_start);
        let end = std::ptr::addr_of!(vmlab_stub_end);
        let restorer = std::ptr::addr_of!(vmlab_stub_restorer);
        let len = end as usize - start as usize;
        (std::slice::from_raw_parts(start, len), (restorer as usize - start as usize) as u64)
    }
}
