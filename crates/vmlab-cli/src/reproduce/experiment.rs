//! Experiments as data: the TOML schema of `experiments/*.toml`, and its expansion into the
//! runs to do (one per workload, size, guest/host page size and scheme).

use crate::args::{parse_page_size, parse_schemes, parse_workload};
use crate::UsageError;
use serde::Deserialize;
use std::collections::BTreeMap;
use vmlab_core::addr::PageSize;
use vmlab_core::scheme::Paging;
use vmlab_core::stats::RunReport;
use vmlab_core::workload::{catalog, parse_size, WorkloadConfig, WorkloadSpec};

/// The experiments built into the binary (`experiments/*.toml` at the repository root), in
/// the order `--list` shows them.
pub const BUILTIN: [(&str, &str); 6] = [
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
];

/// One experiment file.
#[derive(Debug, Deserialize)]
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
    #[serde(default = "default_pages")]
    pub host_pages: Vec<String>,
    #[serde(default = "default_seed")]
    pub seed: u64,
    pub workloads: Vec<WorkloadEntry>,
    /// The sample of the full variant.
    pub sample: Sample,
    /// The `--quick` variant: a shorter sample and workload parameters to override.
    pub quick: Quick,
    pub report: Report,
}

/// A workload of an experiment, possibly over several sizes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadEntry {
    /// A workload spec; `{size}` is replaced by each of `sizes`.
    pub spec: String,
    /// The row label (default: the workload's name).
    pub label: Option<String>,
    #[serde(default)]
    pub sizes: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sample {
    /// Measured accesses to simulate (0: all), as `vmlab run --accesses`.
    pub accesses: u64,
    /// Warm-up accesses, as `vmlab run --warmup`.
    pub warmup: u64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    pub accesses: u64,
    pub warmup: u64,
    /// Workload parameters to set in every spec whose workload has them (e.g. forks = "10").
    #[serde(default)]
    pub set: BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    /// The pivot tables printed (rows = workload/size/pages, columns = schemes), one per
    /// metric. An experiment of one workload prints `vmlab run`'s table instead.
    #[serde(default)]
    pub tables: Vec<Metric>,
    pub plot: PlotSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    pub kind: PlotKind,
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlotKind {
    /// Grouped bars: a group per table row, a bar per scheme.
    Bars,
    /// A line per scheme over the workload size (log-scale x).
    Lines,
}

/// A number reported per run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Seconds,
    /// Time over native's in the same group (same workload, size and page sizes).
    Slowdown,
    NsPerAccess,
    CyclesPerAccess,
    UsPerFork,
    /// Microseconds per iteration of an lmbench loop.
    UsPerIter,
    WalkRefsPerWalk,
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
        }
    }

    /// The value for one run (`native`: native's time in the same group).
    pub fn value(self, r: &RunReport, native_seconds: Option<f64>) -> Option<f64> {
        match self {
            Metric::Seconds => Some(r.seconds),
            Metric::Slowdown => native_seconds.filter(|n| *n > 0.0).map(|n| r.seconds / n),
            Metric::NsPerAccess => (r.accesses_simulated > 0).then_some(r.ns_per_access),
            Metric::CyclesPerAccess => (r.accesses_simulated > 0).then_some(r.cycles_per_access),
            Metric::UsPerFork => r.us_per_fork,
            Metric::UsPerIter => lmbench_iters(&r.workload).map(|n| r.seconds * 1e6 / n as f64),
            Metric::WalkRefsPerWalk => (r.walks > 0).then_some(r.walk_refs_per_walk),
        }
    }

    /// A value formatted for a table cell.
    pub fn format(self, v: f64) -> String {
        match self {
            Metric::Seconds => format!("{v:.3}"),
            Metric::Slowdown => format!("{v:.2}"),
            Metric::CyclesPerAccess | Metric::NsPerAccess | Metric::WalkRefsPerWalk => {
                format!("{v:.2}")
            }
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

fn default_machine() -> String {
    vmlab_core::cost::DEFAULT_PROFILE.to_string()
}

fn default_pages() -> Vec<String> {
    vec!["4k".to_string()]
}

fn default_seed() -> u64 {
    1
}

/// Where a run sits in the experiment: the row of the tables (and group of the plot).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupKey {
    /// Index of the workload entry, then its label.
    pub entry: usize,
    pub workload: String,
    /// The size substituted for `{size}`, as written, and in bytes.
    pub size: Option<(u64, String)>,
    pub guest_pages: PageSize,
    pub host_pages: PageSize,
}

/// One run to do, or a combination the simulator does not support.
#[derive(Clone, Debug)]
pub struct Job {
    pub group: GroupKey,
    pub spec: WorkloadSpec,
    pub paging: Paging,
    /// Why the combination is not run (guest pages larger than host pages under pv/tpt).
    pub skip: Option<String>,
}

/// The validated experiment, expanded.
pub struct Plan {
    pub schemes: Vec<Paging>,
    pub jobs: Vec<Job>,
    pub accesses: u64,
    pub warmup: u64,
    /// Which dimensions vary (and so name a row).
    pub varies: Varies,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Varies {
    pub workload: bool,
    pub size: bool,
    pub pages: bool,
}

impl Varies {
    /// The row label of a group, from the dimensions that vary (`with_workload`: include the
    /// workload even when it varies; a plot with one panel per workload leaves it out).
    pub fn label(&self, g: &GroupKey, with_workload: bool) -> String {
        let mut parts = Vec::new();
        if self.workload && with_workload {
            parts.push(g.workload.clone());
        }
        if let Some((_, text)) = &g.size {
            if self.size {
                parts.push(text.clone());
            }
        }
        if self.pages {
            parts.push(format!(
                "guest {} / host {}",
                g.guest_pages.name(),
                g.host_pages.name()
            ));
        }
        if parts.is_empty() {
            g.workload.clone()
        } else {
            parts.join(" ")
        }
    }
}

impl Experiment {
    /// Parses an experiment file (`origin` names it in errors).
    pub fn from_toml(text: &str, origin: &str) -> Result<Experiment, UsageError> {
        toml::from_str(text)
            .map_err(|e| UsageError(format!("experiment {origin}: {}", one_line(&e.to_string()))))
    }

    /// A built-in experiment by name, or an experiment file by path (a name ending in .toml
    /// or containing a slash).
    pub fn load(name: &str) -> Result<Experiment, UsageError> {
        if name.ends_with(".toml") || name.contains('/') {
            let text = std::fs::read_to_string(name)
                .map_err(|e| UsageError(format!("cannot read experiment {name}: {e}")))?;
            return Experiment::from_toml(&text, name);
        }
        match BUILTIN.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Experiment::from_toml(text, n),
            None => {
                Err(UsageError(format!(
                "unknown experiment '{name}'; valid experiments: {} (or a path to a .toml file)",
                BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            )))
            }
        }
    }

    /// Every run of the experiment (`quick`: the quick variant), validated.
    pub fn plan(&self, quick: bool) -> Result<Plan, UsageError> {
        let err = |msg: String| UsageError(format!("experiment {}: {msg}", self.name));
        let schemes = parse_schemes(&self.schemes).map_err(|e| err(e.0))?;
        let pages = |flag: &str,
                     names: &[String],
                     allowed: &[PageSize]|
         -> Result<Vec<PageSize>, UsageError> {
            if names.is_empty() {
                return Err(err(format!("{flag} needs at least one page size")));
            }
            names
                .iter()
                .map(|n| parse_page_size(flag, n, allowed).map_err(|e| err(e.0)))
                .collect()
        };
        let guest = pages(
            "guest_pages",
            &self.guest_pages,
            &[PageSize::Size4K, PageSize::Size2M],
        )?;
        let host = pages("host_pages", &self.host_pages, &PageSize::ALL)?;
        if self.workloads.is_empty() {
            return Err(err("no [[workloads]]".into()));
        }
        let (accesses, warmup) = if quick {
            (self.quick.accesses, self.quick.warmup)
        } else {
            (self.sample.accesses, self.sample.warmup)
        };
        let mut jobs = Vec::new();
        let mut labels = Vec::new();
        for (entry, w) in self.workloads.iter().enumerate() {
            let sizes: Vec<Option<&String>> = if w.sizes.is_empty() {
                vec![None]
            } else {
                w.sizes.iter().map(Some).collect()
            };
            if w.sizes.is_empty() == w.spec.contains("{size}") {
                return Err(err(format!(
                    "workload '{}': `sizes` and a {{size}} in the spec go together",
                    w.spec
                )));
            }
            for size in sizes {
                let mut text = match size {
                    Some(s) => w.spec.replace("{size}", s),
                    None => w.spec.clone(),
                };
                if quick {
                    text = set_params(&text, &self.quick.set);
                }
                let spec = parse_workload(&text).map_err(|e| err(e.0))?;
                let size = match size {
                    Some(s) => Some((
                        parse_size(s).map_err(|e| err(format!("size '{s}': {e}")))?,
                        s.clone(),
                    )),
                    None => None,
                };
                let label = w.label.clone().unwrap_or_else(|| spec.name().to_string());
                labels.push(label.clone());
                for &g in &guest {
                    for &h in &host {
                        let group = GroupKey {
                            entry,
                            workload: label.clone(),
                            size: size.clone(),
                            guest_pages: g,
                            host_pages: h,
                        };
                        for &paging in &schemes {
                            jobs.push(Job {
                                group: group.clone(),
                                spec: spec.clone(),
                                paging,
                                skip: paging.unsupported_pages(g, h),
                            });
                        }
                    }
                }
            }
        }
        labels.dedup();
        let varies = Varies {
            workload: labels.len() > 1,
            size: self.workloads.iter().any(|w| w.sizes.len() > 1),
            pages: guest.len() * host.len() > 1,
        };
        Ok(Plan {
            schemes,
            jobs,
            accesses,
            warmup,
            varies,
        })
    }
}

/// Sets `key=value` for each of `set` whose key the spec's workload takes (replacing a value
/// already given). Specs are `NAME[:key=value,...]`.
fn set_params(spec: &str, set: &BTreeMap<String, String>) -> String {
    let (name, params) = spec.split_once(':').unwrap_or((spec, ""));
    let Some(info) = catalog().into_iter().find(|w| w.name == name) else {
        return spec.to_string();
    };
    let mut pairs: Vec<(String, String)> = params
        .split(',')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect();
    for (key, value) in set {
        if !info.params.iter().any(|p| p.key == key) {
            continue;
        }
        match pairs.iter_mut().find(|(k, _)| k == key) {
            Some(pair) => pair.1 = value.clone(),
            None => pairs.push((key.clone(), value.clone())),
        }
    }
    if pairs.is_empty() {
        return name.to_string();
    }
    let params: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{name}:{}", params.join(","))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_experiment_plans() {
        for (name, text) in BUILTIN {
            let e = Experiment::from_toml(text, name).unwrap_or_else(|e| panic!("{name}: {}", e.0));
            assert_eq!(e.name, name);
            for quick in [false, true] {
                let plan = e.plan(quick).unwrap_or_else(|e| panic!("{name}: {}", e.0));
                assert!(!plan.jobs.is_empty());
                assert!(plan.jobs.iter().any(|j| j.skip.is_none()));
            }
        }
    }

    #[test]
    fn quick_sets_only_known_parameters() {
        let set: BTreeMap<String, String> = [("forks".to_string(), "10".to_string())].into();
        assert_eq!(
            set_params("fork-bench:rss=64M,forks=100", &set),
            "fork-bench:rss=64M,forks=10"
        );
        assert_eq!(
            set_params("fork-bench:rss=64M", &set),
            "fork-bench:rss=64M,forks=10"
        );
        assert_eq!(set_params("tlb-bench:size=64M", &set), "tlb-bench:size=64M");
        assert_eq!(set_params("fork-bench", &set), "fork-bench:forks=10");
    }

    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = Experiment::load("nope").expect_err("unknown");
        assert!(
            e.0.contains("tpt, pagetable, tlb, lmbench, hugepages"),
            "{}",
            e.0
        );
    }

    #[test]
    fn pv_and_tpt_skip_guest_pages_larger_than_host_pages() {
        assert!(Paging::Tpt
            .unsupported_pages(PageSize::Size2M, PageSize::Size4K)
            .is_some());
        assert!(Paging::Pv
            .unsupported_pages(PageSize::Size2M, PageSize::Size4K)
            .is_some());
        assert!(Paging::Tpt
            .unsupported_pages(PageSize::Size2M, PageSize::Size2M)
            .is_none());
        assert!(Paging::Nested
            .unsupported_pages(PageSize::Size2M, PageSize::Size4K)
            .is_none());
    }
}
