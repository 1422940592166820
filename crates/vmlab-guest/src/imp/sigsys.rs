//! `sigsys`: SECCOMP_RET_TRAP, caught by a stub inside each guest process that hands the call
//! to the guest kernel through a shared page; no ptrace stop and no notification per call.
//!
//! Two stacked seccomp filters: the first returns SECCOMP_RET_TRAP for the calls the guest
//! kernel answers entirely by itself (getpid, getppid, the uid/gid calls, uname, sethostname:
//! [`trapped`]); the second is `seccomp-notify`'s, and everything else the guest kernel must
//! see goes that way, with the same containment (pid namespace, chroot). The host raises
//! SIGSYS in the calling thread, the stub ([`super::stub`]) writes the call into its process's
//! channel and wakes the guest kernel's channel thread with a futex, which answers in the
//! channel. The stub cannot run a call on the host on the guest's behalf, by design: a stub in
//! the guest's address space can be jumped into or rewritten by the guest, so nothing it may
//! do can be more than the guest may do itself.
//!
//! The stub is put into each process at exec: the execve notification makes the guest kernel
//! attach (PTRACE_SEIZE with PTRACE_O_TRACEEXEC) before letting the call continue; at the exec
//! stop it makes the new image map the stub's two pages at a fixed address (by placing a
//! `syscall` instruction at the stopped thread's instruction pointer and single-stepping it),
//! copies the code, installs the SIGSYS handler with every signal blocked while it runs, and
//! detaches. This works for static programs too. A forked child inherits the handler and the
//! code; its channel address is wiped (MADV_WIPEONFORK), so it registers its own at its first
//! trapped call.

use super::kernel::{Call, Decision, Kernel};
use super::notify::{self, answer, ns_ids, take_fd, take_terminal_back, Started};
use super::{bpf, mem, strace, stub, Trap, INTERRUPT};
use crate::{calls, Config, GuestError, Outcome};
use libc as c;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};
use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// The sigsys mechanism, or with `dispatch` its syscall-user-dispatch variant.
pub(crate) struct Sigsys {
    pub(crate) dispatch: bool,
}

/// Whether the first filter traps `nr` to the stub: the calls the guest kernel answers without
/// acting on the host or reading more than a few bytes of the caller. gettid is not among them
/// (threads share their process's channel), nor anything the host must run.
pub(crate) fn trapped(nr: i64) -> bool {
    nr != c::SYS_gettid && calls::handling(nr).0 == calls::Handling::Emulated
}

/// The first filter: SECCOMP_RET_TRAP for [`trapped`] calls, for rt_sigprocmask, and for
/// rt_sigaction of SIGSYS (which the stub answers by itself; see `stub.rs`); getppid made from
/// the stub's code page is allowed.
fn trap_filter() -> Result<Vec<seccompiler::sock_filter>, GuestError> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        (0..crate::sysnames::NAMES.len() as i64).filter(|&nr| trapped(nr)).map(|nr| (nr, Vec::new())).collect();
    rules.insert(c::SYS_rt_sigprocmask, Vec::new());
    // The whole 64-bit register is compared, while the host reads an int: the guest kernel's
    // own injected rt_sigaction passes SIGSYS with a high bit set to get past this rule (a
    // guest doing the same only removes its own handler, and dies at its next trapped call).
    let sigsys = SeccompCondition::new(0, SeccompCmpArgLen::Qword, SeccompCmpOp::Eq, c::SIGSYS as u64)
        .and_then(|cond| SeccompRule::new(vec![cond]))
        .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
    rules.insert(c::SYS_rt_sigaction, vec![sigsys]);
    let f = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Trap, TargetArch::x86_64)
        .map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
    let mut prog = BpfProgram::try_from(f).map_err(|e| GuestError::Host(format!("seccomp filter: {e}")))?;
    bpf::after_arch_check(&mut prog, stub_getppid_allowed());
    Ok(prog)
}

/// BPF: allow getppid when the instruction pointer is in the stub's code page. seccompiler
/// conditions look at arguments only, not at seccomp_data's instruction_pointer, so these few
/// instructions are written out. The stub's getppid is the host's, which in the guest's pid
/// namespace is the guest's answer, so a guest jumping there learns nothing more.
fn stub_getppid_allowed() -> Vec<seccompiler::sock_filter> {
    use super::bpf::{jump, load, ret, IP_HIGH, IP_LOW, NR};
    // The code page is [BASE, BASE + 0x1000), and BASE's low 32 bits are 0.
    const _: () = assert!(stub::BASE & 0xffff_ffff == 0);
    vec![
        load(NR),
        jump(c::BPF_JEQ, c::SYS_getppid as u32, 0, 5),
        load(IP_HIGH),
        jump(c::BPF_JEQ, (stub::BASE >> 32) as u32, 0, 3),
        load(IP_LOW),
        jump(c::BPF_JGE, 0x1000, 1, 0),
        ret(c::SECCOMP_RET_ALLOW),
    ]
}

/// SIGSYS as the int the host reads, but not the 64-bit value the filter's rule matches.
const SIGSYS_PAST_FILTER: u64 = (1 << 32) | c::SIGSYS as u64;

/// One guest process's channel, mapped in the guest kernel too.
struct Channel {
    /// The process (host tgid), and its ids in the guest's pid namespace (tgid, parent).
    tgid: i32,
    ns: (i32, i32),
    page: *mut u8,
    /// A pidfd of the process, to drop the channel when it is gone.
    pidfd: OwnedFd,
}

// SAFETY: `page` is a shared mapping owned by the Channel; it is accessed only through atomics
// and volatile reads and writes by whichever thread holds the channel list.
unsafe impl Send for Channel {}

impl Channel {
    fn word(&self, off: usize) -> &AtomicU32 {
        // SAFETY: `off` is within the page and 4-aligned; the page lives as long as self.
        unsafe { &*(self.page.add(off) as *const AtomicU32) }
    }
    fn read_u64(&self, off: usize) -> u64 {
        // SAFETY: as above, 8-aligned.
        unsafe { std::ptr::read_volatile(self.page.add(off) as *const u64) }
    }
    fn write_u64(&self, off: usize, v: u64) {
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(self.page.add(off) as *mut u64, v) }
    }

    /// Writes the process's ids, which the stub answers from, into the channel.
    fn write_ids(&self, kernel: &mut Kernel) {
        self.write_u64(stub::CH_PID, self.ns.0 as u64);
        for (i, id) in kernel.ids_of(self.tgid).into_iter().enumerate() {
            self.write_u64(stub::CH_IDS + 8 * i, id as u64);
        }
    }

    /// The calls the stub answered by itself.
    fn answered(&self) -> u64 {
        // SAFETY: CH_COUNT is within the page and 8-aligned; the stub updates it atomically.
        unsafe { &*(self.page.add(stub::CH_COUNT) as *const AtomicU64) }.load(Ordering::Relaxed)
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: `page` is our own 4096-byte mapping.
        unsafe { c::munmap(self.page.cast(), 4096) };
    }
}

/// Each guest thread's ids in the guest's pid namespace (tid, tgid) and its host tgid, as
/// notify caches them.
type NsIds = HashMap<i32, (i32, i32, i32)>;

/// What the guest kernel's threads share.
struct Shared<'k> {
    kernel: Mutex<(&'k mut Kernel, NsIds)>,
    channels: Mutex<Vec<Channel>>,
    /// Bumped (and woken) when the channel list changes or the guest ends.
    control: AtomicU32,
    done: AtomicBool,
    /// Calls the stubs answered by themselves, in channels already dropped.
    local: AtomicU64,
}

impl Shared<'_> {
    /// Whether to keep `ch` in the channel list; its stub's count is kept if not.
    fn keep(&self, ch: &Channel, keep: bool) -> bool {
        if !keep {
            self.local.fetch_add(ch.answered(), Ordering::Relaxed);
        }
        keep
    }
}

impl Trap for Sigsys {
    fn run(&self, config: &Config, kernel: &mut Kernel, argv: &[OsString]) -> Result<Outcome, GuestError> {
        // Dispatch needs no filter of its own: it sends every call to the stub.
        let first = if self.dispatch { None } else { Some(trap_filter()?) };
        // The stub's getppid runs on the host (see `stub.rs`); with --strace it goes round.
        let pass: &[i64] = if config.strace { &[] } else { &[c::SYS_getppid] };
        let started = notify::start(config, kernel, argv, first.as_deref(), pass)?;
        let sigchld = sigchld_fd()?;
        let pidfd = pidfd_open(started.pid)?;
        let rooted = kernel.root.is_some();
        let shared = Shared {
            kernel: Mutex::new((kernel, HashMap::new())),
            channels: Mutex::new(Vec::new()),
            control: AtomicU32::new(0),
            done: AtomicBool::new(false),
            local: AtomicU64::new(0),
        };
        let status = std::thread::scope(|s| {
            let answering = s.spawn(|| serve_channels(&shared));
            let status = Supervisor {
                shared: &shared,
                rooted,
                dispatch: self.dispatch,
                seized: HashMap::new(),
                started: &started,
            }
            .run(&sigchld, &pidfd);
            take_terminal_back();
            shared.done.store(true, Ordering::SeqCst);
            shared.control.fetch_add(1, Ordering::SeqCst);
            futex_wake(shared.control.as_ptr(), true);
            let _ = answering.join();
            status
        });
        // SAFETY: unblocks SIGCHLD again, as it was before the guest started.
        unsafe {
            let mut set: c::sigset_t = std::mem::zeroed();
            c::sigemptyset(&mut set);
            c::sigaddset(&mut set, c::SIGCHLD);
            c::pthread_sigmask(c::SIG_UNBLOCK, &set, std::ptr::null_mut());
        }
        let channels = shared.channels.into_inner().unwrap_or_else(|e| e.into_inner());
        let local = shared.local.into_inner() + channels.iter().map(Channel::answered).sum::<u64>();
        let trapped = shared.kernel.into_inner().map(|k| k.0.trapped).unwrap_or(0);
        Ok(Outcome { status, trapped: trapped + local, in_process: local })
    }
}

fn io_err(what: &str) -> GuestError {
    notify::io_err(what)
}

/// A signalfd for SIGCHLD, which is blocked in the guest kernel from here on (guest pid 1 has
/// already been forked with it unblocked).
fn sigchld_fd() -> Result<OwnedFd, GuestError> {
    // SAFETY: a local signal set; signalfd creates a new descriptor, owned below.
    unsafe {
        let mut set: c::sigset_t = std::mem::zeroed();
        c::sigemptyset(&mut set);
        c::sigaddset(&mut set, c::SIGCHLD);
        c::pthread_sigmask(c::SIG_BLOCK, &set, std::ptr::null_mut());
        let fd = c::signalfd(-1, &set, c::SFD_CLOEXEC | c::SFD_NONBLOCK);
        if fd < 0 {
            return Err(io_err("signalfd"));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

fn pidfd_open(pid: i32) -> Result<OwnedFd, GuestError> {
    // SAFETY: pidfd_open takes integers; the new descriptor is owned below.
    let fd = unsafe { c::syscall(c::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(io_err("pidfd_open"));
    }
    // SAFETY: just created.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn futex_wake(addr: *mut u32, private: bool) {
    let op = if private { c::FUTEX_WAKE | c::FUTEX_PRIVATE_FLAG } else { c::FUTEX_WAKE };
    // SAFETY: FUTEX_WAKE only uses the address as a key.
    unsafe { c::syscall(c::SYS_futex, addr, op, i32::MAX, 0, 0, 0) };
}

fn ptrace(req: c::c_uint, pid: i32, addr: usize, data: usize) -> i64 {
    // SAFETY: every request made here passes integers or pointers to live local values.
    unsafe { c::ptrace(req, pid, addr as *mut c::c_void, data as *mut c::c_void) }
}

/// Where a seized guest thread is in getting its stub.
enum Seized {
    /// Its execve is running; the exec stop comes next (or the call fails and it runs on). A
    /// thread other than its process's leader (`tgid`) takes the leader's id when it execs.
    AwaitExec { tgid: i32 },
    /// At the exec stop, stepping out of execve: the host reports the step as the call returns,
    /// before the new image's first instruction; injecting starts there (registers set at the
    /// exec stop itself would be overwritten by execve's result).
    LeavingExec,
    /// At the exec stop, running injected call `step` with a `syscall` instruction placed at
    /// `saved.rip` over `word`.
    Injecting { saved: Box<c::user_regs_struct>, word: u64, step: usize },
}

struct Supervisor<'a, 'k> {
    shared: &'a Shared<'k>,
    /// Whether the guest has a root other than `/`.
    rooted: bool,
    /// Syscall user dispatch rather than the SECCOMP_RET_TRAP filter.
    dispatch: bool,
    seized: HashMap<i32, Seized>,
    started: &'a Started,
}

impl Supervisor<'_, '_> {
    /// Serves notifications and the exec stops until guest pid 1 exits; its status.
    fn run(&mut self, sigchld: &OwnedFd, pidfd: &OwnedFd) -> i32 {
        let listener = self.started.listener.as_raw_fd();
        self.started.release();
        loop {
            let mut pfds = [
                c::pollfd { fd: listener, events: c::POLLIN, revents: 0 },
                c::pollfd { fd: sigchld.as_raw_fd(), events: c::POLLIN, revents: 0 },
                c::pollfd { fd: pidfd.as_raw_fd(), events: c::POLLIN, revents: 0 },
            ];
            // SAFETY: three valid pollfds.
            let n = unsafe { c::poll(pfds.as_mut_ptr(), 3, 100) };
            let sig = INTERRUPT.swap(0, Ordering::SeqCst);
            if sig != 0 {
                notify::pass_interrupt(self.started.pid, sig);
            }
            if n <= 0 {
                continue;
            }
            if pfds[1].revents != 0 || pfds[2].revents != 0 {
                drain(sigchld);
                if let Some(status) = self.reap() {
                    return status;
                }
            }
            if pfds[0].revents & c::POLLIN != 0 {
                self.notification(listener);
            }
        }
    }

    /// Handles every pending stop of a seized thread, and guest pid 1's end.
    fn reap(&mut self) -> Option<i32> {
        let init = self.started.pid;
        let mut tids: Vec<i32> = self.seized.keys().copied().collect();
        if !tids.contains(&init) {
            tids.push(init);
        }
        for tid in tids {
            loop {
                let mut status = 0;
                // SAFETY: `status` is a valid out-pointer.
                let r = unsafe { c::waitpid(tid, &mut status, c::WNOHANG | c::__WALL) };
                if r != tid {
                    if r < 0 {
                        self.exec_by_other_thread(tid);
                    }
                    break;
                }
                if c::WIFEXITED(status) || c::WIFSIGNALED(status) {
                    self.seized.remove(&tid);
                    if tid == init {
                        return Some(if c::WIFEXITED(status) {
                            c::WEXITSTATUS(status)
                        } else {
                            128 + c::WTERMSIG(status)
                        });
                    }
                    break;
                }
                if c::WIFSTOPPED(status) {
                    self.stopped(tid, status);
                }
            }
        }
        None
    }

    /// Seized thread `tid` is gone: if it was exec'ing from a thread other than its process's
    /// leader, its exec stop is reported under the leader's id; carry on there.
    fn exec_by_other_thread(&mut self, tid: i32) {
        let Some(Seized::AwaitExec { tgid }) = self.seized.get(&tid) else {
            self.seized.remove(&tid);
            return;
        };
        let tgid = *tgid;
        self.seized.remove(&tid);
        if tgid == tid {
            return;
        }
        let mut status = 0;
        // SAFETY: `status` is a valid out-pointer.
        if unsafe { c::waitpid(tgid, &mut status, c::WNOHANG | c::__WALL) } == tgid && c::WIFSTOPPED(status) {
            self.seized.insert(tgid, Seized::AwaitExec { tgid });
            self.stopped(tgid, status);
        }
    }

    fn stopped(&mut self, tid: i32, status: i32) {
        let event = status >> 16;
        let sig = c::WSTOPSIG(status);
        match self.seized.get(&tid) {
            Some(Seized::AwaitExec { .. }) if event == c::PTRACE_EVENT_EXEC => {
                self.seized.insert(tid, Seized::LeavingExec);
                ptrace(c::PTRACE_SINGLESTEP, tid, 0, 0);
            }
            Some(Seized::LeavingExec) if sig == c::SIGTRAP && event == 0 => self.inject(tid, None),
            Some(Seized::Injecting { .. }) if sig == c::SIGTRAP && event == 0 => self.inject(tid, Some(())),
            // A signal for the thread while it is seized: deliver it. Group stops are not kept
            // (stop signals do not stop guest processes).
            _ if event == 0 && sig != c::SIGTRAP => {
                ptrace(c::PTRACE_CONT, tid, 0, sig as usize);
            }
            _ => {
                ptrace(c::PTRACE_CONT, tid, 0, 0);
            }
        }
    }

    /// The injected calls, in order: map the stub's pages, make the code page executable and
    /// the data page wiped on fork, install the handler, and for dispatch turn it on. Each
    /// returns the expected result.
    fn steps(&self) -> Vec<([u64; 7], i64)> {
        let fixed = (c::MAP_PRIVATE | c::MAP_ANONYMOUS | c::MAP_FIXED_NOREPLACE) as u64;
        let rw = (c::PROT_READ | c::PROT_WRITE) as u64;
        let mut steps = vec![
            ([c::SYS_mmap as u64, stub::BASE, stub::LEN, rw, fixed, u64::MAX, 0], stub::BASE as i64),
            ([c::SYS_mprotect as u64, stub::BASE, 0x1000, (c::PROT_READ | c::PROT_EXEC) as u64, 0, 0, 0], 0),
            ([c::SYS_madvise as u64, stub::DATA, 0x1000, c::MADV_WIPEONFORK as u64, 0, 0, 0], 0),
            ([c::SYS_rt_sigaction as u64, SIGSYS_PAST_FILTER, stub::DATA + 64, 0, 8, 0, 0], 0),
        ];
        if self.dispatch {
            // Every call from outside the stub's code page raises SIGSYS; the selector is a
            // constant "block" byte in that page.
            let selector = stub::BASE + stub::data_offsets().0;
            let on = [super::PR_SET_SYSCALL_USER_DISPATCH, super::PR_SYS_DISPATCH_ON, stub::BASE, 0x1000, selector];
            steps.push(([c::SYS_prctl as u64, on[0], on[1], on[2], on[3], on[4], 0], 0));
        }
        steps
    }

    /// Runs the next injected call at an exec stop (`next` is None for the first), or finishes.
    fn inject(&mut self, tid: i32, next: Option<()>) {
        let (saved, word, step) = match (next, self.seized.get(&tid)) {
            (None, _) => {
                // SAFETY: all-zero is a valid user_regs_struct.
                let mut regs: c::user_regs_struct = unsafe { std::mem::zeroed() };
                if ptrace(c::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize) != 0 {
                    return self.give_up(tid);
                }
                let word = ptrace(c::PTRACE_PEEKTEXT, tid, regs.rip as usize, 0) as u64;
                let patched = (word & !0xffff) | 0x050f;
                if ptrace(c::PTRACE_POKETEXT, tid, regs.rip as usize, patched as usize) != 0 {
                    return self.give_up(tid);
                }
                (regs, word, 0)
            }
            (Some(()), Some(Seized::Injecting { saved, word, step })) => {
                // SAFETY: as above.
                let mut regs: c::user_regs_struct = unsafe { std::mem::zeroed() };
                ptrace(c::PTRACE_GETREGS, tid, 0, &mut regs as *mut _ as usize);
                let steps = self.steps();
                if regs.rax as i64 != steps[*step].1 {
                    return self.give_up(tid);
                }
                if *step == 0 && !self.copy_stub(tid) {
                    return self.give_up(tid);
                }
                (**saved, *word, step + 1)
            }
            _ => return self.give_up(tid),
        };
        let steps = self.steps();
        if step == steps.len() {
            ptrace(c::PTRACE_POKETEXT, tid, saved.rip as usize, word as usize);
            ptrace(c::PTRACE_SETREGS, tid, 0, &saved as *const _ as usize);
            ptrace(c::PTRACE_DETACH, tid, 0, 0);
            self.seized.remove(&tid);
            return;
        }
        let (call, _) = steps[step];
        let mut regs = saved;
        regs.rax = call[0];
        regs.orig_rax = u64::MAX;
        regs.rdi = call[1];
        regs.rsi = call[2];
        regs.rdx = call[3];
        regs.r10 = call[4];
        regs.r8 = call[5];
        regs.r9 = call[6];
        ptrace(c::PTRACE_SETREGS, tid, 0, &regs as *const _ as usize);
        self.seized.insert(tid, Seized::Injecting { saved: Box::new(saved), word, step });
        ptrace(c::PTRACE_SINGLESTEP, tid, 0, 0);
    }

    /// Copies the stub's code and its sigaction into the freshly mapped pages.
    fn copy_stub(&self, tid: i32) -> bool {
        let (code, restorer) = stub::code();
        // The bitmap of the calls the stub sends to the guest kernel (dispatch sends it all).
        let mut code = code.to_vec();
        let at = stub::data_offsets().1 as usize;
        for nr in 0..512 {
            if trapped(nr) {
                code[at + nr as usize / 8] |= 1 << (nr % 8);
            }
        }
        // struct kernel_sigaction: handler, flags, restorer, mask.
        let flags = (c::SA_SIGINFO | 0x0400_0000) as u64;
        let mut act = Vec::with_capacity(32);
        for v in [stub::BASE, flags, stub::BASE + restorer, u64::MAX] {
            act.extend_from_slice(&v.to_ne_bytes());
        }
        code.len() <= 0x1000
            && mem::write(tid, stub::BASE, &code).is_ok()
            && mem::write(tid, stub::DATA + 64, &act).is_ok()
    }

    /// The stub could not be put in: the process would die at its first trapped call anyway.
    fn give_up(&mut self, tid: i32) {
        self.seized.remove(&tid);
        // SAFETY: kill has no memory arguments.
        unsafe { c::kill(tid, c::SIGKILL) };
        eprintln!("vmlab guest: could not put the sigsys stub into a guest process; killed it");
    }

    fn notification(&mut self, fd: i32) {
        // SAFETY: all-zero is a valid seccomp_notif, and RECV requires it zeroed.
        let mut req: c::seccomp_notif = unsafe { std::mem::zeroed() };
        // SAFETY: RECV writes one seccomp_notif through the pointer.
        if unsafe { c::ioctl(fd, c::SECCOMP_IOCTL_NOTIF_RECV, &mut req) } != 0 {
            return;
        }
        let tid = req.pid as i32;
        let call = Call { nr: req.data.nr as i64, args: req.data.args };
        let ip = req.data.instruction_pointer;
        let from_stub = (stub::BASE..stub::BASE + 0x1000).contains(&ip);
        // Dispatch's stub runs the guest's calls from its page: those are the guest's.
        let guest_site = from_stub && stub::guest_call_sites().contains(&(ip - stub::BASE));
        let cont =
            c::seccomp_notif_resp { id: req.id, val: 0, error: 0, flags: c::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32 };
        let resp = if matches!(self.seized.get(&tid), Some(Seized::Injecting { .. })) {
            // The guest kernel's own injected calls (seen only with --strace).
            cont
        } else if call.nr == c::SYS_prctl && call.args[0] == stub::REGISTER && from_stub {
            let r = self.register(tid, call.args[1] as i32, call.args[2]);
            c::seccomp_notif_resp { id: req.id, val: 0, error: r, flags: 0 }
        } else if from_stub && !guest_site && !calls::needs_trap(call.nr, self.rooted, false) {
            // The stub's own calls (seen only with --strace): not the guest's. Any other call
            // from the stub's page is the guest's (it can jump there) and is handled as such.
            cont
        } else {
            if matches!(call.nr, c::SYS_execve | c::SYS_execveat) && !self.seized.contains_key(&tid) {
                let opts = c::PTRACE_O_TRACEEXEC | c::PTRACE_O_EXITKILL;
                if ptrace(c::PTRACE_SEIZE, tid, 0, opts as usize) == 0 {
                    let tgid = status_tgid(tid).unwrap_or(tid);
                    self.seized.insert(tid, Seized::AwaitExec { tgid });
                }
            }
            let mut k = self.shared.kernel.lock().unwrap_or_else(|e| e.into_inner());
            let (kernel, ids) = &mut *k;
            answer(kernel, ids, req.id, tid, &call)
        };
        // SAFETY: SEND reads one seccomp_notif_resp; it fails harmlessly if the thread died.
        unsafe { c::ioctl(fd, c::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    }

    /// Registers the channel the stub of thread `tid` made (its descriptor `fd`); 0 or -errno.
    fn register(&mut self, tid: i32, fd: i32, _addr: u64) -> i32 {
        let Some((_, ns_tgid, ns_parent)) = ns_ids(tid) else {
            return -c::ESRCH;
        };
        // The descriptor table is the process's: pidfd_open takes its leader's id, not that of
        // the thread (perhaps not the leader) that registers.
        let tgid = status_tgid(tid).unwrap_or(tid);
        let Ok(memfd) = take_fd(tgid, fd) else {
            return -c::EBADF;
        };
        // The guest could register any descriptor (it can jump to the stub's `syscall`): only a
        // memfd of at least a page, sealed here against shrinking, is mapped, so that no later
        // ftruncate can make the guest kernel's accesses to it fault (SIGBUS).
        // SAFETY: fcntl and fstat on our own descriptor, with a valid out-pointer.
        let usable = unsafe {
            let mut st: c::stat = std::mem::zeroed();
            c::fcntl(memfd.as_raw_fd(), c::F_ADD_SEALS, c::F_SEAL_SHRINK) == 0
                && c::fstat(memfd.as_raw_fd(), &mut st) == 0
                && st.st_size >= 4096
        };
        if !usable {
            return -c::EINVAL;
        }
        // SAFETY: maps 4096 bytes of the memfd shared; checked below.
        let page = unsafe {
            c::mmap(std::ptr::null_mut(), 4096, c::PROT_READ | c::PROT_WRITE, c::MAP_SHARED, memfd.as_raw_fd(), 0)
        };
        if page == c::MAP_FAILED {
            return -c::ENOMEM;
        }
        let Ok(pidfd) = pidfd_open(tgid) else {
            // SAFETY: our own mapping.
            unsafe { c::munmap(page, 4096) };
            return -c::ESRCH;
        };
        let ch = Channel { tgid, ns: (ns_tgid, ns_parent), page: page.cast(), pidfd };
        {
            let mut k = self.shared.kernel.lock().unwrap_or_else(|e| e.into_inner());
            let kernel = &mut *k.0;
            // A new process starts with its parent's ids (a process that execs keeps its own).
            if let Some(parent) = notify::status_number(tid, "PPid:") {
                kernel.inherit_creds(tgid, parent);
            }
            ch.write_ids(kernel);
            ch.word(stub::CH_LOCAL).store(u32::from(!kernel.strace), Ordering::Release);
        }
        let mut list = self.shared.channels.lock().unwrap_or_else(|e| e.into_inner());
        // A process that execs registers again: its old channel is gone from it.
        list.retain(|c| self.shared.keep(c, c.tgid != tgid));
        list.push(ch);
        drop(list);
        self.shared.control.fetch_add(1, Ordering::SeqCst);
        futex_wake(self.shared.control.as_ptr(), true);
        0
    }
}

fn status_tgid(tid: i32) -> Option<i32> {
    notify::status_number(tid, "Tgid:")
}

fn drain(fd: &OwnedFd) {
    let mut buf = [0u8; 128 * 4];
    // SAFETY: reads into a live buffer; the descriptor is non-blocking.
    while unsafe { c::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// struct futex_waitv.
#[repr(C)]
struct Waiter {
    val: u64,
    uaddr: u64,
    flags: u32,
    reserved: u32,
}

const FUTEX2_SIZE_U32: u32 = 2;
const FUTEX2_PRIVATE: u32 = 128;
const SYS_FUTEX_WAITV: i64 = 449;
/// futex_waitv's limit.
const MAX_WAITERS: usize = 128;

/// The channel thread: answers every channel's requests, sleeping in futex_waitv on all of
/// their states (and the control word) in between.
fn serve_channels(shared: &Shared) {
    let mut timed_out = false;
    loop {
        if shared.done.load(Ordering::SeqCst) {
            return;
        }
        let control = shared.control.load(Ordering::SeqCst);
        let mut waiters = vec![Waiter {
            val: control as u64,
            uaddr: shared.control.as_ptr() as u64,
            flags: FUTEX2_SIZE_U32 | FUTEX2_PRIVATE,
            reserved: 0,
        }];
        {
            let mut list = shared.channels.lock().unwrap_or_else(|e| e.into_inner());
            for ch in list.iter() {
                if ch.word(stub::CH_STATE).load(Ordering::Acquire) == stub::REQUEST {
                    serve_one(shared, ch);
                }
            }
            // Channels of processes that are gone, looked for only when nothing happened for a
            // while (a poll per channel per request would cost more than the request).
            if std::mem::take(&mut timed_out) {
                list.retain(|ch| shared.keep(ch, alive(&ch.pidfd)));
            }
            for ch in list.iter().take(MAX_WAITERS - 1) {
                waiters.push(Waiter {
                    val: ch.word(stub::CH_STATE).load(Ordering::Acquire) as u64,
                    uaddr: ch.word(stub::CH_STATE).as_ptr() as u64,
                    flags: FUTEX2_SIZE_U32,
                    reserved: 0,
                });
            }
            if waiters.iter().skip(1).any(|w| w.val == stub::REQUEST as u64) {
                continue;
            }
        }
        // More channels than futex_waitv takes: look again soon instead of sleeping long.
        let wait = if waiters.len() == MAX_WAITERS { 1_000_000 } else { 100_000_000 };
        let mut now: c::timespec = c::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `now` is a valid out-pointer.
        unsafe { c::clock_gettime(c::CLOCK_MONOTONIC, &mut now) };
        let mut ns = now.tv_nsec + wait;
        let mut deadline = c::timespec { tv_sec: now.tv_sec + ns / 1_000_000_000, tv_nsec: 0 };
        ns %= 1_000_000_000;
        deadline.tv_nsec = ns;
        // SAFETY: `waiters` and `deadline` are live; the addresses are mapped words (the
        // channels stay mapped: only this thread drops them).
        let r = unsafe {
            c::syscall(SYS_FUTEX_WAITV, waiters.as_ptr(), waiters.len() as u32, 0u32, &deadline, c::CLOCK_MONOTONIC)
        };
        timed_out = r < 0 && mem::errno() == c::ETIMEDOUT;
    }
}

/// Whether the process behind `pidfd` still runs.
fn alive(pidfd: &OwnedFd) -> bool {
    let mut pfd = c::pollfd { fd: pidfd.as_raw_fd(), events: c::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd, no waiting.
    unsafe { c::poll(&mut pfd, 1, 0) == 0 }
}

/// Answers the request in `ch`.
fn serve_one(shared: &Shared, ch: &Channel) {
    let nr = ch.read_u64(stub::CH_NR) as i64;
    let mut args = [0u64; 6];
    for (i, a) in args.iter_mut().enumerate() {
        *a = ch.read_u64(stub::CH_ARGS + 8 * i);
    }
    let call = Call { nr, args };
    let mut k = shared.kernel.lock().unwrap_or_else(|e| e.into_inner());
    let (kernel, _) = &mut *k;
    kernel.trapped += 1;
    let ns_tgid = ch.ns.0;
    let result = if !trapped(nr) {
        -(c::ENOSYS as i64)
    } else {
        match nr {
            c::SYS_getpid => ns_tgid as i64,
            // Now, not at registration: the parent may have died since.
            c::SYS_getppid => ns_ids(ch.tgid).map_or(ch.ns.1, |ids| ids.2) as i64,
            _ => match kernel.identity(ch.tgid, ch.tgid, &call) {
                Some(Decision::Emulate(r)) => r,
                _ => -(c::ENOSYS as i64),
            },
        }
    };
    ch.write_ids(kernel);
    if kernel.strace {
        let line = strace::call_line(kernel, ch.tgid, &call);
        let line = match line.find(']') {
            Some(end) => format!("[pid {ns_tgid}{}", &line[end..]),
            None => line,
        };
        strace::print(&line, result);
    }
    drop(k);
    ch.write_u64(stub::CH_RESULT, result as u64);
    ch.word(stub::CH_STATE).store(stub::REPLY, Ordering::Release);
    futex_wake(ch.word(stub::CH_STATE).as_ptr(), false);
}
