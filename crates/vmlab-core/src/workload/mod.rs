//! Workloads: lazy generators of the operations a program performs.
//!
//! A workload is a stream of [`Op`]s pulled one at a time by the engine: first a set-up
//! phase (map the buffer, touch every page of it), then [`Op::StartMeasurement`], then the
//! measured data accesses. Nothing is materialized: a generator holds a few counters and a
//! random number generator, so a run over a 64 GiB footprint costs no memory here.
//!
//! Users name workloads with a spec string (`NAME[:key=value,...]`, see [`WorkloadSpec`]);
//! [`catalog`] describes the available ones and their parameters.
//!
//! Each workload is one module: its generator, and its config type implementing
//! [`WorkloadKind`] (name, parameters, parsing, validation, canonical form, footprint,
//! builder). `registry.rs` lists them once; the parser, the catalog, [`WorkloadConfig`] and
//! [`AnyWorkload`] (with the engine's per-type dispatch, [`AnyWorkload::visit`]) are
//! generated from that list.
//!
//! Some workloads also fork, switch between and exit processes, or map and unmap memory
//! in the measured phase (`fork-bench`, `lmbench`): their cost is the kernel's work, and
//! they may make no measured accesses at all.
//!
//! Every generator here places its buffer at [`BUFFER_BASE`] (`lmbench` `ctxsw`: one per
//! process from there, 1 GiB aligned) and derives all its randomness from
//! `Xoshiro256PlusPlus::seed_from_u64(seed)`, so a stream is a function of (spec, seed)
//! alone.

mod champsim;
mod fork_bench;
mod gups;
mod host_remap;
mod kind;
mod lmbench;
mod registry;
mod spec;
mod sysbench;
mod tlb_bench;
mod tpt_probe;
mod trace;

pub use crate::units::{format_size, parse_size, SizeError};
pub use champsim::{ChampSim, ChampSimConfig, Compression as ChampSimCompression};
pub use fork_bench::{ChildTouches, ForkBench, ForkBenchConfig};
pub use gups::{Gups, GupsConfig};
pub use host_remap::{HostRemap, HostRemapConfig};
pub use kind::{WorkloadKind, DEFAULT_SAMPLE};
pub use lmbench::{Lmbench, LmbenchConfig, LmbenchOp, LmbenchTest};
pub use registry::{default_accesses, AnyWorkload, WorkloadConfig, WorkloadVisitor};
pub use spec::{catalog, ParamInfo, Values, WorkloadError, WorkloadInfo, WorkloadSpec};
pub use sysbench::{AccessMode, MemOper, SysbenchMem, SysbenchMemConfig};
pub use tlb_bench::{TlbBench, TlbBenchConfig};
pub use tpt_probe::{TptIsolationProbe, TptIsolationProbeConfig};
pub use trace::{TraceConfig, TraceReplay, TraceWorkload, RECORDED_EXEC};

use crate::addr::Gva;
use rand::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// Where every workload maps its buffer: 16 TiB, which is 1 GiB aligned (so 2 MiB and
/// 1 GiB pages can back the buffer from its first byte) and leaves room for the largest
/// allowed footprint (64 TiB) below the top of the 47-bit user half (128 TiB), well away
/// from where Linux puts the stack and shared libraries (just below 128 TiB).
pub const BUFFER_BASE: Gva = Gva::new(0x1000_0000_0000);

/// One step of a workload. Workloads are lazy streams of these; nothing is materialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Map `len` bytes of private anonymous memory at `start` (like mmap with MAP_FIXED);
    /// `start` and `len` 4 KiB aligned.
    Map {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
    },
    /// Touch every 4 KiB page of a mapped range once, in order (a memset at page
    /// granularity: its page faults happen and its page tables get built; its cache
    /// traffic is not modeled byte by byte).
    TouchPages {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
        /// Store to each page (a write fault, dirty bits); otherwise load.
        write: bool,
    },
    /// Everything before this is set-up, not measured; the measured phase starts here.
    StartMeasurement,
    /// One data access (of the measured phase, when after `StartMeasurement`).
    Access {
        /// The address accessed.
        va: Gva,
        /// A store; otherwise a load.
        write: bool,
    },
    /// Map read-only anonymous memory (like `Map`, without PROT_WRITE).
    MapReadOnly {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
    },
    /// munmap of a range of the running process.
    Unmap {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
    },
    /// mprotect of a range: read-write or read-only.
    Protect {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
        /// The new protection: read-write if true, read-only otherwise.
        writable: bool,
    },
    /// madvise(MADV_DONTNEED) of a range: its pages go, the mapping stays.
    DontNeed {
        /// First byte of the range (4 KiB aligned).
        start: Gva,
        /// Bytes in the range (a multiple of 4 KiB).
        len: u64,
    },
    /// The running process forks. The child gets the next pid (the first process is 0, and
    /// pids are never reused); the parent keeps running.
    Fork,
    /// Context switch to process `pid`.
    Switch {
        /// The process to run next.
        pid: u32,
    },
    /// The running process execs `program`: its address space is replaced by the program's
    /// image (lmbench's `hello`: `os::HELLO`; a recorded program's exec maps nothing, its
    /// recorded map follows as ops).
    Exec {
        /// The program exec'd.
        program: &'static crate::os::Program,
    },
    /// A system call whose kernel work is not modeled: the entry into the kernel and the
    /// return, as the scheme charges them (a recorded program's read, write, futex...).
    Syscall,
    /// The running process exits; `next` runs after it (e.g. the parent in waitpid).
    Exit {
        /// The process that runs after the exit.
        next: u32,
    },
    /// The host moves the page backing `va` in the running process to another host page
    /// (migration, compaction): see `System::host_remap`. Nested and tpt paging only.
    HostRemap {
        /// An address in the page to move (mapped and touched).
        va: Gva,
    },
    /// TPT's isolation probe: the guest kernel points the devirt entry at `level` (1 = leaf)
    /// on the path of `va` at another VM's host frame, and the process accesses `va` through
    /// it. Only under `--paging tpt`; `va` must be mapped and touched.
    ForeignProbe {
        /// The probed address.
        va: Gva,
        /// The level of the devirt entry redirected (1 = leaf).
        level: u8,
        /// The access through it is a store; otherwise a load.
        write: bool,
    },
    /// A sampled recording's warm-up line before a window: a load that rebuilds TLB and cache
    /// state, not a reference the program made. Only workloads that say [`Workload::sampled`]
    /// emit it.
    Warm {
        /// The line's address.
        va: Gva,
    },
    /// A sampled recording's windows: the accesses that follow belong to window `id` (each
    /// recorded window has its own), or to none. Accesses outside windows are run (they fault
    /// pages in and warm the TLBs and caches) but are not the program's measured references.
    /// Only workloads that say [`Workload::sampled`] emit it.
    Window {
        /// The window, or None between windows.
        id: Option<u32>,
    },
}

/// A program, as the stream of operations it performs.
pub trait Workload {
    /// The next op, or None at the end. Called once per simulated access: keep it cheap
    /// (no allocation).
    fn next_op(&mut self) -> Option<Op>;

    /// How many `Access` ops the measured phase makes in full (the engine may simulate
    /// only a sample and extrapolate).
    fn measured_accesses_total(&self) -> u64;

    /// Instructions the program executes per measured access besides the access itself
    /// (loop, random number generation), with the source of the estimate in a comment.
    fn instructions_per_access(&self) -> f64;

    /// True when each access depends on the previous one (a pointer chase): no
    /// memory-level parallelism.
    fn dependent_accesses(&self) -> bool;

    /// For a workload that samples itself (a sampled recording): the accesses its stream
    /// holds, windows and all. Its accesses are measured only inside [`Op::Window`]s, and
    /// [`Workload::measured_accesses_total`] counts every reference the program made.
    fn sampled(&self) -> Option<u64> {
        None
    }

    /// Instructions the program has retired so far, for a workload that knows them (a
    /// recorded program); the engine then charges these instead of
    /// [`Self::instructions_per_access`]. The count covers every op handed out.
    fn instructions_retired(&self) -> Option<u64> {
        None
    }

    /// Why the stream ended early, if it did (a recording that turned out unreadable half-way);
    /// taken once, by the engine, which then fails the run with it.
    fn take_failure(&mut self) -> Option<String> {
        None
    }

    /// Where the workload is in its input, for an error message (a recording's event number).
    fn position(&self) -> Option<String> {
        None
    }
}

/// The set-up phase shared by the generators here: map the buffer at [`BUFFER_BASE`],
/// write-touch all of it (the program's initializing memset), start measuring.
#[derive(Clone, Debug)]
struct Prologue {
    len: u64,
    step: u8,
}

impl Prologue {
    const STEPS: u8 = 3;

    fn new(len: u64) -> Self {
        Prologue { len, step: 0 }
    }

    /// True once `StartMeasurement` has been handed out.
    #[inline]
    fn done(&self) -> bool {
        self.step >= Self::STEPS
    }

    /// The next set-up op; call only while `!done()`. Cold so the per-access path stays
    /// a single predictable compare.
    #[cold]
    fn next(&mut self) -> Op {
        let op = match self.step {
            0 => Op::Map {
                start: BUFFER_BASE,
                len: self.len,
            },
            1 => Op::TouchPages {
                start: BUFFER_BASE,
                len: self.len,
                write: true,
            },
            _ => Op::StartMeasurement,
        };
        self.step += 1;
        op
    }
}

/// The shape of `gups`, `tlb-bench` and `host-remap`'s reads: the set-up prologue over a buffer at
/// [`BUFFER_BASE`], then `count` accesses, each to a uniformly random `unit`-byte slot of it.
#[derive(Clone, Debug)]
struct UniformAccesses {
    rng: Xoshiro256PlusPlus,
    prologue: Prologue,
    unit_bytes: u64,
    units: u64,
    remaining: u64,
    write: bool,
}

impl UniformAccesses {
    fn new(bytes: u64, unit_bytes: u64, count: u64, write: bool, seed: u64) -> Self {
        UniformAccesses {
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            prologue: Prologue::new(bytes),
            unit_bytes,
            units: bytes / unit_bytes,
            remaining: count,
            write,
        }
    }

    /// True once set-up is over and the accesses have begun.
    #[inline]
    fn measuring(&self) -> bool {
        self.prologue.done()
    }

    /// The stream's random numbers, for a generator that draws more than addresses from them.
    fn rng(&mut self) -> &mut Xoshiro256PlusPlus {
        &mut self.rng
    }

    /// The next set-up op or access; None at the end.
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        if !self.prologue.done() {
            return Some(self.prologue.next());
        }
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let unit = uniform_below(&mut self.rng, self.units);
        Some(Op::Access {
            va: Gva::new(BUFFER_BASE.raw() + unit * self.unit_bytes),
            write: self.write,
        })
    }
}

/// A uniform integer in `0..n` by multiply-shift (Lemire): no division, and a bias of at
/// most n/2^64, far below anything a simulation could observe.
#[inline]
fn uniform_below(rng: &mut impl RngCore, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

#[cfg(test)]
mod test_support {
    use super::*;

    /// Every op left in a workload's stream, checking that its end is sticky.
    pub(crate) fn drain(w: &mut impl Workload) -> Vec<Op> {
        let ops: Vec<Op> = std::iter::from_fn(|| w.next_op()).collect();
        assert_eq!(w.next_op(), None);
        ops
    }

    /// Drains a workload, checking the set-up prefix, and returns its measured accesses.
    /// Only for small configurations: it collects the whole stream.
    pub(crate) fn measured_accesses(w: &mut impl Workload, footprint: u64) -> Vec<(u64, bool)> {
        assert_eq!(
            w.next_op(),
            Some(Op::Map {
                start: BUFFER_BASE,
                len: footprint
            })
        );
        assert_eq!(
            w.next_op(),
            Some(Op::TouchPages {
                start: BUFFER_BASE,
                len: footprint,
                write: true
            })
        );
        assert_eq!(w.next_op(), Some(Op::StartMeasurement));
        let mut out = Vec::new();
        while let Some(op) = w.next_op() {
            match op {
                Op::Access { va, write } => out.push((va.raw() - BUFFER_BASE.raw(), write)),
                other => panic!("unexpected op in the measured phase: {other:?}"),
            }
        }
        // The end is sticky.
        assert_eq!(w.next_op(), None);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::PageSize;

    #[test]
    fn buffer_base_is_1g_aligned_and_fits_the_largest_footprint() {
        assert!(BUFFER_BASE.is_aligned(PageSize::Size1G));
        assert!(BUFFER_BASE.raw() + spec::MAX_SIZE <= 1 << 47);
    }

    #[test]
    fn any_workload_dispatches() {
        let spec = WorkloadSpec::parse("gups:table=4K,updates=10").unwrap();
        let mut w = spec.build(1).unwrap();
        assert!(matches!(w, AnyWorkload::Gups(_)));
        assert_eq!(w.measured_accesses_total(), 10);
        assert!(!w.dependent_accesses());
        let n = std::iter::from_fn(|| w.next_op()).count();
        assert_eq!(n, 3 + 10);
    }
}
