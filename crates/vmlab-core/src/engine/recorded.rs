//! Running a workload that samples itself: a sampled recording (`vmlab record --sample`).
//!
//! Every operation of the stream runs: each system call, mapping change, fork, exec and exit,
//! and each first touch and first store of a page, so page faults, copy-on-write faults and
//! page-table pages are exactly those of a full replay. Outside the recording's windows the
//! stream also holds each window's warm-up summary (the lines the thread used last, in order
//! of last use), which rebuilds the TLBs' and caches' state before the window. The references
//! written outside windows (first touches and first stores) are counted as they are; the
//! windows' accesses are the sample: their translation and memory events, per reference, are
//! extrapolated to the references not written; the operating system's events (faults, exits,
//! shadow paging's work, the kernel's) and the instructions retired are counted over the whole
//! run, not extrapolated. The interval is Student-t over the windows' cycles per
//! reference. docs/model.md, "Sampled recordings", gives the reasoning and the validation.

use super::ticks::Ticker;
use super::{
    os_op, report_progress, retired, EngineError, Phase, Progress, ProgressFn, Snapshot,
    WindowCost, PROGRESS_MASK,
};
use crate::hw::cache::MemoryStats;
use crate::hw::x86::mmu::MmuCounters;
use crate::scheme::System;
use crate::stats::ci::{mean_ci, CONFIDENCE};
use crate::stats::SampleReport;
use crate::workload::{Op, Workload};

/// One window's translation and memory counts, summed over the pieces it ran in (a window
/// is cut where another thread runs between its references).
#[derive(Clone, Copy, Default)]
struct WindowTally {
    accesses: u64,
    retired: u64,
    mmu: MmuCounters,
    memory: MemoryStats,
}

/// What a sampled run measured.
pub(super) struct RecordedSample {
    /// Accesses run inside windows.
    pub window_accesses: u64,
    /// Per window, cycles per reference (translation, memory and instructions only).
    pub costs: Vec<f64>,
    /// The end of the run with the windows' translation and memory counts extrapolated to
    /// every reference, and everything else as counted: what the cycles are made from.
    pub estimate: Snapshot,
    /// The same with the windows' translation and memory counts as they are: what the
    /// report's counts are made from (they cover the sample, as every report's do).
    pub windows: Snapshot,
}

/// The window being measured: its id and the counters when its piece began.
struct Open {
    id: u32,
    at: Snapshot,
    accesses: u64,
}

/// Runs the whole stream; `total` is the references the program made, `stream` the accesses
/// the stream holds (for progress).
pub(super) fn run<W: Workload>(
    w: &mut W,
    sys: &mut System,
    cost: &WindowCost<'_>,
    ticks: &mut Ticker<'_>,
    total: u64,
    stream: u64,
    progress: &mut ProgressFn<'_>,
) -> Result<RecordedSample, EngineError> {
    let mut windows: Vec<WindowTally> = Vec::new();
    // The program's references run outside windows, counted as they are.
    let mut outside = WindowTally::default();
    let mut open: Option<Open> = None;
    let mut ran = 0u64;
    let mut close = |open: &mut Option<Open>, sys: &System, retired: u64| {
        if let Some(o) = open.take() {
            let now = Snapshot::take(sys, retired);
            let id = o.id as usize;
            if windows.len() <= id {
                windows.resize(id + 1, WindowTally::default());
            }
            let t = &mut windows[id];
            t.accesses += o.accesses;
            t.retired += now.retired - o.at.retired;
            t.mmu = t.mmu.plus(&now.mmu.since(&o.at.mmu));
            t.memory.add(&now.memory.since(&o.at.memory));
        }
    };
    let report = |progress: &mut ProgressFn<'_>, done| {
        report_progress(
            progress,
            Progress {
                phase: Phase::Measure,
                done,
                total: stream,
            },
        )
    };
    report(progress, 0)?;
    while let Some(op) = w.next_op() {
        match op {
            Op::Access { va, write } => {
                if let Some(o) = &mut open {
                    sys.access(va, write)?;
                    o.accesses += 1;
                } else {
                    let (mmu, memory) = (sys.mmu().counters(), *sys.mmu().memory().stats());
                    sys.access(va, write)?;
                    outside.accesses += 1;
                    outside.mmu = outside.mmu.plus(&sys.mmu().counters().since(&mmu));
                    outside
                        .memory
                        .add(&sys.mmu().memory().stats().since(&memory));
                }
                ran += 1;
                if ran & PROGRESS_MASK == 0 {
                    report(progress, ran)?;
                }
            }
            Op::Warm { va } => {
                sys.access(va, false)?;
                ran += 1;
            }
            Op::Window { id } => {
                close(&mut open, sys, retired(w));
                open = id.map(|id| Open {
                    id,
                    at: Snapshot::take(sys, retired(w)),
                    accesses: 0,
                });
            }
            other => {
                os_op(sys, other, progress)?;
                ticks.ran(0, retired(w));
                ticks.catch_up(sys)?;
            }
        }
    }
    close(&mut open, sys, retired(w));
    report(progress, ran)?;
    if let Some(failure) = w.take_failure() {
        return Err(EngineError::Workload(failure));
    }

    let measured: Vec<&WindowTally> = windows.iter().filter(|t| t.accesses > 0).collect();
    let costs = measured
        .iter()
        .map(|t| cost.per_access(&window_start(), &window_end(t), t.accesses))
        .collect();
    let sum = measured
        .iter()
        .fold(WindowTally::default(), |acc, t| WindowTally {
            accesses: acc.accesses + t.accesses,
            retired: acc.retired + t.retired,
            mmu: acc.mmu.plus(&t.mmu),
            memory: {
                let mut m = acc.memory;
                m.add(&t.memory);
                m
            },
        });
    // The windows stand for every reference but those written outside them.
    let factor = if sum.accesses == 0 {
        0.0
    } else {
        total.saturating_sub(outside.accesses) as f64 / sum.accesses as f64
    };
    let end = Snapshot::take(sys, retired(w));
    let mut memory = sum.memory.scaled(factor);
    memory.add(&outside.memory);
    Ok(RecordedSample {
        window_accesses: sum.accesses,
        costs,
        estimate: Snapshot {
            mmu: sum.mmu.scaled(factor).plus(&outside.mmu),
            memory,
            ..end
        },
        windows: Snapshot {
            mmu: sum.mmu,
            memory: sum.memory,
            ..end
        },
    })
}

/// A window's counts as the interval between two snapshots (its own events only: the
/// operating system's events are not per-reference costs).
fn window_start() -> Snapshot {
    Snapshot::default()
}

fn window_end(t: &WindowTally) -> Snapshot {
    Snapshot {
        mmu: t.mmu,
        memory: t.memory,
        retired: t.retired,
        ..Snapshot::default()
    }
}

/// The report's sampling section and method for a sampled recording of `total` references
/// whose `sample.window_accesses` were measured.
pub(super) fn sample_report(
    sample: &RecordedSample,
    total: u64,
    seconds_per_cycle_per_access: f64,
    ghz: f64,
) -> (String, SampleReport) {
    let ci = mean_ci(&sample.costs).map(|c| c.half_width);
    let windows = sample.costs.len() as u64;
    let report = SampleReport {
        warmup_end: "recorded".to_string(),
        converged: false,
        warmup_accesses: 0,
        discarded_samples: 0,
        warmup_cap: 0,
        warmup_window_accesses: 0,
        tolerance: None,
        window_accesses: sample.window_accesses / windows.max(1),
        windows,
        warmup_cycles_per_access: Vec::new(),
        window_cycles_per_access: sample.costs.clone(),
        warmup_llc_policy_selector: Vec::new(),
        window_llc_policy_selector: Vec::new(),
        confidence: CONFIDENCE,
        cycles_per_access_ci: ci,
        seconds_ci: ci.map(|h| h * seconds_per_cycle_per_access),
        ns_per_access_ci: ci.map(|h| h / ghz),
    };
    let method = format!(
        "a sampled recording: {} of its {total} references measured in {windows} recorded windows, each after its warm-up summary; translation and memory events extrapolated to every reference, operating-system events and instructions counted over the whole run; {}% Student-t interval over the windows",
        sample.window_accesses,
        CONFIDENCE * 100.0
    );
    (method, report)
}
