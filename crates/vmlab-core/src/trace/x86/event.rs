//! The events of a recorded x86-64 Linux program, in recording order.

/// One recorded event. Events are by the *current thread*, set by the last [`Event::Switch`];
/// a recording starts with a `Switch` to its first thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A data reference by the current thread. `insns`: instructions the thread retired since
    /// its previous Ref (this one's instruction included; 0 for a second reference by the same
    /// instruction).
    Ref {
        /// Virtual address of the first byte.
        addr: u64,
        /// Bytes: 1, 2, 4 or 8.
        size: u8,
        /// A store (true) or a load.
        write: bool,
        /// Instructions retired since the thread's previous Ref, this one's included.
        insns: u32,
    },
    /// The current thread starts fetching instructions from another 4 KiB page.
    CodePage {
        /// The page number (virtual address >> 12).
        page: u64,
    },
    /// Following events are by thread `tid` of process `pid` (recording-local dense ids, both
    /// from 0, in order of appearance).
    Switch {
        /// The process.
        pid: u32,
        /// The thread.
        tid: u32,
    },
    /// One region of the current process's address space at program load (after exec or at
    /// the start): `[start, end)` with protection bits [`PROT_READ`], [`PROT_WRITE`],
    /// [`PROT_EXEC`] (0 = a `PROT_NONE` reservation).
    Map {
        /// First byte.
        start: u64,
        /// One past the last byte.
        end: u64,
        /// Protection bits.
        prot: u8,
    },
    /// A system call of the current thread, placed where it returned.
    Syscall {
        /// The x86-64 system call number.
        nr: u32,
        /// rdi, rsi, rdx, r10, r8, r9.
        args: [u64; 6],
        /// rax on return; None when the call did not return (exit, a successful execve, the
        /// recording ended).
        ret: Option<i64>,
    },
    /// The kernel wrote `[addr, addr + len)` of the current process on its behalf (read,
    /// recv, stat...).
    KernelWrite {
        /// First byte written.
        addr: u64,
        /// Bytes written.
        len: u64,
    },
    /// The current process forked.
    Fork {
        /// The new process's pid.
        child: u32,
    },
    /// The current process replaced its image; Map events of the new image follow.
    Exec {
        /// The program.
        path: String,
    },
    /// The current process ended (exit_group, or killed).
    Exit {
        /// A wait status-like code.
        code: i32,
    },
    /// A sampled recording's window of the current thread opens (`open`) or closes: the
    /// thread's references between an open and the next close are every reference it made;
    /// outside windows only the first touch and first store of each page are written.
    Window {
        /// The window opens (true) or closes.
        open: bool,
        /// References the thread made since its previous Window event that are not in the
        /// trace.
        skipped: u64,
        /// Instructions the thread retired since its previous Ref (the next Ref counts from
        /// here).
        insns: u64,
    },
    /// A sampled recording's summary of the current thread's recent past before a window: a
    /// cache line it used (line-aligned address), in order of last use. Not a reference the
    /// program made: the replay runs it to rebuild TLB and cache state.
    Warm {
        /// The line's first byte.
        addr: u64,
    },
}

/// [`Event::Map`] protection bit: readable.
pub const PROT_READ: u8 = 1;
/// [`Event::Map`] protection bit: writable.
pub const PROT_WRITE: u8 = 2;
/// [`Event::Map`] protection bit: executable.
pub const PROT_EXEC: u8 = 4;

impl Event {
    /// The event kind's name, as the totals count it (`ref`, `code_page`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Event::Ref { .. } => "ref",
            Event::CodePage { .. } => "code_page",
            Event::Switch { .. } => "switch",
            Event::Map { .. } => "map",
            Event::Syscall { .. } => "syscall",
            Event::KernelWrite { .. } => "kernel_write",
            Event::Fork { .. } => "fork",
            Event::Exec { .. } => "exec",
            Event::Exit { .. } => "exit",
            Event::Window { .. } => "window",
            Event::Warm { .. } => "warm",
        }
    }
}
