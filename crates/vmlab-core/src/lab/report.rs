//! An experiment's results: a row per job of its plan (the run's report, or nothing for a
//! skipped combination), the serializable report of the whole experiment (what `NAME.json`
//! holds), and the CSV, JSON and SVG renderings. The terminal table is the caller's.

use crate::lab::experiment::{Experiment, Metric, PlotKind};
use crate::lab::plan::{GroupKey, Job, Plan};
use crate::lab::runner::{dedup_key, RunKey};
use crate::lab::spec::RunSpec;
use crate::lab::{plot, LabError};
use crate::provenance::Provenance;
use crate::scheme::Paging;
use crate::stats::RunReport;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One job of the plan with its result.
#[derive(Clone, Debug)]
pub struct Row {
    /// The job.
    pub job: Job,
    /// The run's report; `None` when the job is skipped.
    pub report: Option<RunReport>,
    /// Native's time in the same group, when native ran there.
    pub native_seconds: Option<f64>,
}

/// The plan's jobs in order, with their reports and native's time in their group.
pub(crate) fn rows(plan: &Plan, reports: &BTreeMap<RunKey, RunReport>) -> Vec<Row> {
    let report = |job: &Job| {
        if job.skip.is_some() {
            None
        } else {
            reports.get(&dedup_key(job)).cloned()
        }
    };
    plan.jobs
        .iter()
        .map(|job| {
            let native_seconds = plan
                .jobs
                .iter()
                .find(|j| j.group == job.group && j.paging == Paging::Native)
                .and_then(&report)
                .map(|r| r.seconds);
            Row {
                job: job.clone(),
                report: report(job),
                native_seconds,
            }
        })
        .collect()
}

/// The distinct groups (table rows), in plan order.
pub fn groups(rows: &[Row]) -> Vec<&GroupKey> {
    let mut out: Vec<&GroupKey> = Vec::new();
    for r in rows {
        if !out.contains(&&r.job.group) {
            out.push(&r.job.group);
        }
    }
    out
}

/// The warm-ups the runs of `rows` used, in words: "warm-up used: 4M to 16M accesses;
/// converged in 5 runs, cap in 1", or what was done instead.
pub fn warmup_summary(rows: &[Row]) -> String {
    let reports = runs(rows);
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &reports {
        *ends.entry(r.sample.warmup_end.as_str()).or_default() += 1;
    }
    let whole = ends.remove("none").unwrap_or(0);
    let recorded = ends.remove("recorded").unwrap_or(0);
    let mut parts = Vec::new();
    let warmed: Vec<u64> = reports
        .iter()
        .filter(|r| !matches!(r.sample.warmup_end.as_str(), "none" | "recorded"))
        .map(|r| r.accesses_warmup)
        .collect();
    if let (Some(lo), Some(hi)) = (warmed.iter().min(), warmed.iter().max()) {
        let how: Vec<String> = ends.iter().map(|(e, n)| format!("{e} in {n}")).collect();
        parts.push(format!(
            "warm-up used {} to {} accesses ({})",
            lo,
            hi,
            how.join(", ")
        ));
    }
    if whole > 0 {
        parts.push(format!(
            "{whole} run(s) simulated their whole workload from cold, with no warm-up"
        ));
    }
    if recorded > 0 {
        parts.push(format!(
            "{recorded} run(s) replayed a sampled recording whole, measured in its recorded windows after their warm-up summaries"
        ));
    }
    parts.join("; ")
}

/// `metric` of the run of `paging` in `group`, if it ran and the metric applies.
pub fn value(rows: &[Row], group: &GroupKey, paging: Paging, metric: Metric) -> Option<f64> {
    let row = rows
        .iter()
        .find(|r| &r.job.group == group && r.job.paging == paging)?;
    let report = row.report.as_ref()?;
    // A speedup over another scheme: that scheme's time in the group over this run's.
    let over = match metric {
        Metric::SpeedupOverNested => Some(Paging::Nested),
        Metric::SpeedupOverShadow => Some(Paging::Shadow),
        _ => None,
    };
    if let Some(base) = over {
        let base = value(rows, group, base, Metric::Seconds)?;
        return (report.seconds > 0.0).then(|| base / report.seconds);
    }
    metric.value(report, row.native_seconds)
}

/// The half-width of the interval of `metric` of the run of `paging` in `group`, if any.
pub fn ci(rows: &[Row], group: &GroupKey, paging: Paging, metric: Metric) -> Option<f64> {
    let row = rows
        .iter()
        .find(|r| &r.job.group == group && r.job.paging == paging)?;
    metric.ci(row.report.as_ref()?)
}

/// Whether the plan skips `paging` in `group`.
pub fn is_skipped(rows: &[Row], group: &GroupKey, paging: Paging) -> bool {
    rows.iter()
        .any(|r| &r.job.group == group && r.job.paging == paging && r.job.skip.is_some())
}

/// The reports of the runs, in plan order (a native run standing for several host page
/// sizes appears once per group).
pub fn runs(rows: &[Row]) -> Vec<&RunReport> {
    rows.iter().filter_map(|r| r.report.as_ref()).collect()
}

/// `{"provenance": {...}, "runs": [...]}`, pretty-printed with a final newline: `vmlab run
/// --json`'s shape.
pub fn runs_json(rows: &[Row], provenance: &Provenance) -> Result<String, LabError> {
    #[derive(Serialize)]
    struct Runs<'a> {
        provenance: &'a Provenance,
        runs: Vec<&'a RunReport>,
    }
    to_json(&Runs {
        provenance,
        runs: runs(rows),
    })
}

/// Pretty JSON with a final newline, keys in sorted order at every level (through
/// `serde_json::Value`, as every JSON vmlab writes).
pub(crate) fn to_json<T: Serialize>(value: &T) -> Result<String, LabError> {
    let value = serde_json::to_value(value)
        .map_err(|e| LabError::Render(format!("cannot write the JSON: {e}")))?;
    serde_json::to_string_pretty(&value)
        .map(|text| text + "\n")
        .map_err(|e| LabError::Render(format!("cannot write the JSON: {e}")))
}

/// A combination of the plan that was not run, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SkippedRun {
    /// The workload, in canonical form.
    pub workload: String,
    /// The scheme.
    pub paging: String,
    /// Guest page size.
    pub guest_pages: String,
    /// Host page size.
    pub host_pages: String,
    /// Why it was not run.
    pub reason: String,
}

/// Everything an experiment produced and what is needed to rerun it: the contents of
/// `NAME.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExperimentReport {
    /// The experiment's name.
    pub experiment: String,
    /// Its title.
    pub title: String,
    /// The version, commit and command that ran it, the profile's name and hash, the seed.
    pub provenance: Provenance,
    /// Whether the quick variant ran.
    pub quick: bool,
    /// The machine profile.
    pub machine: String,
    /// The seed of every run.
    pub seed: u64,
    /// Measured accesses per run (0: all).
    pub accesses: u64,
    /// The most warm-up accesses per run (each run's report gives the warm-up it used).
    pub warmup: u64,
    /// Relative tolerance of each run's steady-state test.
    pub tolerance: f64,
    /// The sample method, in words (each run's `sample_method` says what it did).
    pub sample_method: String,
    /// The warm-ups the runs used, in words.
    pub warmup_used: String,
    /// The schemes, in the table's order.
    pub schemes: Vec<String>,
    /// Machine-profile overrides of every run (`SECTION.KEY` to a value).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub overrides: BTreeMap<String, String>,
    /// The swept settings and their values (none without a sweep).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sweep: BTreeMap<String, Vec<String>>,
    /// Combinations not run, with the reason.
    pub skipped: Vec<SkippedRun>,
    /// Every run's report, in plan order.
    pub runs: Vec<RunReport>,
    /// The spec of each run of `runs` (same order): everything it was run with, its swept
    /// values included (seed, fragmentation, pretouch, profile overrides).
    #[serde(default)]
    pub specs: Vec<RunSpec>,
}

impl ExperimentReport {
    /// The report of `exp` run as `plan` with results `rows`; `provenance` records how it
    /// was run (`vmlab reproduce`'s command line, or whatever reruns it).
    pub fn new(
        exp: &Experiment,
        plan: &Plan,
        rows: &[Row],
        provenance: Provenance,
    ) -> ExperimentReport {
        ExperimentReport {
            experiment: exp.name.clone(),
            title: exp.title.clone(),
            provenance,
            quick: plan.quick,
            machine: exp.machine.clone(),
            seed: exp.seed,
            accesses: plan.accesses,
            warmup: plan.warmup,
            tolerance: plan.tolerance,
            sample_method: plan.sample_text(),
            warmup_used: warmup_summary(rows),
            schemes: plan.schemes.iter().map(|p| p.name().to_string()).collect(),
            overrides: plan.overrides.clone(),
            sweep: plan.sweep.iter().cloned().collect(),
            skipped: rows
                .iter()
                .filter_map(|r| {
                    Some(SkippedRun {
                        workload: r.job.spec.canonical(),
                        paging: r.job.paging.name().to_string(),
                        guest_pages: r.job.group.guest_pages.name().to_string(),
                        host_pages: if r.job.paging.is_virtualized() {
                            r.job.group.host_pages.name().to_string()
                        } else {
                            "-".to_string()
                        },
                        reason: r.job.skip.clone()?,
                    })
                })
                .collect(),
            runs: runs(rows).into_iter().cloned().collect(),
            specs: rows
                .iter()
                .filter(|r| r.report.is_some())
                .map(|r| plan.run_spec(&r.job))
                .collect(),
        }
    }

    /// The JSON file's text (pretty, keys sorted, a final newline).
    pub fn to_json(&self) -> Result<String, LabError> {
        to_json(self)
    }

    /// Reads a report back from its JSON.
    pub fn from_json(text: &str) -> Result<ExperimentReport, LabError> {
        serde_json::from_str(text)
            .map_err(|e| LabError::Spec(format!("not an experiment report: {e}")))
    }
}

/// The files of an experiment's results, each as its name and text, in order: `NAME.csv`,
/// `NAME.json` (the [`ExperimentReport`] with `provenance`), `NAME.svg` and, with `html`,
/// `NAME.html`. What `vmlab reproduce` writes, and `vmlab merge` from the parts of a sharded
/// run: the same rows give the same files.
pub fn files(
    exp: &Experiment,
    plan: &Plan,
    rows: &[Row],
    provenance: Provenance,
    html: bool,
) -> Result<Vec<(String, String)>, LabError> {
    let report = ExperimentReport::new(exp, plan, rows, provenance);
    let svg = figure(exp, plan, rows).to_svg();
    let mut files = vec![
        (format!("{}.csv", exp.name), csv(exp, rows)?),
        (format!("{}.json", exp.name), report.to_json()?),
    ];
    if html {
        files.push((
            format!("{}.html", exp.name),
            crate::lab::html::render(&report, Some(&svg)),
        ));
    }
    files.insert(2, (format!("{}.svg", exp.name), svg));
    Ok(files)
}

/// The CSV: one row per run (skipped combinations are left out; the JSON lists them), and a
/// column per swept setting after the fixed ones.
pub fn csv(exp: &Experiment, rows: &[Row]) -> Result<String, LabError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| LabError::Render(format!("cannot write the CSV: {e}"));
    let swept: Vec<&String> = rows
        .first()
        .map(|r| r.job.group.point.iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    let fixed = [
        "experiment",
        "label",
        "workload",
        "size",
        "scheme",
        "guest_pages",
        "host_pages",
        "seconds",
        "slowdown_vs_native",
        "ns_per_access",
        "cycles_per_access",
        "us_per_fork",
        "us_per_iter",
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
        "seconds_ci",
        "ns_per_access_ci",
        "tlb_misses_per_kilo_access",
        "walk_refs_per_kilo_access",
        "speedup_over_nested",
        "speedup_over_shadow",
    ];
    w.write_record(
        fixed
            .iter()
            .copied()
            .chain(swept.iter().map(|k| k.as_str())),
    )
    .map_err(fail)?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for row in rows {
        let Some(r) = &row.report else { continue };
        let g = &row.job.group;
        let cells = [
            exp.name.clone(),
            g.workload.clone(),
            r.workload.clone(),
            g.size.as_ref().map_or(String::new(), |(_, s)| s.clone()),
            r.paging.to_string(),
            r.guest_pages.to_string(),
            // As the run's report says it: "-" for native, which has no host pages.
            r.host_pages.clone(),
            format!("{}", r.seconds),
            opt(Metric::Slowdown.value(r, row.native_seconds)),
            opt(Metric::NsPerAccess.value(r, None)),
            opt(Metric::CyclesPerAccess.value(r, None)),
            opt(r.us_per_fork),
            opt(Metric::UsPerIter.value(r, None)),
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
            opt(r.sample.seconds_ci),
            opt(r
                .sample
                .ns_per_access_ci
                .filter(|_| r.accesses_simulated > 0)),
            opt(Metric::TlbMissesPerKiloAccess.value(r, None)),
            opt(Metric::WalkRefsPerKiloAccess.value(r, None)),
            opt(value(rows, g, row.job.paging, Metric::SpeedupOverNested)),
            opt(value(rows, g, row.job.paging, Metric::SpeedupOverShadow)),
        ];
        w.write_record(
            cells
                .into_iter()
                .chain(g.point.iter().map(|(_, v)| v.clone())),
        )
        .map_err(fail)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| LabError::Render(format!("cannot write the CSV: {e}")))?;
    String::from_utf8(bytes).map_err(|e| LabError::Render(format!("CSV is not UTF-8: {e}")))
}

/// The figure: bars per scheme in each group, or a line per scheme over size
/// ([`plot::Figure::to_svg`] renders it).
pub fn figure(exp: &Experiment, plan: &Plan, rows: &[Row]) -> plot::Figure {
    let spec = &exp.report.plot;
    let groups = groups(rows);
    // Panels: one per workload when asked (and there are several), and for lines over sizes
    // one per point of a sweep (a size axis has room for one line per scheme); else one.
    let mut panels: Vec<(Option<String>, Vec<&GroupKey>)> = Vec::new();
    for g in &groups {
        let mut parts = Vec::new();
        if spec.panel_per_workload && plan.varies.workload {
            parts.push(g.workload.clone());
        }
        if spec.kind == PlotKind::Lines && plan.varies.sweep {
            parts.extend(g.point.iter().map(|(k, v)| format!("{k}={v}")));
        }
        let key = (!parts.is_empty()).then(|| parts.join(", "));
        match panels.iter_mut().find(|(k, _)| *k == key) {
            Some((_, gs)) => gs.push(g),
            None => panels.push((key, vec![g])),
        }
    }
    // Each scheme is drawn in its name's style (plot::style): the same colour in every figure.
    let series: Vec<String> = plan.schemes.iter().map(|p| p.name().to_string()).collect();
    // Every bar label in the figure gets the same number of decimals.
    let all: Vec<f64> = panels
        .iter()
        .flat_map(|(_, gs)| gs.iter())
        .flat_map(|g| plan.schemes.iter().map(move |&p| (g, p)))
        .filter_map(|(g, p)| value(rows, g, p, spec.metric))
        .collect();
    let decimals = plot::figure_decimals(&all);
    let panels = panels
        .into_iter()
        .map(|(title, gs)| {
            let values: Vec<Vec<Option<f64>>> = plan
                .schemes
                .iter()
                .map(|&p| gs.iter().map(|g| value(rows, g, p, spec.metric)).collect())
                .collect();
            let notes = plan
                .schemes
                .iter()
                .map(|&p| {
                    gs.iter()
                        .map(|g| {
                            if is_skipped(rows, g, p) {
                                return Some("n/a".to_string());
                            }
                            let v = value(rows, g, p, spec.metric)?;
                            let text = if spec.metric == Metric::Slowdown {
                                format!("{v:.2}x")
                            } else {
                                plot::fixed(v, decimals)
                            };
                            Some(match value(rows, g, p, Metric::Slowdown) {
                                Some(s) if spec.metric != Metric::Slowdown => {
                                    format!("{text} ({s:.2}x)")
                                }
                                _ => text,
                            })
                        })
                        .collect()
                })
                .collect();
            let x = match spec.kind {
                PlotKind::Lines => plot::XAxis::Sizes {
                    label: spec
                        .x_label
                        .clone()
                        .unwrap_or_else(|| size_axis_label(&exp.workloads[gs[0].entry].spec)),
                    bytes: gs
                        .iter()
                        .map(|g| g.size.as_ref().map_or(1, |s| s.0))
                        .collect(),
                    names: gs
                        .iter()
                        .map(|g| g.size.as_ref().map_or(String::new(), |s| s.1.clone()))
                        .collect(),
                },
                PlotKind::Bars => plot::XAxis::Categories {
                    label: if let Some(label) = &spec.x_label {
                        label.clone()
                    } else if plan.varies.pages {
                        "guest page size / host page size".to_string()
                    } else if plan.varies.workload {
                        "operation".to_string()
                    } else {
                        String::new()
                    },
                    names: gs
                        .iter()
                        .map(|g| plan.varies.label(g, title.is_none()))
                        .collect(),
                },
            };
            plot::Panel {
                title,
                x,
                y_label: spec.metric.label().to_string(),
                y_log: spec.y_log,
                values,
                notes,
            }
        })
        .collect();
    plot::Figure {
        title: exp.title.clone(),
        subtitle: format!(
            "vmlab reproduce {}{}: machine {}, {}",
            exp.name,
            if plan.quick { " --quick" } else { "" },
            exp.machine,
            plan.sample_text()
        ),
        series,
        kind: match spec.kind {
            PlotKind::Bars => plot::Kind::Bars,
            PlotKind::Lines => plot::Kind::Lines,
        },
        panels,
    }
}

/// "resident set size (bytes, log scale)" and the like, from the workload's size parameter.
fn size_axis_label(spec: &str) -> String {
    let what = if spec.starts_with("fork-bench") {
        "parent's resident set size"
    } else if spec.starts_with("tlb-bench") {
        "region size"
    } else {
        "size"
    };
    format!("{what} (bytes, log scale)")
}
