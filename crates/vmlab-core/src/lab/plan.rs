//! An experiment expanded into its runs: one per workload, size, guest and host page size,
//! point of the sweep and scheme, in the experiment's order, with the combinations the
//! simulator does not support kept as skipped jobs (and the reason).

use crate::addr::PageSize;
use crate::cost::Profile;
use crate::lab::experiment::{value_text, Experiment, TRACES_PLACEHOLDER};
use crate::lab::runner::dedup_key;
use crate::lab::spec::{load_profile, parse_page_size, parse_schemes, RunSpec};
use crate::lab::LabError;
use crate::scheme::Paging;
use crate::workload::{catalog, parse_size, WorkloadSpec};
use std::collections::BTreeMap;

/// Where a run sits in the experiment: the row of the tables (and group of the plot).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GroupKey {
    /// Index of the workload entry.
    pub entry: usize,
    /// The entry's label.
    pub workload: String,
    /// The size substituted for `{size}`, as written, and in bytes.
    pub size: Option<(u64, String)>,
    /// Guest page size.
    pub guest_pages: PageSize,
    /// Host backing page size (native runs ignore it).
    pub host_pages: PageSize,
    /// The point of the experiment's sweep: each swept setting and its value here, in the
    /// sweep's order (empty without a sweep).
    pub point: Vec<(String, String)>,
}

/// One run to do, or a combination the simulator does not support.
#[derive(Clone, Debug)]
pub struct Job {
    /// Where the run sits in the tables.
    pub group: GroupKey,
    /// The workload, with the size and (for `--quick`) the quick parameters substituted.
    pub spec: WorkloadSpec,
    /// The scheme.
    pub paging: Paging,
    /// Why the combination is not run (guest pages larger than host pages under pv/tpt).
    pub skip: Option<String>,
}

/// The validated experiment, expanded: every run to do, in the experiment's order.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The experiment's name.
    pub experiment: String,
    /// The machine profile every run uses: a built-in name or a path to a .toml file.
    pub machine: String,
    /// The seed of every run.
    pub seed: u64,
    /// Whether this is the `--quick` variant.
    pub quick: bool,
    /// The schemes, in the order of the table's columns.
    pub schemes: Vec<Paging>,
    /// One job per workload, size, guest and host page size and scheme.
    pub jobs: Vec<Job>,
    /// Measured accesses each run simulates (0: all).
    pub accesses: u64,
    /// The most warm-up accesses of each run (it stops at steady state).
    pub warmup: u64,
    /// Relative tolerance of each run's steady-state test.
    pub tolerance: f64,
    /// Machine-profile overrides of every run (`SECTION.KEY` to a value).
    pub overrides: BTreeMap<String, String>,
    /// The swept settings and their values, in order (see [`Experiment::sweep`]).
    pub sweep: Vec<(String, Vec<String>)>,
    /// Which dimensions vary (and so name a row).
    pub varies: Varies,
}

/// The settings a sweep takes besides machine-profile keys (`SECTION.KEY`).
pub const SWEEP_SETTINGS: [&str; 3] = ["seed", "fragmentation", "pretouch"];

/// Which dimensions of an experiment vary (and so name a row).
#[derive(Clone, Copy, Debug, Default)]
pub struct Varies {
    /// More than one workload label.
    pub workload: bool,
    /// A workload over more than one size.
    pub size: bool,
    /// More than one guest/host page-size combination.
    pub pages: bool,
    /// A sweep of more than one point.
    pub sweep: bool,
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
        if self.sweep {
            parts.extend(g.point.iter().map(|(k, v)| format!("{k}={v}")));
        }
        if parts.is_empty() {
            g.workload.clone()
        } else {
            parts.join(" ")
        }
    }
}

impl Experiment {
    /// Every run of the experiment (`quick`: the quick variant), validated.
    pub fn plan(&self, quick: bool) -> Result<Plan, LabError> {
        let err = |message: String| LabError::Experiment {
            experiment: self.name.clone(),
            message,
        };
        let schemes = parse_schemes(&self.schemes).map_err(|e| err(e.to_string()))?;
        self.check_quick_set().map_err(err)?;
        let pages = |flag: &str,
                     names: &[String],
                     allowed: &[PageSize]|
         -> Result<Vec<PageSize>, LabError> {
            if names.is_empty() {
                return Err(err(format!("{flag} needs at least one page size")));
            }
            names
                .iter()
                .map(|n| parse_page_size(flag, n, allowed).map_err(|e| err(e.to_string())))
                .collect()
        };
        let (guest_pages, host_pages) = match (quick, &self.quick) {
            (true, q) => (
                q.guest_pages.as_ref().unwrap_or(&self.guest_pages),
                q.host_pages.as_ref().unwrap_or(&self.host_pages),
            ),
            (false, _) => (&self.guest_pages, &self.host_pages),
        };
        let guest = pages(
            "guest_pages",
            guest_pages,
            &[PageSize::Size4K, PageSize::Size2M],
        )?;
        let host = pages("host_pages", host_pages, &PageSize::ALL)?;
        if self.workloads.is_empty() {
            return Err(err("no [[workloads]]".into()));
        }
        let (accesses, warmup, tolerance) = if quick {
            (self.quick.accesses, self.quick.warmup, self.quick.tolerance)
        } else {
            (
                self.sample.accesses,
                self.sample.warmup,
                self.sample.tolerance,
            )
        };
        crate::engine::sampling::validate(accesses, warmup, tolerance).map_err(|e| err(e.0))?;
        let sweep = self.sweep_values().map_err(err)?;
        let points = points(&sweep);
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
                if text.contains(TRACES_PLACEHOLDER) {
                    return Err(err(format!(
                        "workload '{text}': {TRACES_PLACEHOLDER} is the directory of the experiment's recordings, given by `vmlab reproduce --traces DIR` (Experiment::with_traces)"
                    )));
                }
                let spec = WorkloadSpec::parse(&text).map_err(|e| err(e.to_string()))?;
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
                        for point in &points {
                            let group = GroupKey {
                                entry,
                                workload: label.clone(),
                                size: size.clone(),
                                guest_pages: g,
                                host_pages: h,
                                point: point.clone(),
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
        }
        labels.dedup();
        let varies = Varies {
            workload: labels.len() > 1,
            size: self.workloads.iter().any(|w| w.sizes.len() > 1),
            pages: guest.len() * host.len() > 1,
            sweep: points.len() > 1,
        };
        Ok(Plan {
            experiment: self.name.clone(),
            machine: self.machine.clone(),
            seed: self.seed,
            quick,
            schemes,
            jobs,
            accesses,
            warmup,
            tolerance,
            overrides: self
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), value_text(v)))
                .collect(),
            sweep,
            varies,
        })
    }

    /// The sweep's settings and values as text, checked: a known setting or a profile key
    /// (checked against the profile by [`Plan::profile`]), at least one value each, and
    /// values of the setting's type.
    fn sweep_values(&self) -> Result<Vec<(String, Vec<String>)>, String> {
        let mut out = Vec::new();
        for (key, values) in &self.sweep {
            if values.is_empty() {
                return Err(format!("sweep: {key} needs at least one value"));
            }
            let bad = |v: &toml::Value, want: &str| format!("sweep: {key} = {v} is not {want}");
            for v in values {
                match (key.as_str(), v) {
                    ("seed", toml::Value::Integer(n)) if *n >= 0 => {}
                    ("seed", v) => return Err(bad(v, "a seed (a whole number at least 0)")),
                    ("fragmentation", toml::Value::Float(_) | toml::Value::Integer(_)) => {
                        let f = value_text(v).parse::<f64>().unwrap_or(-1.0);
                        if !(0.0..=1.0).contains(&f) {
                            return Err(bad(v, "a fraction between 0 and 1"));
                        }
                    }
                    ("fragmentation", v) => return Err(bad(v, "a fraction between 0 and 1")),
                    ("pretouch", toml::Value::Boolean(_)) => {}
                    ("pretouch", v) => return Err(bad(v, "true or false")),
                    (k, _) if !k.contains('.') => {
                        return Err(format!(
                            "sweep: unknown setting '{k}'; sweep {} or a machine-profile key as SECTION.KEY (`vmlab profile show` lists them)",
                            SWEEP_SETTINGS.join(", ")
                        ))
                    }
                    (_, toml::Value::Table(_) | toml::Value::Array(_)) => {
                        return Err(bad(v, "a single value"))
                    }
                    _ => {}
                }
            }
            out.push((key.clone(), values.iter().map(value_text).collect()));
        }
        Ok(out)
    }
}

/// Every point of `sweep` (its settings crossed, the first one slowest), or one empty point
/// without a sweep.
fn points(sweep: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut points: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in sweep {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |v| {
                    let mut p = p.clone();
                    p.push((key.clone(), v.clone()));
                    p
                })
            })
            .collect();
    }
    points
}

impl Experiment {
    /// Every key of `[quick] set` must be a parameter of one of the experiment's workloads:
    /// a misspelt key would otherwise be silently ignored.
    fn check_quick_set(&self) -> Result<(), String> {
        let mut valid: Vec<&str> = Vec::new();
        for w in &self.workloads {
            let name = w.spec.split_once(':').map_or(w.spec.as_str(), |(n, _)| n);
            if let Some(info) = catalog().into_iter().find(|i| i.name == name) {
                valid.extend(info.params.iter().map(|p| p.key));
            }
        }
        valid.sort_unstable();
        valid.dedup();
        match self.quick.set.keys().find(|k| !valid.contains(&k.as_str())) {
            Some(key) => Err(format!(
                "[quick] set: unknown key '{key}'; valid keys (parameters of the experiment's workloads): {}",
                valid.join(", ")
            )),
            None => Ok(()),
        }
    }
}

impl Job {
    /// The host page size the run uses: its group's under a hypervisor; for native, which
    /// has none, `vmlab run`'s default (4k), so that the native runs of every host page size
    /// are one and the same run.
    pub fn host_pages(&self) -> PageSize {
        if self.paging.is_virtualized() {
            self.group.host_pages
        } else {
            PageSize::Size4K
        }
    }
}

impl Plan {
    /// The machine profile of every run, loaded (a built-in one, or the file `machine` names)
    /// with the experiment's overrides applied; every value the sweep gives a profile key is
    /// checked on it too, so a bad one is an error before any run.
    pub fn profile(&self) -> Result<Profile, LabError> {
        let err = |message: String| LabError::Experiment {
            experiment: self.experiment.clone(),
            message,
        };
        let base = load_profile(&self.machine).map_err(|e| err(e.to_string()))?;
        let overrides: Vec<(&String, &String)> = self.overrides.iter().collect();
        let profile = base
            .with_overrides(&overrides)
            .map_err(|e| err(e.to_string()))?;
        for (key, values) in self.sweep.iter().filter(|(k, _)| k.contains('.')) {
            for v in values {
                profile
                    .with_overrides(&[(key, v)])
                    .map_err(|e| err(format!("sweep: {e}")))?;
            }
        }
        Ok(profile)
    }

    /// The jobs to run, in order: those not skipped, once each (a native job stands for the
    /// native jobs of every host page size in its group, which are the same run).
    pub fn distinct_jobs(&self) -> Vec<&Job> {
        let mut todo: Vec<&Job> = Vec::new();
        for job in self.jobs.iter().filter(|j| j.skip.is_none()) {
            if !todo.iter().any(|t| dedup_key(t) == dedup_key(job)) {
                todo.push(job);
            }
        }
        todo
    }

    /// The run `job` stands for, as a serializable spec (the same run the lab runner does).
    /// A native job records `vmlab run`'s default host page size, not its group's: native
    /// has no host pages, and one native run stands for every host page size of a group.
    pub fn run_spec(&self, job: &Job) -> RunSpec {
        let point = |key: &str| {
            job.group
                .point
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let mut overrides = self.overrides.clone();
        for (k, v) in job.group.point.iter().filter(|(k, _)| k.contains('.')) {
            overrides.insert(k.clone(), v.clone());
        }
        RunSpec {
            workload: job.spec.canonical(),
            paging: job.paging.name().to_string(),
            machine: self.machine.clone(),
            guest_pages: job.group.guest_pages.name().to_string(),
            host_pages: job.host_pages().name().to_string(),
            // Checked by `sweep_values`: these parse.
            fragmentation: point("fragmentation").map_or(0.0, |v| v.parse().unwrap_or(0.0)),
            accesses: self.accesses,
            warmup: self.warmup,
            tolerance: self.tolerance,
            fixed_warmup: false,
            seed: point("seed").map_or(self.seed, |v| v.parse().unwrap_or(self.seed)),
            pretouch: point("pretouch") == Some("true"),
            overrides,
        }
    }

    /// The sample method, in words: what every run is asked to do (what each did, the
    /// warm-up it used, is in its report; [`warmup_summary`](crate::lab::report::warmup_summary)
    /// sums it up).
    pub fn sample_text(&self) -> String {
        if self.accesses == 0 {
            return "every operation simulated, from cold".to_string();
        }
        format!(
            "{} measured accesses per run in {} windows, after a warm-up to steady state (tolerance {}%{}, at most {} accesses)",
            self.accesses,
            crate::engine::sampling::WINDOWS,
            self.tolerance * 100.0,
            if self.quick { ", --quick's looser one" } else { "" },
            self.warmup
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::experiment::BUILTIN;

    #[test]
    fn every_builtin_experiment_plans() {
        for (name, text) in BUILTIN {
            let e = Experiment::from_toml(text, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(e.name, name);
            if e.traces.is_some() {
                // Needs its recordings: the apps tests below give it some.
                continue;
            }
            for quick in [false, true] {
                let plan = e.plan(quick).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(!plan.jobs.is_empty());
                assert!(plan.jobs.iter().any(|j| j.skip.is_none()));
            }
        }
    }

    /// A directory with an empty, complete recording for each `{traces}` workload of `e`.
    fn fake_traces(e: &Experiment, tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("vmlab-plan-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        for w in &e.workloads {
            let file = w
                .spec
                .split_once("file={traces}/")
                .expect("a {traces} recording")
                .1;
            let writer = crate::trace::x86::Writer::create(
                &dir.join(file),
                &crate::trace::x86::Header::default(),
            )
            .expect("writable");
            writer
                .finish(true, "exited with status 0".into())
                .expect("written");
        }
        dir
    }

    #[test]
    fn the_apps_experiment_plans_its_recordings_with_accesses_zero() {
        let e = Experiment::builtin("apps").expect("built in");
        let dir = fake_traces(&e, "apps");
        let resolved = e.with_traces(Some(&dir)).expect("recordings present");
        for quick in [false, true] {
            let plan = resolved.plan(quick).expect("plans");
            // A sampled recording refuses --accesses: every run replays the whole recording.
            assert_eq!(plan.accesses, 0);
            let labels: Vec<&str> = plan
                .jobs
                .iter()
                .map(|j| j.group.workload.as_str())
                .collect();
            for app in [
                "redis",
                "memcached",
                "rocksdb",
                "sqlite",
                "gap-bfs",
                "xsbench",
            ] {
                assert!(labels.contains(&app), "{app}");
            }
            for job in &plan.jobs {
                let spec = plan.run_spec(job);
                assert_eq!(spec.accesses, 0);
                assert!(spec.workload.contains(dir.to_str().expect("utf-8")));
            }
            let distinct = plan.distinct_jobs().len();
            // Per application, 4K/4K only when quick: 5 schemes; guest 4K on host 4K and
            // 2M: native once, the four virtualized schemes twice.
            assert_eq!(distinct, if quick { 6 * 5 } else { 6 * 9 }, "quick {quick}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_missing_recording_says_how_to_record_it() {
        let e = Experiment::builtin("apps").expect("built in");
        let msg = e
            .with_traces(Some(std::path::Path::new("/nonexistent")))
            .expect_err("no recordings")
            .to_string();
        assert_eq!(
            msg,
            "experiment apps: no recording /nonexistent/redis.vmtrace (nor 5 more): record them with `apps/record.sh /nonexistent` (about 30 minutes on 2 cores)"
        );
        // Unresolved, the placeholder is an error of its own, not an unreadable file.
        let msg = e.plan(false).expect_err("unresolved").to_string();
        assert!(msg.contains("{traces} is the directory"), "{msg}");
        // Experiments without recordings take no directory.
        let tpt = Experiment::builtin("tpt").expect("built in");
        assert!(tpt.with_traces(Some(std::path::Path::new("x"))).is_err());
        assert_eq!(tpt.with_traces(None).expect("as is"), tpt);
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
    fn an_unknown_quick_key_is_an_error_naming_the_valid_ones() {
        let (_, text) = BUILTIN
            .iter()
            .find(|(n, _)| *n == "pagetable")
            .expect("built in");
        let text = text.replace("forks = ", "forkz = ");
        assert!(text.contains("forkz = "));
        let e = Experiment::from_toml(&text, "pagetable").expect("parses");
        for quick in [false, true] {
            let msg = e
                .plan(quick)
                .expect_err("forkz is no parameter")
                .to_string();
            assert_eq!(
                msg,
                "experiment pagetable: [quick] set: unknown key 'forkz'; valid keys (parameters of the experiment's workloads): child_data, child_stack, child_text, forks, rss, tpt_task"
            );
        }
    }

    #[test]
    fn a_native_run_spec_records_the_default_host_pages_not_its_groups() {
        let text = r#"
name = "hosts"
title = "t"
summary = "s"
duration = "d"
schemes = ["native", "nested"]
guest_pages = ["4k"]
host_pages = ["4k", "2m", "1g"]
seed = 1

[[workloads]]
spec = "tlb-bench:size=1M"

[sample]
accesses = 1000
warmup = 1000

[quick]
accesses = 1000
warmup = 1000

[report]
tables = ["seconds"]
plot = { kind = "lines", metric = "ns_per_access" }
"#;
        let plan = Experiment::from_toml(text, "hosts")
            .expect("valid")
            .plan(false)
            .expect("plans");
        let hosts = |paging: Paging| -> Vec<String> {
            plan.jobs
                .iter()
                .filter(|j| j.paging == paging)
                .map(|j| plan.run_spec(j).host_pages)
                .collect()
        };
        assert_eq!(hosts(Paging::Native), ["4k", "4k", "4k"]);
        assert_eq!(hosts(Paging::Nested), ["4k", "2m", "1g"]);
        // One native run stands for the three groups, and its spec is the one `vmlab run`
        // gives without --host-pages.
        let native: Vec<&Job> = plan
            .distinct_jobs()
            .into_iter()
            .filter(|j| j.paging == Paging::Native)
            .collect();
        assert_eq!(native.len(), 1);
        let mut expected = RunSpec::new("tlb-bench:size=1M");
        expected.workload = native[0].spec.canonical();
        expected.accesses = 1000;
        expected.warmup = 1000;
        assert_eq!(plan.run_spec(native[0]), expected);
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
