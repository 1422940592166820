//! The three ptrace mechanisms: one tracer loop, three ways of stopping the guest.
//!
//! - `ptrace` (PTRACE_SYSCALL): every call stops at entry and at exit. Emulated calls are
//!   skipped at entry (the call number becomes -1) and given their result at exit.
//! - `sysemu` (PTRACE_SYSEMU): every call stops once, at entry, and the host never runs it.
//!   An emulated call is answered there. A forwarded call is run by rewinding the guest's
//!   instruction pointer over its 2-byte `syscall` instruction and single-stepping it: one more
//!   stop (a SIGTRAP) after the host ran it, where the guest kernel sees its result.
//! - `seccomp-trace`: the guest runs under PTRACE_CONT with a seccomp filter that returns
//!   SECCOMP_RET_TRACE for the calls the guest kernel must see; every other call runs at native
//!   speed. A trapped call stops once; a forwarded one whose result matters is resumed with
//!   PTRACE_SYSCALL for a second stop at its exit.

use super::kernel::{Call, Decision, Kernel, Post, SCRATCH_LEN};
use super::strace;
use super::{launch, Launch, Style, INTERRUPT};
use crate::{Config, GuestError, Outcome};
use libc as c;
use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::atomic::Ordering;

/// How a stopped thread is resumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resume {
    Syscall,
    Sysemu,
    Cont,
    Step,
}

impl Resume {
    fn request(self) -> c::c_uint {
        match self {
            Resume::Syscall => c::PTRACE_SYSCALL,
            Resume::Sysemu => c::PTRACE_SYSEMU,
            Resume::Cont => c::PTRACE_CONT,
            Resume::Step => c::PTRACE_SINGLESTEP,
        }
    }
}

/// Where a thread is in the handling of a call.
#[derive(Clone, Debug)]
enum State {
    Idle,
    /// ptrace: skipped at entry; the exit stop sets the result.
    Emulating {
        ret: i64,
        line: Option<String>,
    },
    /// The host is running the call; the completion stop finishes it.
    Forwarded {
        saved: c::user_regs_struct,
        changed: bool,
        post: Post,
        line: Option<String>,
    },
    /// The host is running an mmap for the thread's scratch memory.
    Injecting {
        saved: c::user_regs_struct,
    },
}

struct Thread {
    state: State,
    resume: Resume,
    /// The thread's own scratch memory (threads of a process must not share one: two calls
    /// at once would overwrite each other's paths).
    scratch: Option<u64>,
    /// The address space the thread runs in: the host tgid of the process that made it.
    mm: i32,
    scratch_failed: bool,
    /// Signals that arrived while a forwarded call was being single-stepped (sysemu): they
    /// are delivered once the call has completed.
    deferred: Vec<c::siginfo_t>,
    /// Deferred signals beyond the first, re-sent to the thread with tgkill: when each
    /// arrives, it gets its own siginfo back (tgkill's names the guest kernel as sender).
    reinject: Vec<c::siginfo_t>,
}

struct Tracer<'k> {
    style: Style,
    kernel: &'k mut Kernel,
    threads: HashMap<i32, Thread>,
    /// Each address space's scratch mappings: read-only to the guest, and no guest call may
    /// unmap, remap, re-protect or replace them (see [`guarded_range`]).
    guarded: HashMap<i32, Vec<u64>>,
}

fn ptrace(req: c::c_uint, pid: i32, addr: usize, data: usize) -> i64 {
    // SAFETY: every request made here passes either integers or pointers to live, correctly
    // sized local values; the kernel validates the rest.
    unsafe { c::ptrace(req, pid, addr as *mut c::c_void, data as *mut c::c_void) }
}

fn get_regs(pid: i32) -> Option<c::user_regs_struct> {
    // SAFETY: all-zero is a valid user_regs_struct.
    let mut r: c::user_regs_struct = unsafe { std::mem::zeroed() };
    (ptrace(c::PTRACE_GETREGS, pid, 0, &mut r as *mut _ as usize) == 0).then_some(r)
}

fn set_regs(pid: i32, r: &c::user_regs_struct) {
    ptrace(c::PTRACE_SETREGS, pid, 0, r as *const _ as usize);
}

/// Whether the call is one of the i386 ABI (`int 0x80`), whose numbers mean other calls.
/// (An x32 call needs no test: its number, with bit 30 set, is none the guest kernel knows,
/// so it refuses it as it does every such number.)
fn i386_abi(pid: i32) -> bool {
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    // SAFETY: all-zero is a valid ptrace_syscall_info.
    let mut info: c::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let n = ptrace(
        c::PTRACE_GET_SYSCALL_INFO,
        pid,
        std::mem::size_of::<c::ptrace_syscall_info>(),
        &mut info as *mut _ as usize,
    );
    n > 0 && info.arch != AUDIT_ARCH_X86_64
}

fn call_of(r: &c::user_regs_struct) -> Call {
    Call { nr: r.orig_rax as i64, args: [r.rdi, r.rsi, r.rdx, r.r10, r.r8, r.r9] }
}

fn set_args(r: &mut c::user_regs_struct, a: &[u64; 6]) {
    r.rdi = a[0];
    r.rsi = a[1];
    r.rdx = a[2];
    r.r10 = a[3];
    r.r8 = a[4];
    r.r9 = a[5];
}

/// The errors with which the kernel asks for a call to be restarted: not a final result.
fn is_restart(ret: i64) -> bool {
    (-516..=-512).contains(&ret)
}

/// PTRACE_GET_SYSCALL_INFO's op: entry, exit, seccomp or none.
fn syscall_op(pid: i32) -> u8 {
    // SAFETY: all-zero is a valid ptrace_syscall_info.
    let mut info: c::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    let n = ptrace(
        c::PTRACE_GET_SYSCALL_INFO,
        pid,
        std::mem::size_of::<c::ptrace_syscall_info>(),
        &mut info as *mut _ as usize,
    );
    if n <= 0 {
        return c::PTRACE_SYSCALL_INFO_NONE;
    }
    info.op
}

/// Runs `argv` under the ptrace-family mechanism `style`.
pub(crate) fn run(
    style: Style,
    config: &Config,
    kernel: &mut Kernel,
    argv: &[OsString],
) -> Result<Outcome, GuestError> {
    let filter = match style {
        Style::SeccompTrace => Some(super::filter(kernel, config.strace, &[], seccompiler::SeccompAction::Trace(0))?),
        _ => None,
    };
    let child = launch(config, argv, Launch::Traced { filter: filter.as_deref() })?;
    let opts = c::PTRACE_O_TRACESYSGOOD
        | c::PTRACE_O_TRACEFORK
        | c::PTRACE_O_TRACEVFORK
        | c::PTRACE_O_TRACECLONE
        | c::PTRACE_O_TRACEEXEC
        | c::PTRACE_O_TRACESECCOMP
        | c::PTRACE_O_EXITKILL;
    if ptrace(c::PTRACE_SETOPTIONS, child, 0, opts as usize) != 0 {
        let e = std::io::Error::last_os_error();
        // SAFETY: kill has no memory arguments.
        unsafe { c::kill(child, c::SIGKILL) };
        return Err(GuestError::Host(format!("ptrace(PTRACE_SETOPTIONS) failed: {e}")));
    }
    kernel.add_thread(child, child, 0);
    let mut tracer = Tracer { style, kernel, threads: HashMap::new(), guarded: HashMap::new() };
    tracer.threads.insert(child, Thread::new(tracer.default_resume(), child));
    tracer.resume(child, 0);
    let status = tracer.event_loop(child);
    Ok(Outcome { status, trapped: tracer.kernel.trapped, in_process: 0 })
}

impl Thread {
    fn new(resume: Resume, mm: i32) -> Thread {
        Thread {
            state: State::Idle,
            resume,
            scratch: None,
            mm,
            scratch_failed: false,
            deferred: Vec::new(),
            reinject: Vec::new(),
        }
    }
}

impl Tracer<'_> {
    fn default_resume(&self) -> Resume {
        match self.style {
            Style::Ptrace => Resume::Syscall,
            Style::Sysemu => Resume::Sysemu,
            Style::SeccompTrace => Resume::Cont,
        }
    }

    fn resume(&mut self, tid: i32, sig: i32) {
        let how = self.threads.get(&tid).map_or(self.default_resume(), |t| t.resume);
        ptrace(how.request(), tid, 0, sig as usize);
    }

    fn resume_as(&mut self, tid: i32, how: Resume, sig: i32) {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.resume = how;
        }
        ptrace(how.request(), tid, 0, sig as usize);
    }

    /// Waits for guest threads until guest pid 1 (host `init`) has exited and every guest
    /// process is gone; returns pid 1's status the way a shell reports it.
    ///
    /// Stops are served in the order they were collected, a batch at a time: every stop
    /// waiting when the batch is taken is served before any that comes later. waitpid(-1)
    /// alone reports the first stopped thread in the host's list of tracees, so a thread
    /// early in that list that stops again at once (sysemu's three stops per forwarded call)
    /// was served again and again while a thread woken from a futex wait stayed stopped
    /// behind it: CPython's threads, handing the GIL to each other, made many times the calls
    /// they make natively (`threads_are_served_in_turn`).
    fn event_loop(&mut self, init: i32) -> i32 {
        let mut result: Option<i32> = None;
        let mut pending: std::collections::VecDeque<(i32, i32)> = std::collections::VecDeque::new();
        loop {
            // An interrupt that came while a stop was being handled (not during waitpid, which
            // it would have ended with EINTR) is passed on here.
            let sig = INTERRUPT.swap(0, Ordering::SeqCst);
            if sig != 0 {
                for p in self.kernel.live_processes() {
                    // SAFETY: kill has no memory arguments.
                    unsafe { c::kill(p, sig) };
                }
            }
            if pending.is_empty() {
                let mut status = 0;
                // SAFETY: `status` is a valid out-pointer.
                let tid = unsafe { c::waitpid(-1, &mut status, c::__WALL) };
                if tid < 0 {
                    match super::mem::errno() {
                        c::EINTR => continue,
                        _ => break,
                    }
                }
                pending.push_back((tid, status));
                // Every other stop waiting now joins the batch.
                loop {
                    let mut status = 0;
                    // SAFETY: as above.
                    let tid = unsafe { c::waitpid(-1, &mut status, c::__WALL | c::WNOHANG) };
                    if tid <= 0 {
                        break;
                    }
                    pending.push_back((tid, status));
                }
            }
            let Some((tid, status)) = pending.pop_front() else { continue };
            if c::WIFEXITED(status) || c::WIFSIGNALED(status) {
                self.threads.remove(&tid);
                self.kernel.remove_thread(tid);
                if tid == init {
                    result =
                        Some(if c::WIFEXITED(status) { c::WEXITSTATUS(status) } else { 128 + c::WTERMSIG(status) });
                    // As in a pid namespace, the guest ends with its init.
                    for p in self.kernel.live_processes() {
                        // SAFETY: kill has no memory arguments.
                        unsafe { c::kill(p, c::SIGKILL) };
                    }
                }
                continue;
            }
            if !c::WIFSTOPPED(status) {
                continue;
            }
            if result.is_some() {
                // The guest is being torn down.
                ptrace(c::PTRACE_CONT, tid, 0, 0);
                continue;
            }
            self.stopped(tid, status);
        }
        result.unwrap_or(1)
    }

    fn stopped(&mut self, tid: i32, status: i32) {
        let sig = c::WSTOPSIG(status);
        let event = status >> 16;
        if !self.threads.contains_key(&tid) {
            self.new_thread(tid);
            if sig == c::SIGSTOP && event == 0 {
                self.resume(tid, 0);
                return;
            }
        }
        if sig == (c::SIGTRAP | 0x80) {
            match syscall_op(tid) {
                c::PTRACE_SYSCALL_INFO_ENTRY => self.on_entry(tid),
                c::PTRACE_SYSCALL_INFO_EXIT => self.on_completion(tid),
                _ => self.resume(tid, 0),
            }
            return;
        }
        if sig == c::SIGTRAP && event != 0 {
            match event {
                c::PTRACE_EVENT_SECCOMP => self.on_entry(tid),
                c::PTRACE_EVENT_FORK | c::PTRACE_EVENT_VFORK | c::PTRACE_EVENT_CLONE => {
                    let mut msg: c::c_ulong = 0;
                    ptrace(c::PTRACE_GETEVENTMSG, tid, 0, &mut msg as *mut _ as usize);
                    let child = msg as i32;
                    if !self.threads.contains_key(&child) {
                        self.new_thread(child);
                    }
                    // A forked child copies the parent's memory, scratch pages included; a
                    // vfork child borrows its (suspended) parent's; a thread, or any other
                    // child sharing the memory, needs its own.
                    let flags = match get_regs(tid) {
                        Some(r) if r.orig_rax as i64 == c::SYS_clone => r.rdi,
                        Some(r) if r.orig_rax as i64 == c::SYS_vfork => (c::CLONE_VM | c::CLONE_VFORK) as u64,
                        _ => 0,
                    };
                    let shares_vm = flags & c::CLONE_VM as u64 != 0;
                    let (scratch, parent_mm) = self.threads.get(&tid).map_or((None, tid), |t| (t.scratch, t.mm));
                    let borrows = !shares_vm || flags & c::CLONE_VFORK as u64 != 0;
                    if !shares_vm {
                        let copy = self.guarded.get(&parent_mm).cloned().unwrap_or_default();
                        self.guarded.insert(child, copy);
                    }
                    if let Some(t) = self.threads.get_mut(&child) {
                        t.scratch = if borrows { scratch } else { None };
                        t.mm = if shares_vm { parent_mm } else { child };
                    }
                    self.resume(tid, 0);
                }
                c::PTRACE_EVENT_EXEC => {
                    let mut msg: c::c_ulong = 0;
                    ptrace(c::PTRACE_GETEVENTMSG, tid, 0, &mut msg as *mut _ as usize);
                    let former = msg as i32;
                    if former != tid {
                        // A thread other than the leader exec'd: it took over the leader's id.
                        if let Some(t) = self.threads.remove(&former) {
                            self.threads.insert(tid, t);
                        }
                        self.kernel.remove_thread(former);
                    }
                    let tgid = self.kernel.tgid_of(tid);
                    for (&other, t) in self.threads.iter_mut() {
                        if self.kernel.tgid_of(other) == tgid {
                            t.scratch = None;
                            t.scratch_failed = false;
                            t.mm = tgid;
                        }
                    }
                    self.guarded.insert(tgid, Vec::new());
                    self.resume(tid, 0);
                }
                _ => self.resume(tid, 0),
            }
            return;
        }
        // A signal-delivery stop.
        let state_busy =
            matches!(self.threads.get(&tid).map(|t| &t.state), Some(State::Forwarded { .. } | State::Injecting { .. }));
        if self.style == Style::Sysemu && state_busy {
            if sig == c::SIGTRAP {
                // The first trap comes as the emulated (skipped) call returns, before the
                // rewound `syscall` instruction has run: step once more.
                let saved_rip = match self.threads.get(&tid).map(|t| &t.state) {
                    Some(State::Forwarded { saved, .. } | State::Injecting { saved }) => saved.rip,
                    _ => 0,
                };
                if get_regs(tid).is_some_and(|r| r.rip == saved_rip - 2) {
                    self.resume(tid, 0);
                    return;
                }
                self.on_completion(tid);
                return;
            }
            if !self.unstart(tid) {
                // Delivering now would single-step into the handler instead of the call.
                // SAFETY: all-zero is a valid siginfo_t.
                let mut info: c::siginfo_t = unsafe { std::mem::zeroed() };
                ptrace(c::PTRACE_GETSIGINFO, tid, 0, &mut info as *mut _ as usize);
                self.guest_signal(tid, &mut info);
                if let Some(t) = self.threads.get_mut(&tid) {
                    t.deferred.push(info);
                }
                self.resume(tid, 0);
                return;
            }
            // The call has not run: the signal is delivered below, as before a native call.
        }
        if self.style == Style::Sysemu && sig == c::SIGTRAP {
            // SAFETY: all-zero is a valid siginfo_t.
            let mut info: c::siginfo_t = unsafe { std::mem::zeroed() };
            ptrace(c::PTRACE_GETSIGINFO, tid, 0, &mut info as *mut _ as usize);
            if info.si_code > 0 {
                // A stray single-step trap (a child forked while its parent was stepped).
                self.resume(tid, 0);
                return;
            }
        }
        let deliver = match sig {
            c::SIGSTOP | c::SIGTSTP | c::SIGTTIN | c::SIGTTOU => 0,
            s => s,
        };
        if deliver != 0 {
            // The sender's pid, as the guest knows it.
            // SAFETY: all-zero is a valid siginfo_t.
            let mut info: c::siginfo_t = unsafe { std::mem::zeroed() };
            if ptrace(c::PTRACE_GETSIGINFO, tid, 0, &mut info as *mut _ as usize) == 0
                && self.guest_signal(tid, &mut info)
            {
                ptrace(c::PTRACE_SETSIGINFO, tid, 0, &info as *const _ as usize);
            }
        }
        self.resume(tid, deliver);
    }

    /// Makes `info`, the siginfo of the signal `tid` is stopped to receive, what the guest is
    /// to see: a deferred signal the guest kernel re-sent gets its own siginfo back, and the
    /// sender's pid of one the host filled in is made a guest pid. Whether it changed.
    fn guest_signal(&mut self, tid: i32, info: &mut c::siginfo_t) -> bool {
        const SI_TKILL: i32 = -6;
        // SAFETY: si_pid is read as the kill/tkill member, which SI_TKILL says it is.
        if info.si_code == SI_TKILL && unsafe { info.si_pid() } == std::process::id() as i32 {
            if let Some(t) = self.threads.get_mut(&tid) {
                if let Some(i) = t.reinject.iter().position(|s| s.si_signo == info.si_signo) {
                    *info = t.reinject.remove(i);
                    return true;
                }
            }
        }
        self.kernel.guest_siginfo(siginfo_bytes(info))
    }

    /// sysemu: a signal came while thread `tid` was between the stop of a forwarded call (or
    /// of the mmap injected for its scratch memory) and the host's run of it, i.e. stopped on
    /// the rewound `syscall` instruction. Holding the signal back until the call completes
    /// would hold it for as long as the call blocks: a thread about to wait on a futex for
    /// minutes would not run the handler another thread waits for (glibc's set*id broadcast,
    /// which hung a setresgid for the whole of a 5-minute faulthandler timeout). So the call
    /// is put back as the guest made it (its registers, the instruction pointer on its
    /// `syscall`), to be made again when the handler returns, and the signal is delivered now,
    /// as natively a signal that arrives before a call. Whether it was so; false if the call
    /// has already run (its completion delivers the signal).
    fn unstart(&mut self, tid: i32) -> bool {
        let saved = match self.threads.get(&tid).map(|t| &t.state) {
            Some(State::Forwarded { saved, .. } | State::Injecting { saved }) => *saved,
            _ => return false,
        };
        if get_regs(tid).is_none_or(|r| r.rip != saved.rip - 2) {
            return false;
        }
        let mut again = saved;
        again.rip -= 2;
        again.rax = saved.orig_rax;
        set_regs(tid, &again);
        if let Some(t) = self.threads.get_mut(&tid) {
            t.state = State::Idle;
            t.resume = Resume::Sysemu;
        }
        true
    }

    fn new_thread(&mut self, tid: i32) {
        let (tgid, parent) = status_ids(tid);
        self.kernel.add_thread(tid, tgid, parent);
        let resume = self.default_resume();
        self.threads.insert(tid, Thread::new(resume, tgid));
    }

    /// A call's entry: a ptrace entry stop, a sysemu stop or a seccomp stop.
    fn on_entry(&mut self, tid: i32) {
        let Some(mut regs) = get_regs(tid) else {
            return;
        };
        let mut call = call_of(&regs);
        if i386_abi(tid) {
            call.nr = -1; // refused: ENOSYS
        }
        let (scratch, scratch_failed, mm) =
            self.threads.get(&tid).map_or((None, false, tid), |t| (t.scratch, t.scratch_failed, t.mm));
        let guarded = self.guarded.get(&mm).map_or(&[][..], |v| v.as_slice());
        let mut decision = match guarded_range(&call, guarded) {
            true => {
                self.kernel.trapped += 1;
                Decision::Emulate(-(c::EPERM as i64))
            }
            false => self.kernel.entry(tid, &call, scratch),
        };
        if let Decision::NeedScratch = decision {
            if !scratch_failed {
                return self.inject_scratch(tid, regs);
            }
            decision = Decision::Emulate(-(c::ENOMEM as i64));
        }
        let strace = self.kernel.strace;
        let mut line = strace.then(|| strace::call_line(self.kernel, tid, &call));
        if matches!(call.nr, c::SYS_exit | c::SYS_exit_group) {
            // These never return: no completion to print the result at.
            if let Some(l) = line.take() {
                strace::print_unfinished(&l);
            }
        }
        match decision {
            Decision::NeedScratch => unreachable!("handled above"),
            Decision::Emulate(ret) => match self.style {
                Style::Ptrace => {
                    regs.orig_rax = u64::MAX;
                    set_regs(tid, &regs);
                    self.set_state(tid, State::Emulating { ret, line });
                    self.resume_as(tid, Resume::Syscall, 0);
                }
                Style::Sysemu | Style::SeccompTrace => {
                    if let Some(line) = line {
                        strace::print(&line, ret);
                    }
                    if self.style == Style::SeccompTrace {
                        regs.orig_rax = u64::MAX;
                    }
                    regs.rax = ret as u64;
                    set_regs(tid, &regs);
                    let how = self.default_resume();
                    self.resume_as(tid, how, 0);
                }
            },
            Decision::Forward { args, post } => {
                let saved = regs;
                let changed = args.is_some();
                if let Some(a) = args {
                    set_args(&mut regs, &a);
                }
                if let Post::Sendmmsg(_) = post {
                    regs.orig_rax = c::SYS_sendmsg as u64;
                }
                match self.style {
                    Style::Ptrace => {
                        if changed {
                            set_regs(tid, &regs);
                        }
                        self.set_state(tid, State::Forwarded { saved, changed, post, line });
                        self.resume_as(tid, Resume::Syscall, 0);
                    }
                    Style::SeccompTrace => {
                        if changed {
                            set_regs(tid, &regs);
                        }
                        if !changed && post == Post::None && line.is_none() {
                            self.resume_as(tid, Resume::Cont, 0);
                        } else {
                            self.set_state(tid, State::Forwarded { saved, changed, post, line });
                            self.resume_as(tid, Resume::Syscall, 0);
                        }
                    }
                    Style::Sysemu => {
                        regs.rip -= 2;
                        regs.rax = regs.orig_rax;
                        set_regs(tid, &regs);
                        self.set_state(tid, State::Forwarded { saved, changed, post, line });
                        self.resume_as(tid, Resume::Step, 0);
                    }
                }
            }
        }
    }

    fn set_state(&mut self, tid: i32, state: State) {
        if let Some(t) = self.threads.get_mut(&tid) {
            t.state = state;
        }
    }

    /// Makes the thread run mmap for its scratch memory, then the interrupted call again.
    fn inject_scratch(&mut self, tid: i32, mut regs: c::user_regs_struct) {
        let saved = regs;
        // Read-only to the guest: the guest kernel writes it through /proc/PID/mem.
        let args = [0, SCRATCH_LEN, c::PROT_READ as u64, (c::MAP_PRIVATE | c::MAP_ANONYMOUS) as u64, u64::MAX, 0];
        set_args(&mut regs, &args);
        self.set_state(tid, State::Injecting { saved });
        match self.style {
            Style::Ptrace | Style::SeccompTrace => {
                regs.orig_rax = c::SYS_mmap as u64;
                set_regs(tid, &regs);
                self.resume_as(tid, Resume::Syscall, 0);
            }
            Style::Sysemu => {
                regs.rip -= 2;
                regs.rax = c::SYS_mmap as u64;
                set_regs(tid, &regs);
                self.resume_as(tid, Resume::Step, 0);
            }
        }
    }

    /// A call's completion: a ptrace exit stop, or the single-step trap after it (sysemu).
    fn on_completion(&mut self, tid: i32) {
        let state = self.threads.get_mut(&tid).map_or(State::Idle, |t| std::mem::replace(&mut t.state, State::Idle));
        let how = self.default_resume();
        match state {
            State::Idle => self.resume_as(tid, how, 0),
            State::Emulating { ret, line } => {
                if let Some(mut regs) = get_regs(tid) {
                    regs.rax = ret as u64;
                    set_regs(tid, &regs);
                }
                if let Some(line) = line {
                    strace::print(&line, ret);
                }
                self.resume_as(tid, how, 0);
            }
            State::Injecting { saved } => {
                if let Some(regs) = get_regs(tid) {
                    let addr = regs.rax as i64;
                    if let Some(t) = self.threads.get_mut(&tid) {
                        if addr < 0 && addr > -4096 {
                            t.scratch_failed = true;
                        } else {
                            t.scratch = Some(addr as u64);
                            self.guarded.entry(t.mm).or_default().push(addr as u64);
                        }
                    }
                }
                let mut again = saved;
                again.rip -= 2;
                again.rax = saved.orig_rax;
                set_regs(tid, &again);
                self.resume_as(tid, how, 0);
            }
            State::Forwarded { saved, changed, post, line } => {
                let Some(mut regs) = get_regs(tid) else {
                    return;
                };
                let host_ret = regs.rax as i64;
                let exec_done = post == Post::Exec && host_ret == 0;
                let ret = if is_restart(host_ret) { host_ret } else { self.kernel.complete(tid, post, host_ret) };
                let mut write = ret != host_ret;
                if changed && !exec_done {
                    set_args(&mut regs, &call_of(&saved).args);
                    // A call restarted after a signal runs again from these registers.
                    regs.orig_rax = saved.orig_rax;
                    write = true;
                }
                regs.rax = ret as u64;
                if write {
                    set_regs(tid, &regs);
                }
                if let Some(line) = line {
                    if !is_restart(host_ret) {
                        strace::print(&line, ret);
                    }
                }
                let deferred = self.threads.get_mut(&tid).map(|t| std::mem::take(&mut t.deferred)).unwrap_or_default();
                let mut sig = 0;
                if let Some((first, rest)) = deferred.split_first() {
                    ptrace(c::PTRACE_SETSIGINFO, tid, 0, first as *const _ as usize);
                    sig = first.si_signo;
                    for info in rest {
                        // SAFETY: tgkill has no memory arguments.
                        unsafe { c::syscall(c::SYS_tgkill, self.kernel.tgid_of(tid), tid, info.si_signo) };
                        if let Some(t) = self.threads.get_mut(&tid) {
                            t.reinject.push(*info);
                        }
                    }
                }
                self.resume_as(tid, how, sig);
            }
        }
    }
}

/// The bytes of a siginfo.
fn siginfo_bytes(info: &mut c::siginfo_t) -> &mut [u8] {
    // SAFETY: siginfo_t is 128 bytes of plain data; the slice borrows it mutably.
    unsafe {
        std::slice::from_raw_parts_mut((info as *mut c::siginfo_t).cast::<u8>(), std::mem::size_of::<c::siginfo_t>())
    }
}

/// A thread's tgid and parent pid, from /proc/TID/status.
fn status_ids(tid: i32) -> (i32, i32) {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).unwrap_or_default();
    let field = |name: &str| -> Option<i32> {
        text.lines().find_map(|l| l.strip_prefix(name)).and_then(|v| v.trim().parse().ok())
    };
    (field("Tgid:").unwrap_or(tid), field("PPid:").unwrap_or(0))
}

/// Whether `call` would unmap, remap, re-protect, replace or discard any of the scratch
/// mappings at `guarded` (each SCRATCH_LEN bytes): the guest kernel refuses it (EPERM), since
/// a writable page there would let a guest thread change a path or address the guest kernel
/// has checked before the host reads it.
fn guarded_range(call: &Call, guarded: &[u64]) -> bool {
    const MAP_FIXED_NOREPLACE: u64 = 0x10_0000;
    if guarded.is_empty() {
        return false;
    }
    let a = call.args;
    let overlaps = |start: u64, len: u64| {
        let end = start.saturating_add(len.max(1)).saturating_add(4095) & !4095;
        let start = start & !4095;
        guarded.iter().any(|&g| start < g + SCRATCH_LEN && g < end)
    };
    match call.nr {
        c::SYS_mmap => a[3] & (c::MAP_FIXED as u64 | MAP_FIXED_NOREPLACE) != 0 && overlaps(a[0], a[1]),
        c::SYS_munmap | c::SYS_mprotect | c::SYS_pkey_mprotect | c::SYS_madvise | c::SYS_remap_file_pages => {
            overlaps(a[0], a[1])
        }
        c::SYS_mremap => overlaps(a[0], a[1]) || (a[3] & c::MREMAP_FIXED as u64 != 0 && overlaps(a[4], a[2])),
        // The segment's size is unknown here: any address from the scratch page down to 1 GB
        // below it is refused.
        c::SYS_shmat => a[1] != 0 && overlaps(a[1], 1 << 30),
        _ => false,
    }
}
