//! `seccomp-notify`: SECCOMP_RET_USER_NOTIF, answered by a supervisor thread; no ptrace.
//!
//! A notified call either gets its result from the guest kernel (emulated) or is let through
//! with SECCOMP_USER_NOTIF_FLAG_CONTINUE, unchanged: this mechanism cannot rewrite a call's
//! arguments or results, and checking a path and then letting the call through would be racy
//! (the guest can change the path in between). So it uses the safe host mechanisms instead:
//! - guest pids: guest pid 1 starts in a new pid namespace, so every pid a guest process sees
//!   (getpid, fork, wait, kill, /proc) is already a guest pid, and it cannot see or signal a
//!   process outside the guest; getpid/gettid are still answered by the guest kernel, getppid
//!   still stops but is continued (the host's answer follows reparenting);
//! - the guest root: chroot(2) before exec, so the host resolves every path inside it (`..`,
//!   symbolic links, absolute paths); a procfs inside the root and directory descriptors from
//!   outside it are refused up front, and chroot/mount/unshare are refused to the guest.
//!
//! The notification descriptor is in the synchronous wake-up mode where the host offers it
//! (Linux 6.6), which lets the host switch directly between the guest and the supervisor
//! thread.

use super::kernel::{read_msg_name, refusal, Call, Kernel};
use super::{filter_with, strace, Exec, Trap, INTERRUPT};
use crate::{calls, Config, GuestError, Outcome};
use libc as c;
use seccompiler::SeccompAction;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// The seccomp-notify mechanism.
pub(crate) struct Notify;

/// seccompiler has no user-notification action: its filter returns SECCOMP_RET_TRACE with this
/// data, and those return instructions become SECCOMP_RET_USER_NOTIF.
const MARK: u32 = 0x4e4f;

/// SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (Linux 6.6).
const SYNC_WAKE_UP: u64 = 1;

pub(crate) fn io_err(what: &str) -> GuestError {
    GuestError::Host(format!("{what}: {}", std::io::Error::last_os_error()))
}

impl Trap for Notify {
    fn run(&self, config: &Config, kernel: &mut Kernel, argv: &[OsString]) -> Result<Outcome, GuestError> {
        let started = start(config, kernel, argv, None, &[])?;
        let done = AtomicBool::new(false);
        let status = std::thread::scope(|s| {
            let handler = s.spawn(|| serve(kernel, &started.listener, &done));
            started.release();
            let status = wait_init(started.pid);
            take_terminal_back();
            done.store(true, Ordering::SeqCst);
            let _ = handler.join();
            status
        });
        Ok(Outcome { status, trapped: kernel.trapped, in_process: 0 })
    }
}

/// Guest pid 1, started and held before exec until [`Started::release`].
pub(crate) struct Started {
    /// Its host pid.
    pub(crate) pid: i32,
    /// The seccomp notification descriptor of its filter.
    pub(crate) listener: OwnedFd,
    to_child: OwnedFd,
}

impl Started {
    /// Lets guest pid 1 go on to exec its program: its calls now need the listener served.
    pub(crate) fn release(&self) {
        // SAFETY: writes one byte from a live buffer.
        unsafe { c::write(self.to_child.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
}

/// Starts guest pid 1 in a new pid namespace, chrooted into the guest root, with `first` (if
/// given) and then the notify filter installed, and takes its notification descriptor. The
/// notify filter lets the calls in `pass` through (`first` decides about them).
pub(crate) fn start(
    config: &Config,
    kernel: &Kernel,
    argv: &[OsString],
    first: Option<&[seccompiler::sock_filter]>,
    pass: &[i64],
) -> Result<Started, GuestError> {
    let rooted = kernel.root.is_some();
    if rooted {
        if super::path::is_procfs(&config.root.join("proc")) {
            return Err(GuestError::Usage(format!(
                "{} contains the guest with chroot, which a procfs inside the root would undo; use another mechanism",
                config.mechanism
            )));
        }
        for fd in 0..3 {
            // SAFETY: an all-zero stat is valid; fstat gets a valid out-pointer.
            let mut st: c::stat = unsafe { std::mem::zeroed() };
            // SAFETY: as above.
            if unsafe { c::fstat(fd, &mut st) } == 0 && st.st_mode & c::S_IFMT == c::S_IFDIR {
                return Err(GuestError::Usage(format!("descriptor {fd} is a directory outside the guest root")));
            }
        }
    }
    let prog = notify_filter(kernel, config.strace, pass)?;
    let exec = Exec::new(config, argv)?;
    let root = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(config.root.as_os_str()))
        .map_err(|_| GuestError::Usage("root has a NUL byte".into()))?;
    let (to_child, from_parent) = pipe()?;
    // SAFETY: clone without CLONE_VM is fork into a new pid namespace; the child makes
    // only async-signal-safe calls before exec.
    let pid = unsafe { c::syscall(c::SYS_clone, (c::CLONE_NEWPID | c::SIGCHLD) as c::c_ulong, 0, 0, 0, 0) } as i32;
    if pid < 0 {
        if super::mem::errno() == c::EPERM {
            // Without CAP_SYS_ADMIN: a usage error (status 2) that says what is missing and
            // which mechanisms run without it.
            return Err(GuestError::Usage(format!(
                "mechanism '{}' needs the privilege to give the guest a pid namespace (CAP_SYS_ADMIN), \
                 which this process lacks; ptrace, sysemu and seccomp-trace run without it",
                config.mechanism
            )));
        }
        return Err(io_err("clone(CLONE_NEWPID)"));
    }
    if pid == 0 {
        // SAFETY: async-signal-safe system calls on live buffers, in the child.
        unsafe {
            // If the guest kernel dies, pid 1 dies, and with it every process of its namespace.
            c::prctl(c::PR_SET_PDEATHSIG, c::SIGKILL, 0, 0, 0);
            // Its own process group, so that kill(0, sig) reaches guest processes only; the
            // foreground group of the terminal, if there is one.
            c::setpgid(0, 0);
            if c::isatty(0) == 1 {
                let mut set: c::sigset_t = std::mem::zeroed();
                c::sigemptyset(&mut set);
                c::sigaddset(&mut set, c::SIGTTOU);
                c::sigprocmask(c::SIG_BLOCK, &set, std::ptr::null_mut());
                c::tcsetpgrp(0, c::getpid());
                c::sigprocmask(c::SIG_UNBLOCK, &set, std::ptr::null_mut());
            }
            if rooted && (c::chroot(root.as_ptr()) != 0 || c::chdir(c"/".as_ptr()) != 0) {
                c::_exit(126);
            }
            exec.confine();
            if let Some(first) = first {
                if super::install_filter(first, 0) != 0 {
                    c::_exit(126);
                }
            }
            // The guest kernel finds the listener in /proc/PID/fd: from here on every call
            // may be trapped, and only the supervisor thread, not yet started, answers.
            // Once the supervisor has received a call, only a fatal signal ends the wait (Linux
            // 5.19): an ordinary signal would return ERESTARTSYS, i.e. EINTR from a call such as
            // getpid under a handler without SA_RESTART. Older kernels refuse the flag.
            let listener = c::SECCOMP_FILTER_FLAG_NEW_LISTENER;
            let mut fd = super::install_filter(&prog, listener | c::SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV) as i32;
            if fd < 0 {
                fd = super::install_filter(&prog, listener) as i32;
            }
            if fd < 0 {
                c::_exit(126);
            }
            let mut ack = 0u8;
            c::read(from_parent.as_raw_fd(), (&mut ack as *mut u8).cast(), 1);
            c::close(fd);
            c::syscall(c::SYS_close_range, 3u32, u32::MAX, 0u32);
        }
        exec.exec();
    }
    drop(from_parent);
    let Some(child_fd) = find_listener(pid) else {
        reap(pid);
        return Err(GuestError::Host("guest pid 1 could not install its seccomp filter".into()));
    };
    let listener = take_fd(pid, child_fd).inspect_err(|_| reap(pid))?;
    // SAFETY: the ioctl reads one u64 through the pointer; failure (an older kernel) is fine.
    unsafe { c::ioctl(listener.as_raw_fd(), c::SECCOMP_IOCTL_NOTIF_SET_FLAGS, &SYNC_WAKE_UP) };
    Ok(Started { pid, listener, to_child })
}

/// The notify filter: SECCOMP_RET_USER_NOTIF for every call the guest kernel must see.
fn notify_filter(kernel: &Kernel, all: bool, pass: &[i64]) -> Result<Vec<seccompiler::sock_filter>, GuestError> {
    let mut prog = filter_with(kernel, all, pass, true, SeccompAction::Trace(MARK))?;
    for insn in prog.iter_mut() {
        if insn.code == (c::BPF_RET | c::BPF_K) as u16 && insn.k == c::SECCOMP_RET_TRACE | MARK {
            insn.k = c::SECCOMP_RET_USER_NOTIF;
        }
    }
    Ok(prog)
}

fn pipe() -> Result<(OwnedFd, OwnedFd), GuestError> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { c::pipe2(fds.as_mut_ptr(), c::O_CLOEXEC) } != 0 {
        return Err(io_err("pipe"));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[1]), OwnedFd::from_raw_fd(fds[0])) })
}

/// Waits for process `pid` to hold a seccomp notification descriptor; its number.
fn find_listener(pid: i32) -> Option<i32> {
    for _ in 0..20_000 {
        if let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            for e in dir.flatten() {
                let link = std::fs::read_link(e.path()).unwrap_or_default();
                if link.to_string_lossy().contains("seccomp notify") {
                    return e.file_name().to_str()?.parse().ok();
                }
            }
        }
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        if unsafe { c::waitpid(pid, &mut status, c::WNOHANG) } == pid {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_micros(100));
    }
    None
}

pub(crate) fn reap(pid: i32) {
    // SAFETY: kill and waitpid with a null status pointer have no other memory arguments.
    unsafe {
        c::kill(pid, c::SIGKILL);
        c::waitpid(pid, std::ptr::null_mut(), 0);
    }
}

/// Copies descriptor `fd` of process `pid` into the guest kernel (pidfd_getfd).
pub(crate) fn take_fd(pid: i32, fd: i32) -> Result<OwnedFd, GuestError> {
    // SAFETY: pidfd_open and pidfd_getfd take integers only.
    let pidfd = unsafe { c::syscall(c::SYS_pidfd_open, pid, 0) } as i32;
    if pidfd < 0 {
        return Err(io_err("pidfd_open"));
    }
    // SAFETY: as above.
    let fd = unsafe { c::syscall(c::SYS_pidfd_getfd, pidfd, fd, 0) } as i32;
    // SAFETY: `pidfd` is ours.
    unsafe { c::close(pidfd) };
    if fd < 0 {
        return Err(io_err("pidfd_getfd"));
    }
    // SAFETY: `fd` was just created for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes the guest kernel's process group the terminal's foreground group again.
pub(crate) fn take_terminal_back() {
    // SAFETY: plain calls on descriptor 0 and a local signal set; SIGTTOU is blocked so that a
    // background group may set the foreground group.
    unsafe {
        if c::isatty(0) == 1 {
            let mut set: c::sigset_t = std::mem::zeroed();
            c::sigemptyset(&mut set);
            c::sigaddset(&mut set, c::SIGTTOU);
            c::sigprocmask(c::SIG_BLOCK, &set, std::ptr::null_mut());
            c::tcsetpgrp(0, c::getpgrp());
            c::sigprocmask(c::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
    }
}

/// Waits for guest pid 1, passing interrupts on; its status as a shell reports it.
fn wait_init(pid: i32) -> i32 {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { c::waitpid(pid, &mut status, 0) };
        if r == pid {
            if c::WIFEXITED(status) {
                return c::WEXITSTATUS(status);
            }
            if c::WIFSIGNALED(status) {
                return 128 + c::WTERMSIG(status);
            }
            continue;
        }
        if super::mem::errno() == c::EINTR {
            let sig = INTERRUPT.swap(0, Ordering::SeqCst);
            if sig != 0 {
                pass_interrupt(pid, sig);
            }
            continue;
        }
        return 1;
    }
}

/// Passes interrupt `sig` to every guest process. Guest pid 1 (host `pid`) is a pid namespace
/// init, and the host drops a signal that such an init neither handles nor ignores, where
/// natively the default action (ending the program) would happen: then pid 1 is killed
/// (SIGKILL), and with it the whole namespace, so that SIGTERM, SIGINT and SIGHUP end the
/// guest as they end a native program.
pub(crate) fn pass_interrupt(pid: i32, sig: i32) {
    let mask = |label: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|t| t.lines().find_map(|l| l.strip_prefix(label)).map(|v| v.trim().to_string()))
            .and_then(|v| u64::from_str_radix(&v, 16).ok())
            .unwrap_or(0)
    };
    let bit = 1u64 << (sig - 1);
    let to_init = if (mask("SigCgt:") | mask("SigIgn:")) & bit == 0 { c::SIGKILL } else { sig };
    // SAFETY: kill has no memory arguments.
    unsafe { c::kill(pid, to_init) };
    // Then every other process of the guest's pid namespace, as the ptrace mechanisms pass it
    // to every guest process (a shell that handles SIGINT waits for its child to die of it).
    if let Ok(ns) = std::fs::read_link(format!("/proc/{pid}/ns/pid")) {
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else { continue };
            if p != pid && std::fs::read_link(format!("/proc/{p}/ns/pid")).is_ok_and(|n| n == ns) {
                // SAFETY: kill has no memory arguments.
                unsafe { c::kill(p, sig) };
            }
        }
    }
}

/// A number in /proc/`tid`/status, by its label.
pub(crate) fn status_number(tid: i32, label: &str) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    text.lines().find_map(|l| l.strip_prefix(label))?.trim().parse().ok()
}

/// A host thread's ids in the guest's pid namespace: (tid, tgid, parent's tgid).
pub(crate) fn ns_ids(tid: i32) -> Option<(i32, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let last = |name: &str| -> Option<i32> {
        text.lines().find_map(|l| l.strip_prefix(name))?.split_whitespace().last()?.parse().ok()
    };
    let ppid_host: i32 = text.lines().find_map(|l| l.strip_prefix("PPid:"))?.trim().parse().ok()?;
    let ns_tgid = last("NStgid:")?;
    let ns_parent = if ns_tgid == 1 {
        0
    } else {
        let ptext = std::fs::read_to_string(format!("/proc/{ppid_host}/status")).ok()?;
        ptext.lines().find_map(|l| l.strip_prefix("NStgid:"))?.split_whitespace().last()?.parse().ok()?
    };
    Some((last("NSpid:")?, ns_tgid, ns_parent))
}

/// Whether bind/connect/sendto/sendmsg/sendmmsg `call` names an abstract AF_UNIX socket,
/// which chroot does not contain. Checked in the guest's memory before the call runs: a guest
/// thread could change the address in between (see docs/guest.md).
fn abstract_unix(tid: i32, call: &Call) -> bool {
    let a = call.args;
    let is_abstract = |ptr: u64, len: u64| {
        let Ok(addr) = super::mem::read(tid, ptr, 3) else {
            return false;
        };
        u16::from_ne_bytes([addr[0], addr[1]]) == c::AF_UNIX as u16 && len > 2 && addr[2] == 0
    };
    let named = |at: u64| read_msg_name(tid, at).is_some_and(|(p, l)| p != 0 && is_abstract(p, l));
    match call.nr {
        c::SYS_sendto => a[4] != 0 && is_abstract(a[4], a[5]),
        c::SYS_sendmsg => named(a[1]),
        c::SYS_sendmmsg => (0..a[2].min(1024)).any(|i| named(a[1] + i * 64)),
        _ => is_abstract(a[1], a[2]),
    }
}

/// The supervisor thread: receives notifications until the guest is gone.
fn serve(kernel: &mut Kernel, listener: &OwnedFd, done: &AtomicBool) {
    let fd = listener.as_raw_fd();
    let mut ids: HashMap<i32, (i32, i32, i32)> = HashMap::new();
    while !done.load(Ordering::SeqCst) {
        let mut pfd = c::pollfd { fd, events: c::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let n = unsafe { c::poll(&mut pfd, 1, 100) };
        if n <= 0 {
            continue;
        }
        if pfd.revents & c::POLLIN == 0 {
            if pfd.revents & (c::POLLHUP | c::POLLERR) != 0 {
                break;
            }
            continue;
        }
        // SAFETY: all-zero is a valid seccomp_notif, and RECV requires it zeroed.
        let mut req: c::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV writes one seccomp_notif through the pointer.
        if unsafe { c::ioctl(fd, c::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } != 0 {
            continue;
        }
        let tid = req.pid as i32;
        let call = Call { nr: req.data.nr as i64, args: req.data.args };
        let resp = answer(kernel, &mut ids, req.id, tid, &call);
        // SAFETY: SEND reads one seccomp_notif_resp through the pointer. It fails harmlessly
        // (ENOENT) if the guest thread died meanwhile.
        unsafe { c::ioctl(fd, c::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    }
}

/// What the guest kernel answers to notified call `call` of host thread `tid` (notification
/// `id`): its result, or continue; prints it with `--strace`. `ids` caches each thread's ids in
/// the guest's pid namespace (tid, tgid) and its host tgid.
pub(crate) fn answer(
    kernel: &mut Kernel,
    ids: &mut HashMap<i32, (i32, i32, i32)>,
    id: u64,
    tid: i32,
    call: &Call,
) -> c::seccomp_notif_resp {
    kernel.trapped += 1;
    let known = ids.get(&tid).copied().or_else(|| {
        let (ns_tid, ns_tgid, _) = ns_ids(tid)?;
        let tgid = status_number(tid, "Tgid:")?;
        // A thread seen for the first time: a new process starts with its parent's ids.
        if let Some(parent) = status_number(tgid, "PPid:") {
            kernel.inherit_creds(tgid, parent);
        }
        let v = (ns_tid, ns_tgid, tgid);
        ids.insert(tid, v);
        Some(v)
    });
    let (ns_tid, ns_tgid, tgid) = known.unwrap_or((0, 0, tid));
    let result: Option<i64> = match call.nr {
        c::SYS_getpid => Some(ns_tgid as i64),
        c::SYS_gettid => Some(ns_tid as i64),
        // The host's answer in the guest's pid namespace is the guest's, and stays right when
        // the parent dies (the cached one would not).
        c::SYS_getppid => None,
        c::SYS_bind | c::SYS_connect | c::SYS_sendto | c::SYS_sendmsg | c::SYS_sendmmsg
            if kernel.root.is_some() && abstract_unix(tid, call) =>
        {
            Some(-(c::EPERM as i64))
        }
        // A directory received from outside the root is not inside the chroot: `..` from it
        // leads anywhere, and the host would run these calls from it unchecked.
        c::SYS_fchdir => kernel.fchdir_refusal(tid, call.args[0] as i32),
        _ if calls::is_metadata(call.nr) => kernel.metadata_at_descriptor(tid, tgid, call),
        _ => match refusal(call) {
            Some(e) => Some(e),
            None => match kernel.identity(tid, tgid, call) {
                Some(super::kernel::Decision::Emulate(r)) => Some(r),
                _ => None,
            },
        },
    };
    if matches!(call.nr, c::SYS_exit | c::SYS_exit_group) {
        ids.remove(&tid);
    }
    if kernel.strace {
        let line = strace::call_line(kernel, tid, call);
        // The guest kernel's own ids are host-based; show the guest's.
        let line = match line.find(']') {
            Some(end) => format!("[pid {ns_tid}{}", &line[end..]),
            None => line,
        };
        match result {
            Some(r) => strace::print(&line, r),
            None => strace::print_unfinished(&line),
        }
    }
    let mut resp = c::seccomp_notif_resp { id, val: 0, error: 0, flags: 0 };
    match result {
        Some(r) if r < 0 => resp.error = r as i32,
        Some(r) => resp.val = r,
        None => resp.flags = c::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    }
    resp
}
