//! `vmlab reproduce`: runs an experiment of `experiments/*.toml` (built into the binary) and
//! writes its table to stdout and a CSV, a JSON and an SVG figure to a directory.
//!
//! An experiment crosses workloads (and sizes), guest and host page sizes and schemes; each
//! combination is one `vmlab run` with the experiment's sample. Runs are independent and
//! seeded, so they run on parallel threads and their results do not depend on the order.

mod experiment;
mod plot;

use crate::args::{load_profile, ReproduceArgs};
use crate::progress::CountProgress;
use crate::{table, CliError, UsageError};
use experiment::{Experiment, GroupKey, Job, Metric, Plan, PlotKind, BUILTIN};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use vmlab_core::addr::PageSize;
use vmlab_core::cost::Profile;
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::scheme::Paging;
use vmlab_core::stats::RunReport;

pub fn reproduce(args: ReproduceArgs) -> Result<(), CliError> {
    if args.list {
        return list();
    }
    let Some(name) = args.name.as_deref() else {
        return Err(
            UsageError("name an experiment (vmlab reproduce --list shows them)".into()).into(),
        );
    };
    let exp = Experiment::load(name)?;
    let plan = exp.plan(args.quick)?;
    let profile = load_profile(&exp.machine)
        .map_err(|e| UsageError(format!("experiment {}: {}", exp.name, e.0)))?;
    let threads = match args.jobs {
        Some(0) => return Err(UsageError("--jobs must be at least 1".into()).into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&exp.name));

    let reports = run_all(&exp, &plan, &profile, threads)?;
    let rows = rows(&plan, &reports);

    std::fs::create_dir_all(&out_dir)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", out_dir.display())))?;
    let files = [
        (out_dir.join(format!("{}.csv", exp.name)), csv(&exp, &rows)?),
        (
            out_dir.join(format!("{}.json", exp.name)),
            json_file(&exp, &plan, &args, &rows),
        ),
        (
            out_dir.join(format!("{}.svg", exp.name)),
            figure(&exp, &plan, &rows, args.quick).to_svg(),
        ),
    ];
    for (path, text) in &files {
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    let text = if args.json {
        let runs: Vec<&RunReport> = rows.iter().filter_map(|r| r.report.as_ref()).collect();
        serde_json::to_string_pretty(&serde_json::json!({ "runs": runs })).expect("serializable")
            + "\n"
    } else {
        let mut text = render(&exp, &plan, &rows, args.quick) + "\n";
        for (path, _) in &files {
            let _ = writeln!(text, "wrote {}", path.display());
        }
        text
    };
    // A closed pipe (`| head`) is not an error; the files are written already.
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Run(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// `--list`: one line per built-in experiment.
fn list() -> Result<(), CliError> {
    println!("Experiments (vmlab reproduce NAME [--quick]; experiments/NAME.toml):");
    for (name, text) in BUILTIN {
        let e = Experiment::from_toml(text, name)?;
        println!("  {:<10} {} [{}]", e.name, e.summary, e.duration);
    }
    Ok(())
}

/// One run of the experiment, or a combination it skips.
struct Row {
    job: Job,
    report: Option<RunReport>,
    /// Native's time in the same group, when native ran there.
    native_seconds: Option<f64>,
}

/// What makes runs identical: workload, scheme, guest pages, and host pages when virtualized.
type RunKey = (String, Paging, PageSize, Option<PageSize>);

/// Native paging has no host page size: one run serves every host page size of a group.
fn dedup_key(job: &Job) -> RunKey {
    let host = job.paging.is_virtualized().then_some(job.group.host_pages);
    (
        job.spec.canonical(),
        job.paging,
        job.group.guest_pages,
        host,
    )
}

/// Runs every distinct job of the plan on `threads` threads; reports by dedup key.
fn run_all(
    exp: &Experiment,
    plan: &Plan,
    profile: &Profile,
    threads: usize,
) -> Result<BTreeMap<RunKey, RunReport>, CliError> {
    let mut todo: Vec<&Job> = Vec::new();
    for job in plan.jobs.iter().filter(|j| j.skip.is_none()) {
        if !todo.iter().any(|t| dedup_key(t) == dedup_key(job)) {
            todo.push(job);
        }
    }
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<RunReport, CliError>>>> =
        Mutex::new((0..todo.len()).map(|_| None).collect());
    let progress = CountProgress::new(&exp.name, todo.len() as u64);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(todo.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = todo.get(i) else { break };
                let config = RunConfig {
                    workload: job.spec.clone(),
                    paging: job.paging,
                    profile: profile.clone(),
                    guest_pages: job.group.guest_pages,
                    host_pages: job.group.host_pages,
                    fragmentation: 0.0,
                    accesses: plan.accesses,
                    warmup: plan.warmup,
                    seed: exp.seed,
                    pretouch: false,
                };
                let result = engine::run(&config, &mut |_| {}).map_err(|e| match e {
                    engine::EngineError::Config(msg) => {
                        CliError::Usage(UsageError(format!("experiment {}: {msg}", exp.name)))
                    }
                    other => CliError::Run(format!(
                        "{} under {}: {other}",
                        job.spec.canonical(),
                        job.paging.name()
                    )),
                });
                progress.inc();
                results.lock().expect("no thread panics holding the lock")[i] = Some(result);
            });
        }
    });
    progress.finish();
    let mut out = BTreeMap::new();
    for (job, result) in todo
        .iter()
        .zip(results.into_inner().expect("no thread panicked"))
    {
        let report = result.unwrap_or_else(|| Err(CliError::Run("a run did not finish".into())))?;
        out.insert(dedup_key(job), report);
    }
    Ok(out)
}

/// The plan's jobs in order, with their reports and native's time in their group.
fn rows(plan: &Plan, reports: &BTreeMap<RunKey, RunReport>) -> Vec<Row> {
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
fn groups(rows: &[Row]) -> Vec<&GroupKey> {
    let mut out: Vec<&GroupKey> = Vec::new();
    for r in rows {
        if !out.contains(&&r.job.group) {
            out.push(&r.job.group);
        }
    }
    out
}

fn value(rows: &[Row], group: &GroupKey, paging: Paging, metric: Metric) -> Option<f64> {
    let row = rows
        .iter()
        .find(|r| &r.job.group == group && r.job.paging == paging)?;
    metric.value(row.report.as_ref()?, row.native_seconds)
}

/// The text report: a heading, then `vmlab run`'s table for an experiment of one group, or
/// one pivot table per metric (rows = groups, columns = schemes).
fn render(exp: &Experiment, plan: &Plan, rows: &[Row], quick: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}{}: {}",
        exp.name,
        if quick { " (quick)" } else { "" },
        exp.title
    );
    let groups = groups(rows);
    if groups.len() == 1 {
        let reports: Vec<RunReport> = rows.iter().filter_map(|r| r.report.clone()).collect();
        out.push_str(&table::render(&reports));
        return out;
    }
    let _ = writeln!(
        out,
        "machine    {}, seed {}, {}\n",
        exp.machine,
        exp.seed,
        sample_text(plan)
    );
    let labels: Vec<String> = groups.iter().map(|g| plan.varies.label(g, true)).collect();
    let lw = labels
        .iter()
        .map(|l| l.len())
        .chain(exp.report.tables.iter().map(|m| m.label().len()))
        .max()
        .unwrap_or(8);
    let cw = plan
        .schemes
        .iter()
        .map(|p| p.name().len())
        .max()
        .unwrap_or(8)
        .max(9)
        + 1;
    let mut skipped = false;
    for metric in &exp.report.tables {
        let _ = write!(out, "{:<lw$}", metric.label());
        for p in &plan.schemes {
            let _ = write!(out, " {:>cw$}", p.name());
        }
        out.push('\n');
        for (g, label) in groups.iter().zip(&labels) {
            let _ = write!(out, "{label:<lw$}");
            for &p in &plan.schemes {
                let cell = match value(rows, g, p, *metric) {
                    Some(v) => metric.format(v),
                    None if rows.iter().any(|r| {
                        &r.job.group == *g && r.job.paging == p && r.job.skip.is_some()
                    }) =>
                    {
                        skipped = true;
                        "n/a".to_string()
                    }
                    None => "-".to_string(),
                };
                let _ = write!(out, " {cell:>cw$}");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if exp.report.tables.contains(&Metric::Slowdown) {
        out.push_str("slowdown: time over native's for the same workload, size and page sizes.\n");
    }
    if skipped {
        out.push_str("n/a: not run: pv and the TPT schemes map a guest page with one entry, so need host pages at least as large.\n");
    }
    out.push_str("Every counter of every run is in the JSON file (and in --json).\n");
    out
}

fn sample_text(plan: &Plan) -> String {
    if plan.accesses == 0 {
        "every operation simulated".to_string()
    } else {
        format!(
            "sample of {} measured accesses after {} warm-up accesses per run",
            plan.accesses, plan.warmup
        )
    }
}

/// The CSV: one row per run (skipped combinations are left out; the JSON lists them).
fn csv(exp: &Experiment, rows: &[Row]) -> Result<String, CliError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| CliError::Run(format!("cannot write the CSV: {e}"));
    w.write_record([
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
        "vm_exits",
        "page_faults",
        "accesses_simulated",
        "extrapolated",
    ])
    .map_err(fail)?;
    let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for row in rows {
        let Some(r) = &row.report else { continue };
        let g = &row.job.group;
        w.write_record([
            exp.name.clone(),
            g.workload.clone(),
            r.workload.clone(),
            g.size.as_ref().map_or(String::new(), |(_, s)| s.clone()),
            r.paging.to_string(),
            r.guest_pages.to_string(),
            // Native has no host pages ("-" in its report); its row stands for each host size.
            g.host_pages.name().to_string(),
            format!("{}", r.seconds),
            opt(Metric::Slowdown.value(r, row.native_seconds)),
            opt(Metric::NsPerAccess.value(r, None)),
            opt(Metric::CyclesPerAccess.value(r, None)),
            opt(r.us_per_fork),
            opt(Metric::UsPerIter.value(r, None)),
            r.tlb_misses.to_string(),
            r.walks.to_string(),
            format!("{}", r.walk_refs_per_walk),
            r.vm_exits.to_string(),
            r.page_faults.to_string(),
            r.accesses_simulated.to_string(),
            r.extrapolated.to_string(),
        ])
        .map_err(fail)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| CliError::Run(format!("cannot write the CSV: {e}")))?;
    String::from_utf8(bytes).map_err(|e| CliError::Run(format!("CSV is not UTF-8: {e}")))
}

/// The JSON file: what ran, how to rerun it, and every run's full report.
fn json_file(exp: &Experiment, plan: &Plan, args: &ReproduceArgs, rows: &[Row]) -> String {
    let runs: Vec<&RunReport> = rows.iter().filter_map(|r| r.report.as_ref()).collect();
    let skipped: Vec<serde_json::Value> = rows
        .iter()
        .filter_map(|r| {
            let reason = r.job.skip.as_ref()?;
            Some(serde_json::json!({
                "workload": r.job.spec.canonical(),
                "paging": r.job.paging.name(),
                "guest_pages": r.job.group.guest_pages.name(),
                "host_pages": r.job.group.host_pages.name(),
                "reason": reason,
            }))
        })
        .collect();
    let value = serde_json::json!({
        "experiment": exp.name,
        "title": exp.title,
        "command": command_line(),
        "vmlab_version": env!("CARGO_PKG_VERSION"),
        "quick": args.quick,
        "machine": exp.machine,
        "seed": exp.seed,
        "accesses": plan.accesses,
        "warmup": plan.warmup,
        "schemes": plan.schemes.iter().map(|p| p.name()).collect::<Vec<_>>(),
        "skipped": skipped,
        "runs": runs,
    });
    serde_json::to_string_pretty(&value).expect("serializable") + "\n"
}

/// This process's command line, each argument quoted for a POSIX shell where it needs it.
fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                a
            } else {
                format!("'{}'", a.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The figure: bars per scheme in each group, or a line per scheme over size.
fn figure(exp: &Experiment, plan: &Plan, rows: &[Row], quick: bool) -> plot::Figure {
    let spec = &exp.report.plot;
    let groups = groups(rows);
    // Panels: one per workload when asked (and there are several), else one.
    let mut panels: Vec<(Option<String>, Vec<&GroupKey>)> = Vec::new();
    for g in &groups {
        let key = (spec.panel_per_workload && plan.varies.workload).then(|| g.workload.clone());
        match panels.iter_mut().find(|(k, _)| *k == key) {
            Some((_, gs)) => gs.push(g),
            None => panels.push((key, vec![g])),
        }
    }
    // A scheme's style is its place in Paging::ALL: the same colour in every figure.
    let series: Vec<(String, usize)> = plan
        .schemes
        .iter()
        .map(|p| {
            (
                p.name().to_string(),
                Paging::ALL.iter().position(|q| q == p).unwrap_or(0),
            )
        })
        .collect();
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
                            if rows.iter().any(|r| {
                                &r.job.group == *g && r.job.paging == p && r.job.skip.is_some()
                            }) {
                                return Some("n/a".to_string());
                            }
                            let v = value(rows, g, p, spec.metric)?;
                            let text = if spec.metric == Metric::Slowdown {
                                format!("{v:.2}x")
                            } else {
                                plot::number(v)
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
            if quick { " --quick" } else { "" },
            exp.machine,
            sample_text(plan)
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
