//! The engine: runs one workload through the kernel model and the machine under one paging
//! scheme, and reports what happened.
//!
//! A run has three phases: set-up (everything before the workload's `StartMeasurement`:
//! mapping and first touch of its buffer), warm-up (accesses that fill TLBs and caches but
//! are not counted), and the measured sample. The warm-up runs in windows until the cost per
//! access stops moving (or a cap), and the sample in windows that give a confidence interval
//! ([`sampling`]). When the sample is shorter than the workload's measured phase, cycles are
//! extrapolated linearly from the sample, and the report says so; when the sample would cover
//! the workload, every access is simulated from cold and measured, with no warm-up. A run is
//! a function of (workload, scheme, profile, page sizes, seed, sample).

mod recorded;
pub mod sampling;

use crate::addr::{Gva, PageSize, PAGE_SIZE};
use crate::cost::{Events, Profile};
use crate::hv::x86::shadow::agile::AgileConfig;
use crate::hv::x86::shadow::ShadowConfig;
use crate::hv::x86::shadow_work::ShadowWorkCounters;
use crate::hv::x86::vm::BackingConfig;
use crate::hv::{ExitCounters, RemapCounters};
use crate::hw::cache::{MemoryStats, Requester};
use crate::hw::tags::TagCheckCost;
use crate::hw::x86::mmu::MmuCounters;
use crate::os::KernelCounters;
use crate::scheme::{Paging, SimError, System, SystemConfig};
use crate::stats::{
    exits_by_reason, LevelCounts, RunReport, SampleReport, SetupReport, StructureStats,
};
use crate::workload::{Op, Workload, WorkloadSpec, WorkloadVisitor};
use sampling::{SamplePlan, Steady, WarmupEnd};
use std::ops::ControlFlow;
use ticks::Ticker;

mod pipeline;
mod ticks;
pub use crate::hw::pipeline::Pipeline;

/// One run to do.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The workload to run, with its parameters.
    pub workload: WorkloadSpec,
    /// The paging scheme: native, or how the hypervisor translates guest memory.
    pub paging: Paging,
    /// The machine's structures and costs.
    pub profile: Profile,
    /// Guest page size: 2M turns transparent huge pages on in the kernel model.
    pub guest_pages: PageSize,
    /// The host page size backing guest memory (falls back to smaller ones where fragmented).
    pub host_pages: PageSize,
    /// Fraction of large host regions unavailable for large backing pages (0..=1).
    pub fragmentation: f64,
    /// Measured accesses to simulate, in [`sampling::WINDOWS`] windows; 0 (or at least the
    /// workload's accesses) simulates the whole measured phase from cold, with no warm-up.
    pub accesses: u64,
    /// The most accesses to run before measuring: the warm-up stops earlier once the cost
    /// per access has settled within `tolerance` (exactly this many with `fixed_warmup`).
    pub warmup: u64,
    /// Relative tolerance of the warm-up's steady-state test ([`sampling::Steady`]).
    pub tolerance: f64,
    /// Run exactly `warmup` accesses of warm-up, with no steady-state test.
    pub fixed_warmup: bool,
    /// Seed of the workload's random choices and of which host regions are fragmented.
    pub seed: u64,
    /// Back all guest memory before set-up (TPT's `echo 1 > /sys/kernel/devirt`); its
    /// exits count in set-up.
    pub pretouch: bool,
    /// How memory references are served (host speed only: every mode gives the same
    /// results).
    pub pipeline: Pipeline,
}

pub mod check;
pub use check::check;

/// The phase a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Mapping and first touch of the workload's memory, before `StartMeasurement`.
    Setup,
    /// Accesses that fill TLBs and caches but are not counted.
    Warmup,
    /// The measured sample.
    Measure,
}

impl Phase {
    /// The phase's name as progress output prints it.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Setup => "set-up",
            Phase::Warmup => "warm-up",
            Phase::Measure => "measure",
        }
    }
}

/// Progress of a run: `done` of `total` units (pages in set-up, accesses after).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// The phase the run is in.
    pub phase: Phase,
    /// Units of the phase done so far.
    pub done: u64,
    /// Units the phase has in all (for warm-up, its cap).
    pub total: u64,
}

/// How often progress is reported, in operations (a power of two minus one, as a mask).
const PROGRESS_MASK: u64 = (1 << 18) - 1;

/// Why a run did not produce a report.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The simulated system failed (out of simulated memory, a simulator bug).
    #[error("{0}")]
    Sim(#[from] SimError),
    /// The run cannot be done as configured (say, a footprint the machine cannot hold).
    #[error("invalid run: {0}")]
    Config(String),
    /// The workload failed: its input is unreadable, or the simulated program did what its
    /// recording says it could not (with where in the recording).
    #[error("{0}")]
    Workload(String),
    /// The progress callback asked the run to stop.
    #[error("the run was stopped by its progress callback")]
    Stopped,
}

/// The progress callback of a run: called every few hundred thousand operations, it answers
/// `ControlFlow::Break(())` to stop the run (which then ends with [`EngineError::Stopped`]).
pub type ProgressFn<'a> = dyn FnMut(Progress) -> ControlFlow<()> + 'a;

/// Reports `p`, and turns a request to stop into an error.
fn report_progress(progress: &mut ProgressFn<'_>, p: Progress) -> Result<(), EngineError> {
    match progress(p) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(()) => Err(EngineError::Stopped),
    }
}

/// Snapshot of every counter, to measure an interval.
#[derive(Clone, Copy, Default)]
struct Snapshot {
    mmu: MmuCounters,
    memory: MemoryStats,
    exits: ExitCounters,
    shadow: ShadowWorkCounters,
    kernel: KernelCounters,
    remap: RemapCounters,
    /// The LLC's DRRIP policy selector (none under another policy).
    llc_policy_selector: Option<u16>,
    /// Instructions the workload retired, when it counts them (a recorded program).
    retired: u64,
}

impl Snapshot {
    fn take(sys: &System, retired: u64) -> Snapshot {
        Snapshot {
            mmu: sys.mmu().counters(),
            memory: *sys.mmu().memory().stats(),
            exits: sys.exits(),
            shadow: sys.shadow().map(|s| *s.work()).unwrap_or_default(),
            kernel: *sys.kernel().counters(),
            remap: sys.remap_counters(),
            llc_policy_selector: sys.mmu().memory().llc_policy_selector(),
            retired,
        }
    }
}

/// The system `profile` describes under `paging`: its machine, caches, TLBs, kernel and
/// hypervisor options, with 4K pages in both dimensions, unfragmented host memory, and a
/// first program "main" that TPT's mark names. Runs set the page sizes, backing and program.
pub fn system_config(paging: Paging, profile: &Profile) -> SystemConfig {
    SystemConfig {
        paging,
        levels: profile.machine.paging_levels,
        host_memory: profile.machine.host_memory,
        guest_memory: profile.machine.guest_memory,
        guest_pages: PageSize::Size4K,
        pcid: profile.kernel.pcid,
        kpti: profile.kernel.kpti,
        tag_reads: profile.tags.check_cost == TagCheckCost::PerFrame,
        shadow: Some(ShadowConfig {
            unsync: profile.virt.shadow_unsync,
            bypass_not_present: profile.virt.shadow_bypass_not_present,
            budget_pages: ShadowConfig::kvm_default(
                profile.machine.guest_memory >> crate::addr::PAGE_SHIFT,
            )
            .budget_pages,
        }),
        agile: AgileConfig {
            writes_to_nested: profile.virt.agile_writes_to_nested,
            revert_ticks: (profile.virt.agile_revert_s * profile.kernel.hz)
                .round()
                .max(1.0) as u32,
        },
        backing: BackingConfig {
            host_pages: PageSize::Size4K,
            fragmentation: 0.0,
            seed: 0,
        },
        program: "main",
        tpt_task: Some("main"),
        tlb: profile.tlb.clone(),
        memory: profile.memory.clone(),
    }
}

/// [`run`], timing its measured phase in host time: from the progress report of its first
/// measured access to that of its last (set-up and warm-up excluded), as `vmlab bench` and
/// the criterion benchmarks report it. `None` if the run reported no measured phase.
pub fn run_timed(
    config: &RunConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<(RunReport, Option<std::time::Duration>), EngineError> {
    let (mut started, mut ended) = (None, None);
    let report = run(config, &mut |p| {
        if p.phase == Phase::Measure {
            if p.done == 0 {
                started = Some(std::time::Instant::now());
            }
            if p.done == p.total {
                ended = Some(std::time::Instant::now());
            }
        }
        progress(p)
    })?;
    Ok((report, started.zip(ended).map(|(s, e)| e - s)))
}

/// Run one workload under one scheme. `progress` hears how far the run is, and may stop it
/// (the run then returns [`EngineError::Stopped`] at its next progress report).
pub fn run(config: &RunConfig, progress: &mut ProgressFn<'_>) -> Result<RunReport, EngineError> {
    check(config).map_err(EngineError::Config)?;
    let workload = config
        .workload
        .build(config.seed)
        .map_err(|e| EngineError::Config(e.to_string()))?;
    let profile = &config.profile;
    let mut system = System::new(&SystemConfig {
        guest_pages: config.guest_pages,
        backing: BackingConfig {
            host_pages: config.host_pages,
            fragmentation: config.fragmentation,
            seed: config.seed,
        },
        program: config.workload.program(),
        tpt_task: config.workload.tpt_task(),
        ..system_config(config.paging, profile)
    })?;
    system.memory_mut().set_pipeline(config.pipeline);
    if config.pretouch {
        system.pretouch_guest_memory()?;
    }
    // Dispatch on the workload once; the run's loops are monomorphized for its type.
    workload.visit(Drive {
        system: &mut system,
        config,
        progress,
    })
}

/// [`drive`] as a [`WorkloadVisitor`], so that [`run`] matches on the workload once.
struct Drive<'a, 'p> {
    system: &'a mut System,
    config: &'a RunConfig,
    progress: &'a mut ProgressFn<'p>,
}

impl WorkloadVisitor for Drive<'_, '_> {
    type Output = Result<RunReport, EngineError>;

    fn visit<W: Workload>(self, mut workload: W) -> Self::Output {
        let result = drive(&mut workload, self.system, self.config, self.progress);
        // A stream that ended early (an unreadable recording) fails the run, whatever it made.
        if let Some(failure) = workload.take_failure() {
            return Err(EngineError::Workload(failure));
        }
        result.map_err(|e| match (e, workload.position()) {
            (EngineError::Sim(e), Some(at)) => EngineError::Workload(format!("{e}, {at}")),
            (e, _) => e,
        })
    }
}

/// The instructions `w` has retired, for a workload that counts them (else 0: the cost
/// model then charges its per-access estimate).
fn retired<W: Workload>(w: &W) -> u64 {
    w.instructions_retired().unwrap_or(0)
}

fn drive<W: Workload>(
    w: &mut W,
    sys: &mut System,
    config: &RunConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<RunReport, EngineError> {
    let total = w.measured_accesses_total();
    let plan = sampling::plan(
        total,
        config.accesses,
        config.warmup,
        config.tolerance,
        config.fixed_warmup,
    )
    .map_err(|e| EngineError::Config(e.0))?;
    let cost = WindowCost {
        profile: &config.profile,
        instructions_per_access: w.instructions_per_access(),
        dependent: w.dependent_accesses(),
    };

    // Counters start at zero when the system is built, so set-up includes the boot.
    let start = Snapshot::default();
    setup(w, sys, progress)?;
    let after_setup = Snapshot::take(sys, retired(w));
    let mut ticker = Ticker::new(
        &config.profile,
        cost.instructions_per_access,
        cost.dependent,
        sys,
        retired(w),
    );
    let ticks = &mut ticker;
    if let Some(stream) = w.sampled() {
        return sampled_recording(
            w,
            sys,
            config,
            &cost,
            ticks,
            (start, after_setup),
            stream,
            progress,
        );
    }
    let (before, simulated, sampled) = match plan {
        SamplePlan::Whole => {
            // The whole measured phase is simulated: its OS operations too, to the end.
            let mut simulated = run_accesses(w, sys, total, Phase::Measure, ticks, progress)?;
            simulated += drain(w, sys, ticks, progress)?;
            (after_setup, simulated, Sampled::whole())
        }
        SamplePlan::Windowed {
            warmup_window,
            cap,
            cap_by_workload,
            steady,
            sample,
            ..
        } => {
            let (mut warmup, warmup_series, mut end) = warm_up(
                w,
                sys,
                &cost,
                ticks,
                warmup_window,
                cap,
                cap_by_workload,
                steady,
                progress,
            )?;
            // A sample whose windows still trend was measured too early: it becomes warm-up
            // and the run measures again, while the cap leaves room for a whole sample.
            let mut discarded = 0;
            let (before, simulated, window_series) = loop {
                let before = Snapshot::take(sys, retired(w));
                let (simulated, series) = measure(w, sys, &cost, ticks, sample, progress)?;
                if !steady.is_some_and(|s| s.trending(&series.costs)) {
                    break (before, simulated, series);
                }
                let room = warmup
                    .checked_add(simulated)
                    .is_some_and(|used| used <= cap && simulated == sample);
                if !room {
                    end = if cap_by_workload {
                        WarmupEnd::Workload
                    } else {
                        WarmupEnd::Cap
                    };
                    break (before, simulated, series);
                }
                warmup += simulated;
                discarded += 1;
            };
            let sampled = Sampled {
                plan,
                warmup_accesses: warmup,
                end,
                discarded,
                warmup: warmup_series,
                windows: window_series,
            };
            (before, simulated, sampled)
        }
    };
    let after = Snapshot::take(sys, retired(w));
    Ok(report(
        sys,
        config,
        &*w,
        Interval {
            start,
            after_setup,
            before,
            after,
        },
        &sampled,
        simulated,
        total,
    ))
}

/// [`drive`] for a workload that samples itself ([`recorded`]): every op runs, the windows
/// are measured, and the report's time is made from the estimate of the whole run; its
/// translation and memory counts are the windows' (the sample's, as in any report), its
/// operating-system counts the whole run's.
#[allow(clippy::too_many_arguments)]
fn sampled_recording<W: Workload>(
    w: &mut W,
    sys: &mut System,
    config: &RunConfig,
    cost: &WindowCost<'_>,
    ticks: &mut Ticker<'_>,
    (start, after_setup): (Snapshot, Snapshot),
    stream: u64,
    progress: &mut ProgressFn<'_>,
) -> Result<RunReport, EngineError> {
    if config.accesses != 0 {
        return Err(EngineError::Config(
            "a sampled recording is measured in the windows it was recorded with: leave out --accesses".to_owned(),
        ));
    }
    let total = w.measured_accesses_total();
    let sample = recorded::run(w, sys, cost, ticks, total, stream, progress)?;
    // The estimate's translation and memory counts are the windows' extrapolated; the rest
    // counts from the end of set-up.
    let before = Snapshot {
        mmu: Default::default(),
        memory: Default::default(),
        ..after_setup
    };
    let interval = |after| Interval {
        start,
        after_setup,
        before,
        after,
    };
    // Cycles from the estimate of the whole run; counts of the windows, as a sample's.
    let timed = report(
        sys,
        config,
        &*w,
        interval(sample.estimate),
        &Sampled::whole(),
        total,
        total,
    );
    let mut run = report(
        sys,
        config,
        &*w,
        interval(sample.windows),
        &Sampled::whole(),
        total,
        total,
    );
    run.cycles = timed.cycles;
    run.seconds = timed.seconds;
    run.cycles_per_access = timed.cycles_per_access;
    run.ns_per_access = timed.ns_per_access;
    run.cycles_breakdown = timed.cycles_breakdown;
    run.cycles_per_access_breakdown = timed.cycles_per_access_breakdown;
    run.us_per_fork = timed.us_per_fork;
    let ghz = config.profile.machine.frequency_ghz;
    let (method, sample_report) =
        recorded::sample_report(&sample, total, total as f64 / (ghz * 1e9), ghz);
    run.accesses_simulated = sample.window_accesses;
    run.extrapolated = true;
    run.sample_method = method;
    run.sample = sample_report;
    Ok(run)
}

/// The cost model applied to one window's counter deltas.
struct WindowCost<'a> {
    profile: &'a Profile,
    instructions_per_access: f64,
    dependent: bool,
}

impl WindowCost<'_> {
    /// Cycles per access between snapshots `a` and `b`, `accesses` apart.
    fn per_access(&self, a: &Snapshot, b: &Snapshot, accesses: u64) -> f64 {
        let events = interval_events(a, b, accesses, self.instructions_per_access);
        self.profile.cycles(&events, self.dependent).total / accesses.max(1) as f64
    }
}

/// What the sampling did: the plan, the warm-up run and why it ended, and the per-window
/// costs.
struct Sampled {
    plan: SamplePlan,
    warmup_accesses: u64,
    end: WarmupEnd,
    /// Samples measured, found still trending, and counted as warm-up.
    discarded: u64,
    warmup: Series,
    windows: Series,
}

/// What each window of a phase measured, in order.
#[derive(Default)]
struct Series {
    /// Cycles per access.
    costs: Vec<f64>,
    /// The LLC's DRRIP policy selector at the window's end (empty under another policy).
    llc_policy_selector: Vec<u16>,
}

impl Series {
    /// Records a window of `accesses` between snapshots `a` and `b`.
    fn push(&mut self, cost: &WindowCost<'_>, a: &Snapshot, b: &Snapshot, accesses: u64) {
        self.costs.push(cost.per_access(a, b, accesses));
        self.llc_policy_selector.extend(b.llc_policy_selector);
    }
}

impl Sampled {
    fn whole() -> Sampled {
        Sampled {
            plan: SamplePlan::Whole,
            warmup_accesses: 0,
            end: WarmupEnd::None,
            discarded: 0,
            warmup: Series::default(),
            windows: Series::default(),
        }
    }
}

/// `progress`, with counts shifted by `base` and the phase's total as `total`: a phase run in
/// windows reports as one.
fn shifted<'a, 'b>(
    progress: &'a mut ProgressFn<'b>,
    base: u64,
    total: u64,
) -> impl FnMut(Progress) -> ControlFlow<()> + use<'a, 'b> {
    move |p| {
        progress(Progress {
            done: base + p.done,
            total,
            ..p
        })
    }
}

/// The warm-up: windows of `window` accesses, at most `cap` in all, until `steady` says the
/// cost has settled (never, for a fixed warm-up). Returns the accesses run, each window's cost
/// and why it ended.
#[allow(clippy::too_many_arguments)]
fn warm_up<W: Workload>(
    w: &mut W,
    sys: &mut System,
    cost: &WindowCost<'_>,
    ticks: &mut Ticker<'_>,
    window: u64,
    cap: u64,
    cap_by_workload: bool,
    steady: Option<Steady>,
    progress: &mut ProgressFn<'_>,
) -> Result<(u64, Series, WarmupEnd), EngineError> {
    let mut done = 0;
    let mut series = Series::default();
    while done < cap {
        let n = window.min(cap - done);
        let ran = run_window(
            w,
            sys,
            cost,
            ticks,
            n,
            Phase::Warmup,
            &mut series,
            progress,
            done,
            cap,
        )?;
        done += ran;
        if ran < n {
            return Ok((done, series, WarmupEnd::Workload));
        }
        if steady.is_some_and(|s| s.converged(&series.costs)) {
            return Ok((done, series, WarmupEnd::Converged));
        }
    }
    let end = if cap_by_workload {
        WarmupEnd::Workload
    } else if steady.is_none() {
        WarmupEnd::Fixed
    } else {
        WarmupEnd::Cap
    };
    Ok((done, series, end))
}

/// The measured sample: `sample` accesses in [`sampling::WINDOWS`] windows. Returns the
/// accesses run and each window's cost.
fn measure<W: Workload>(
    w: &mut W,
    sys: &mut System,
    cost: &WindowCost<'_>,
    ticks: &mut Ticker<'_>,
    sample: u64,
    progress: &mut ProgressFn<'_>,
) -> Result<(u64, Series), EngineError> {
    let mut done = 0;
    let mut series = Series::default();
    for i in 0..sampling::WINDOWS {
        let n = sampling::window_len(sample, i);
        if n == 0 {
            break;
        }
        let ran = run_window(
            w,
            sys,
            cost,
            ticks,
            n,
            Phase::Measure,
            &mut series,
            progress,
            done,
            sample,
        )?;
        done += ran;
        if ran < n {
            break;
        }
    }
    Ok((done, series))
}

/// One window of `n` accesses in `phase`, its cost appended to `series` (if it ran any);
/// progress is reported as `done` of `total` plus the window's own. Returns the accesses run.
#[allow(clippy::too_many_arguments)]
fn run_window<W: Workload>(
    w: &mut W,
    sys: &mut System,
    cost: &WindowCost<'_>,
    ticks: &mut Ticker<'_>,
    n: u64,
    phase: Phase,
    series: &mut Series,
    progress: &mut ProgressFn<'_>,
    done: u64,
    total: u64,
) -> Result<u64, EngineError> {
    let before = Snapshot::take(sys, retired(w));
    let ran = run_accesses(w, sys, n, phase, ticks, &mut shifted(progress, done, total))?;
    if ran > 0 {
        series.push(cost, &before, &Snapshot::take(sys, retired(w)), ran);
    }
    Ok(ran)
}

/// Run ops until `StartMeasurement`.
fn setup<W: Workload>(
    w: &mut W,
    sys: &mut System,
    progress: &mut ProgressFn<'_>,
) -> Result<(), EngineError> {
    while let Some(op) = w.next_op() {
        match op {
            Op::StartMeasurement => return Ok(()),
            other => os_op(sys, other, progress)?,
        }
    }
    Ok(())
}

/// Run every op left, with the ticks that fall due; returns how many were accesses.
fn drain<W: Workload>(
    w: &mut W,
    sys: &mut System,
    ticks: &mut Ticker<'_>,
    progress: &mut ProgressFn<'_>,
) -> Result<u64, EngineError> {
    let mut accesses = 0;
    while let Some(op) = w.next_op() {
        let access = matches!(op, Op::Access { .. }) as u64;
        accesses += access;
        os_op(sys, op, progress)?;
        ticks.ran(access, retired(w));
        ticks.catch_up(sys)?;
    }
    Ok(accesses)
}

/// Ops other than measured accesses.
fn os_op(sys: &mut System, op: Op, progress: &mut ProgressFn<'_>) -> Result<(), EngineError> {
    match op {
        Op::Map { start, len } => sys.mmap(start, len, true)?,
        Op::MapReadOnly { start, len } => sys.mmap(start, len, false)?,
        Op::Unmap { start, len } => sys.munmap(start, len)?,
        Op::Protect {
            start,
            len,
            writable,
        } => sys.mprotect(start, len, writable)?,
        Op::DontNeed { start, len } => sys.madvise_dontneed(start, len)?,
        Op::Fork => {
            sys.fork()?;
        }
        Op::Switch { pid } => sys.switch_to(pid)?,
        Op::Exec { program } => sys.exec(program)?,
        Op::Syscall => sys.plain_syscall()?,
        Op::Exit { next } => sys.exit(next)?,
        Op::HostRemap { va } => sys.host_remap(va)?,
        Op::ForeignProbe { va, level, write } => {
            sys.tpt_foreign_access(va, level, write)?;
        }
        Op::TouchPages { start, len, write } => {
            touch_pages(sys, start, len / PAGE_SIZE, write, progress)?
        }
        Op::Access { va, write } => {
            sys.access(va, write)?;
        }
        Op::Warm { va } => {
            sys.access(va, false)?;
        }
        Op::StartMeasurement | Op::Window { .. } => {}
    }
    Ok(())
}

/// Touches of at least this many pages run with the memory pipeline open: a first touch of
/// a buffer (set-up's, a fault per page) is most of a short run's host time. Smaller ones
/// (a benchmark's page or two) are not worth a pipeline's start.
const TOUCH_PIPELINE_PAGES: u64 = 1 << 12;

/// Touch `pages` pages from `start`, each access faulting the page in. The fault path
/// (kernel, hypervisor, MMU root loads and flushes) reads no cache state, so the references
/// of the accesses can be served later, and on the cache thread, with the same results;
/// only the translating thread's share stays here.
fn touch_pages(
    sys: &mut System,
    start: Gva,
    pages: u64,
    write: bool,
    progress: &mut ProgressFn<'_>,
) -> Result<(), EngineError> {
    let mut touch = |sys: &mut System| -> Result<(), EngineError> {
        for page in 0..pages {
            sys.access(Gva::new(start.raw() + page * PAGE_SIZE), write)?;
            if page & PROGRESS_MASK == 0 {
                report_progress(
                    progress,
                    Progress {
                        phase: Phase::Setup,
                        done: page,
                        total: pages,
                    },
                )?;
            }
        }
        Ok(())
    };
    if pages < TOUCH_PIPELINE_PAGES {
        return touch(sys);
    }
    std::thread::scope(|scope| {
        let mut window = pipeline::Window::new(sys.mmu().memory().pipeline(), scope);
        window.open(sys);
        // Closed whatever happens, as in `run_accesses`.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| touch(sys)));
        window.close(sys);
        run.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Accesses simulated as one batch: the engine looks this far ahead so the simulator can
/// prefetch its own tables for them (see `System::prefetch`); results do not depend on it.
const BATCH: usize = 16;

/// Run up to `n` accesses (other ops on the way are executed, not counted); returns how
/// many accesses ran before the workload ended.
fn run_accesses<W: Workload>(
    w: &mut W,
    sys: &mut System,
    n: u64,
    phase: Phase,
    ticks: &mut Ticker<'_>,
    progress: &mut ProgressFn<'_>,
) -> Result<u64, EngineError> {
    let mut done = 0;
    report_progress(
        progress,
        Progress {
            phase,
            done,
            total: n,
        },
    )?;
    let mode = sys.mmu().memory().pipeline();
    std::thread::scope(|scope| {
        let mut window = pipeline::Window::new(mode, scope);
        window.open(sys);
        // Close the pipeline whatever happens (an error or a panic half-way through a
        // batch), so the counters are whole and no cache thread waits forever.
        let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_batches(w, sys, n, phase, ticks, progress, &mut window, &mut done)
        }));
        window.close(sys);
        run.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })?;
    ticks.catch_up(sys)?;
    report_progress(
        progress,
        Progress {
            phase,
            done,
            total: n,
        },
    )?;
    Ok(done)
}

/// The batch loop of [`run_accesses`], with the memory pipeline open; `done` counts the
/// accesses run.
#[allow(clippy::too_many_arguments)]
fn run_batches<W: Workload>(
    w: &mut W,
    sys: &mut System,
    n: u64,
    phase: Phase,
    ticks: &mut Ticker<'_>,
    progress: &mut ProgressFn<'_>,
    window: &mut pipeline::Window<'_, '_>,
    done: &mut u64,
) -> Result<(), EngineError> {
    let mut batch = [(Gva::new(0), false); BATCH];
    let mut vas = [Gva::new(0); BATCH];
    while *done < n {
        let want = (n - *done).min(BATCH as u64) as usize;
        let (mut len, mut other, mut ended) = (0, None, false);
        while len < want {
            match w.next_op() {
                Some(Op::Access { va, write }) => {
                    batch[len] = (va, write);
                    vas[len] = va;
                    len += 1;
                }
                Some(op) => {
                    other = Some(op);
                    break;
                }
                None => {
                    ended = true;
                    break;
                }
            }
        }
        sys.prefetch(&vas[..len]);
        for &(va, write) in &batch[..len] {
            sys.access(va, write)?;
            *done += 1;
            if *done & PROGRESS_MASK == 0 {
                report_progress(
                    progress,
                    Progress {
                        phase,
                        done: *done,
                        total: n,
                    },
                )?;
            }
        }
        window.count(len as u64);
        ticks.ran(len as u64, retired(w));
        if let Some(op) = other {
            window.close(sys);
            os_op(sys, op, progress)?;
            ticks.catch_up(sys)?;
            window.open(sys);
        }
        if ended {
            break;
        }
    }
    Ok(())
}

struct Interval {
    start: Snapshot,
    after_setup: Snapshot,
    before: Snapshot,
    after: Snapshot,
}

/// The cost model's events between snapshots `a` and `b`, over `accesses` accesses.
fn interval_events(
    a: &Snapshot,
    b: &Snapshot,
    accesses: u64,
    instructions_per_access: f64,
) -> Events {
    let mmu = b.mmu.since(&a.mmu);
    let memory = b.memory.since(&a.memory);
    Events {
        accesses,
        instructions: accesses as f64 * instructions_per_access + (b.retired - a.retired) as f64,
        data_served: memory.served[Requester::Data as usize],
        walk_served: memory.served[Requester::Walk as usize],
        stlb_hits: mmu.stlb_hits,
        tag_served: memory.served[Requester::Tag as usize],
        tag_fills: mmu.tag_fills,
        exits: b.exits.since(&a.exits),
        shadow: b.shadow.since(&a.shadow),
        kernel: b.kernel.since(&a.kernel),
        remap: b.remap.since(&a.remap),
    }
}

/// The report's `sample_method` and `sample` for what the sampling did.
fn sample_report(
    sampled: &Sampled,
    simulated: u64,
    total: u64,
    cycles_per_access_to_seconds: f64,
    ghz: f64,
) -> (String, SampleReport) {
    let ci = crate::stats::ci::mean_ci(&sampled.windows.costs).map(|c| c.half_width);
    let mut report = SampleReport {
        warmup_end: sampled.end.name().to_string(),
        converged: sampled.end == WarmupEnd::Converged,
        warmup_accesses: sampled.warmup_accesses,
        discarded_samples: sampled.discarded,
        warmup_cap: 0,
        warmup_window_accesses: 0,
        tolerance: None,
        window_accesses: 0,
        windows: sampled.windows.costs.len() as u64,
        warmup_cycles_per_access: sampled.warmup.costs.clone(),
        window_cycles_per_access: sampled.windows.costs.clone(),
        warmup_llc_policy_selector: sampled.warmup.llc_policy_selector.clone(),
        window_llc_policy_selector: sampled.windows.llc_policy_selector.clone(),
        confidence: crate::stats::ci::CONFIDENCE,
        cycles_per_access_ci: ci,
        seconds_ci: ci.map(|h| h * cycles_per_access_to_seconds),
        ns_per_access_ci: ci.map(|h| h / ghz),
    };
    let method = match sampled.plan {
        SamplePlan::Whole => format!(
            "every one of the {total} measured accesses (and every operation) simulated from a cold start after set-up; no warm-up, so no interval"
        ),
        SamplePlan::Windowed {
            warmup_window,
            window,
            cap,
            steady,
            ..
        } => {
            report.warmup_cap = cap;
            report.warmup_window_accesses = warmup_window;
            report.window_accesses = window;
            report.tolerance = steady.map(|s| s.tolerance);
            let warm = match steady {
                Some(s) => format!(
                    "warm-up in windows of {warmup_window} accesses until the mean cycles per access of the last {b} windows is within {tol}% of the {b} before, and again for a sample whose windows still trend (at most {cap} accesses)",
                    b = sampling::BLOCK,
                    tol = s.tolerance * 100.0
                ),
                None => format!("a fixed warm-up of {cap} accesses"),
            };
            format!(
                "{warm}; then {simulated} measured accesses in {n} windows, {conf}% Student-t interval over the windows{extra}",
                n = report.windows,
                conf = crate::stats::ci::CONFIDENCE * 100.0,
                extra = if simulated < total {
                    format!("; time extrapolated to {total} accesses")
                } else {
                    String::new()
                }
            )
        }
    };
    (method, report)
}

fn report<W: Workload>(
    sys: &System,
    config: &RunConfig,
    w: &W,
    iv: Interval,
    sampled: &Sampled,
    simulated: u64,
    total: u64,
) -> RunReport {
    let profile = &config.profile;
    let mmu = iv.after.mmu.since(&iv.before.mmu);
    let exits = iv.after.exits.since(&iv.before.exits);
    let kernel = iv.after.kernel.since(&iv.before.kernel);
    let remap = iv.after.remap.since(&iv.before.remap);
    let events = interval_events(
        &iv.before,
        &iv.after,
        simulated,
        w.instructions_per_access(),
    );
    let breakdown = profile.cycles(&events, w.dependent_accesses());
    let per_access = |x: f64| {
        if simulated == 0 {
            0.0
        } else {
            x / simulated as f64
        }
    };
    let cycles_per_access = per_access(breakdown.total);
    let extrapolated = simulated < total;
    let cycles = if extrapolated {
        cycles_per_access * total as f64
    } else {
        breakdown.total
    };
    let ghz = profile.machine.frequency_ghz;
    let (sample_method, sample) =
        sample_report(sampled, simulated, total, total as f64 / (ghz * 1e9), ghz);

    let setup_exits = iv.after_setup.exits.since(&iv.start.exits);
    let kernel_now = sys.kernel().counters();
    let setup = SetupReport {
        page_faults: iv.after_setup.kernel.since(&iv.start.kernel).page_faults,
        vm_exits: setup_exits.total(),
        exits_by_reason: exits_by_reason(&setup_exits),
        page_table_pages: kernel_now.table_pages,
        page_table_pages_peak: kernel_now.table_pages_peak,
        ept_table_pages: sys.vm().map_or(0, |vm| vm.ept_table_pages()),
        backed_bytes: sys
            .vm()
            .map(|vm| {
                PageSize::ALL
                    .iter()
                    .map(|s| (s.name().to_string(), vm.backed_frames_of(*s) * PAGE_SIZE))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let scaled =
        |b: &crate::cost::CycleBreakdown, f: &dyn Fn(f64) -> f64| crate::cost::CycleBreakdown {
            compute: f(b.compute),
            data: f(b.data),
            walk: f(b.walk),
            exits: f(b.exits),
            kernel: f(b.kernel),
            total: f(b.total),
            bound: b.bound,
        };
    let whole = |x: f64| {
        if extrapolated {
            per_access(x) * total as f64
        } else {
            x
        }
    };
    RunReport {
        workload: config.workload.canonical(),
        paging: config.paging.name().to_string(),
        machine: profile.machine.name.clone(),
        guest_pages: config.guest_pages.name().to_string(),
        host_pages: if config.paging.is_virtualized() {
            config.host_pages.name()
        } else {
            "-"
        }
        .to_string(),
        seed: config.seed,
        pretouch: config.pretouch,
        accesses_simulated: simulated,
        accesses_warmup: sampled.warmup_accesses,
        accesses_total: total,
        sample_method,
        sample,
        extrapolated,
        cycles,
        seconds: cycles / (ghz * 1e9),
        cycles_per_access,
        ns_per_access: cycles_per_access / ghz,
        cycles_breakdown: scaled(&breakdown, &whole).into(),
        cycles_per_access_breakdown: scaled(&breakdown, &per_access).into(),
        l1_tlb_misses: mmu.l1_tlb_misses,
        stlb_hits: mmu.stlb_hits,
        tlb_misses: mmu.tlb_misses,
        walks: mmu.walks,
        walk_refs: mmu.walk_refs(),
        guest_walk_refs: mmu.guest_refs,
        ept_walk_refs: mmu.ept_refs,
        walk_refs_per_walk: if mmu.walks == 0 {
            0.0
        } else {
            mmu.walk_refs() as f64 / mmu.walks as f64
        },
        nested_tlb_hits: mmu.nested_tlb_hits,
        nested_tlb_misses: mmu.nested_tlb_misses,
        walk_refs_served: LevelCounts::from(events.walk_served),
        data_served: LevelCounts::from(events.data_served),
        vm_exits: exits.total(),
        exits_by_reason: exits_by_reason(&exits),
        shadow_work: crate::stats::shadow_work(&events.shadow),
        page_faults: kernel.page_faults,
        tag_checks: mmu.tag_checks,
        tag_violations: mmu.tag_violations,
        hypercalls: exits.get(crate::hv::ExitReason::Hypercall),
        foreign_accesses: sys.foreign_accesses(),
        forks: kernel.forks,
        cow_faults: kernel.cow_faults,
        context_switches: kernel.context_switches,
        page_table_pages: kernel_now.table_pages_peak,
        us_per_fork: (kernel.forks > 0).then(|| cycles / (ghz * 1e3) / kernel.forks as f64),
        os: kernel,
        remap,
        agile: sys.shadow().and_then(|s| s.agile_stats()).copied(),
        setup,
        structures: sys
            .mmu()
            .structure_stats()
            .into_iter()
            .map(|(name, hits, misses)| StructureStats {
                name: name.to_string(),
                hits,
                misses,
            })
            .collect(),
    }
}
