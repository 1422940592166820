//! Experiments as data: the TOML schema of `experiments/*.toml`, the built-in experiments,
//! and the metrics an experiment reports. [`Experiment::plan`](crate::lab::plan) expands one
//! into its runs.

use crate::lab::LabError;
use crate::stats::RunReport;
use crate::workload::{WorkloadConfig, WorkloadSpec};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in experiments (`experiments/*.toml` at the repository root, embedded in the
/// library), by name, in the order `vmlab reproduce --list` shows them.
pub const BUILTIN: [(&str, &str); 7] = [
    ("tpt", include_str!("../../../../experiments/tpt.toml")),
    (
        "pagetable",
        include_str!("../../../../experiments/pagetable.toml"),
    ),
    ("tlb", include_str!("../../../../experiments/tlb.toml")),
    (
        "lmbench",
        include_str!("../../../../experiments/lmbench.toml"),
    ),
    (
        "hugepages",
        include_str!("../../../../experiments/hugepages.toml"),
    ),
    ("remap", include_str!("../../../../experiments/remap.toml")),
    ("apps", include_str!("../../../../experiments/apps.toml")),
];

/// One experiment file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Its name (the file's stem for the built-in ones).
    pub name: String,
    /// The figure's and the table's title.
    pub title: String,
    /// One line for `vmlab reproduce --list`.
    pub summary: String,
    /// How long the full and the quick variant take (measured on a 2-core VM).
    pub duration: String,
    /// Machine profile: a built-in name or a path to a .toml file.
    #[serde(default = "default_machine")]
    pub machine: String,
    /// Paging schemes, in the order of the table's columns and the plot's legend.
    pub schemes: Vec<String>,
    /// Guest page sizes (4k, 2m) and host backing page sizes (4k, 2m, 1g) to cross.
    #[serde(default = "default_pages")]
    pub guest_pages: Vec<String>,
    /// Host backing page sizes to cross (see `guest_pages`); native runs, with no host, use 4k.
    #[serde(default = "default_pages")]
    pub host_pages: Vec<String>,
    /// The seed of every run.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Machine-profile keys every run overrides, `SECTION.KEY` to a value as the profile
    /// file writes it (`overrides = { "latency.dram_ns" = 60 }`; `vmlab reproduce --set`
    /// adds to them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, toml::Value>,
    /// Settings to sweep, each over a list of values, crossed with each other and with
    /// workloads, sizes, page sizes and schemes: a machine-profile key (`"latency.dram_ns" =
    /// [60, 90, 120]`), `seed`, `fragmentation` or `pretouch`. Each becomes a column of the
    /// CSV and part of each row's label.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, Vec<toml::Value>>,
    /// The workloads, in the order of the table's rows.
    pub workloads: Vec<WorkloadEntry>,
    /// The sample of the full variant.
    pub sample: Sample,
    /// The `--quick` variant: a shorter sample and workload parameters to override.
    pub quick: Quick,
    /// The tables and the figure.
    pub report: Report,
    /// The recordings the workloads replay, for an experiment of `trace:file={traces}/...`
    /// specs (none: the experiment replays none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traces: Option<Traces>,
}

/// Where an experiment's recordings come from: `{traces}` in a workload spec is replaced by
/// a directory (`vmlab reproduce --traces DIR`, default `default`), and a recording missing
/// from it is an error that says how to make it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Traces {
    /// The directory used without `--traces`, relative to the working directory.
    pub default: String,
    /// The command that records them into a directory (given as its argument).
    pub record: String,
    /// How long that takes (measured on a 2-core VM).
    pub duration: String,
}

/// The placeholder of an experiment's traces directory in its workload specs.
pub const TRACES_PLACEHOLDER: &str = "{traces}";

/// A workload of an experiment, possibly over several sizes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadEntry {
    /// A workload spec; `{size}` is replaced by each of `sizes`.
    pub spec: String,
    /// The row label (default: the workload's name).
    pub label: Option<String>,
    /// The sizes substituted for `{size}` (none: the spec has no `{size}`).
    #[serde(default)]
    pub sizes: Vec<String>,
}

/// The sample each run of an experiment simulates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// Measured accesses to simulate (0: all), as `vmlab run --accesses`.
    pub accesses: u64,
    /// The most warm-up accesses, as `vmlab run --warmup`.
    pub warmup: u64,
    /// Relative tolerance of the steady-state test, as `vmlab run --tolerance`.
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
}

/// The `--quick` variant of an experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    /// Measured accesses to simulate (0: all).
    pub accesses: u64,
    /// The most warm-up accesses.
    pub warmup: u64,
    /// Relative tolerance of the steady-state test: looser than the full variant's.
    #[serde(default = "default_quick_tolerance")]
    pub tolerance: f64,
    /// Workload parameters to set in every spec whose workload has them (e.g. forks = "10").
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    /// Guest page sizes of the quick variant (default: the full variant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_pages: Option<Vec<String>>,
    /// Host page sizes of the quick variant (default: the full variant's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_pages: Option<Vec<String>>,
}

/// What an experiment reports: its tables and its figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The pivot tables printed (rows = workload/size/pages, columns = schemes), one per
    /// metric. An experiment of one workload prints `vmlab run`'s table instead.
    #[serde(default)]
    pub tables: Vec<Metric>,
    /// The figure.
    pub plot: PlotSpec,
}

/// An experiment's figure.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// Bars or lines.
    pub kind: PlotKind,
    /// The value on the y axis.
    pub metric: Metric,
    /// A logarithmic y axis.
    #[serde(default)]
    pub y_log: bool,
    /// One panel per workload (for workloads on different scales).
    #[serde(default)]
    pub panel_per_workload: bool,
    /// The x axis's label; by default it names what varies (operation, page sizes, size).
    pub x_label: Option<String>,
}

/// How an experiment's figure draws its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlotKind {
    /// Grouped bars: a group per table row, a bar per scheme.
    Bars,
    /// A line per scheme over the workload size (log-scale x).
    Lines,
}

/// A number reported per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Modeled run time of the whole workload.
    Seconds,
    /// Time over native's in the same group (same workload, size and page sizes).
    Slowdown,
    /// Nanoseconds per measured access.
    NsPerAccess,
    /// Cycles per measured access.
    CyclesPerAccess,
    /// Microseconds per fork.
    UsPerFork,
    /// Microseconds per iteration of an lmbench loop.
    UsPerIter,
    /// Page-table entries read per page walk.
    WalkRefsPerWalk,
    /// TLB misses (no TLB could translate) per 1000 measured accesses.
    TlbMissesPerKiloAccess,
    /// Page-table entries read by walks, both dimensions, per 1000 measured accesses.
    WalkRefsPerKiloAccess,
    /// VM exits of the whole run, hypercalls included.
    VmExits,
    /// Nested paging's time in the same group over the run's time (its column for `tpt`:
    /// TPT's speedup over nested paging).
    SpeedupOverNested,
    /// Shadow paging's time in the same group over the run's time.
    SpeedupOverShadow,
}

impl Metric {
    /// A column or axis label, with its unit.
    pub fn label(self) -> &'static str {
        match self {
            Metric::Seconds => "time (s)",
            Metric::Slowdown => "slowdown over native (x)",
            Metric::NsPerAccess => "time per access (ns)",
            Metric::CyclesPerAccess => "time per access (cycles)",
            Metric::UsPerFork => "time per fork (us)",
            Metric::UsPerIter => "time per iteration (us)",
            Metric::WalkRefsPerWalk => "references per walk (entries read)",
            Metric::TlbMissesPerKiloAccess => "TLB misses per 1000 references",
            Metric::WalkRefsPerKiloAccess => "walk references per 1000 references",
            Metric::VmExits => "VM exits",
            Metric::SpeedupOverNested => "speedup over nested (x)",
            Metric::SpeedupOverShadow => "speedup over shadow (x)",
        }
    }

    /// The half-width of the value's 95% confidence interval over the run's windows, for
    /// the metrics that have one.
    pub fn ci(self, r: &RunReport) -> Option<f64> {
        match self {
            Metric::Seconds => r.sample.seconds_ci,
            Metric::NsPerAccess => r.sample.ns_per_access_ci,
            Metric::CyclesPerAccess => r.sample.cycles_per_access_ci,
            _ => None,
        }
    }

    /// A value and its interval formatted for a table cell (the value alone without one).
    pub fn format_ci(self, v: f64, ci: Option<f64>) -> String {
        match ci {
            Some(ci) => crate::stats::format_ci(v, ci, 2),
            None => self.format(v),
        }
    }

    /// The value for one run (`native`: native's time in the same group). The speedups need
    /// another scheme's run of the group: [`report::value`](crate::lab::report::value) has
    /// them; here they are `None`.
    pub fn value(self, r: &RunReport, native_seconds: Option<f64>) -> Option<f64> {
        let per_kilo = |n: u64| {
            (r.accesses_simulated > 0).then(|| n as f64 * 1000.0 / r.accesses_simulated as f64)
        };
        match self {
            Metric::Seconds => Some(r.seconds),
            Metric::Slowdown => native_seconds.filter(|n| *n > 0.0).map(|n| r.seconds / n),
            Metric::NsPerAccess => (r.accesses_simulated > 0).then_some(r.ns_per_access),
            Metric::CyclesPerAccess => (r.accesses_simulated > 0).then_some(r.cycles_per_access),
            Metric::UsPerFork => r.us_per_fork,
            Metric::UsPerIter => lmbench_iters(&r.workload).map(|n| r.seconds * 1e6 / n as f64),
            Metric::WalkRefsPerWalk => (r.walks > 0).then_some(r.walk_refs_per_walk),
            Metric::TlbMissesPerKiloAccess => per_kilo(r.tlb_misses),
            Metric::WalkRefsPerKiloAccess => per_kilo(r.walk_refs),
            Metric::VmExits => Some(r.vm_exits as f64),
            Metric::SpeedupOverNested | Metric::SpeedupOverShadow => None,
        }
    }

    /// A value formatted for a table cell.
    pub fn format(self, v: f64) -> String {
        match self {
            Metric::Seconds => format!("{v:.3}"),
            Metric::Slowdown | Metric::SpeedupOverNested | Metric::SpeedupOverShadow => {
                format!("{v:.2}")
            }
            Metric::CyclesPerAccess
            | Metric::NsPerAccess
            | Metric::WalkRefsPerWalk
            | Metric::TlbMissesPerKiloAccess
            | Metric::WalkRefsPerKiloAccess => {
                format!("{v:.2}")
            }
            Metric::VmExits => format!("{v:.0}"),
            Metric::UsPerFork | Metric::UsPerIter => format!("{v:.1}"),
        }
    }
}

/// Iterations of an lmbench run's measured loop, from its canonical workload string.
fn lmbench_iters(workload: &str) -> Option<u64> {
    match WorkloadSpec::parse(workload).ok()?.config() {
        WorkloadConfig::Lmbench(c) => Some(c.iters),
        _ => None,
    }
}

fn default_tolerance() -> f64 {
    crate::engine::sampling::DEFAULT_TOLERANCE
}

fn default_quick_tolerance() -> f64 {
    crate::engine::sampling::QUICK_TOLERANCE
}

fn default_machine() -> String {
    crate::cost::DEFAULT_PROFILE.to_string()
}

fn default_pages() -> Vec<String> {
    vec!["4k".to_string()]
}

fn default_seed() -> u64 {
    1
}

impl Experiment {
    /// Parses an experiment file (`origin` names it in errors).
    pub fn from_toml(text: &str, origin: &str) -> Result<Experiment, LabError> {
        toml::from_str(text).map_err(|e| LabError::Experiment {
            experiment: origin.to_string(),
            message: one_line(&e.to_string()),
        })
    }

    /// A built-in experiment by name.
    pub fn builtin(name: &str) -> Result<Experiment, LabError> {
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Experiment::from_toml(text, n),
            None => Err(LabError::UnknownExperiment {
                name: name.to_string(),
                valid: BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// A built-in experiment by name, or an experiment file by path (a name ending in .toml
    /// or containing a slash).
    pub fn load(name: &str) -> Result<Experiment, LabError> {
        if name.ends_with(".toml") || name.contains('/') {
            let text = std::fs::read_to_string(name).map_err(|e| LabError::Read {
                what: "experiment",
                path: name.to_string(),
                message: e.to_string(),
            })?;
            return Experiment::from_toml(&text, name);
        }
        Experiment::builtin(name)
    }

    /// Every built-in experiment, in `BUILTIN`'s order.
    pub fn builtins() -> Result<Vec<Experiment>, LabError> {
        BUILTIN
            .iter()
            .map(|(name, text)| Experiment::from_toml(text, name))
            .collect()
    }
}

impl Experiment {
    /// The experiment with `overrides` (`SECTION.KEY` to a value as the profile file writes
    /// it: `--set`'s) on top of its own profile overrides, for every run.
    pub fn with_overrides(
        mut self,
        overrides: impl IntoIterator<Item = (String, String)>,
    ) -> Experiment {
        for (key, value) in overrides {
            self.overrides.insert(key, toml::Value::String(value));
        }
        self
    }

    /// The experiment with `{traces}` in its workload specs replaced by `dir` (by default its
    /// `[traces]` default), every recording checked to exist: a missing one is an error that
    /// names it and the command that records it. An experiment without `[traces]` is
    /// returned as it is, unless a directory is given (an error).
    pub fn with_traces(&self, dir: Option<&std::path::Path>) -> Result<Experiment, LabError> {
        let err = |message: String| LabError::Experiment {
            experiment: self.name.clone(),
            message,
        };
        let Some(traces) = &self.traces else {
            return match dir {
                Some(_) => Err(err(
                    "--traces is for experiments that replay recordings (apps)".to_string(),
                )),
                None => Ok(self.clone()),
            };
        };
        let dir = dir.map_or_else(|| traces.default.clone(), |d| d.display().to_string());
        let dir = dir.trim_end_matches('/');
        let dir = if dir.is_empty() { "/" } else { dir };
        let mut out = self.clone();
        let mut missing = Vec::new();
        for w in &mut out.workloads {
            if !w.spec.contains(TRACES_PLACEHOLDER) {
                continue;
            }
            w.spec = w.spec.replace(TRACES_PLACEHOLDER, dir);
            let params = w.spec.split_once(':').map_or("", |(_, p)| p);
            for file in params.split(',').filter_map(|p| p.strip_prefix("file=")) {
                if !std::path::Path::new(file).is_file() {
                    missing.push(file.to_string());
                }
            }
        }
        match missing.as_slice() {
            [] => Ok(out),
            [first, rest @ ..] => Err(err(format!(
                "no recording {first}{}: record them with `{} {dir}` ({})",
                match rest.len() {
                    0 => String::new(),
                    n => format!(" (nor {n} more)"),
                },
                traces.record,
                traces.duration
            ))),
        }
    }
}

/// A TOML value as an override or sweep value is written on a command line: a string as it
/// is (no quotes), anything else as TOML writes it.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Folds a multi-line message (toml's, with a caret under the culprit) into one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = Experiment::load("nope").expect_err("unknown");
        assert!(
            e.to_string()
                .contains("tpt, pagetable, tlb, lmbench, hugepages"),
            "{e}"
        );
    }

    #[test]
    fn experiments_round_trip_through_toml() {
        for e in Experiment::builtins().expect("built-in experiments parse") {
            let text = toml::to_string(&e).expect("serializable");
            let back = Experiment::from_toml(&text, &e.name).expect("reads back");
            assert_eq!(back, e);
        }
    }
}
