//! Replaying a recorded program (`crate::trace::x86`) as a stream of kernel-model operations
//! and memory accesses: its processes fork, exec and exit where the recording says; its
//! memory is mapped, protected and unmapped at the recorded addresses, so demand faults,
//! copy-on-write and page-table pages come out as the program's own; its references run in the
//! recorded interleaving of threads and processes.

use super::address_space::{page_down, page_up, AddressSpace, USER_END};
use crate::addr::{Gva, PAGE_SIZE};
use crate::os::Program;
use crate::trace::x86::{Event, Reader, TraceError, PROT_READ};
use crate::workload::Op;
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

/// What an exec'd program maps before it runs: nothing; the recording's Map events follow.
pub static RECORDED_EXEC: Program = Program {
    name: "recorded-exec",
    image: &[],
};

use crate::trace::x86::syscalls as nr;
const MADV_DONTNEED: u64 = 4;

/// Per process: its address space, brk, the code pages it has fetched from.
#[derive(Clone, Debug, Default)]
struct Process {
    space: AddressSpace,
    brk: Option<u64>,
    code: FxHashSet<u64>,
    exited: bool,
}

/// The replay of one trace: pull [`Op`]s with [`TraceReplay::next_op`].
pub struct TraceReplay {
    reader: Reader,
    /// Ops made from the last event, not yet handed out.
    queue: VecDeque<Op>,
    /// Events read ahead (to find who runs after an exit).
    ahead: VecDeque<Event>,
    procs: Vec<Process>,
    /// The process the kernel model runs.
    current: u32,
    /// The process the recording's events are about (an exited one's are dropped).
    recorded: u32,
    started: bool,
    ended: bool,
    /// The first read error, which ends the stream.
    error: Option<TraceError>,
    /// Instructions retired by the references handed out (their recorded counts).
    instructions: u64,
    /// A sampled recording's windows: the thread the events are about, the window each
    /// thread is in, the window the accesses handed out belong to, and the next window's id.
    thread: (u32, u32),
    windows: FxHashMap<(u32, u32), u32>,
    measuring: Option<u32>,
    next_window: u32,
}

impl TraceReplay {
    /// A replay from the start of `reader`.
    pub fn new(reader: Reader) -> Self {
        TraceReplay {
            reader,
            queue: VecDeque::new(),
            ahead: VecDeque::new(),
            procs: vec![Process::default()],
            current: 0,
            recorded: 0,
            started: false,
            ended: false,
            error: None,
            instructions: 0,
            thread: (0, 0),
            windows: FxHashMap::default(),
            measuring: None,
            next_window: 0,
        }
    }

    /// Hands out an [`Op::Window`] when the window the current thread's accesses belong to
    /// is not the one handed out last.
    fn follow_window(&mut self) {
        let now = self.windows.get(&self.thread).copied();
        if now != self.measuring {
            self.measuring = now;
            self.queue.push_back(Op::Window { id: now });
        }
    }

    /// Instructions retired by the references handed out so far.
    pub fn instructions(&self) -> u64 {
        self.instructions
    }

    /// The read error that ended the stream early, if any (taken once).
    pub fn take_error(&mut self) -> Option<TraceError> {
        self.error.take()
    }

    fn read(&mut self) -> Option<Event> {
        if let Some(e) = self.ahead.pop_front() {
            return Some(e);
        }
        if self.ended {
            return None;
        }
        match self.reader.next_event() {
            Ok(Some(e)) => Some(e),
            Ok(None) => {
                self.ended = true;
                None
            }
            Err(e) => {
                self.error = Some(e);
                self.ended = true;
                None
            }
        }
    }

    /// The next operation; `None` at the end of the trace (or at a read error, see
    /// [`TraceReplay::take_error`]).
    #[inline]
    pub fn next_op(&mut self) -> Option<Op> {
        loop {
            if let Some(op) = self.queue.pop_front() {
                return Some(op);
            }
            let event = self.read()?;
            if let Event::Ref {
                addr, write, insns, ..
            } = event
            {
                if self.procs[self.recorded as usize].exited {
                    continue;
                }
                if self.started {
                    self.instructions += u64::from(insns);
                    return Some(Op::Access {
                        va: Gva::new(addr),
                        write,
                    });
                }
            }
            self.event(event);
        }
    }

    fn proc(&mut self) -> &mut Process {
        &mut self.procs[self.recorded as usize]
    }

    /// Everything but a measured reference: queue its operations.
    #[cold]
    fn event(&mut self, event: Event) {
        if !self.started && !matches!(event, Event::Map { .. } | Event::Switch { .. }) {
            // The initial map is set-up; the program's first step starts the measurement.
            self.started = true;
            self.queue.push_back(Op::StartMeasurement);
            self.ahead.push_front(event);
            return;
        }
        if let Event::Switch { pid, tid } = event {
            if pid as usize >= self.procs.len() {
                self.procs.resize(pid as usize + 1, Process::default());
            }
            self.recorded = pid;
            self.thread = (pid, tid);
            if pid != self.current && !self.procs[pid as usize].exited {
                self.current = pid;
                self.queue.push_back(Op::Switch { pid });
            }
            if !self.windows.is_empty() || self.measuring.is_some() {
                self.follow_window();
            }
            return;
        }
        if self.procs[self.recorded as usize].exited {
            // Another thread's last block, written out after its process exited.
            return;
        }
        match event {
            Event::Ref { .. } | Event::Switch { .. } => {
                unreachable!("handled above and by next_op")
            }
            Event::Map { start, end, prot } => {
                let ops = &mut self.queue;
                self.procs[self.recorded as usize].space.set(
                    start,
                    end.min(USER_END),
                    Some(prot),
                    true,
                    ops,
                );
            }
            Event::CodePage { page } => {
                let va = page.saturating_mul(PAGE_SIZE);
                let p = &mut self.procs[self.recorded as usize];
                if va < USER_END
                    && p.space.prot_at(va).is_some_and(|x| x != 0)
                    && p.code.insert(page)
                {
                    self.queue.push_back(Op::TouchPages {
                        start: Gva::new(va),
                        len: PAGE_SIZE,
                        write: false,
                    });
                }
            }
            Event::KernelWrite { addr, len } => {
                let (start, end) = (page_down(addr), page_up(addr.saturating_add(len)));
                if end <= USER_END && self.proc().space.writable(start, end) {
                    self.queue.push_back(Op::TouchPages {
                        start: Gva::new(start),
                        len: end - start,
                        write: true,
                    });
                }
            }
            Event::Syscall { nr, args, ret } => self.syscall(nr, args, ret),
            Event::Fork { child } => {
                let copy = Process {
                    exited: false,
                    ..self.procs[self.recorded as usize].clone()
                };
                if child as usize >= self.procs.len() {
                    self.procs.resize(child as usize + 1, Process::default());
                }
                self.procs[child as usize] = copy;
                self.queue.push_back(Op::Fork);
            }
            Event::Exec { .. } => {
                *self.proc() = Process::default();
                self.queue.push_back(Op::Exec {
                    program: &RECORDED_EXEC,
                });
            }
            Event::Exit { .. } => self.exit(),
            Event::Window { open, insns, .. } => {
                self.instructions += insns;
                if open {
                    self.windows.insert(self.thread, self.next_window);
                    self.next_window += 1;
                } else {
                    self.windows.remove(&self.thread);
                }
                self.follow_window();
            }
            Event::Warm { addr } => {
                // Only lines of readable pages: the summary's pages were touched, but one
                // may have been protected since.
                let readable = self.procs[self.recorded as usize]
                    .space
                    .prot_at(addr)
                    .is_some_and(|p| p & PROT_READ != 0);
                if readable && addr < USER_END {
                    self.queue.push_back(Op::Warm { va: Gva::new(addr) });
                }
            }
        }
    }

    /// A recorded system call, at its return.
    fn syscall(&mut self, nr: u32, a: [u64; 6], ret: Option<i64>) {
        let ok = ret.filter(|r| !(-4095..0).contains(r)).map(|r| r as u64);
        let ops = &mut self.queue;
        let p = &mut self.procs[self.recorded as usize];
        match (nr, ok) {
            (nr::MMAP, Some(addr)) => p.space.set(
                addr,
                addr.saturating_add(a[1]),
                Some(a[2] as u8 & 7),
                true,
                ops,
            ),
            (nr::MUNMAP, Some(_)) => p
                .space
                .set(a[0], a[0].saturating_add(a[1]), None, false, ops),
            (nr::MPROTECT, Some(_)) => {
                p.space
                    .protect(a[0], a[0].saturating_add(a[1]), a[2] as u8 & 7, ops)
            }
            (nr::BRK, Some(now)) => {
                if let Some(was) = p.brk {
                    if now > was {
                        p.space.set(page_up(was), page_up(now), Some(3), true, ops);
                    } else if now < was {
                        p.space.set(page_up(now), page_up(was), None, false, ops);
                    }
                }
                p.brk = Some(now);
            }
            (nr::MREMAP, Some(to)) => {
                let (from, old, new) = (a[0], page_up(a[1]), page_up(a[2]));
                let prot = p.space.prot_at(from).unwrap_or(3);
                if to == from {
                    if new > old {
                        p.space.set(from + old, from + new, Some(prot), true, ops);
                    } else if new < old {
                        p.space.set(from + new, from + old, None, false, ops);
                    }
                } else {
                    // The pages move in Linux (their entries do); here they are faulted in
                    // again at the new place.
                    p.space.set(from, from + old, None, false, ops);
                    p.space.set(to, to + new, Some(prot), true, ops);
                }
            }
            (nr::MADVISE, Some(_)) if a[2] == MADV_DONTNEED => {
                let (start, end) = (page_down(a[0]), page_up(a[0].saturating_add(a[1])));
                for (lo, hi) in p.space.accessible_pieces(start, end) {
                    ops.push_back(Op::DontNeed {
                        start: Gva::new(lo),
                        len: hi - lo,
                    });
                }
            }
            // Fork, exec and exit are their own events; these calls only record them.
            (nr::CLONE | nr::CLONE3 | nr::FORK | nr::VFORK | nr::EXECVE, _) => {}
            (nr::EXIT | nr::EXIT_GROUP, _) => {}
            // Linux runs these in the vDSO, without entering the kernel; QEMU has none.
            (nr::CLOCK_GETTIME | nr::GETTIMEOFDAY | nr::TIME | nr::GETCPU, _) => {}
            // Failed mapping calls and every other call: an entry and a return.
            _ => {
                if ret.is_some() {
                    ops.push_back(Op::Syscall);
                }
            }
        }
    }

    /// The current process exits; the next process to run is the next one the recording
    /// switches to (or the lowest live one). The last process does not exit: the model keeps
    /// one process, and nothing of the recording follows it.
    fn exit(&mut self) {
        self.proc().exited = true;
        let pid = self.recorded;
        self.windows.retain(|&(p, _), _| p != pid);
        let mut next = None;
        while next.is_none() {
            let Some(e) = self.read() else { break };
            if let Event::Switch { pid, .. } = e {
                let live = self.procs.get(pid as usize).is_some_and(|p| !p.exited);
                if pid != self.recorded && live {
                    next = Some(pid);
                }
            }
            self.ahead.push_back(e);
        }
        let next =
            next.or_else(|| (0..self.procs.len() as u32).find(|&p| !self.procs[p as usize].exited));
        if let Some(next) = next {
            self.current = next;
            self.queue.push_back(Op::Exit { next });
        }
    }
}
