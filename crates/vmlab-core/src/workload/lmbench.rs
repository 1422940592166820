//! `lmbench`: small models of the lmbench 3 micro-benchmarks of process creation, page
//! faults, mmap and context switches, one per `op`:
//!
//! - `fork-exit`, `lat_proc fork`: `iters` times, fork; the child `exit`s at once while
//!   the parent `wait`s. Ops: [`Op::Fork`], [`Op::Switch`] to the child (pid k for the
//!   k-th fork), [`Op::Exit`] back to the parent, pid 0.
//! - `fork-exec`, `lat_proc exec`: the same, with the child `execve`ing a small program
//!   (`/tmp/hello`) before it exits: an [`Op::Exec`] between the switch and the exit (the
//!   engine maps the kernel model's small static image and touches it as the starting
//!   program does).
//! - `page-fault`, `lat_pagefault`: set-up maps a `size`-byte region read-only and leaves
//!   it untouched; each iteration reads one byte of every page (a read
//!   [`Op::TouchPages`]: one fault per page) and drops the pages again
//!   ([`Op::DontNeed`]), so the next iteration faults on every page too. lat_pagefault
//!   maps a file read-only and drops its pages by munmap, mmap and msync(MS_INVALIDATE);
//!   the kernel model has anonymous memory only, where MADV_DONTNEED is the way to drop
//!   the pages and keep the mapping. lat_pagefault reads the pages in a random order to
//!   defeat file read-ahead and fault-around, which anonymous memory does not have; here
//!   they are read in order. It reports (time of the loop - time of the remapping alone)
//!   / pages: the faults, which the engine's counters give.
//! - `mmap`, `lat_mmap`: each iteration maps `size` bytes read-write at the same address,
//!   writes one byte every 16 KiB over the first tenth of the mapping (lat_mmap's default,
//!   non-random loop: `PSIZE` 16K, `N` 10), each a one-page write [`Op::TouchPages`], and
//!   unmaps it. lat_mmap maps a shared file (and refuses sizes under 320K); here the
//!   memory is anonymous and any size of at least 4K is allowed.
//! - `ctxsw`, `lat_ctx -s ws procs`: `procs` processes pass a token around a ring of
//!   pipes; each, when it gets the token, sums its own `ws`-byte array (`sumit`) and
//!   passes the token on. Set-up, as lat_ctx does it: process 0 allocates and zeroes its
//!   array (before forking, so the children inherit it copy-on-write, unused), forks
//!   pids 1..procs-1, and each child in turn runs: allocates and zeroes its own array,
//!   takes the first token (lat_ctx's warm-up lap around the ring) and sums its array;
//!   then process 0 gets the token back. Each measured round: for q = 1, ..., procs-1,
//!   0: [`Op::Switch`] to q, then q's sum. Process q's array is at `BUFFER_BASE + q *
//!   align_up(ws, 1G)`, so no two overlap. The pipe system calls are not modeled (lat_ctx
//!   subtracts their cost, measured in one process, from its result).
//!
//! The sum is modeled as one read [`Op::Access`] per 64-byte line, in order: `sumit`
//! reads every `int`, and the 15 other `int`s of a line hit in L1 through the same TLB
//! entry, so per-line accesses keep what `-s` is there to measure (the TLB and cache
//! refills a switch causes) at a sixteenth of the ops; their instructions are counted in
//! [`Workload::instructions_per_access`]. With `ws=0` (the default) no data is touched.

use super::fork_bench::{ChildTouches, ForkLoop, FORKS_RANGE, IMAGE_SETUP, MAX_FORKS};
use super::spec::{check_count, check_size, join, out_of_range, ParamInfo, Values, WorkloadError};
use super::{Op, Workload, WorkloadKind, BUFFER_BASE};
use crate::addr::Gva;
use crate::units::format_size;

/// Which lmbench micro-benchmark (the `op` parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LmbenchOp {
    /// `fork-exit`: `lat_proc fork`.
    ForkExit,
    /// `fork-exec`: `lat_proc exec`.
    ForkExec,
    /// `page-fault`: `lat_pagefault`.
    PageFault,
    /// `mmap`: `lat_mmap`.
    Mmap,
    /// `ctxsw`: `lat_ctx`.
    Ctxsw,
}

impl LmbenchOp {
    /// Every choice with its spec name, in the order help text lists them.
    pub const ALL: [(&'static str, LmbenchOp); 5] = [
        ("fork-exit", LmbenchOp::ForkExit),
        ("fork-exec", LmbenchOp::ForkExec),
        ("page-fault", LmbenchOp::PageFault),
        ("mmap", LmbenchOp::Mmap),
        ("ctxsw", LmbenchOp::Ctxsw),
    ];

    /// The spec name, e.g. `fork-exit`.
    pub const fn name(self) -> &'static str {
        match self {
            LmbenchOp::ForkExit => "fork-exit",
            LmbenchOp::ForkExec => "fork-exec",
            LmbenchOp::PageFault => "page-fault",
            LmbenchOp::Mmap => "mmap",
            LmbenchOp::Ctxsw => "ctxsw",
        }
    }

    /// The spec keys this op takes, in catalog order.
    pub const fn keys(self) -> &'static [&'static str] {
        match self {
            LmbenchOp::ForkExit | LmbenchOp::ForkExec => &["op", "iters"],
            LmbenchOp::PageFault | LmbenchOp::Mmap => &["op", "size", "iters"],
            LmbenchOp::Ctxsw => &["op", "procs", "ws", "iters"],
        }
    }
}

/// One lmbench micro-benchmark with its own parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LmbenchTest {
    /// `lat_proc fork`.
    ForkExit,
    /// `lat_proc exec`.
    ForkExec,
    /// `lat_pagefault` over a `size`-byte region (a multiple of 4 KiB).
    PageFault {
        /// Bytes of the region.
        size: u64,
    },
    /// `lat_mmap` of a `size`-byte mapping (a multiple of 4 KiB).
    Mmap {
        /// Bytes of the mapping.
        size: u64,
    },
    /// `lat_ctx -s ws procs`: `procs` processes (2 to [`LmbenchConfig::MAX_PROCS`]), each
    /// summing its own `ws`-byte array (0, or a multiple of 4 KiB) when it has the token.
    Ctxsw {
        /// Processes in the ring.
        procs: u32,
        /// Bytes of each process's array.
        ws: u64,
    },
}

impl LmbenchTest {
    /// Which op this is.
    pub const fn op(&self) -> LmbenchOp {
        match self {
            LmbenchTest::ForkExit => LmbenchOp::ForkExit,
            LmbenchTest::ForkExec => LmbenchOp::ForkExec,
            LmbenchTest::PageFault { .. } => LmbenchOp::PageFault,
            LmbenchTest::Mmap { .. } => LmbenchOp::Mmap,
            LmbenchTest::Ctxsw { .. } => LmbenchOp::Ctxsw,
        }
    }
}

/// The parameters of an `lmbench` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LmbenchConfig {
    /// The micro-benchmark (`op`) and its own parameters.
    pub test: LmbenchTest,
    /// Iterations of the measured loop (rounds of the ring for `ctxsw`); at most
    /// `u32::MAX` for the fork ops, whose every iteration takes a new pid.
    pub iters: u64,
}

impl LmbenchConfig {
    /// Iterations when `iters` is not given.
    pub const DEFAULT_ITERS: u64 = 100;
    /// `page-fault` region when `size` is not given.
    pub const DEFAULT_PAGE_FAULT_SIZE: u64 = 16 << 20;
    /// `mmap` size when `size` is not given.
    pub const DEFAULT_MMAP_SIZE: u64 = 1 << 20;
    /// `ctxsw` processes when `procs` is not given: lat_ctx's smallest ring.
    pub const DEFAULT_PROCS: u32 = 2;
    /// lat_ctx's `MAXPROC`.
    pub const MAX_PROCS: u32 = 2048;
    /// lat_mmap's stride (`PSIZE`), in bytes.
    pub const MMAP_STRIDE: u64 = 16 << 10;
    /// lat_mmap writes the first 1/`N` of the mapping; this is `N`.
    pub const MMAP_FRACTION: u64 = 10;
    /// Bytes per `ctxsw` sum access: one cache line.
    pub const LINE_BYTES: u64 = 64;
    /// `ctxsw` arrays start at multiples of this apart (at least): 1 GiB, so each can be
    /// backed by pages of any size and none overlaps the next.
    pub const REGION_ALIGN: u64 = 1 << 30;

    /// A config with the defaults for `op`.
    pub const fn default_for(op: LmbenchOp) -> LmbenchConfig {
        let test = match op {
            LmbenchOp::ForkExit => LmbenchTest::ForkExit,
            LmbenchOp::ForkExec => LmbenchTest::ForkExec,
            LmbenchOp::PageFault => LmbenchTest::PageFault {
                size: Self::DEFAULT_PAGE_FAULT_SIZE,
            },
            LmbenchOp::Mmap => LmbenchTest::Mmap {
                size: Self::DEFAULT_MMAP_SIZE,
            },
            LmbenchOp::Ctxsw => LmbenchTest::Ctxsw {
                procs: Self::DEFAULT_PROCS,
                ws: 0,
            },
        };
        LmbenchConfig {
            test,
            iters: Self::DEFAULT_ITERS,
        }
    }

    /// Pages lat_mmap writes per iteration for a `size`-byte mapping: one per 16 KiB of
    /// its first tenth (`for (p = where; p < where + size / 10; p += 16K)`).
    pub const fn mmap_touches(size: u64) -> u64 {
        (size / Self::MMAP_FRACTION).div_ceil(Self::MMAP_STRIDE)
    }

    /// Distance between consecutive `ctxsw` arrays: `ws` rounded up to 1 GiB.
    pub const fn ctxsw_stride(ws: u64) -> u64 {
        ws.div_ceil(Self::REGION_ALIGN) * Self::REGION_ALIGN
    }

    /// Where process `pid`'s `ctxsw` array of `ws` bytes starts.
    pub const fn ctxsw_region(pid: u32, ws: u64) -> Gva {
        Gva::new(BUFFER_BASE.raw() + pid as u64 * Self::ctxsw_stride(ws))
    }

    /// True when `procs` arrays of `ws` bytes, laid out by [`Self::ctxsw_region`], end
    /// within the 47-bit user half.
    pub fn ctxsw_layout_fits(procs: u32, ws: u64) -> bool {
        u64::from(procs.saturating_sub(1))
            .checked_mul(Self::ctxsw_stride(ws))
            .and_then(|offset| offset.checked_add(ws))
            .and_then(|end| end.checked_add(BUFFER_BASE.raw()))
            .is_some_and(|end| end <= 1 << 47)
    }

    /// `Access` ops of the whole measured phase (None if that overflows 64 bits): the
    /// `ctxsw` sums, one per line of every array each round; 0 for the other ops.
    pub fn total_accesses(&self) -> Option<u64> {
        match self.test {
            LmbenchTest::Ctxsw { procs, ws } => {
                let per_round = u64::from(procs).checked_mul(ws / Self::LINE_BYTES)?;
                self.iters.checked_mul(per_round)
            }
            _ => Some(0),
        }
    }

    /// Bytes of data memory the run maps and touches at most at once.
    pub fn footprint(&self) -> u64 {
        match self.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => 0,
            LmbenchTest::PageFault { size } | LmbenchTest::Mmap { size } => size,
            LmbenchTest::Ctxsw { procs, ws } => u64::from(procs).saturating_mul(ws),
        }
    }
}

impl Default for LmbenchConfig {
    /// `lat_proc fork`, 100 times.
    fn default() -> Self {
        LmbenchConfig::default_for(LmbenchOp::ForkExit)
    }
}

/// Why a ring size was out of range, in the words users read.
const PROCS_RANGE: &str = "a ring has 2 to 2048 processes (lat_ctx's MAXPROC)";

impl WorkloadKind for LmbenchConfig {
    type Generator = Lmbench;

    const NAME: &'static str = "lmbench";
    const SUMMARY: &'static str = "lmbench 3 OS latencies: fork+exit and fork+exec (lat_proc), page faults (lat_pagefault), mmap+munmap (lat_mmap), context switches (lat_ctx)";
    const PARAMS: &'static [ParamInfo] = &[
        ParamInfo {
            key: "op",
            default: "required",
            help: "fork-exit (lat_proc fork), fork-exec (lat_proc exec), page-fault (lat_pagefault), mmap (lat_mmap) or ctxsw (lat_ctx)",
        },
        ParamInfo {
            key: "size",
            default: "16M/1M",
            help: "page-fault: region faulted in per iteration (16M); mmap: mapping size (1M); 4K to 64T in multiples of 4K",
        },
        ParamInfo {
            key: "procs",
            default: "2",
            help: "ctxsw: processes in the token ring, 2 to 2048",
        },
        ParamInfo {
            key: "ws",
            default: "0",
            help: "ctxsw: each process's array, summed when it has the token (lat_ctx -s); 0 or 4K to 64T in multiples of 4K",
        },
        ParamInfo {
            key: "iters",
            default: "100",
            help: "iterations of the measured loop (ring rounds for ctxsw); at most 4294967295 for the fork ops",
        },
    ];

    /// `op` has no default, so the example names one.
    fn example() -> String {
        format!("{}:op={}", Self::NAME, LmbenchOp::ForkExit.name())
    }

    /// `op` first (required), then only the keys that op takes, each with its op's default.
    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        if values.given("op").is_none() {
            return Err(WorkloadError::MissingKey {
                workload: Self::NAME,
                key: "op",
                example: Self::example(),
                valid: join(LmbenchOp::ALL.iter().map(|(name, _)| *name)),
            });
        }
        let op = values.choice("op", &LmbenchOp::ALL)?;
        values.only(op.keys(), op.name())?;
        let defaults = LmbenchConfig::default_for(op);
        let test = match defaults.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => defaults.test,
            LmbenchTest::PageFault { size } => LmbenchTest::PageFault {
                size: values.size_or("size", size)?,
            },
            LmbenchTest::Mmap { size } => LmbenchTest::Mmap {
                size: values.size_or("size", size)?,
            },
            LmbenchTest::Ctxsw { procs, ws } => {
                let procs = match values.given("procs") {
                    Some(_) => {
                        let n = values.count("procs")?;
                        u32::try_from(n).map_err(|_| {
                            out_of_range(Self::NAME, "procs", n.to_string(), PROCS_RANGE)
                        })?
                    }
                    None => procs,
                };
                LmbenchTest::Ctxsw {
                    procs,
                    ws: values.size_or("ws", ws)?,
                }
            }
        };
        Ok(LmbenchConfig {
            test,
            iters: values.count("iters")?,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        let workload = Self::NAME;
        check_count(workload, "iters", self.iters)?;
        match self.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec if self.iters > MAX_FORKS => {
                let iters = self.iters.to_string();
                Err(out_of_range(workload, "iters", iters, FORKS_RANGE))
            }
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => Ok(()),
            LmbenchTest::PageFault { size } | LmbenchTest::Mmap { size } => {
                check_size(workload, "size", size)
            }
            LmbenchTest::Ctxsw { procs, ws } => {
                if !(2..=Self::MAX_PROCS).contains(&procs) {
                    let procs = procs.to_string();
                    return Err(out_of_range(workload, "procs", procs, PROCS_RANGE));
                }
                if ws != 0 {
                    check_size(workload, "ws", ws).map_err(|_| {
                        let why = "0, or 4K to 64T in multiples of 4K";
                        out_of_range(workload, "ws", format_size(ws), why)
                    })?;
                }
                if !Self::ctxsw_layout_fits(procs, ws) {
                    let why = "procs arrays of ws, each 1G aligned from 16T, must end below 128T";
                    return Err(out_of_range(workload, "ws", format_size(ws), why));
                }
                if self.total_accesses().is_none() {
                    let why = "iters x procs x ws/64 accesses must fit in 64 bits";
                    return Err(out_of_range(workload, "iters", self.iters.to_string(), why));
                }
                Ok(())
            }
        }
    }

    /// `op`, the op's own keys, `iters`.
    fn canonical_params(&self) -> String {
        let own = match self.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => String::new(),
            LmbenchTest::PageFault { size } | LmbenchTest::Mmap { size } => {
                format!(",size={}", format_size(size))
            }
            LmbenchTest::Ctxsw { procs, ws } => {
                format!(",procs={procs},ws={}", format_size(ws))
            }
        };
        let op = self.test.op().name();
        format!("op={op}{own},iters={}", self.iters)
    }

    fn footprint_bytes(&self) -> u64 {
        self.footprint()
    }

    fn measured_accesses_total(&self) -> u64 {
        self.total_accesses().unwrap_or(u64::MAX)
    }

    fn program(&self) -> &'static str {
        match self.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => "lat_proc",
            LmbenchTest::PageFault { .. } => "lat_pagefault",
            LmbenchTest::Mmap { .. } => "lat_mmap",
            LmbenchTest::Ctxsw { .. } => "lat_ctx",
        }
    }

    /// `fork-exec`'s children exec `hello`.
    fn programs(&self) -> Vec<&'static str> {
        let mut out = vec![self.program()];
        if self.test == LmbenchTest::ForkExec {
            out.push(crate::os::HELLO.name);
        }
        out
    }

    fn build(&self, seed: u64) -> Result<Lmbench, WorkloadError> {
        Ok(Lmbench::new(*self, seed))
    }
}

/// The generator of an `lmbench` run.
#[derive(Clone, Debug)]
pub struct Lmbench {
    config: LmbenchConfig,
    script: Script,
}

#[derive(Clone, Debug)]
enum Script {
    /// `image_ops`: ops of the program image's set-up handed out; then StartMeasurement.
    Proc {
        image_ops: usize,
        forks: ForkLoop,
    },
    PageFault(PageFault),
    Mmap(Mmap),
    Ctxsw(Ctxsw),
}

impl Lmbench {
    /// A generator for `config` (which must have come through spec validation). The seed
    /// is unused: the streams have no randomness.
    pub fn new(config: LmbenchConfig, _seed: u64) -> Self {
        let iters = config.iters;
        let script = match config.test {
            LmbenchTest::ForkExit | LmbenchTest::ForkExec => Script::Proc {
                image_ops: 0,
                forks: ForkLoop::new(
                    iters,
                    config.test == LmbenchTest::ForkExec,
                    ChildTouches::default(),
                ),
            },
            LmbenchTest::PageFault { size } => Script::PageFault(PageFault {
                len: size,
                iters_left: iters,
                step: PageFaultStep::Map,
            }),
            LmbenchTest::Mmap { size } => Script::Mmap(Mmap {
                len: size,
                touches: LmbenchConfig::mmap_touches(size),
                touched: 0,
                iters_left: iters,
                step: MmapStep::Start,
            }),
            LmbenchTest::Ctxsw { procs, ws } => Script::Ctxsw(Ctxsw::new(procs, ws, iters)),
        };
        Lmbench { config, script }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &LmbenchConfig {
        &self.config
    }
}

impl Workload for Lmbench {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        match &mut self.script {
            Script::Ctxsw(s) => s.next(),
            Script::Proc { image_ops, forks } => {
                if *image_ops <= IMAGE_SETUP.len() {
                    *image_ops += 1;
                    return Some(
                        IMAGE_SETUP
                            .get(*image_ops - 1)
                            .copied()
                            .unwrap_or(Op::StartMeasurement),
                    );
                }
                forks.next()
            }
            Script::PageFault(s) => s.next(),
            Script::Mmap(s) => s.next(),
        }
    }

    fn measured_accesses_total(&self) -> u64 {
        self.config.total_accesses().unwrap_or(u64::MAX)
    }

    /// Only `ctxsw` with `ws > 0` makes `Access` ops; the others 0 (their cost comes from
    /// the kernel's counters). For `ctxsw`, 15.3, counted from `sumit`'s C source, one
    /// instruction per `int` (a load, or an add with a memory operand): per 512 bytes,
    /// 128 `int` reads, one add into `sum` and one pointer increment; per 2048 bytes, a
    /// loop add, compare and branch. That is (4 x 130 + 3) / 32 = 16.3 per line, less
    /// the access itself.
    fn instructions_per_access(&self) -> f64 {
        match self.config.test {
            LmbenchTest::Ctxsw { .. } => 15.3,
            _ => 0.0,
        }
    }

    fn dependent_accesses(&self) -> bool {
        // sumit's addresses come from a pointer increment, not from loaded data: the
        // loads overlap (only the additions form a chain).
        false
    }
}

/// `page-fault`: map the region read-only, then per iteration read-touch it and drop it.
#[derive(Clone, Debug)]
struct PageFault {
    len: u64,
    iters_left: u64,
    step: PageFaultStep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PageFaultStep {
    Map,
    Start,
    Touch,
    Drop,
    Done,
}

impl PageFault {
    fn next(&mut self) -> Option<Op> {
        let (start, len) = (BUFFER_BASE, self.len);
        let (op, step) = match self.step {
            PageFaultStep::Map => (Op::MapReadOnly { start, len }, PageFaultStep::Start),
            PageFaultStep::Start => (Op::StartMeasurement, self.after_iteration()),
            PageFaultStep::Touch => {
                let touch = Op::TouchPages {
                    start,
                    len,
                    write: false,
                };
                (touch, PageFaultStep::Drop)
            }
            PageFaultStep::Drop => {
                self.iters_left -= 1;
                (Op::DontNeed { start, len }, self.after_iteration())
            }
            PageFaultStep::Done => return None,
        };
        self.step = step;
        Some(op)
    }

    fn after_iteration(&self) -> PageFaultStep {
        if self.iters_left > 0 {
            PageFaultStep::Touch
        } else {
            PageFaultStep::Done
        }
    }
}

/// `mmap`: per iteration map, write one page per 16 KiB of the first tenth, unmap.
#[derive(Clone, Debug)]
struct Mmap {
    len: u64,
    /// Pages written per iteration, and how many of this iteration's are done.
    touches: u64,
    touched: u64,
    iters_left: u64,
    step: MmapStep,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MmapStep {
    Start,
    Map,
    Touch,
    Unmap,
    Done,
}

impl Mmap {
    fn next(&mut self) -> Option<Op> {
        let (start, len) = (BUFFER_BASE, self.len);
        loop {
            let (op, step) = match self.step {
                MmapStep::Start => (Op::StartMeasurement, self.after_iteration()),
                MmapStep::Map => {
                    self.touched = 0;
                    (Op::Map { start, len }, MmapStep::Touch)
                }
                MmapStep::Touch if self.touched < self.touches => {
                    let offset = self.touched * LmbenchConfig::MMAP_STRIDE;
                    self.touched += 1;
                    let touch = Op::TouchPages {
                        start: Gva::new(start.raw() + offset),
                        len: crate::addr::PAGE_SIZE,
                        write: true,
                    };
                    (touch, MmapStep::Touch)
                }
                MmapStep::Touch => {
                    self.step = MmapStep::Unmap;
                    continue;
                }
                MmapStep::Unmap => {
                    self.iters_left -= 1;
                    (Op::Unmap { start, len }, self.after_iteration())
                }
                MmapStep::Done => return None,
            };
            self.step = step;
            return Some(op);
        }
    }

    fn after_iteration(&self) -> MmapStep {
        if self.iters_left > 0 {
            MmapStep::Map
        } else {
            MmapStep::Done
        }
    }
}

/// `ctxsw`: the token ring of lat_ctx (see the module documentation for the sequence).
#[derive(Clone, Debug)]
struct Ctxsw {
    procs: u32,
    ws: u64,
    rounds_left: u64,
    /// Forks still to make in set-up.
    forks_left: u32,
    /// The process the current stage is about.
    q: u32,
    /// The sum in progress.
    sum: Sweep,
    stage: CtxStage,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CtxStage {
    /// Set-up: process 0 maps and zeroes its array (only when `ws > 0`).
    ParentMap,
    ParentZero,
    /// Set-up: process 0 forks the others.
    Fork,
    /// Set-up: child `q` runs for the first time; when `ws > 0` it maps and zeroes its
    /// array, then sums it with the warm-up token.
    ChildRuns,
    ChildMap,
    ChildZero,
    ChildSum,
    /// Set-up: the token is back at process 0.
    ParentResumes,
    Start,
    /// Measured: the token reaches `q`, which sums its array.
    Pass,
    Sum,
    Done,
}

impl Ctxsw {
    fn new(procs: u32, ws: u64, rounds: u64) -> Self {
        Ctxsw {
            procs,
            ws,
            rounds_left: rounds,
            forks_left: procs.saturating_sub(1),
            q: 0,
            sum: Sweep::EMPTY,
            stage: if ws > 0 {
                CtxStage::ParentMap
            } else {
                CtxStage::Fork
            },
        }
    }

    fn region(&self, pid: u32) -> Gva {
        LmbenchConfig::ctxsw_region(pid, self.ws)
    }

    /// After process `q`, in ring order 1, 2, ..., procs-1, 0.
    fn successor(&self, q: u32) -> u32 {
        if q + 1 >= self.procs {
            0
        } else {
            q + 1
        }
    }

    #[inline]
    fn next(&mut self) -> Option<Op> {
        loop {
            let (op, stage) = match self.stage {
                // The hot path: one line of a sum.
                CtxStage::Sum | CtxStage::ChildSum => {
                    if let Some(op) = self.sum.next() {
                        return Some(op);
                    }
                    self.end_of_sum();
                    continue;
                }
                CtxStage::ParentMap => {
                    let map = Op::Map {
                        start: self.region(0),
                        len: self.ws,
                    };
                    (map, CtxStage::ParentZero)
                }
                CtxStage::ParentZero => (self.zero(0), CtxStage::Fork),
                CtxStage::Fork if self.forks_left > 0 => {
                    self.forks_left -= 1;
                    (Op::Fork, CtxStage::Fork)
                }
                CtxStage::Fork => {
                    self.q = 1;
                    self.stage = CtxStage::ChildRuns;
                    continue;
                }
                CtxStage::ChildRuns => {
                    let pid = self.q;
                    let stage = if self.ws > 0 {
                        CtxStage::ChildMap
                    } else {
                        self.next_child()
                    };
                    (Op::Switch { pid }, stage)
                }
                CtxStage::ChildMap => {
                    let map = Op::Map {
                        start: self.region(self.q),
                        len: self.ws,
                    };
                    (map, CtxStage::ChildZero)
                }
                CtxStage::ChildZero => {
                    self.sum = Sweep::new(self.region(self.q), self.ws);
                    (self.zero(self.q), CtxStage::ChildSum)
                }
                CtxStage::ParentResumes => (Op::Switch { pid: 0 }, CtxStage::Start),
                CtxStage::Start => {
                    self.q = 1;
                    let stage = if self.rounds_left > 0 {
                        CtxStage::Pass
                    } else {
                        CtxStage::Done
                    };
                    (Op::StartMeasurement, stage)
                }
                CtxStage::Pass => {
                    self.sum = Sweep::new(self.region(self.q), self.ws);
                    (Op::Switch { pid: self.q }, CtxStage::Sum)
                }
                CtxStage::Done => return None,
            };
            self.stage = stage;
            return Some(op);
        }
    }

    /// The bzero of process `pid`'s freshly allocated array.
    fn zero(&self, pid: u32) -> Op {
        Op::TouchPages {
            start: self.region(pid),
            len: self.ws,
            write: true,
        }
    }

    /// Set-up: the stage after child `q` is done, moving `q` on.
    fn next_child(&mut self) -> CtxStage {
        self.q += 1;
        if self.q < self.procs {
            CtxStage::ChildRuns
        } else {
            CtxStage::ParentResumes
        }
    }

    /// Process `q` has summed its array: pass the token on.
    fn end_of_sum(&mut self) {
        self.stage = match self.stage {
            CtxStage::ChildSum => self.next_child(),
            _ if self.q == 0 => {
                self.rounds_left -= 1;
                self.q = 1;
                if self.rounds_left > 0 {
                    CtxStage::Pass
                } else {
                    CtxStage::Done
                }
            }
            _ => {
                self.q = self.successor(self.q);
                CtxStage::Pass
            }
        };
    }
}

/// A read of every 64-byte line of a range, in order.
#[derive(Clone, Copy, Debug)]
struct Sweep {
    va: u64,
    left: u64,
}

impl Sweep {
    const EMPTY: Sweep = Sweep { va: 0, left: 0 };

    fn new(start: Gva, len: u64) -> Self {
        Sweep {
            va: start.raw(),
            left: len / LmbenchConfig::LINE_BYTES,
        }
    }

    #[inline]
    fn next(&mut self) -> Option<Op> {
        if self.left == 0 {
            return None;
        }
        let va = Gva::new(self.va);
        self.va += LmbenchConfig::LINE_BYTES;
        self.left -= 1;
        Some(Op::Access { va, write: false })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::drain;
    use super::*;

    fn run(test: LmbenchTest, iters: u64) -> (Lmbench, Vec<Op>) {
        let mut w = Lmbench::new(LmbenchConfig { test, iters }, 0);
        let ops = drain(&mut w);
        (w, ops)
    }

    /// The ops after `StartMeasurement`, checking there is exactly one.
    fn measured(ops: &[Op]) -> &[Op] {
        let starts: Vec<usize> = (0..ops.len())
            .filter(|&i| ops[i] == Op::StartMeasurement)
            .collect();
        assert_eq!(starts.len(), 1, "{ops:?}");
        &ops[starts[0] + 1..]
    }

    fn accesses(ops: &[Op]) -> u64 {
        ops.iter()
            .filter(|op| matches!(op, Op::Access { .. }))
            .count() as u64
    }

    fn at(offset: u64) -> Gva {
        Gva::new(BUFFER_BASE.raw() + offset)
    }

    #[test]
    fn fork_exit_is_lat_proc_fork() {
        let (w, ops) = run(LmbenchTest::ForkExit, 2);
        let mut expected = IMAGE_SETUP.to_vec();
        expected.push(Op::StartMeasurement);
        for pid in 1..=2 {
            expected.push(Op::Fork);
            expected.extend(crate::workload::fork_bench::tests::PARENT_RUNS);
            expected.push(Op::Switch { pid });
            expected.extend(crate::workload::fork_bench::tests::child_runs());
            expected.push(Op::Exit { next: 0 });
        }
        assert_eq!(ops, expected);
        assert_eq!(w.measured_accesses_total(), 0);
        assert_eq!(w.instructions_per_access(), 0.0);
    }

    #[test]
    fn fork_exec_execs_in_each_child() {
        let (w, ops) = run(LmbenchTest::ForkExec, 2);
        let mut expected = IMAGE_SETUP.to_vec();
        expected.push(Op::StartMeasurement);
        for pid in 1..=2 {
            expected.push(Op::Fork);
            expected.extend(crate::workload::fork_bench::tests::PARENT_RUNS);
            expected.push(Op::Switch { pid });
            expected.extend(crate::workload::fork_bench::tests::child_runs());
            expected.extend([
                Op::Exec {
                    program: &crate::os::HELLO,
                },
                Op::Exit { next: 0 },
            ]);
        }
        assert_eq!(ops, expected);
        assert_eq!(w.measured_accesses_total(), 0);
    }

    #[test]
    fn page_fault_drops_the_pages_after_every_iteration() {
        let (w, ops) = run(LmbenchTest::PageFault { size: 8192 }, 3);
        let (start, len) = (BUFFER_BASE, 8192);
        let touch = Op::TouchPages {
            start,
            len,
            write: false,
        };
        let drop = Op::DontNeed { start, len };
        assert_eq!(
            ops,
            vec![
                Op::MapReadOnly { start, len },
                Op::StartMeasurement,
                touch,
                drop,
                touch,
                drop,
                touch,
                drop,
            ]
        );
        assert_eq!(w.measured_accesses_total(), 0);
    }

    #[test]
    fn mmap_writes_a_page_per_16k_of_the_first_tenth() {
        // 1M: the first tenth is 104857 bytes, written at 0, 16K, ..., 96K: 7 pages.
        assert_eq!(LmbenchConfig::mmap_touches(1 << 20), 7);
        // lat_mmap's smallest size, 320K: a tenth is 32K, written at 0 and 16K.
        assert_eq!(LmbenchConfig::mmap_touches(320 << 10), 2);
        assert_eq!(LmbenchConfig::mmap_touches(4096), 1);
        assert_eq!(LmbenchConfig::mmap_touches(160 << 10), 1);
        assert_eq!(LmbenchConfig::mmap_touches((160 << 10) + 4096), 2);

        let (w, ops) = run(LmbenchTest::Mmap { size: 320 << 10 }, 2);
        let (start, len) = (BUFFER_BASE, 320 << 10);
        let touch = |offset| Op::TouchPages {
            start: at(offset),
            len: 4096,
            write: true,
        };
        let iteration = [
            Op::Map { start, len },
            touch(0),
            touch(16 << 10),
            Op::Unmap { start, len },
        ];
        let mut expected = vec![Op::StartMeasurement];
        expected.extend(iteration);
        expected.extend(iteration);
        assert_eq!(ops, expected);
        assert_eq!(w.measured_accesses_total(), 0);
    }

    #[test]
    fn ctxsw_without_a_working_set_only_switches() {
        let (w, ops) = run(LmbenchTest::Ctxsw { procs: 3, ws: 0 }, 2);
        let s = |pid| Op::Switch { pid };
        assert_eq!(
            ops,
            vec![
                // Set-up: fork the ring, each child runs once (the warm-up lap).
                Op::Fork,
                Op::Fork,
                s(1),
                s(2),
                s(0),
                Op::StartMeasurement,
                s(1),
                s(2),
                s(0),
                s(1),
                s(2),
                s(0),
            ]
        );
        assert_eq!(w.measured_accesses_total(), 0);
    }

    #[test]
    fn ctxsw_setup_gives_each_process_its_own_array() {
        let ws = 8192;
        let (_, ops) = run(LmbenchTest::Ctxsw { procs: 3, ws }, 1);
        let region = |pid: u32| LmbenchConfig::ctxsw_region(pid, ws);
        assert_eq!(region(0), BUFFER_BASE);
        assert_eq!(region(2), at(2 << 30));
        let map = |pid| Op::Map {
            start: region(pid),
            len: ws,
        };
        let zero = |pid| Op::TouchPages {
            start: region(pid),
            len: ws,
            write: true,
        };
        let sum = |pid: u32| {
            (0..ws / 64).map(move |line| Op::Access {
                va: Gva::new(region(pid).raw() + line * 64),
                write: false,
            })
        };
        let s = |pid| Op::Switch { pid };
        let mut expected = vec![map(0), zero(0), Op::Fork, Op::Fork];
        for child in 1..3 {
            expected.extend([s(child), map(child), zero(child)]);
            expected.extend(sum(child));
        }
        expected.extend([s(0), Op::StartMeasurement]);
        for q in [1, 2, 0] {
            expected.push(s(q));
            expected.extend(sum(q));
        }
        assert_eq!(ops, expected);
    }

    #[test]
    fn ctxsw_measured_rounds_pass_the_token_around_the_ring() {
        let (w, ops) = run(LmbenchTest::Ctxsw { procs: 4, ws: 4096 }, 5);
        let measured = measured(&ops);
        let switches: Vec<u32> = measured
            .iter()
            .filter_map(|op| match op {
                Op::Switch { pid } => Some(*pid),
                _ => None,
            })
            .collect();
        assert_eq!(switches, [1, 2, 3, 0].repeat(5));
        assert_eq!(w.measured_accesses_total(), 5 * 4 * 64);
        assert_eq!(accesses(measured), w.measured_accesses_total());
        // Every access reads the array of the process that last got the token.
        let mut running = 0;
        for op in measured {
            match *op {
                Op::Switch { pid } => running = pid,
                Op::Access { va, write } => {
                    let base = LmbenchConfig::ctxsw_region(running, 4096).raw();
                    assert!(!write && (base..base + 4096).contains(&va.raw()));
                }
                other => panic!("unexpected measured op {other:?}"),
            }
        }
        assert!(!w.dependent_accesses());
        assert_eq!(w.instructions_per_access(), 15.3);
    }

    #[test]
    fn measured_accesses_total_counts_the_measured_access_ops() {
        for (test, iters) in [
            (LmbenchTest::ForkExit, 3),
            (LmbenchTest::ForkExec, 1),
            (LmbenchTest::PageFault { size: 1 << 20 }, 2),
            (LmbenchTest::Mmap { size: 3 << 20 }, 2),
            (LmbenchTest::Ctxsw { procs: 2, ws: 0 }, 7),
            (
                LmbenchTest::Ctxsw {
                    procs: 5,
                    ws: 12 << 10,
                },
                3,
            ),
            (
                LmbenchTest::Ctxsw {
                    procs: 2,
                    ws: 1 << 20,
                },
                2,
            ),
        ] {
            let (w, ops) = run(test, iters);
            assert_eq!(
                accesses(measured(&ops)),
                w.measured_accesses_total(),
                "{test:?}"
            );
        }
    }

    #[test]
    fn ctxsw_layout_limits() {
        assert_eq!(LmbenchConfig::ctxsw_stride(0), 0);
        assert_eq!(LmbenchConfig::ctxsw_stride(4096), 1 << 30);
        assert_eq!(LmbenchConfig::ctxsw_stride((1 << 30) + 4096), 2 << 30);
        assert!(LmbenchConfig::ctxsw_layout_fits(2048, 16 << 30));
        // 16T base + 112T of room: 7 arrays of 16T fit, 8 do not.
        assert!(LmbenchConfig::ctxsw_layout_fits(7, 16 << 40));
        assert!(!LmbenchConfig::ctxsw_layout_fits(8, 16 << 40));
        assert!(!LmbenchConfig::ctxsw_layout_fits(2, 64 << 40));
        assert!(LmbenchConfig::ctxsw_layout_fits(2, 56 << 40));
    }
}
