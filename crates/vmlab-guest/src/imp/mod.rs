//! The Linux x86-64 implementation: launching guest pid 1, the mechanisms, the guest kernel.

mod bpf;
mod exec;
mod kernel;
mod mem;
mod meta;
mod notify;
mod path;
mod sigsys;
mod strace;
mod stub;
mod trace;

use crate::{calls, Config, GuestError, Mechanism, Outcome};
use kernel::Kernel;
use libc as c;
use seccompiler::{sock_filter, BpfProgram, SeccompAction, SeccompFilter, TargetArch};
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

/// A signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) the guest kernel received, to pass on to the
/// whole guest.
pub(crate) static INTERRUPT: AtomicI32 = AtomicI32::new(0);

/// Which ptrace mechanism `trace.rs` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Style {
    Ptrace,
    Sysemu,
    SeccompTrace,
}

/// One way of trapping a guest's system calls: every mechanism runs a guest to completion,
/// delivering each trapped call to the same guest kernel.
pub(crate) trait Trap {
    /// Runs `argv` as guest pid 1 under `kernel` until it exits.
    fn run(&self, config: &Config, kernel: &mut Kernel, argv: &[OsString]) -> Result<Outcome, GuestError>;
}

impl Trap for Style {
    fn run(&self, config: &Config, kernel: &mut Kernel, argv: &[OsString]) -> Result<Outcome, GuestError> {
        trace::run(*self, config, kernel, argv)
    }
}

/// The module behind each mechanism.
fn trap(m: Mechanism) -> Box<dyn Trap> {
    match m {
        Mechanism::Ptrace => Box::new(Style::Ptrace),
        Mechanism::Sysemu => Box::new(Style::Sysemu),
        Mechanism::SeccompTrace => Box::new(Style::SeccompTrace),
        Mechanism::SeccompNotify => Box::new(notify::Notify),
        Mechanism::Sigsys => Box::new(sigsys::Sigsys { dispatch: false }),
        Mechanism::UserDispatch => Box::new(sigsys::Sigsys { dispatch: true }),
    }
}

/// Whether the host kernel offers the seccomp action `action`.
fn seccomp_action_available(action: u32) -> bool {
    // SAFETY: SECCOMP_GET_ACTION_AVAIL reads one u32 through the pointer, which is live.
    unsafe { c::syscall(c::SYS_seccomp, c::SECCOMP_GET_ACTION_AVAIL, 0, &action as *const u32) == 0 }
}

/// PR_SET_SYSCALL_USER_DISPATCH and its "on" operation.
pub(crate) const PR_SET_SYSCALL_USER_DISPATCH: u64 = 59;
pub(crate) const PR_SYS_DISPATCH_ON: u64 = 1;

/// Whether the host kernel has syscall user dispatch: turning it off (it is off) succeeds.
fn user_dispatch_available() -> bool {
    // SAFETY: PR_SYS_DISPATCH_OFF (0) with zero arguments changes nothing.
    unsafe { c::prctl(PR_SET_SYSCALL_USER_DISPATCH as c::c_int, 0, 0, 0, 0) == 0 }
}

/// Whether the host kernel has futex_waitv (Linux 5.16).
fn futex_waitv_available() -> bool {
    // SAFETY: zero waiters with null pointers: the kernel answers EINVAL if it has the call.
    let r = unsafe { c::syscall(449, 0usize, 0u32, 0u32, 0usize, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(c::ENOSYS)
}

pub(crate) fn check_host(m: Mechanism) -> Result<(), GuestError> {
    let need = |ok: bool, what: &str| {
        if ok {
            Ok(())
        } else {
            Err(GuestError::Usage(format!(
                "mechanism '{}' needs {what}, which this host kernel does not offer; valid mechanisms: {}",
                m.name(),
                Mechanism::names()
            )))
        }
    };
    let ptrace_ok = std::fs::read_to_string("/proc/sys/kernel/yama/ptrace_scope").map_or(true, |s| s.trim() != "3");
    match m {
        Mechanism::Ptrace | Mechanism::Sysemu => need(ptrace_ok, "ptrace"),
        Mechanism::SeccompTrace => {
            need(ptrace_ok, "ptrace")?;
            need(seccomp_action_available(c::SECCOMP_RET_TRACE), "seccomp SECCOMP_RET_TRACE")
        }
        Mechanism::SeccompNotify => {
            need(seccomp_action_available(c::SECCOMP_RET_USER_NOTIF), "seccomp SECCOMP_RET_USER_NOTIF")
        }
        Mechanism::Sigsys | Mechanism::UserDispatch => {
            need(ptrace_ok, "ptrace (to put the stub into each new program)")?;
            if m == Mechanism::UserDispatch {
                need(user_dispatch_available(), "syscall user dispatch (Linux 5.11)")?;
            } else {
                need(seccomp_action_available(c::SECCOMP_RET_TRAP), "seccomp SECCOMP_RET_TRAP")?;
            }
            need(seccomp_action_available(c::SECCOMP_RET_USER_NOTIF), "seccomp SECCOMP_RET_USER_NOTIF")?;
            need(futex_waitv_available(), "futex_waitv (Linux 5.16)")
        }
    }
}

extern "C" fn on_interrupt(sig: c::c_int) {
    INTERRUPT.store(sig, Ordering::SeqCst);
}

/// Passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to the guest: the handler records the
/// signal and interrupts the guest kernel's wait.
fn forward_interrupts() {
    for sig in [c::SIGINT, c::SIGTERM, c::SIGHUP, c::SIGQUIT] {
        // SAFETY: an all-zero sigaction is valid; the handler only stores to an atomic, which
        // is async-signal-safe. No SA_RESTART, so waitpid returns EINTR.
        unsafe {
            let mut sa: c::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_interrupt as extern "C" fn(c::c_int) as usize;
            c::sigemptyset(&mut sa.sa_mask);
            c::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

pub(crate) fn run(config: &Config, argv: &[OsString]) -> Result<Outcome, GuestError> {
    config.mechanism.check_host()?;
    if !config.root.is_dir() {
        return Err(GuestError::Usage(format!("guest root {} is not a directory", config.root.display())));
    }
    find_program(&config.root, &argv[0])?;
    refuse_host_views(&config.root)?;
    let mut kernel = Kernel::new(config).map_err(GuestError::Usage)?;
    // The guest's own SysV IPC (shared memory, semaphores, message queues) and POSIX message
    // queues, and unless asked otherwise its own network: the host's are out of its reach.
    // Every guest process inherits them.
    let net = if config.host_network { 0 } else { c::CLONE_NEWNET };
    // SAFETY: unshare takes integer flags; it changes the calling thread's namespaces only.
    if unsafe { c::unshare(c::CLONE_NEWIPC | net) } == 0 {
        if net != 0 {
            loopback_up()?;
        }
    } else if mem::errno() == c::EPERM {
        // Without the privilege (CAP_SYS_ADMIN) to make namespaces: the guest, which then
        // has no privilege over the host's network either, may not use SysV IPC or POSIX
        // message queues at all, which would be the host's.
        kernel.refuse_ipc = true;
    } else {
        return Err(GuestError::Host(format!(
            "cannot give the guest its own IPC and network namespaces (unshare): {}",
            std::io::Error::last_os_error()
        )));
    }
    if let Some(cpu) = config.cpu {
        pin(cpu)?;
    }
    forward_interrupts();
    trap(config.mechanism).run(config, &mut kernel, argv)
}

/// Brings up the loopback interface of the calling thread's (new) network namespace.
fn loopback_up() -> Result<(), GuestError> {
    let fail = |what: &str| {
        GuestError::Host(format!("cannot bring up the guest's loopback ({what}): {}", std::io::Error::last_os_error()))
    };
    // SAFETY: a datagram socket of our own; the ioctls read and write the live ifreq.
    unsafe {
        let s = c::socket(c::AF_INET, c::SOCK_DGRAM | c::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(fail("socket"));
        }
        let sock = OwnedFd::from_raw_fd(s);
        let mut ifr: c::ifreq = std::mem::zeroed();
        for (dst, &b) in ifr.ifr_name.iter_mut().zip(b"lo") {
            *dst = b as c::c_char;
        }
        if c::ioctl(sock.as_raw_fd(), c::SIOCGIFFLAGS, &mut ifr) != 0 {
            return Err(fail("SIOCGIFFLAGS"));
        }
        ifr.ifr_ifru.ifru_flags |= c::IFF_UP as c::c_short;
        if c::ioctl(sock.as_raw_fd(), c::SIOCSIFFLAGS, &ifr) != 0 {
            return Err(fail("SIOCSIFFLAGS"));
        }
    }
    Ok(())
}

/// Refuses a guest root (other than `/`) with a procfs or sysfs mounted anywhere inside it:
/// through it the guest would reach the host's /proc/sys, other processes' /proc entries and
/// /sys, which no path rule of the guest kernel virtualizes.
fn refuse_host_views(root: &Path) -> Result<(), GuestError> {
    let Ok(root) = root.canonicalize() else {
        return Ok(());
    };
    if root == Path::new("/") {
        return Ok(());
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for line in mounts.lines() {
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let Some(point) = left.split(' ').nth(4) else { continue };
        let fstype = right.split(' ').next().unwrap_or("");
        if !matches!(fstype, "proc" | "sysfs") {
            continue;
        }
        let point = PathBuf::from(unescape_mount(point));
        if point.starts_with(&root) {
            return Err(GuestError::Usage(format!(
                "the guest root has a {fstype} mounted at {}, which would give the guest the host's; unmount it",
                point.display()
            )));
        }
    }
    Ok(())
}

/// A mount point from /proc/self/mountinfo, whose spaces, tabs, newlines and backslashes are
/// octal escapes.
fn unescape_mount(s: &str) -> OsString {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|d| (b'0'..=b'7').contains(d)) {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    OsString::from_vec(out)
}

/// Pins the calling thread (and so everything it starts) to `cpu`.
pub(crate) fn pin(cpu: usize) -> Result<(), GuestError> {
    // SAFETY: an all-zero cpu_set_t is an empty set; CPU_SET and sched_setaffinity get valid
    // pointers to it.
    unsafe {
        let mut set: c::cpu_set_t = std::mem::zeroed();
        if cpu >= 1024 {
            return Err(GuestError::Usage(format!("no CPU {cpu}")));
        }
        c::CPU_SET(cpu, &mut set);
        if c::sched_setaffinity(0, std::mem::size_of::<c::cpu_set_t>(), &set) != 0 {
            return Err(GuestError::Usage(format!("cannot pin to CPU {cpu}: {}", std::io::Error::last_os_error())));
        }
    }
    Ok(())
}

/// Checks that `program` exists in the guest (a path inside the root, or a name on the
/// guest's PATH), so that a missing program is a usage error rather than status 127.
fn find_program(root: &Path, program: &OsString) -> Result<(), GuestError> {
    let name = program.as_bytes();
    let inside = |p: &Path| -> PathBuf {
        let rel = p.strip_prefix("/").unwrap_or(p);
        root.join(rel)
    };
    let found = if name.contains(&b'/') {
        let p = Path::new(program);
        if p.is_absolute() {
            inside(p).exists()
        } else {
            p.exists()
        }
    } else {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
        std::env::split_paths(&path).any(|d| inside(&d.join(program)).is_file())
    };
    if found {
        Ok(())
    } else {
        Err(GuestError::Usage(format!(
            "program '{}' not found in the guest (root {})",
            program.to_string_lossy(),
            root.display()
        )))
    }
}

/// The seccomp filter of a mechanism: `action` for every call the guest kernel must see (all
/// with `all`) but those in `pass`, allow for the rest.
pub(crate) fn filter(
    kernel: &Kernel,
    all: bool,
    pass: &[i64],
    action: SeccompAction,
) -> Result<Vec<sock_filter>, GuestError> {
    // seccomp-trace under a root: the calls that could unmap, remap or re-protect the
    // read-only scratch pages stop too, so that the guest kernel can refuse them there.
    let mut extra: Vec<i64> = Vec::new();
    if kernel.root.is_some() {
        extra.extend(MEMORY_CALLS);
    }
    if kernel.refuse_ipc {
        extra.extend(calls::IPC_CALLS);
    }
    // rt_sigtimedwait's siginfo names the sender by its host pid; under a root, the peer
    // addresses of sockets bound in it name host paths.
    let mut when_set = vec![(c::SYS_rt_sigtimedwait, Some(1))];
    if kernel.root.is_some() {
        when_set.extend(PEER_ADDRESS_CALLS);
    }
    // A CPU-time clock id names a process or thread by its pid (a negative id).
    filter_rules(kernel, all, pass, false, &extra, &when_set, &calls::CLOCK_CALLS, action)
}

/// The calls that return a peer's socket address ([`calls::is_peer_address_call`]), and the
/// argument that must be set for them to (none: the address is in memory): seccomp-trace
/// stops them under a root so that the guest kernel can make an AF_UNIX path in it a guest
/// path.
const PEER_ADDRESS_CALLS: [(i64, Option<u32>); 5] = [
    (c::SYS_accept, Some(1)),
    (c::SYS_accept4, Some(1)),
    (c::SYS_recvfrom, Some(4)),
    (c::SYS_recvmsg, None),
    (c::SYS_recvmmsg, None),
];

/// The calls that change a mapping, which a guest could use on the guest kernel's scratch.
const MEMORY_CALLS: [i64; 8] = [
    c::SYS_mmap,
    c::SYS_munmap,
    c::SYS_mprotect,
    c::SYS_pkey_mprotect,
    c::SYS_madvise,
    c::SYS_mremap,
    c::SYS_remap_file_pages,
    c::SYS_shmat,
];

/// [`filter`], where `clone_ns_only` stops only the clones that ask for a new namespace (the
/// guest kernel refuses those) and lets every other clone run unstopped. For the notify
/// mechanisms: a notified call that a signal interrupts before the supervisor answers returns
/// ERESTARTSYS, which a handler without SA_RESTART turns into EINTR, so a shell's fork could
/// fail with EINTR when its previous child's SIGCHLD arrived, as native fork never does.
pub(crate) fn filter_with(
    kernel: &Kernel,
    all: bool,
    pass: &[i64],
    clone_ns_only: bool,
    action: SeccompAction,
) -> Result<Vec<sock_filter>, GuestError> {
    filter_rules(kernel, all, pass, clone_ns_only, &[], &[], &[], action)
}

/// [`filter_with`], trapping the calls in `extra` too, those in `when_set` when the argument
/// named with them (if any) is not zero, and those in `negative` when their first argument,
/// as a 32-bit int, is negative.
#[allow(clippy::too_many_arguments)]
fn filter_rules(
    kernel: &Kernel,
    all: bool,
    pass: &[i64],
    clone_ns_only: bool,
    extra: &[i64],
    when_set: &[(i64, Option<u32>)],
    negative: &[i64],
    action: SeccompAction,
) -> Result<Vec<sock_filter>, GuestError> {
    use seccompiler::{SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule};
    let rooted = kernel.root.is_some();
    let mut rules = BTreeMap::new();
    // Numbers past the known ones are refused too, up to 511 (the x86-64 table ends near 470;
    // a filter of every number up to 1024 would pass the kernel's 4096-instruction limit).
    for nr in 0..512 {
        let known = (nr as usize) < crate::sysnames::NAMES.len() && !crate::sysnames::NAMES[nr as usize].is_empty();
        if (known || nr >= crate::sysnames::NAMES.len() as i64)
            && calls::needs_trap(nr, rooted, all)
            && !pass.contains(&nr)
            || extra.contains(&nr)
        {
            rules.insert(nr, Vec::new());
        }
    }
    for &(nr, arg) in when_set {
        if rules.contains_key(&nr) {
            continue;
        }
        let rule = match arg {
            None => Vec::new(),
            Some(i) => vec![SeccompCondition::new(i as u8, SeccompCmpArgLen::Qword, SeccompCmpOp::Ne, 0)
                .and_then(|c| SeccompRule::new(vec![c]))
                .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?],
        };
        rules.insert(nr, rule);
    }
    for &nr in negative {
        if rules.contains_key(&nr) {
            continue;
        }
        let sign = 0x8000_0000;
        let rule = SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(sign), sign)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
        rules.insert(nr, vec![rule]);
    }
    if !all {
        let mut ioctl_rules = Vec::new();
        for req in calls::REFUSED_IOCTLS {
            let rule = SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, u64::from(req))
                .and_then(|c| SeccompRule::new(vec![c]))
                .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
            ioctl_rules.push(rule);
        }
        rules.insert(c::SYS_ioctl, ioctl_rules);
    }
    if clone_ns_only && !all && rules.contains_key(&c::SYS_clone) {
        let flags = [
            c::CLONE_NEWNS,
            c::CLONE_NEWPID,
            c::CLONE_NEWUSER,
            c::CLONE_NEWNET,
            c::CLONE_NEWUTS,
            c::CLONE_NEWIPC,
            c::CLONE_NEWCGROUP,
        ];
        let mut ns_rules = Vec::new();
        for flag in flags {
            let flag = flag as u64;
            let cond = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::MaskedEq(flag), flag)
                .and_then(|c| SeccompRule::new(vec![c]))
                .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
            ns_rules.push(cond);
        }
        rules.insert(c::SYS_clone, ns_rules);
    }
    let to_kernel = u32::from(action.clone());
    let f = SeccompFilter::new(rules, SeccompAction::Allow, action, TargetArch::x86_64)
        .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
    let mut prog = BpfProgram::try_from(f).map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
    bpf::after_arch_check(&mut prog, x32_calls_to(to_kernel));
    Ok(prog)
}

/// BPF: return `action` for a call with an x32 number. The x32 ABI is the x86-64
/// architecture with bit 30 of the number set, so the architecture check lets it through,
/// and no rule names such a number: on a host kernel built with x32 support the call would
/// run unseen. The guest kernel refuses it (ENOSYS), as the ptrace mechanisms' does.
fn x32_calls_to(action: u32) -> Vec<sock_filter> {
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    vec![bpf::load(bpf::NR), bpf::jump(c::BPF_JSET, X32_SYSCALL_BIT, 0, 1), bpf::ret(action)]
}

/// How guest pid 1 starts.
pub(crate) enum Launch<'a> {
    /// Traced by the guest kernel (PTRACE_TRACEME), with a seccomp filter if given.
    Traced { filter: Option<&'a [sock_filter]> },
}

/// Installs `prog` as the calling thread's seccomp filter with `flags`; returns the seccomp
/// call's result. Async-signal-safe: no allocation.
pub(crate) fn install_filter(prog: &[sock_filter], flags: c::c_ulong) -> i64 {
    let fprog = c::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut c::sock_filter };
    // SAFETY: `fprog` points at `prog`, which is live and has the layout of struct sock_filter.
    unsafe {
        if c::prctl(c::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return -1;
        }
        c::syscall(c::SYS_seccomp, c::SECCOMP_SET_MODE_FILTER, flags, &fprog as *const c::sock_fprog)
    }
}

/// A Landlock ruleset (ABI 6, Linux 6.12) that scopes signals, and under a root abstract
/// AF_UNIX sockets, to the guest's domain; entering any Landlock domain also confines ptrace-mode
/// access (/proc/PID/mem, cwd, root, fd, ...) to processes inside it, so even with `--root /` a
/// guest cannot act on a host process through /proc. Under a root (`root`) it also handles every
/// file-system access right Landlock has and grants them all beneath the root only: whatever the
/// guest kernel's path handling misses (a path raced between check and use, a directory
/// descriptor received from outside, chroot's `..` from such a descriptor), the host refuses
/// to open, create, remove or rename anything outside the root. Nothing outside the root is
/// granted, not even the host's ELF interpreter: the ptrace mechanisms exec the root's
/// (`exec.rs`). None where the host lacks Landlock ABI 6: the guest kernel's own checks remain.
fn host_scope(root: Option<&Path>) -> Option<OwnedFd> {
    const LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1;
    const LANDLOCK_SCOPE_SIGNAL: u64 = 2;
    const LANDLOCK_RULE_PATH_BENEATH: u32 = 1;
    // SAFETY: a null attribute with the VERSION flag only asks for the ABI version.
    let abi = unsafe { c::syscall(c::SYS_landlock_create_ruleset, 0usize, 0usize, 1u32) };
    if abi < 6 {
        return None;
    }
    // Every access right of ABI 5 and later: execute ... refer, truncate, ioctl_dev.
    let fs_rights: u64 = if root.is_some() { (1 << 16) - 1 } else { 0 };
    let scoped = LANDLOCK_SCOPE_SIGNAL | if root.is_some() { LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET } else { 0 };
    let attr: [u64; 3] = [fs_rights, 0, scoped];
    // SAFETY: the attribute is 24 live bytes, struct landlock_ruleset_attr's layout.
    let fd = unsafe { c::syscall(c::SYS_landlock_create_ruleset, attr.as_ptr(), 24usize, 0u32) } as i32;
    if fd < 0 {
        return None;
    }
    // SAFETY: a new descriptor, owned here.
    let ruleset = unsafe { OwnedFd::from_raw_fd(fd) };
    if let Some(root) = root {
        let dir = std::fs::File::open(root).ok()?;
        // struct landlock_path_beneath_attr (packed): allowed_access u64, parent_fd s32.
        let mut rule = [0u8; 12];
        rule[..8].copy_from_slice(&fs_rights.to_ne_bytes());
        rule[8..].copy_from_slice(&dir.as_raw_fd().to_ne_bytes());
        // SAFETY: the rule is 12 live bytes in the kernel's layout.
        let r = unsafe {
            c::syscall(c::SYS_landlock_add_rule, ruleset.as_raw_fd(), LANDLOCK_RULE_PATH_BENEATH, rule.as_ptr(), 0u32)
        };
        if r != 0 {
            return None;
        }
    }
    Some(ruleset)
}

/// Everything the child needs, prepared before fork (the child may not allocate).
pub(crate) struct Exec {
    scope: Option<OwnedFd>,
    argv: Vec<CString>,
    ptrs: Vec<*const c::c_char>,
    /// The root to enter, unless it is `/`.
    root: Option<CString>,
    fail: Vec<u8>,
}

impl Exec {
    pub(crate) fn new(config: &Config, argv: &[OsString]) -> Result<Exec, GuestError> {
        let argv: Vec<CString> = argv
            .iter()
            .map(|a| CString::new(a.clone().into_vec()))
            .collect::<Result<_, _>>()
            .map_err(|_| GuestError::Usage("an argument contains a NUL byte".into()))?;
        let mut ptrs: Vec<*const c::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        ptrs.push(std::ptr::null());
        let root = if config.root == Path::new("/") {
            None
        } else {
            Some(
                CString::new(config.root.as_os_str().as_bytes())
                    .map_err(|_| GuestError::Usage("root has a NUL byte".into()))?,
            )
        };
        let fail = format!("vmlab guest: cannot execute {}\n", argv[0].to_string_lossy()).into_bytes();
        let scope = host_scope((config.root != Path::new("/")).then_some(config.root.as_path()));
        Ok(Exec { scope, argv, ptrs, root, fail })
    }

    /// In the child: enter the Landlock domain that keeps the guest away from host processes
    /// (sets no_new_privs, which Landlock requires). Async-signal-safe.
    pub(crate) fn confine(&self) {
        if let Some(scope) = &self.scope {
            // SAFETY: integer arguments only.
            unsafe {
                c::prctl(c::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                c::syscall(c::SYS_landlock_restrict_self, scope.as_raw_fd(), 0u32);
            }
        }
    }

    /// In the child: enter the root, close inherited descriptors above stderr. Before any
    /// tracing, so these are not guest calls.
    pub(crate) fn prepare(&self) {
        // SAFETY: plain system calls on valid C strings; async-signal-safe.
        unsafe {
            if let Some(root) = &self.root {
                c::chdir(root.as_ptr());
            }
            c::syscall(c::SYS_close_range, 3u32, u32::MAX, 0u32);
        }
    }

    /// In the child: exec the program (searching PATH), or exit 127.
    pub(crate) fn exec(&self) -> ! {
        // SAFETY: `ptrs` is a NULL-terminated array of pointers into `argv`, both live.
        unsafe {
            c::execvp(self.argv[0].as_ptr(), self.ptrs.as_ptr());
            c::write(2, self.fail.as_ptr().cast(), self.fail.len());
            c::_exit(127)
        }
    }
}

/// Forks guest pid 1 and returns its host pid once it is stopped and ready for the tracer.
pub(crate) fn launch(config: &Config, argv: &[OsString], how: Launch) -> Result<i32, GuestError> {
    let exec = Exec::new(config, argv)?;
    let Launch::Traced { filter } = how;
    // SAFETY: the child only makes async-signal-safe calls (no allocation) before exec.
    let pid = unsafe { c::fork() };
    if pid < 0 {
        return Err(GuestError::Host(format!("fork: {}", std::io::Error::last_os_error())));
    }
    if pid == 0 {
        // SAFETY: prctl with integer arguments. Should the guest kernel die, PTRACE_O_EXITKILL
        // kills every traced guest process; this covers pid 1 before the options are set.
        unsafe { c::prctl(c::PR_SET_PDEATHSIG, c::SIGKILL, 0, 0, 0) };
        exec.confine();
        exec.prepare();
        // SAFETY: async-signal-safe calls in the child.
        unsafe {
            c::ptrace(c::PTRACE_TRACEME, 0, 0, 0);
            c::raise(c::SIGSTOP);
        }
        if let Some(prog) = filter {
            if install_filter(prog, 0) != 0 {
                // SAFETY: _exit is async-signal-safe.
                unsafe { c::_exit(126) };
            }
        }
        exec.exec();
    }
    let mut status = 0;
    // SAFETY: `status` is a valid out-pointer.
    let r = unsafe { c::waitpid(pid, &mut status, c::__WALL) };
    if r != pid || !c::WIFSTOPPED(status) {
        return Err(GuestError::Host("guest pid 1 did not stop for the guest kernel".into()));
    }
    Ok(pid)
}
