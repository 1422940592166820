//! Rerunning an experiment's report (`NAME.json` of `vmlab reproduce`) from its JSON alone:
//! every run again from its run spec (`specs`, each with its sweep point and overrides) on
//! the report's effective profile (`provenance.profile`, not the profile file, which may have
//! changed since), and every number compared. A comparison's report (`vmlab run --json`)
//! reruns through [`ComparisonReport::rerun`](crate::lab::ComparisonReport::rerun);
//! [`Report`] tells the two apart.

use crate::engine;
use crate::lab::compare::{differences, ComparisonReport};
use crate::lab::report::ExperimentReport;
use crate::lab::runner::in_parallel;
use crate::lab::LabError;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A report `vmlab rerun` takes.
#[derive(Clone, Debug)]
pub enum Report {
    /// `vmlab run --json` (or `run.json`).
    Comparison(Box<ComparisonReport>),
    /// `vmlab reproduce`'s `NAME.json`.
    Experiment(Box<ExperimentReport>),
}

impl Report {
    /// Reads either kind from its JSON: an object with `comparison` is a comparison's, one
    /// with `experiment` and `specs` an experiment's.
    pub fn from_json(text: &str) -> Result<Report, LabError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| LabError::Spec(format!("not JSON: {e}")))?;
        if value.get("comparison").is_some() {
            return ComparisonReport::from_json(text).map(|r| Report::Comparison(Box::new(r)));
        }
        if value.get("experiment").is_some() && value.get("specs").is_some() {
            return ExperimentReport::from_json(text).map(|r| Report::Experiment(Box::new(r)));
        }
        Err(LabError::Spec(
            "neither a `vmlab run --json` report (with `comparison`) nor an experiment's NAME.json (with `experiment` and `specs`)"
                .into(),
        ))
    }
}

/// What rerunning an experiment's report found.
#[derive(Clone, Debug)]
pub struct ExperimentRerun {
    /// The report with the new runs and the new provenance's command.
    pub report: ExperimentReport,
    /// The differences in the runs' numbers, one line each; empty when all are identical.
    pub differences: Vec<String>,
}

/// The progress callback of [`ExperimentReport::rerun`]: runs finished and in all, from any
/// of its threads; `Break` stops it.
pub type RerunProgressFn<'a> = dyn Fn(usize, usize) -> ControlFlow<()> + Sync + 'a;

impl ExperimentReport {
    /// Runs every run of the report again, on `threads` threads (0 counts as 1), from its
    /// spec on the report's effective profile, and compares every number. `command` is the
    /// new provenance's command. Every run is resolved and checked before the first starts.
    pub fn rerun(
        &self,
        command: &str,
        threads: usize,
        progress: &RerunProgressFn<'_>,
    ) -> Result<ExperimentRerun, LabError> {
        if self.specs.len() != self.runs.len() {
            return Err(LabError::Spec(format!(
                "the report has {} runs but {} run specs: written by an older vmlab, it cannot be rerun",
                self.runs.len(),
                self.specs.len()
            )));
        }
        let base = self
            .provenance
            .effective_profile()
            .map_err(LabError::Spec)?;
        let configs = self
            .specs
            .iter()
            .map(|spec| {
                let overrides: Vec<(&String, &String)> = spec.overrides.iter().collect();
                let profile = base
                    .with_overrides(&overrides)
                    .map_err(|e| LabError::Spec(e.to_string()))?;
                spec.resolve_with(profile)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let total = configs.len();
        let done = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let runs = in_parallel(total, threads, &stop, |i| {
            let config = &configs[i];
            let result = engine::run(config, &mut |_| {
                if stop.load(Ordering::Relaxed) {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .map_err(|e| LabError::from_engine(e, config, Some(&self.experiment)));
            let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
            if progress(finished, total).is_break() {
                stop.store(true, Ordering::Relaxed);
            }
            result
        })?;
        let differences = differences(&self.runs, &runs);
        let mut report = self.clone();
        report.provenance.command = command.to_string();
        report.provenance.vmlab_version = crate::provenance::VERSION.to_string();
        report.provenance.git_commit = crate::provenance::GIT_COMMIT.to_string();
        report.runs = runs;
        Ok(ExperimentRerun {
            report,
            differences,
        })
    }
}
