//! `fork-bench`: fork latency against resident set size, the classic page-table benchmark
//! for comparing shadow and nested paging.
//!
//! The program allocates and writes an `rss`-byte buffer (the [`Op::Map`] and write
//! [`Op::TouchPages`] of set-up), then forks `forks` times. Each child exits at once; the
//! parent waits for it (`fork(); if child: _exit(0); else: waitpid()`). Fork copies the
//! parent's page tables and write-protects its pages for copy-on-write, and the child's
//! exit tears its copy down, so the time per fork grows with the RSS: that page-table
//! work is what shadow paging (every guest page-table write traps) and nested paging
//! (the guest edits its tables natively) do so differently.
//!
//! The program has an image like any process ([`IMAGE_SETUP`]: text read, data and stack
//! written at start-up). As ops, each fork is [`Op::Fork`] (the child gets the next pid: 1,
//! 2, ...), [`Op::Switch`] to the child (the parent blocks in waitpid), the child's steps in
//! user mode before `_exit`, and [`Op::Exit`] back to the parent, pid 0. A real child that
//! exits at once takes 16 page faults on this machine (`fork_child_page_faults` in
//! `probes/results-2026-11-22b.json`), copy-on-write writes to its stack and libc's data: the
//! model's child writes 4 stack pages and 12 data pages and reads a page of text by default,
//! and the set is a parameter ([`ChildTouches`]: `child_stack`, `child_data`, `child_text`). After each
//! fork the parent writes a stack page and a libc data page before waitpid (2 faults,
//! measured: [`PARENT_RUNS`]). These page touches are ops, not counted data accesses, so
//! [`Workload::measured_accesses_total`] is 0 and the engine runs all of it.

use super::spec::{check_count, check_size, out_of_range, ParamInfo, Values, WorkloadError};
use super::{Op, Prologue, Workload, WorkloadKind};
use crate::addr::Gva;
use crate::os::SMALL_IMAGE;
use crate::units::format_size;

const PAGE: u64 = 4096;
const TEXT: Gva = SMALL_IMAGE[0].start;
const TEXT_LEN: u64 = SMALL_IMAGE[0].len;
/// Data of the program and its libraries (.data, .bss, GOT, TLS, heap): 64 KiB.
const DATA: Gva = SMALL_IMAGE[1].start;
const DATA_LEN: u64 = 16 * PAGE;
const STACK: Gva = SMALL_IMAGE[2].start;
const STACK_LEN: u64 = SMALL_IMAGE[2].len;
/// Pages of the stack mapped (the child may write at most these).
pub const STACK_PAGES: u64 = STACK_LEN / PAGE;
/// Pages of data mapped.
pub const DATA_PAGES: u64 = DATA_LEN / PAGE;
/// Pages of text mapped.
pub const TEXT_PAGES: u64 = TEXT_LEN / PAGE;

/// Largest fork count: every fork takes a new 32-bit pid (lmbench's fork ops too).
pub(super) const MAX_FORKS: u64 = u32::MAX as u64;
/// Why a fork count was out of range, in the words users read.
pub(super) const FORKS_RANGE: &str =
    "must be at most 4294967295 (each fork takes a new 32-bit pid)";

/// A running program's own image, mapped and faulted in before it does anything else: its
/// text (read-only, read), its data and its stack (written).
pub(super) const IMAGE_SETUP: [Op; 6] = [
    Op::MapReadOnly {
        start: TEXT,
        len: TEXT_LEN,
    },
    Op::TouchPages {
        start: TEXT,
        len: TEXT_LEN,
        write: false,
    },
    Op::Map {
        start: DATA,
        len: DATA_LEN,
    },
    Op::TouchPages {
        start: DATA,
        len: DATA_LEN,
        write: true,
    },
    Op::Map {
        start: STACK,
        len: STACK_LEN,
    },
    Op::TouchPages {
        start: STACK,
        len: STACK_LEN,
        write: true,
    },
];

/// What the parent does in user mode right after fork returns, before it blocks in waitpid
/// (Linux runs the parent first: `sysctl_sched_child_runs_first` is 0): it writes the top of
/// its stack and a page of libc's data (the fork wrapper's lock and atfork state), both
/// write-protected by the fork, so each is copied again. Two faults per fork, measured:
/// `fork_parent_page_faults` in `probes/results-2026-11-24.json`.
pub(super) const PARENT_RUNS: [Op; 2] = [
    Op::TouchPages {
        start: Gva::new(STACK.raw() + STACK_LEN - PAGE),
        len: PAGE,
        write: true,
    },
    Op::TouchPages {
        start: Gva::new(DATA.raw() + DATA_LEN - PAGE),
        len: PAGE,
        write: true,
    },
];

/// What a forked child touches in user mode between fork and `_exit`: the top pages of its
/// stack and the first pages of its data (libc's .data and .bss, the GOT, TLS), written,
/// and pages of text (program and libc), read.
///
/// The default is measured: a real child of a dynamically linked program that calls
/// `_exit(0)` at once takes 16 page faults (`fork_child_page_faults`, 16 in every one of 15
/// reps, `probes/results-2026-11-22b.json` and again in `results-2026-11-24.json`), here 4
/// stack pages and 12 data pages written, each a copy-on-write fault. How the 16 split
/// between stack and data, and the one text page read (a text page fork copied the entry
/// of, so no fault), are assumptions: the probe counts faults, not where they fall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ChildTouches {
    /// Stack pages written, from the top (at most `STACK_PAGES`).
    pub stack: u64,
    /// Data pages written, from the start (at most `DATA_PAGES`).
    pub data: u64,
    /// Text pages read, from the start (at most `TEXT_PAGES`).
    pub text: u64,
}

impl Default for ChildTouches {
    /// 4 stack pages and 12 data pages written (the 16 measured faults), 1 text page read.
    fn default() -> Self {
        ChildTouches {
            stack: 4,
            data: 12,
            text: 1,
        }
    }
}

impl ChildTouches {
    /// The child's run as ops (one per region, empty ones included: the loop's steps are
    /// fixed).
    pub(super) fn runs(&self) -> [Op; 3] {
        [
            Op::TouchPages {
                start: Gva::new(STACK.raw() + STACK_LEN - self.stack * PAGE),
                len: self.stack * PAGE,
                write: true,
            },
            Op::TouchPages {
                start: DATA,
                len: self.data * PAGE,
                write: true,
            },
            Op::TouchPages {
                start: TEXT,
                len: self.text * PAGE,
                write: false,
            },
        ]
    }
}

/// The parameters of a `fork-bench` run (validated by [`super::WorkloadSpec`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ForkBenchConfig {
    /// Resident set size of the parent: bytes mapped and written before forking (a
    /// multiple of 4 KiB).
    pub rss: u64,
    /// Fork-exit-wait rounds in the measured phase (at most `u32::MAX`: each takes a new
    /// pid).
    pub forks: u64,
    /// What each child touches before `_exit`.
    pub child: ChildTouches,
}

impl Default for ForkBenchConfig {
    /// 64 MiB resident (16384 pages of 4 KiB, 32 page tables to copy), 100 forks, the
    /// measured child.
    fn default() -> Self {
        ForkBenchConfig {
            rss: 64 << 20,
            forks: 100,
            child: ChildTouches::default(),
        }
    }
}

const CHILD_STACK_RANGE: &str = "must be 0 to 8 (the program's stack is 8 pages)";
const CHILD_DATA_RANGE: &str = "must be 0 to 16 (the program's data is 16 pages)";
const CHILD_TEXT_RANGE: &str = "must be 0 to 16 (the program's text is 16 pages)";

impl WorkloadKind for ForkBenchConfig {
    type Generator = ForkBench;

    const NAME: &'static str = "fork-bench";
    const SUMMARY: &'static str = "fork latency vs RSS (the shadow vs nested paging classic): fork, child exits, parent waits";
    const PARAMS: &'static [ParamInfo] = &[
        ParamInfo {
            key: "rss",
            default: "64M",
            help:
                "parent's resident set, mapped and written before forking, 4K to 64T in multiples of 4K",
        },
        ParamInfo {
            key: "forks",
            default: "100",
            help: "fork + child exit + wait rounds, 1 to 4294967295 (each child takes a new pid)",
        },
        ParamInfo {
            key: "child_stack",
            default: "4",
            help: "stack pages each child writes before _exit, 0 to 8 (default: with child_data, the 16 faults a real child takes, measured)",
        },
        ParamInfo {
            key: "child_data",
            default: "12",
            help: "data pages (libc .data/.bss, GOT, TLS) each child writes before _exit, 0 to 16",
        },
        ParamInfo {
            key: "child_text",
            default: "1",
            help: "text pages each child reads before _exit, 0 to 16",
        },
    ];

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        Ok(ForkBenchConfig {
            rss: values.size("rss")?,
            forks: values.count("forks")?,
            child: ChildTouches {
                stack: values.count("child_stack")?,
                data: values.count("child_data")?,
                text: values.count("child_text")?,
            },
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        check_size(Self::NAME, "rss", self.rss)?;
        check_count(Self::NAME, "forks", self.forks)?;
        if self.forks > MAX_FORKS {
            let forks = self.forks.to_string();
            return Err(out_of_range(Self::NAME, "forks", forks, FORKS_RANGE));
        }
        let child = [
            (
                "child_stack",
                self.child.stack,
                STACK_PAGES,
                CHILD_STACK_RANGE,
            ),
            ("child_data", self.child.data, DATA_PAGES, CHILD_DATA_RANGE),
            ("child_text", self.child.text, TEXT_PAGES, CHILD_TEXT_RANGE),
        ];
        for (key, pages, most, why) in child {
            if pages > most {
                return Err(out_of_range(Self::NAME, key, pages.to_string(), why));
            }
        }
        Ok(())
    }

    fn canonical_params(&self) -> String {
        // The child's touches only when not the measured default, so the names of runs
        // with the default stay as they were.
        let child = if self.child == ChildTouches::default() {
            String::new()
        } else {
            format!(
                ",child_stack={},child_data={},child_text={}",
                self.child.stack, self.child.data, self.child.text
            )
        };
        format!("rss={},forks={}{child}", format_size(self.rss), self.forks)
    }

    fn footprint_bytes(&self) -> u64 {
        self.rss
    }

    /// 0: the forks' page touches are ops, not counted data accesses.
    fn measured_accesses_total(&self) -> u64 {
        0
    }

    fn program(&self) -> &'static str {
        "fork-bench"
    }

    fn build(&self, seed: u64) -> Result<ForkBench, WorkloadError> {
        Ok(ForkBench::new(*self, seed))
    }
}

/// The generator of a `fork-bench` run.
#[derive(Clone, Debug)]
pub struct ForkBench {
    config: ForkBenchConfig,
    /// Ops of [`IMAGE_SETUP`] handed out so far.
    image_ops: usize,
    prologue: Prologue,
    forks: ForkLoop,
}

impl ForkBench {
    /// A generator for `config` (which must have come through spec validation: rss a
    /// non-zero multiple of 4 KiB, forks at most `u32::MAX`). The seed is unused: the
    /// stream has no randomness.
    pub fn new(config: ForkBenchConfig, _seed: u64) -> Self {
        ForkBench {
            config,
            image_ops: 0,
            prologue: Prologue::new(config.rss),
            forks: ForkLoop::new(config.forks, false, config.child),
        }
    }

    /// The parameters this generator runs.
    pub fn config(&self) -> &ForkBenchConfig {
        &self.config
    }
}

impl Workload for ForkBench {
    fn next_op(&mut self) -> Option<Op> {
        if let Some(&op) = IMAGE_SETUP.get(self.image_ops) {
            self.image_ops += 1;
            return Some(op);
        }
        if !self.prologue.done() {
            return Some(self.prologue.next());
        }
        self.forks.next()
    }

    fn measured_accesses_total(&self) -> u64 {
        0
    }

    /// 0: the measured phase makes no `Access` ops; the cost of the forks, switches and
    /// exits comes from the kernel's counters.
    fn instructions_per_access(&self) -> f64 {
        0.0
    }

    fn dependent_accesses(&self) -> bool {
        false
    }
}

/// The loop of `fork-bench` and lmbench's `lat_proc fork` and `exec`: `iters` times,
/// process 0 forks and writes its stack and libc data ([`PARENT_RUNS`]), the child runs (the
/// parent waits in waitpid): it returns from fork in
/// user mode, writing its stack and reading a page of text, optionally execs, and exits,
/// and the parent runs again. The k-th child (from 1) is pid k: nothing else forks. The
/// parent must have mapped [`IMAGE_SETUP`].
#[derive(Clone, Debug)]
pub(super) struct ForkLoop {
    iters: u64,
    /// Rounds finished.
    done: u64,
    /// Position in the current round: 0 fork, 1..=2 the parent's run ([`PARENT_RUNS`]),
    /// 3 switch, 4..=6 the child's run ([`ChildTouches`]), 7 exec (if `exec`), then exit.
    step: u8,
    exec: bool,
    /// The child's run.
    child: [Op; 3],
}

impl ForkLoop {
    /// `iters` rounds (at most `u32::MAX`, so every child's pid fits a `u32`), each child
    /// touching `child`.
    pub(super) fn new(iters: u64, exec: bool, child: ChildTouches) -> Self {
        ForkLoop {
            iters,
            done: 0,
            step: 0,
            exec,
            child: child.runs(),
        }
    }

    /// The next op of the loop, or None once every round is over.
    pub(super) fn next(&mut self) -> Option<Op> {
        if self.done >= self.iters {
            return None;
        }
        // Validation caps `iters` at u32::MAX; saturate rather than wrap regardless.
        let child = u32::try_from(self.done + 1).unwrap_or(u32::MAX);
        let op = match (self.step, self.exec) {
            (0, _) => Op::Fork,
            (1..=2, _) => PARENT_RUNS[self.step as usize - 1],
            (3, _) => Op::Switch { pid: child },
            (4..=6, _) => self.child[self.step as usize - 4],
            (7, true) => Op::Exec {
                program: &crate::os::HELLO,
            },
            _ => Op::Exit { next: 0 },
        };
        if let Op::Exit { .. } = op {
            self.done += 1;
            self.step = 0;
        } else {
            self.step += 1;
        }
        Some(op)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::super::BUFFER_BASE;
    use super::*;

    pub(in crate::workload) use super::PARENT_RUNS;

    /// The default child's run.
    pub(in crate::workload) fn child_runs() -> [Op; 3] {
        ChildTouches::default().runs()
    }

    fn drain(w: &mut impl Workload) -> Vec<Op> {
        let ops: Vec<Op> = std::iter::from_fn(|| w.next_op()).collect();
        // The end is sticky.
        assert_eq!(w.next_op(), None);
        ops
    }

    #[test]
    fn tiny_run_is_the_exact_op_sequence() {
        let c = ForkBenchConfig {
            rss: 8 << 10,
            forks: 2,
            ..ForkBenchConfig::default()
        };
        let mut w = ForkBench::new(c, 0);
        let mut expected = IMAGE_SETUP.to_vec();
        expected.extend([
            Op::Map {
                start: BUFFER_BASE,
                len: 8192,
            },
            Op::TouchPages {
                start: BUFFER_BASE,
                len: 8192,
                write: true,
            },
            Op::StartMeasurement,
        ]);
        for pid in 1..=2 {
            expected.push(Op::Fork);
            expected.extend(PARENT_RUNS);
            expected.push(Op::Switch { pid });
            expected.extend(child_runs());
            expected.push(Op::Exit { next: 0 });
        }
        assert_eq!(drain(&mut w), expected);
        assert_eq!(w.measured_accesses_total(), 0);
        assert!(!w.dependent_accesses());
    }

    #[test]
    fn every_fork_takes_the_next_pid() {
        let c = ForkBenchConfig {
            rss: 4 << 10,
            forks: 1000,
            ..ForkBenchConfig::default()
        };
        let ops = drain(&mut ForkBench::new(c, 0));
        assert_eq!(
            ops.len(),
            IMAGE_SETUP.len() + 3 + (3 + PARENT_RUNS.len() + child_runs().len()) * 1000
        );
        let pids: Vec<u32> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Switch { pid } => Some(*pid),
                _ => None,
            })
            .collect();
        assert_eq!(pids, (1..=1000).collect::<Vec<u32>>());
        assert!(!ops.iter().any(|op| matches!(op, Op::Access { .. })));
    }

    #[test]
    fn fork_loop_with_exec_execs_in_the_child() {
        let mut l = ForkLoop::new(2, true, ChildTouches::default());
        let ops: Vec<Op> = std::iter::from_fn(|| l.next()).collect();
        let mut expected = Vec::new();
        for pid in 1..=2 {
            expected.push(Op::Fork);
            expected.extend(PARENT_RUNS);
            expected.push(Op::Switch { pid });
            expected.extend(child_runs());
            expected.extend([
                Op::Exec {
                    program: &crate::os::HELLO,
                },
                Op::Exit { next: 0 },
            ]);
        }
        assert_eq!(ops, expected);
        assert_eq!(l.next(), None);
    }
}
