//! The laboratory: experiments, sweeps and their reports, as a library, so that every front
//! end (the `vmlab` command, a Python binding, a notebook) runs exactly what
//! `vmlab reproduce` runs.
//!
//! - [`experiment`]: the TOML schema of an experiment (`experiments/*.toml`, built in) and the
//!   metrics it reports.
//! - [`plan`]: an experiment expanded into its runs (workload x size x page sizes x scheme),
//!   with the combinations it skips and why.
//! - [`spec`]: one run as serializable data ([`RunSpec`]), resolved into the engine's
//!   configuration: the one conversion from what a front end says to what the engine runs.
//! - [`compare`]: a run comparison, one spec under several schemes and seeds (`vmlab run`),
//!   its serializable report, and a rerun of that report from its JSON.
//! - [`kinds`]: the registry of experiment kinds (`vmlab reproduce NAME`): the x86
//!   experiment files, the recorded e500 guest (`labt`), the guest kernel's benchmarks.
//! - [`runner`]: runs a plan on N threads (the results do not depend on N), with a progress
//!   callback that can stop the sweep.
//! - [`rerun`]: an experiment's report run again from its JSON alone (and which kind of
//!   report a JSON is).
//! - [`report`]: the results (a row per run or skipped combination), the experiment's
//!   serializable report, and its CSV, JSON and SVG renderings.
//! - [`plot`]: the SVG figure writer.
//! - [`shard`]: job arrays: a plan's distinct runs dealt out to N parts that run apart, each
//!   a serializable partial result, and the merge of the parts into the rows of one run.
//! - [`html`]: an experiment's report as one self-contained HTML page (tables, the figure
//!   inline, run specifications, provenance), rendered from the serializable report.
//!
//! Like the rest of the library it does no I/O besides reading the experiment and profile
//! files it is pointed at; printing, progress bars and writing files are the caller's.

pub mod compare;
pub mod e500;
pub mod experiment;
pub mod html;
pub mod kinds;
pub mod plan;
pub mod plot;
pub mod report;
pub mod rerun;
pub mod runner;
pub mod shard;
pub mod spec;

pub use compare::{Comparison, ComparisonReport, Rerun};
pub use experiment::{Experiment, Metric, BUILTIN};
pub use kinds::{ExperimentInfo, ExperimentKind};
pub use plan::{GroupKey, Job, Plan};
pub use report::{ExperimentReport, Row, SkippedRun};
pub use runner::{run_experiment, run_plan, Event, Outcome};
pub use shard::{merge, Merged, PartialResult, PlanId, Shard, ShardedPlan};
pub use spec::{load_profile, parse_page_size, parse_schemes, RunSpec, SettingNames};

use crate::engine::{EngineError, RunConfig};

/// What can go wrong in the lab. The first five and `Shard` are the user's to fix (a bad
/// experiment, run spec, profile, shard or set of parts); `Run` is a failure of the
/// simulation itself.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// An experiment file that does not parse or validate, or whose runs cannot be done.
    #[error("experiment {experiment}: {message}")]
    Experiment {
        /// The experiment's name or file.
        experiment: String,
        /// What is wrong, in one line.
        message: String,
    },
    /// A name that is neither a built-in experiment nor a path.
    #[error("unknown experiment '{name}'; valid experiments: {valid} (or a path to a .toml file)")]
    UnknownExperiment {
        /// The name given.
        name: String,
        /// The built-in experiments, comma-separated.
        valid: String,
    },
    /// A file that cannot be read.
    #[error("cannot read {what} {path}: {message}")]
    Read {
        /// What the file should hold ("experiment", "machine profile").
        what: &'static str,
        /// The path given.
        path: String,
        /// The operating system's reason.
        message: String,
    },
    /// A bad run specification: workload, scheme, page size, profile or sample.
    #[error("{0}")]
    Spec(String),
    /// The simulation of one run failed.
    #[error("{workload} under {paging}: {source}")]
    Run {
        /// The workload, in canonical form.
        workload: String,
        /// The scheme's name.
        paging: String,
        /// The engine's error.
        source: EngineError,
    },
    /// A bad shard, or parts of a sharded run that cannot be merged (of different plans, one
    /// missing or given twice).
    #[error("{0}")]
    Shard(String),
    /// A report that cannot be rendered (CSV or JSON).
    #[error("{0}")]
    Render(String),
    /// The progress callback stopped the run or the sweep.
    #[error("stopped by the progress callback")]
    Stopped,
}

impl LabError {
    /// True for errors in what the user asked for (the command line's exit status 2), false
    /// for failures of the simulation and for a stop.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            LabError::Experiment { .. }
                | LabError::UnknownExperiment { .. }
                | LabError::Read { .. }
                | LabError::Spec(_)
                | LabError::Shard(_)
        )
    }

    /// The lab's error for the engine's `e` in the run of `config` (of `experiment`, if any).
    fn from_engine(e: EngineError, config: &RunConfig, experiment: Option<&str>) -> LabError {
        match e {
            EngineError::Config(message) => match experiment {
                Some(name) => LabError::Experiment {
                    experiment: name.to_string(),
                    message,
                },
                None => LabError::Spec(message),
            },
            EngineError::Workload(message) if experiment.is_none() => LabError::Spec(message),
            EngineError::Stopped => LabError::Stopped,
            other => LabError::Run {
                workload: config.workload.canonical(),
                paging: config.paging.name().to_string(),
                source: other,
            },
        }
    }
}
