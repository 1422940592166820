//! The registry of experiment kinds: what `vmlab reproduce NAME` (or any front end) can run
//! by name, and how. One list, so a front end asks the lab what a name is rather than
//! matching names itself.
//!
//! - [`ExperimentKind::Simulated`]: an experiment file (`experiments/*.toml`, built in, or a
//!   path): x86 runs the engine simulates ([`crate::lab::run_experiment`]).
//! - [`ExperimentKind::Labt`]: the recorded e500 Linux guest replayed through every e500
//!   hypervisor model ([`crate::lab::e500::run`]).
//! - [`ExperimentKind::Guest`]: the user-level guest kernel's benchmarks: real programs,
//!   measured, not simulated; they live in the `vmlab-guest` crate, which the front end
//!   calls (this crate knows only the name).

use crate::lab::experiment::{Experiment, BUILTIN};
use crate::lab::LabError;
use serde::Serialize;

/// What a name given to `vmlab reproduce` is.
#[derive(Clone, Debug)]
pub enum ExperimentKind {
    /// An experiment file, parsed (not yet planned).
    Simulated(Box<Experiment>),
    /// `labt`: the recorded e500 guest under each e500 hypervisor model.
    Labt,
    /// `guest`: the user-level guest kernel's benchmarks (crate `vmlab-guest`).
    Guest,
}

/// The kind of an experiment, without its contents.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Simulated x86 runs of an experiment file.
    Simulated,
    /// The e500 replay.
    Labt,
    /// The guest kernel's measurements.
    Guest,
}

/// One experiment of the catalog: `vmlab reproduce --list`'s line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ExperimentInfo {
    /// The name `vmlab reproduce` takes.
    pub name: String,
    /// What it runs, in one line.
    pub summary: String,
    /// How long it takes.
    pub duration: String,
    /// How it runs.
    pub kind: Kind,
}

/// The experiments that are not experiment files, with their catalog lines.
const OTHERS: [(&str, Kind, &str, &str); 2] = [
    (
        "guest",
        Kind::Guest,
        "the user-level guest kernel: real programs' system calls under each trap mechanism, measured",
        "minutes; --quick less",
    ),
    (
        "labt",
        Kind::Labt,
        "the recorded e500 Linux guest under bare, KVM trap-and-emulate, paravirtual patching and LABT",
        "seconds",
    ),
];

impl ExperimentKind {
    /// What `name` is: `labt`, `guest`, a built-in experiment, or an experiment file (a name
    /// ending in .toml or containing a slash). An unknown name is an error listing them all.
    pub fn find(name: &str) -> Result<ExperimentKind, LabError> {
        match OTHERS.iter().find(|(n, ..)| *n == name) {
            Some((_, Kind::Labt, ..)) => Ok(ExperimentKind::Labt),
            Some((_, Kind::Guest, ..)) => Ok(ExperimentKind::Guest),
            _ => match Experiment::load(name) {
                Ok(e) => Ok(ExperimentKind::Simulated(Box::new(e))),
                Err(LabError::UnknownExperiment { name, .. }) => Err(LabError::UnknownExperiment {
                    name,
                    valid: names().join(", "),
                }),
                Err(e) => Err(e),
            },
        }
    }

    /// Its kind.
    pub fn kind(&self) -> Kind {
        match self {
            ExperimentKind::Simulated(_) => Kind::Simulated,
            ExperimentKind::Labt => Kind::Labt,
            ExperimentKind::Guest => Kind::Guest,
        }
    }
}

/// Every built-in name, in the catalog's order.
pub fn names() -> Vec<&'static str> {
    BUILTIN
        .iter()
        .map(|(n, _)| *n)
        .chain(OTHERS.iter().map(|(n, ..)| *n))
        .collect()
}

/// The catalog: every built-in experiment, the experiment files first.
pub fn catalog() -> Result<Vec<ExperimentInfo>, LabError> {
    let mut out: Vec<ExperimentInfo> = Experiment::builtins()?
        .into_iter()
        .map(|e| ExperimentInfo {
            name: e.name,
            summary: e.summary,
            duration: e.duration,
            kind: Kind::Simulated,
        })
        .collect();
    out.extend(
        OTHERS
            .iter()
            .map(|&(name, kind, summary, duration)| ExperimentInfo {
                name: name.to_string(),
                summary: summary.to_string(),
                duration: duration.to_string(),
                kind,
            }),
    );
    Ok(out)
}

/// The catalog line of `name`: a built-in one, or an experiment file's.
pub fn info(name: &str) -> Result<ExperimentInfo, LabError> {
    if let Some(i) = catalog()?.into_iter().find(|i| i.name == name) {
        return Ok(i);
    }
    match ExperimentKind::find(name)? {
        ExperimentKind::Simulated(e) => Ok(ExperimentInfo {
            name: e.name,
            summary: e.summary,
            duration: e.duration,
            kind: Kind::Simulated,
        }),
        // Both are in the catalog.
        other => Err(LabError::Spec(format!(
            "{name}: no catalog line for a {:?} experiment",
            other.kind()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_resolves_to_its_kind() {
        for info in catalog().expect("catalog") {
            let kind = ExperimentKind::find(&info.name).expect("found");
            assert_eq!(kind.kind(), info.kind, "{}", info.name);
        }
        let e = ExperimentKind::find("nope").expect_err("unknown");
        assert!(e.to_string().contains("apps, guest, labt"), "{e}");
    }
}
