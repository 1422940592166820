//! The engine: runs one workload through the kernel model and the machine under one paging
//! scheme, and reports what happened.
//!
//! A run has three phases: set-up (everything before the workload's `StartMeasurement`:
//! mapping and first touch of its buffer), warm-up (accesses that fill TLBs and caches but
//! are not counted), and the measured sample. When the sample is shorter than the
//! workload's measured phase, cycles are extrapolated linearly from the sample, and the
//! report says so. A run is a function of (workload, scheme, profile, page sizes, seed).

use crate::addr::{Gva, PageSize, PAGE_SIZE};
use crate::cost::{Events, Profile};
use crate::hv::x86::shadow::ShadowConfig;
use crate::hv::x86::vm::BackingConfig;
use crate::hv::{ExitCounters, RemapCounters};
use crate::hw::cache::{MemoryStats, Requester};
use crate::hw::tags::TagCheckCost;
use crate::hw::x86::mmu::MmuCounters;
use crate::os::KernelCounters;
use crate::scheme::{Paging, SimError, System, SystemConfig};
use crate::stats::{exits_by_reason, LevelCounts, RunReport, SetupReport, StructureStats};
use crate::workload::{AnyWorkload, Op, Workload, WorkloadSpec};
use std::ops::ControlFlow;

/// One run to do.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub workload: WorkloadSpec,
    pub paging: Paging,
    pub profile: Profile,
    pub guest_pages: PageSize,
    pub host_pages: PageSize,
    /// Fraction of large host regions unavailable for large backing pages (0..=1).
    pub fragmentation: f64,
    /// Measured accesses to simulate; 0 simulates the whole measured phase.
    pub accesses: u64,
    /// Accesses to run before measuring (ignored when the whole phase is simulated).
    pub warmup: u64,
    pub seed: u64,
    /// Back all guest memory before set-up (TPT's `echo 1 > /sys/kernel/devirt`); its
    /// exits count in set-up.
    pub pretouch: bool,
}

pub mod check;
pub use check::check;

/// The phase a progress report is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Setup,
    Warmup,
    Measure,
}

impl Phase {
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
    pub phase: Phase,
    pub done: u64,
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
    kernel: KernelCounters,
    remap: RemapCounters,
}

impl Snapshot {
    fn take(sys: &System) -> Snapshot {
        Snapshot {
            mmu: *sys.mmu().counters(),
            memory: *sys.mmu().memory().stats(),
            exits: sys.exits(),
            kernel: *sys.kernel().counters(),
            remap: sys.remap_counters(),
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
        tag_reads: profile.tags.check_cost == TagCheckCost::PerFrame,
        shadow: Some(ShadowConfig {
            unsync: profile.virt.shadow_unsync,
            bypass_not_present: profile.virt.shadow_bypass_not_present,
            budget_pages: ShadowConfig::kvm_default(
                profile.machine.guest_memory >> crate::addr::PAGE_SHIFT,
            )
            .budget_pages,
        }),
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

/// Run one workload under one scheme. `progress` hears how far the run is, and may stop it
/// (the run then returns [`EngineError::Stopped`] at its next progress report).
pub fn run(config: &RunConfig, progress: &mut ProgressFn<'_>) -> Result<RunReport, EngineError> {
    check(config).map_err(EngineError::Config)?;
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
    if config.pretouch {
        system.pretouch_guest_memory()?;
    }
    // Dispatch on the workload once; each arm runs a loop monomorphized for its type.
    match config.workload.build(config.seed) {
        AnyWorkload::SysbenchMem(w) => drive(w, &mut system, config, progress),
        AnyWorkload::Gups(w) => drive(w, &mut system, config, progress),
        AnyWorkload::TlbBench(w) => drive(w, &mut system, config, progress),
        AnyWorkload::ForkBench(w) => drive(w, &mut system, config, progress),
        AnyWorkload::Lmbench(w) => drive(w, &mut system, config, progress),
        AnyWorkload::TptIsolationProbe(w) => drive(w, &mut system, config, progress),
        AnyWorkload::HostRemap(w) => drive(w, &mut system, config, progress),
    }
}

fn drive<W: Workload>(
    mut w: W,
    sys: &mut System,
    config: &RunConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<RunReport, EngineError> {
    let total = w.measured_accesses_total();
    let (warmup, sample) = if config.accesses == 0 || config.warmup + config.accesses >= total {
        (0, total)
    } else {
        (config.warmup, config.accesses)
    };

    // Counters start at zero when the system is built, so set-up includes the boot.
    let start = Snapshot::default();
    setup(&mut w, sys, progress)?;
    let after_setup = Snapshot::take(sys);
    run_accesses(&mut w, sys, warmup, Phase::Warmup, progress)?;
    let before = Snapshot::take(sys);
    let mut simulated = run_accesses(&mut w, sys, sample, Phase::Measure, progress)?;
    if sample == total {
        // The whole measured phase is simulated: its OS operations too, to the end.
        simulated += drain(&mut w, sys, progress)?;
    }
    let after = Snapshot::take(sys);
    Ok(report(
        sys,
        config,
        &w,
        Interval {
            start,
            after_setup,
            before,
            after,
        },
        warmup,
        simulated,
        total,
    ))
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

/// Run every op left; returns how many were accesses.
fn drain<W: Workload>(
    w: &mut W,
    sys: &mut System,
    progress: &mut ProgressFn<'_>,
) -> Result<u64, EngineError> {
    let mut accesses = 0;
    while let Some(op) = w.next_op() {
        accesses += matches!(op, Op::Access { .. }) as u64;
        os_op(sys, op, progress)?;
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
        Op::Exec => sys.exec(&crate::os::HELLO)?,
        Op::Exit { next } => sys.exit(next)?,
        Op::HostRemap { va } => sys.host_remap(va)?,
        Op::ForeignProbe { va, level, write } => {
            sys.tpt_foreign_access(va, level, write)?;
        }
        Op::TouchPages { start, len, write } => {
            let pages = len / PAGE_SIZE;
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
        }
        Op::Access { va, write } => {
            sys.access(va, write)?;
        }
        Op::StartMeasurement => {}
    }
    Ok(())
}

/// Accesses simulated as one batch: the engine looks this far ahead so the simulator can
/// prefetch its own tables for them (see `System::prefetch`); results do not depend on it.
const BATCH: usize = 8;

/// Run up to `n` accesses (other ops on the way are executed, not counted); returns how
/// many accesses ran before the workload ended.
fn run_accesses<W: Workload>(
    w: &mut W,
    sys: &mut System,
    n: u64,
    phase: Phase,
    progress: &mut ProgressFn<'_>,
) -> Result<u64, EngineError> {
    let mut done = 0;
    let mut batch = [(Gva::new(0), false); BATCH];
    let mut vas = [Gva::new(0); BATCH];
    report_progress(
        progress,
        Progress {
            phase,
            done,
            total: n,
        },
    )?;
    while done < n {
        let want = (n - done).min(BATCH as u64) as usize;
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
            done += 1;
            if done & PROGRESS_MASK == 0 {
                report_progress(
                    progress,
                    Progress {
                        phase,
                        done,
                        total: n,
                    },
                )?;
            }
        }
        if let Some(op) = other {
            os_op(sys, op, progress)?;
        }
        if ended {
            break;
        }
    }
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

struct Interval {
    start: Snapshot,
    after_setup: Snapshot,
    before: Snapshot,
    after: Snapshot,
}

fn report<W: Workload>(
    sys: &System,
    config: &RunConfig,
    w: &W,
    iv: Interval,
    warmup: u64,
    simulated: u64,
    total: u64,
) -> RunReport {
    let profile = &config.profile;
    let mmu = iv.after.mmu.since(&iv.before.mmu);
    let memory = iv.after.memory.since(&iv.before.memory);
    let exits = iv.after.exits.since(&iv.before.exits);
    let kernel = iv.after.kernel.since(&iv.before.kernel);
    let remap = iv.after.remap.since(&iv.before.remap);
    let events = Events {
        accesses: simulated,
        instructions: simulated as f64 * w.instructions_per_access(),
        data_served: memory.served[Requester::Data as usize],
        walk_served: memory.served[Requester::Walk as usize],
        stlb_hits: mmu.stlb_hits,
        tag_served: memory.served[Requester::Tag as usize],
        tag_fills: mmu.tag_fills,
        exits,
        kernel,
        remap,
    };
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
        accesses_warmup: warmup,
        accesses_total: total,
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
