//! `vmlab reproduce`: runs an experiment of `experiments/*.toml` (built into the binary) and
//! writes its table to stdout and a CSV, a JSON and an SVG figure to a directory (and, with
//! `--html`, the page `vmlab report` renders from them).
//!
//! Planning, running and the CSV, JSON and SVG renderings are the library's
//! (`vmlab_core::lab`); this module adds the terminal table, the progress bar and the files.
//! `shard.rs` lists an experiment's runs (`--list-runs`) and runs one part of them
//! (`--shard I/N`); `vmlab merge` writes the merged parts through [`write_results`] here.

mod shard;

use crate::args::ReproduceArgs;
use crate::progress::CountProgress;
use crate::run::cli_error;
use crate::{table, CliError, UsageError};
use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use vmlab_core::lab::kinds::{self, ExperimentKind};
use vmlab_core::lab::report::{self, Row};
use vmlab_core::lab::runner::{self, Event};
use vmlab_core::lab::{Experiment, Metric, Plan, Shard};
use vmlab_core::provenance::Provenance;
use vmlab_core::stats::RunReport;

/// `vmlab reproduce NAME`: asks the lab what NAME is (its registry of experiment kinds) and
/// renders that kind's report.
pub fn reproduce(args: ReproduceArgs) -> Result<(), CliError> {
    if args.list {
        return list(args.name.as_deref());
    }
    let Some(name) = args.name.as_deref() else {
        return Err(
            UsageError("name an experiment (vmlab reproduce --list shows them)".into()).into(),
        );
    };
    let kind = ExperimentKind::find(name).map_err(cli_error)?;
    if (args.list_runs || args.shard.is_some()) && !matches!(kind, ExperimentKind::Simulated(_)) {
        return Err(UsageError(format!(
            "--shard and --list-runs split an experiment file's simulated runs; {name} runs whole"
        ))
        .into());
    }
    if !args.set.set.is_empty() && matches!(kind, ExperimentKind::Guest) {
        return Err(UsageError(format!(
            "--set overrides a simulated machine's profile; {name} measures this host"
        ))
        .into());
    }
    match kind {
        ExperimentKind::Labt => crate::labt::reproduce(args),
        ExperimentKind::Guest => crate::guest::reproduce(args),
        ExperimentKind::Simulated(exp) => simulated(args, *exp),
    }
}

/// An experiment file's runs: the table, and NAME.csv, NAME.json and NAME.svg.
fn simulated(args: ReproduceArgs, exp: Experiment) -> Result<(), CliError> {
    if args.trace.is_some() || args.reprice.is_some() {
        return Err(UsageError(
            "--trace and --reprice are for `vmlab reproduce labt` only (the recorded e500 guest it replays)"
                .into(),
        )
        .into());
    }
    // --set: overrides of every run, on top of the experiment's own.
    let exp = exp
        .with_traces(args.traces.as_deref())
        .map_err(cli_error)?
        .with_overrides(args.set.overrides()?);
    let shard = args
        .shard
        .as_deref()
        .map(Shard::parse)
        .transpose()
        .map_err(cli_error)?;
    if args.list_runs {
        return shard::list_runs(exp, args.quick, args.json);
    }
    let threads = match args.jobs {
        Some(0) => return Err(UsageError("--jobs must be at least 1".into()).into()),
        Some(n) => n,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join(&exp.name));
    if let Some(shard) = shard {
        return shard::run_part(exp, args.quick, shard, threads, &out_dir);
    }
    let plan = exp.plan(args.quick).map_err(cli_error)?;
    let profile = plan.profile().map_err(cli_error)?;

    let progress = CountProgress::new(&exp.name, plan.distinct_jobs().len() as u64);
    let rows = runner::run_plan(&plan, &profile, threads, &|event| {
        if let Event::Finished { .. } = event {
            progress.inc();
        }
        ControlFlow::Continue(())
    });
    progress.finish();
    let rows = rows.map_err(cli_error)?;
    let provenance = crate::provenance(&profile, plan.seed);
    write_results(
        &exp, &plan, &rows, provenance, &out_dir, args.html, args.json,
    )
}

/// Writes an experiment's result files (the library's [`report::files`]: NAME.csv, NAME.json,
/// NAME.svg, and with `html` NAME.html) to `out_dir`, then prints the table and the files
/// written, or with `json` the runs as JSON: what `vmlab reproduce` does after its runs, and
/// `vmlab merge` after merging the parts of a sharded one.
pub(crate) fn write_results(
    exp: &Experiment,
    plan: &Plan,
    rows: &[Row],
    provenance: Provenance,
    out_dir: &Path,
    html: bool,
    json: bool,
) -> Result<(), CliError> {
    let stdout_json = if json {
        Some(report::runs_json(rows, &provenance).map_err(cli_error)?)
    } else {
        None
    };
    let files = report::files(exp, plan, rows, provenance, html).map_err(cli_error)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", out_dir.display())))?;
    let mut written = Vec::new();
    for (name, text) in &files {
        let path = out_dir.join(name);
        std::fs::write(&path, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    let text = match stdout_json {
        Some(text) => text,
        None => {
            let mut text = render(exp, plan, rows) + "\n";
            for path in &written {
                let _ = writeln!(text, "wrote {}", path.display());
            }
            text
        }
    };
    print_stdout(&text)
}

/// Writes `text` to stdout. A closed pipe (`| head`) is not an error: the files are written
/// already.
pub(crate) fn print_stdout(text: &str) -> Result<(), CliError> {
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(CliError::Run(format!("cannot write to stdout: {e}")))
        }
        _ => Ok(()),
    }
}

/// `--list`: one line per built-in experiment (only `name`'s, when given), from the lab's
/// catalog.
fn list(name: Option<&str>) -> Result<(), CliError> {
    let infos = match name {
        Some(name) => vec![kinds::info(name).map_err(cli_error)?],
        None => kinds::catalog().map_err(cli_error)?,
    };
    println!("Experiments (vmlab reproduce NAME [--quick]; experiments/NAME.toml):");
    for i in infos {
        println!("  {:<10} {} [{}]", i.name, i.summary, i.duration);
    }
    Ok(())
}

/// The text report: a heading, then `vmlab run`'s table for an experiment of one group, or
/// one pivot table per metric (rows = groups, columns = schemes).
pub(crate) fn render(exp: &Experiment, plan: &Plan, rows: &[Row]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment {}{}: {}",
        exp.name,
        if plan.quick { " (quick)" } else { "" },
        exp.title
    );
    if plan.quick && plan.accesses > 0 {
        let _ = writeln!(
            out,
            "quick: the full experiment's method with a shorter sample and a looser steady-state tolerance ({}%)",
            plan.tolerance * 100.0
        );
    }
    if plan.quick && (exp.quick.guest_pages.is_some() || exp.quick.host_pages.is_some()) {
        let names =
            |v: &Option<Vec<String>>, full: &[String]| v.as_deref().unwrap_or(full).join(", ");
        let _ = writeln!(
            out,
            "quick: guest pages {} and host pages {} only",
            names(&exp.quick.guest_pages, &exp.guest_pages),
            names(&exp.quick.host_pages, &exp.host_pages)
        );
    }
    if let Some(line) = crate::run::overrides_line(&plan.overrides) {
        out.push_str(&line);
    }
    let groups = report::groups(rows);
    if groups.len() == 1 {
        let reports: Vec<RunReport> = rows.iter().filter_map(|r| r.report.clone()).collect();
        out.push_str(&table::render(&reports));
        return out;
    }
    let _ = writeln!(
        out,
        "machine    {}, seed {}, {}\n{}\n",
        exp.machine,
        exp.seed,
        plan.sample_text(),
        report::warmup_summary(rows)
    );
    let labels: Vec<String> = groups.iter().map(|g| plan.varies.label(g, true)).collect();
    let lw = labels
        .iter()
        .map(|l| l.len())
        .chain(exp.report.tables.iter().map(|m| m.label().len()))
        .max()
        .unwrap_or(8);
    let mut skipped = false;
    for metric in &exp.report.tables {
        // Cells first: a column is as wide as its widest value and interval.
        let cells: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                plan.schemes
                    .iter()
                    .map(|&p| match report::value(rows, g, p, *metric) {
                        Some(v) => metric.format_ci(v, report::ci(rows, g, p, *metric)),
                        None if report::is_skipped(rows, g, p) => {
                            skipped = true;
                            "n/a".to_string()
                        }
                        None => "-".to_string(),
                    })
                    .collect()
            })
            .collect();
        let cw = plan
            .schemes
            .iter()
            .map(|p| p.name().len())
            .chain(cells.iter().flatten().map(|c| c.chars().count()))
            .max()
            .unwrap_or(8)
            .max(9)
            + 1;
        let _ = write!(out, "{:<lw$}", metric.label());
        for p in &plan.schemes {
            let _ = write!(out, " {:>cw$}", p.name());
        }
        out.push('\n');
        for (label, row) in labels.iter().zip(&cells) {
            let _ = write!(out, "{label:<lw$}");
            for cell in row {
                let _ = write!(out, " {cell:>cw$}");
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if exp.report.tables.contains(&Metric::Slowdown) {
        out.push_str("slowdown: time over native's for the same workload, size and page sizes.\n");
    }
    if exp
        .report
        .tables
        .iter()
        .any(|m| matches!(m, Metric::SpeedupOverNested | Metric::SpeedupOverShadow))
    {
        out.push_str("speedup over nested/shadow: that scheme's time over each scheme's, for the same workload and page sizes (the tpt column: TPT's speedup).\n");
    }
    if skipped {
        out.push_str("n/a: not run: pv and the TPT schemes map a guest page with one entry, so need host pages at least as large.\n");
    }
    if exp.report.tables.iter().any(|m| {
        matches!(
            m,
            Metric::Seconds | Metric::NsPerAccess | Metric::CyclesPerAccess
        )
    }) {
        out.push_str(
            "±: half-width of a 95% Student-t interval over each run's measured windows.\n",
        );
    }
    out.push_str("Every counter of every run is in the JSON file (and in --json).\n");
    out
}
