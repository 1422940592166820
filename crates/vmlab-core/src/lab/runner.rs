//! Running a plan: every distinct run of it on N threads. Runs are independent and seeded,
//! so their results do not depend on the number of threads or on the order they finish in.

use crate::addr::PageSize;
use crate::cost::Profile;
use crate::engine::{self, Progress, RunConfig};
use crate::lab::experiment::Experiment;
use crate::lab::plan::{Job, Plan};
use crate::lab::report::{rows, Row};
use crate::lab::LabError;
use crate::scheme::Paging;
use crate::stats::RunReport;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// What the runner tells its progress callback (from the threads running the plan).
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// How far one run is (the engine's report, every few hundred thousand operations).
    Run {
        /// The run.
        job: &'a Job,
        /// Its phase and count.
        progress: Progress,
    },
    /// A run finished or failed (a stopped run is not reported): `done` of `total` runs to
    /// do (the plan's distinct runs, or a part's).
    Finished {
        /// The run.
        job: &'a Job,
        /// Runs finished so far, this one included.
        done: usize,
        /// Runs to do.
        total: usize,
    },
}

/// The runner's progress callback: called from any of its threads; `ControlFlow::Break(())`
/// stops the sweep (every run in flight stops at its next progress report, no new run starts,
/// and the runner returns [`LabError::Stopped`]).
pub type LabProgressFn<'a> = dyn Fn(&Event<'_>) -> ControlFlow<()> + Sync + 'a;

/// What makes runs identical: workload, scheme, guest pages, host pages when virtualized,
/// and the point of the sweep.
pub(crate) type RunKey = (
    String,
    Paging,
    PageSize,
    Option<PageSize>,
    Vec<(String, String)>,
);

/// Native paging has no host page size: one run serves every host page size of a group.
pub(crate) fn dedup_key(job: &Job) -> RunKey {
    let host = job.paging.is_virtualized().then_some(job.group.host_pages);
    (
        job.spec.canonical(),
        job.paging,
        job.group.guest_pages,
        host,
        job.group.point.clone(),
    )
}

/// The engine's configuration of every job of `todo`, from its run spec
/// ([`Plan::run_spec`]) with `profile` as the machine (each job's overrides applied to it),
/// each checked: the first that cannot be made is the experiment's error.
fn configs(plan: &Plan, todo: &[&Job], profile: &Profile) -> Result<Vec<RunConfig>, LabError> {
    let err = |e: LabError| LabError::Experiment {
        experiment: plan.experiment.clone(),
        message: match e {
            LabError::Spec(m) => m,
            other => other.to_string(),
        },
    };
    let mut profiles: Vec<(Vec<(String, String)>, Profile)> = Vec::new();
    todo.iter()
        .map(|&job| {
            let spec = plan.run_spec(job);
            let overrides: Vec<(String, String)> = spec
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let machine = match profiles.iter().find(|(o, _)| *o == overrides) {
                Some((_, p)) => p.clone(),
                None => {
                    let p = profile
                        .with_overrides(&overrides)
                        .map_err(|e| err(LabError::Spec(e.to_string())))?;
                    profiles.push((overrides, p.clone()));
                    p
                }
            };
            spec.resolve_with(machine).map_err(err)
        })
        .collect()
}

/// Runs every distinct job of `plan` on `threads` threads (0 counts as 1) with `profile` as
/// the machine (each job's profile overrides applied to it), and returns the plan's rows in
/// order. Every run is checked first (a run that cannot be done is an error before any
/// runs); then the first failed run in plan order decides the error.
pub fn run_plan(
    plan: &Plan,
    profile: &Profile,
    threads: usize,
    progress: &LabProgressFn<'_>,
) -> Result<Vec<Row>, LabError> {
    let todo = plan.distinct_jobs();
    let reports = run_jobs(plan, &todo, profile, threads, progress)?;
    let reports = todo.iter().map(|job| dedup_key(job)).zip(reports).collect();
    Ok(rows(plan, &reports))
}

/// Runs `todo` (jobs of `plan`) on `threads` threads as [`run_plan`] does, and returns their
/// reports in the order of `todo`. [`Event::Finished`] counts runs of `todo`.
pub(crate) fn run_jobs(
    plan: &Plan,
    todo: &[&Job],
    profile: &Profile,
    threads: usize,
    progress: &LabProgressFn<'_>,
) -> Result<Vec<RunReport>, LabError> {
    // Every run is resolved and checked before the first one starts.
    let configs = configs(plan, todo, profile)?;
    let finished = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let reports = in_parallel(todo.len(), threads, &stop, |i| {
        let (job, config) = (todo[i], &configs[i]);
        let result = engine::run(config, &mut |p| {
            if stop.load(Ordering::Relaxed) || progress(&Event::Run { job, progress: p }).is_break()
            {
                stop.store(true, Ordering::Relaxed);
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        })
        .map_err(|e| LabError::from_engine(e, config, Some(&plan.experiment)));
        if !matches!(result, Err(LabError::Stopped)) {
            let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
            let event = Event::Finished {
                job,
                done,
                total: todo.len(),
            };
            if progress(&event).is_break() {
                stop.store(true, Ordering::Relaxed);
            }
        }
        result
    })?;
    if stop.load(Ordering::Relaxed) {
        return Err(LabError::Stopped);
    }
    Ok(reports)
}

/// Runs `work(i)` for every `i` in `0..count` on `threads` threads (0 counts as 1), each
/// thread taking the next index as it frees up, and returns the results in index order: the
/// first error in that order is the error. Once `stop` is set no new index starts (`work`
/// watches it to stop early); an index that never started counts as [`LabError::Stopped`].
/// The one pool of the lab's parallel runs: a plan's, a report's rerun, a sweep's.
pub fn in_parallel<T: Send>(
    count: usize,
    threads: usize,
    stop: &AtomicBool,
    work: impl Fn(usize) -> Result<T, LabError> + Sync,
) -> Result<Vec<T>, LabError> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<T, LabError>>>> =
        Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1).min(count) {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                let result = work(i);
                // A poisoned lock means another worker panicked; scope() re-raises that panic.
                if let Ok(mut results) = results.lock() {
                    results[i] = Some(result);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or(Err(LabError::Stopped)))
        .collect()
}

/// An experiment's plan and its results.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The runs planned.
    pub plan: Plan,
    /// A row per job of the plan, in order.
    pub rows: Vec<Row>,
}

/// Does what `vmlab reproduce` does short of printing and writing files: plans `exp`
/// (`quick`: its quick variant), loads its machine profile, and runs the plan on `threads`
/// threads.
pub fn run_experiment(
    exp: &Experiment,
    quick: bool,
    threads: usize,
    progress: &LabProgressFn<'_>,
) -> Result<Outcome, LabError> {
    let plan = exp.plan(quick)?;
    let profile = plan.profile()?;
    let rows = run_plan(&plan, &profile, threads, progress)?;
    Ok(Outcome { plan, rows })
}
