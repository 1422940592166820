//! What a workload module implements to be registered: [`WorkloadKind`], on the type of its
//! validated parameters.

use super::spec::{ParamInfo, Values, WorkloadError};
use super::Workload;
use std::fmt::Debug;
use std::hash::Hash;

/// The measured accesses `vmlab run` simulates by default: a sample of 10M, extrapolated.
pub const DEFAULT_SAMPLE: u64 = 10_000_000;

/// One workload, described by the type of its validated parameters (its config): its name
/// and catalog entry, how its parameters parse from a spec and are checked, what a run of it
/// maps and measures, and the generator it builds.
///
/// The spec grammar (`NAME[:key=value,...]`), `tpt_task`, duplicate and unknown keys are the
/// spec parser's; a workload sees only its own keys, through [`Values`]. Everything here but
/// [`Self::parse`], [`Self::validate`] and [`Self::build`] is infallible and a function of
/// the config alone, so a workload whose parameters name a file reads what it needs of the
/// file when it parses (a parse error may then be [`WorkloadError::Unreadable`]) and keeps it
/// in the config.
///
/// Registering it is one line in `workload/registry.rs`.
pub trait WorkloadKind: Clone + Debug + PartialEq + Eq + Hash {
    /// The generator a config builds. The engine runs its measured loop monomorphized for
    /// this type.
    type Generator: Workload + Debug;

    /// The name in a spec (`sysbench-mem`, `gups`, ...).
    const NAME: &'static str;
    /// One line on what the workload models, for `vmlab list`.
    const SUMMARY: &'static str;
    /// Its own parameters (not `tpt_task`, which every workload takes), in the order its
    /// canonical form lists them.
    const PARAMS: &'static [ParamInfo];

    /// Measured accesses `vmlab run` simulates by default (`--accesses`): a sample of 10M,
    /// extrapolated; 0 simulates every access (a recording, whose phases a sample taken after
    /// a per-scheme warm-up would not compare).
    const DEFAULT_ACCESSES: u64 = DEFAULT_SAMPLE;

    /// A short valid spec, for error messages: by default the first parameter at its default.
    fn example() -> String {
        match Self::PARAMS.first() {
            Some(first) => format!("{}:{}={}", Self::NAME, first.key, first.default),
            None => Self::NAME.to_owned(),
        }
    }

    /// The config from a spec's values, defaults filled in. [`Self::validate`] runs after it.
    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError>;

    /// Checks the ranges the generator relies on (sizes, non-zero counts, no overflow):
    /// parsed configs and configs built in code alike.
    fn validate(&self) -> Result<(), WorkloadError>;

    /// Its parameters as `key=value` items joined by commas, in [`Self::PARAMS`] order, sizes
    /// in their shortest exact unit: parsing them gives back this config.
    fn canonical_params(&self) -> String;

    /// Bytes the workload maps and touches (its data; a forked child's copy-on-write share
    /// of its parent's and an exec'd program's small image are not counted).
    fn footprint_bytes(&self) -> u64;

    /// Accesses of the full measured phase: what the built generator reports too.
    fn measured_accesses_total(&self) -> u64;

    /// The program the workload's first process runs (what `tpt_task` names by default).
    fn program(&self) -> &'static str;

    /// Every program the workload runs: its own, and what its processes exec.
    fn programs(&self) -> Vec<&'static str> {
        vec![self.program()]
    }

    /// The files the workload reads, for the report's provenance (none for a generator).
    fn inputs(&self) -> Vec<crate::provenance::Input> {
        Vec::new()
    }

    /// The generator for this config (which passed [`Self::validate`]); its stream is a
    /// function of (config, seed).
    fn build(&self, seed: u64) -> Result<Self::Generator, WorkloadError>;
}
