//! The few BPF instructions the seccomp filters carry beyond what seccompiler builds from
//! rules (it compares system call numbers and arguments only), and where they go.

use libc as c;
use seccompiler::sock_filter;

/// Offsets in `struct seccomp_data`: the call's number and the two halves of the caller's
/// instruction pointer.
pub(super) const NR: u32 = 0;
pub(super) const IP_LOW: u32 = 8;
pub(super) const IP_HIGH: u32 = 12;

/// Load the 32-bit word at `offset` of seccomp_data.
pub(super) fn load(offset: u32) -> sock_filter {
    sock_filter { code: (c::BPF_LD | c::BPF_W | c::BPF_ABS) as u16, jt: 0, jf: 0, k: offset }
}

/// Compare the loaded word with `k` by `op` (JEQ, JGE, JSET, ...): skip `jt` instructions if
/// it holds, `jf` if not.
pub(super) fn jump(op: u32, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code: (c::BPF_JMP | op | c::BPF_K) as u16, jt, jf, k }
}

/// Return `action` (a SECCOMP_RET_* value).
pub(super) fn ret(action: u32) -> sock_filter {
    sock_filter { code: (c::BPF_RET | c::BPF_K) as u16, jt: 0, jf: 0, k: action }
}

/// Put `insns` into a program seccompiler built, right after its three-instruction
/// architecture check (seccompiler loads the number again after it, so they may leave any
/// value loaded).
pub(super) fn after_arch_check(prog: &mut Vec<sock_filter>, insns: Vec<sock_filter>) {
    prog.splice(3..3, insns);
}
