//! A run comparison: one [`RunSpec`] under several schemes and seeds, what `vmlab run` does,
//! as a library call. [`Comparison`] is plain data (a run spec, scheme names, a seed count),
//! so a front end (the command, a Python binding) builds one from its own arguments, calls
//! [`Comparison::run`] and renders the serializable [`ComparisonReport`] it returns; the
//! report holds the comparison itself and the effective profile, so
//! [`ComparisonReport::rerun`] repeats it from its JSON alone.

use crate::cost::Profile;
use crate::engine::{self, Progress, RunConfig};
use crate::lab::spec::{parse_schemes, RunSpec, SettingNames};
use crate::lab::LabError;
use crate::provenance::Provenance;
use crate::scheme::Paging;
use crate::stats::seeds::{self, SeedSummary};
use crate::stats::RunReport;
use serde::{Deserialize, Serialize};
use std::ops::ControlFlow;

/// One run spec under several schemes and seeds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// The run: workload, machine and overrides, page sizes, sample, first seed. Its
    /// `paging` is not used: each of `schemes` runs in turn.
    pub spec: RunSpec,
    /// The schemes to compare, by name, in order (at least one, each once).
    pub schemes: Vec<String>,
    /// How many seeds each scheme runs under: `spec.seed`, `spec.seed + 1`, ...
    #[serde(default = "one")]
    pub seeds: u64,
}

fn one() -> u64 {
    1
}

/// What [`Comparison::run`] tells its progress callback.
#[derive(Clone, Copy, Debug)]
pub enum Event<'a> {
    /// A run is about to start: run `index` of `total`.
    Start {
        /// The run's position in the comparison (scheme by scheme, seeds in order).
        index: usize,
        /// Runs in the comparison.
        total: usize,
        /// Its configuration.
        config: &'a RunConfig,
    },
    /// How far the run is (the engine's report, every few hundred thousand operations).
    Run {
        /// The run's position.
        index: usize,
        /// Its configuration.
        config: &'a RunConfig,
        /// Its phase and count.
        progress: Progress,
    },
    /// The run finished.
    Finished {
        /// The run's position.
        index: usize,
        /// Runs in the comparison.
        total: usize,
        /// Its configuration.
        config: &'a RunConfig,
    },
}

/// A comparison's progress callback; `ControlFlow::Break(())` stops it (the run in flight
/// stops at its next progress report, and [`Comparison::run`] returns [`LabError::Stopped`]).
pub type CompareProgressFn<'a> = dyn FnMut(&Event<'_>) -> ControlFlow<()> + 'a;

/// A comparison and its results: what `vmlab run --json` prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ComparisonReport {
    /// How it was made: version, command, profile (with its overrides and every effective
    /// value), first seed, input files.
    pub provenance: Provenance,
    /// What was asked: the run spec, the schemes and the seeds.
    pub comparison: Comparison,
    /// Every run's report, scheme by scheme, seeds in order.
    pub runs: Vec<RunReport>,
    /// With more than one seed: per scheme, the mean time over the seeds and its interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub across_seeds: Option<Vec<SeedSummary>>,
}

impl Comparison {
    /// `spec` under `schemes`, one seed.
    pub fn new(spec: RunSpec, schemes: &[&str]) -> Comparison {
        Comparison {
            spec,
            schemes: schemes.iter().map(|s| s.to_string()).collect(),
            seeds: 1,
        }
    }

    /// The seeds every scheme runs under, in order.
    pub fn seed_list(&self) -> Result<Vec<u64>, LabError> {
        let first = self.spec.seed;
        if self.seeds == 0 {
            return Err(LabError::Spec(
                "a comparison needs at least one seed".into(),
            ));
        }
        first.checked_add(self.seeds - 1).ok_or_else(|| {
            LabError::Spec(format!(
                "seed {first} with {} seeds runs past the largest seed ({}); use a smaller first seed",
                self.seeds,
                u64::MAX
            ))
        })?;
        Ok((0..self.seeds).map(|i| first + i).collect())
    }

    /// The schemes, parsed.
    pub fn paging(&self) -> Result<Vec<Paging>, LabError> {
        parse_schemes(&self.schemes)
    }

    /// Every run's configuration, scheme by scheme and seeds in order, each resolved from
    /// the spec and checked ([`RunSpec::resolve_named`]) before any runs: the first that
    /// cannot be made is the error. `profile` is the machine as it is (overrides applied);
    /// `names` says how errors name a setting.
    pub fn configs(
        &self,
        profile: &Profile,
        names: SettingNames,
    ) -> Result<Vec<RunConfig>, LabError> {
        let schemes = self.paging()?;
        let seeds = self.seed_list()?;
        let mut out = Vec::with_capacity(schemes.len() * seeds.len());
        for paging in &schemes {
            for &seed in &seeds {
                let spec = RunSpec {
                    paging: paging.name().to_string(),
                    seed,
                    ..self.spec.clone()
                };
                out.push(spec.resolve_named(profile.clone(), names)?);
            }
        }
        Ok(out)
    }

    /// Runs the comparison on the spec's machine profile (overrides applied): every run
    /// checked first, then one after another. `command` is what the provenance records as
    /// the command (a command line, or how a binding was called).
    pub fn run(
        &self,
        command: &str,
        progress: &mut CompareProgressFn<'_>,
    ) -> Result<ComparisonReport, LabError> {
        self.run_with(
            self.spec.profile()?,
            SettingNames::Fields,
            command,
            progress,
        )
    }

    /// The same with `profile` as the machine, as it is (`spec.machine` and
    /// `spec.overrides` are not looked at), and errors naming settings as `names` says.
    pub fn run_with(
        &self,
        profile: Profile,
        names: SettingNames,
        command: &str,
        progress: &mut CompareProgressFn<'_>,
    ) -> Result<ComparisonReport, LabError> {
        let configs = self.configs(&profile, names)?;
        let total = configs.len();
        let mut runs = Vec::with_capacity(total);
        for (index, config) in configs.iter().enumerate() {
            if progress(&Event::Start {
                index,
                total,
                config,
            })
            .is_break()
            {
                return Err(LabError::Stopped);
            }
            let report = engine::run(config, &mut |p| {
                progress(&Event::Run {
                    index,
                    config,
                    progress: p,
                })
            })
            .map_err(|e| LabError::from_engine(e, config, None))?;
            runs.push(report);
            if progress(&Event::Finished {
                index,
                total,
                config,
            })
            .is_break()
            {
                return Err(LabError::Stopped);
            }
        }
        let across_seeds = (self.seeds > 1).then(|| seeds::summarize(&runs));
        let provenance = Provenance {
            inputs: configs
                .first()
                .map(|c| c.workload.inputs())
                .unwrap_or_default(),
            ..Provenance::new(command, &profile, self.spec.seed)
        };
        Ok(ComparisonReport {
            provenance,
            comparison: self.clone(),
            runs,
            across_seeds,
        })
    }
}

/// What a rerun found: the new report, and where it differs from the old one.
#[derive(Clone, Debug)]
pub struct Rerun {
    /// The report of the runs done again.
    pub report: ComparisonReport,
    /// The differences in the runs' numbers, one line each (`runs[1].tlb_misses: 10 then
    /// 12`); empty when every number is identical.
    pub differences: Vec<String>,
}

impl ComparisonReport {
    /// The JSON (pretty, keys sorted at every level, a final newline).
    pub fn to_json(&self) -> Result<String, LabError> {
        crate::lab::report::to_json(self)
    }

    /// Reads a report back from the JSON of `vmlab run --json`.
    pub fn from_json(text: &str) -> Result<ComparisonReport, LabError> {
        serde_json::from_str(text).map_err(|e| {
            LabError::Spec(format!(
                "not a report of `vmlab run --json` (with its comparison and effective profile): {}",
                e
            ))
        })
    }

    /// Runs the comparison again on the report's own effective profile (not the profile
    /// file, which may have changed since), and compares every number of every run.
    /// `command` is the provenance's command of the new report.
    pub fn rerun(
        &self,
        command: &str,
        progress: &mut CompareProgressFn<'_>,
    ) -> Result<Rerun, LabError> {
        let mut profile = self
            .provenance
            .effective_profile()
            .map_err(LabError::Spec)?;
        // The new provenance names the same file and overrides as the old one.
        profile = profile.restore_provenance(
            &self.provenance.machine_fingerprint,
            self.provenance
                .overrides
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        );
        let report = self
            .comparison
            .run_with(profile, SettingNames::Fields, command, progress)?;
        let differences = differences(&self.runs, &report.runs);
        Ok(Rerun {
            report,
            differences,
        })
    }
}

/// The CSV columns of [`ComparisonReport::csv`].
pub const CSV_COLUMNS: [&str; 20] = [
    "workload",
    "scheme",
    "seed",
    "guest_pages",
    "host_pages",
    "seconds",
    "seconds_ci",
    "slowdown_vs_native",
    "ns_per_access",
    "cycles_per_access",
    "tlb_misses",
    "walks",
    "walk_refs_per_walk",
    "walk_refs",
    "vm_exits",
    "page_faults",
    "accesses_simulated",
    "extrapolated",
    "accesses_warmup",
    "warmup_end",
];

impl ComparisonReport {
    /// Native's time under the same seed as `run`, if native ran.
    fn native_seconds(&self, run: &RunReport) -> Option<f64> {
        self.runs
            .iter()
            .find(|r| r.paging == Paging::Native.name() && r.seed == run.seed)
            .map(|r| r.seconds)
    }

    /// The CSV: a row per run, in the report's order ([`CSV_COLUMNS`]; empty where a value
    /// does not apply).
    pub fn csv(&self) -> Result<String, LabError> {
        let fail = |e: csv::Error| LabError::Render(format!("cannot write the CSV: {e}"));
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(CSV_COLUMNS).map_err(fail)?;
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        for r in &self.runs {
            let measured = r.accesses_simulated > 0;
            w.write_record([
                r.workload.clone(),
                r.paging.clone(),
                r.seed.to_string(),
                r.guest_pages.to_string(),
                r.host_pages.clone(),
                format!("{}", r.seconds),
                opt(r.sample.seconds_ci),
                opt(self
                    .native_seconds(r)
                    .filter(|n| *n > 0.0)
                    .map(|n| r.seconds / n)),
                opt(measured.then_some(r.ns_per_access)),
                opt(measured.then_some(r.cycles_per_access)),
                r.tlb_misses.to_string(),
                r.walks.to_string(),
                format!("{}", r.walk_refs_per_walk),
                r.walk_refs.to_string(),
                r.vm_exits.to_string(),
                r.page_faults.to_string(),
                r.accesses_simulated.to_string(),
                r.extrapolated.to_string(),
                r.accesses_warmup.to_string(),
                r.sample.warmup_end.clone(),
            ])
            .map_err(fail)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| LabError::Render(format!("cannot write the CSV: {e}")))?;
        String::from_utf8(bytes).map_err(|e| LabError::Render(format!("CSV is not UTF-8: {e}")))
    }

    /// The figure: the time of each scheme, a bar each, grouped by seed, labelled with the
    /// slowdown over native.
    pub fn figure(&self) -> crate::lab::plot::Figure {
        use crate::lab::plot::{figure_decimals, fixed, Figure, Kind, Panel, XAxis};
        let schemes: Vec<String> = self.comparison.schemes.clone();
        let mut seeds: Vec<u64> = self.runs.iter().map(|r| r.seed).collect();
        seeds.dedup();
        seeds.sort_unstable();
        seeds.dedup();
        let run = |scheme: &str, seed: u64| {
            self.runs
                .iter()
                .find(|r| r.paging == scheme.trim() && r.seed == seed)
        };
        let values: Vec<Vec<Option<f64>>> = schemes
            .iter()
            .map(|s| {
                seeds
                    .iter()
                    .map(|&seed| run(s, seed).map(|r| r.seconds))
                    .collect()
            })
            .collect();
        let decimals = figure_decimals(
            &values
                .iter()
                .flatten()
                .flatten()
                .copied()
                .collect::<Vec<_>>(),
        );
        let notes = schemes
            .iter()
            .map(|s| {
                seeds
                    .iter()
                    .map(|&seed| {
                        let r = run(s, seed)?;
                        let text = fixed(r.seconds, decimals);
                        Some(match self.native_seconds(r).filter(|n| *n > 0.0) {
                            Some(n) => format!("{text} ({:.2}x)", r.seconds / n),
                            None => text,
                        })
                    })
                    .collect()
            })
            .collect();
        let workload = self
            .runs
            .first()
            .map_or(self.comparison.spec.workload.clone(), |r| {
                r.workload.clone()
            });
        Figure {
            title: workload,
            subtitle: format!(
                "vmlab run: machine {}{}, guest pages {}, host pages {}",
                self.provenance.machine,
                if self.provenance.overrides.is_empty() {
                    String::new()
                } else {
                    let o: Vec<String> = self
                        .provenance
                        .overrides
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    format!(" ({})", o.join(", "))
                },
                self.comparison.spec.guest_pages,
                self.comparison.spec.host_pages
            ),
            // Each series is styled by its scheme's name (`plot::style`).
            series: schemes.iter().map(|s| s.trim().to_string()).collect(),
            kind: Kind::Bars,
            panels: vec![Panel {
                title: None,
                x: XAxis::Categories {
                    label: if seeds.len() > 1 {
                        "seed".to_string()
                    } else {
                        String::new()
                    },
                    names: seeds.iter().map(|s| format!("seed {s}")).collect(),
                },
                y_label: crate::lab::Metric::Seconds.label().to_string(),
                y_log: false,
                values,
                notes,
            }],
        }
    }
}

/// Every difference between two lists of run reports, one line each, as paths into the JSON.
pub fn differences(old: &[RunReport], new: &[RunReport]) -> Vec<String> {
    let (Ok(old), Ok(new)) = (serde_json::to_value(old), serde_json::to_value(new)) else {
        return vec!["the reports do not serialize".to_string()];
    };
    let mut out = Vec::new();
    diff("runs", &old, &new, &mut out);
    out
}

fn diff(path: &str, a: &serde_json::Value, b: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff(&format!("{path}.{k}"), v, w, out),
                    None => out.push(format!("{path}.{k}: {v} then missing")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}.{k}: missing then {}", y[k]));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(&format!("{path}[{i}]"), v, w, out);
            }
        }
        (x, y) if x != y => out.push(format!("{path}: {x} then {y}")),
        _ => {}
    }
}
