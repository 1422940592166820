//! `vmlab run`: one workload under one or more schemes (and seeds), and `vmlab rerun`: the
//! runs of a `vmlab run --json` report again. The comparison is the library's
//! (`vmlab_core::lab::compare`); this module renders it: progress bars, the table, the JSON.

use crate::args::{RerunArgs, RunArgs};
use crate::progress::CountProgress;
use crate::progress::RunProgress;
use crate::{table, CliError, UsageError};
use std::ops::ControlFlow;
use vmlab_core::engine::RunConfig;
use vmlab_core::lab::compare::Event;
use vmlab_core::lab::rerun::Report;
use vmlab_core::lab::{ComparisonReport, ExperimentReport, LabError, SettingNames};
use vmlab_core::provenance::shell_command;
use vmlab_core::scheme::Paging;
use vmlab_core::stats::RunReport;

/// The command line's error for a lab error: exit 2 for the user's mistakes, 1 for failures.
pub(crate) fn cli_error(e: LabError) -> CliError {
    if e.is_user_error() {
        CliError::Usage(UsageError(e.to_string()))
    } else {
        CliError::Run(e.to_string())
    }
}

pub fn run(args: RunArgs) -> Result<(), CliError> {
    let comparison = args.comparison()?;
    let profile = comparison.spec.profile().map_err(cli_error)?;
    if comparison
        .paging()
        .map_err(cli_error)?
        .contains(&Paging::Native)
    {
        if let Some(flags) = args.sim.host_only_flags() {
            eprintln!("warning: {flags}: host backing, which native paging has not; the native run ignores it");
        }
    }
    let several_seeds = comparison.seeds > 1;
    let report = comparison
        .run_with(
            profile,
            SettingNames::Flags,
            &shell_command(crate::argv()),
            &mut bars(several_seeds),
        )
        .map_err(cli_error)?;
    let written = match &args.out {
        Some(dir) => write_files(&report, dir)?,
        None => Vec::new(),
    };
    if args.json {
        print!("{}", report.to_json().map_err(cli_error)?);
    } else {
        print!("{}", render(&report));
        if !written.is_empty() {
            println!();
            for path in written {
                println!("wrote {}", path.display());
            }
        }
    }
    Ok(())
}

/// `--out DIR`: run.csv, run.json and run.svg; the paths written.
fn write_files(
    report: &ComparisonReport,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", dir.display())))?;
    let files = [
        (dir.join("run.csv"), report.csv().map_err(cli_error)?),
        (dir.join("run.json"), report.to_json().map_err(cli_error)?),
        (dir.join("run.svg"), report.figure().to_svg()),
    ];
    for (path, text) in &files {
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// A progress bar per run, labelled with its scheme (and seed, with several).
pub(crate) fn bars(several_seeds: bool) -> impl FnMut(&Event<'_>) -> ControlFlow<()> {
    let label = move |config: &RunConfig| {
        if several_seeds {
            format!("{} seed {}", config.paging.name(), config.seed)
        } else {
            config.paging.name().to_string()
        }
    };
    let mut bar: Option<RunProgress> = None;
    move |event: &Event<'_>| {
        match *event {
            Event::Start { config, .. } => bar = Some(RunProgress::new(&label(config))),
            Event::Run { progress, .. } => {
                if let Some(bar) = &mut bar {
                    bar.update(progress);
                }
            }
            Event::Finished { .. } => {
                if let Some(bar) = bar.take() {
                    bar.finish();
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The table of the first seed's runs, then the summary over every seed.
pub(crate) fn render(report: &ComparisonReport) -> String {
    let first: Vec<RunReport> = report
        .runs
        .iter()
        .filter(|r| r.seed == report.comparison.spec.seed)
        .cloned()
        .collect();
    let mut out = table::render(&first);
    if let Some(line) = overrides_line(&report.provenance.overrides) {
        out.push_str(&line);
    }
    if let Some(across) = &report.across_seeds {
        out.push_str(&table::render_seeds(across));
    }
    out
}

/// "overrides latency.dram_ns=60, ... (--set, on top of the profile)" and a newline, when
/// there are any.
pub(crate) fn overrides_line(
    overrides: &std::collections::BTreeMap<String, String>,
) -> Option<String> {
    (!overrides.is_empty()).then(|| {
        let set: Vec<String> = overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "overrides: {} (on top of the profile file; the JSON has the effective profile)\n",
            set.join(", ")
        )
    })
}

/// `vmlab rerun FILE`: the comparison of a `vmlab run --json` report, run again on the
/// report's effective profile; says whether every number is identical (exit 0) or where
/// they differ (exit 1).
pub fn rerun(args: RerunArgs) -> Result<(), CliError> {
    let text = std::fs::read_to_string(&args.file)
        .map_err(|e| UsageError(format!("cannot read {}: {e}", args.file.display())))?;
    let old = match Report::from_json(&text)
        .map_err(|e| UsageError(format!("{}: {e}", args.file.display())))?
    {
        Report::Comparison(old) => old,
        Report::Experiment(old) => return rerun_experiment(&args, &old),
    };
    let rerun = old
        .rerun(
            &shell_command(crate::argv()),
            &mut bars(old.comparison.seeds > 1),
        )
        .map_err(cli_error)?;
    let runs = rerun.report.runs.len();
    if args.json {
        print!("{}", rerun.report.to_json().map_err(cli_error)?);
    } else {
        print!("{}", render(&rerun.report));
        if rerun.differences.is_empty() {
            println!(
                "rerun: identical: every number of the {runs} run(s) matches {}",
                args.file.display()
            );
        }
    }
    verdict(&rerun.differences, runs, &args.file)
}

/// `vmlab rerun NAME.json`: an experiment's runs again, from their specs, on every core.
fn rerun_experiment(args: &RerunArgs, old: &ExperimentReport) -> Result<(), CliError> {
    let progress = CountProgress::new(&format!("rerun {}", old.experiment), old.runs.len() as u64);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let rerun = old
        .rerun(&shell_command(crate::argv()), threads, &|_, _| {
            progress.inc();
            ControlFlow::Continue(())
        })
        .map_err(cli_error);
    progress.finish();
    let rerun = rerun?;
    let runs = rerun.report.runs.len();
    if args.json {
        print!("{}", rerun.report.to_json().map_err(cli_error)?);
    } else {
        print!("{}", table::render(&rerun.report.runs));
        if rerun.differences.is_empty() {
            println!(
                "rerun: identical: every number of the {runs} run(s) matches {}",
                args.file.display()
            );
        }
    }
    verdict(&rerun.differences, runs, &args.file)
}

/// Exit 0 when a rerun is identical, else an error naming the first differences.
fn verdict(differences: &[String], runs: usize, file: &std::path::Path) -> Result<(), CliError> {
    if differences.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = differences.iter().take(5).map(String::as_str).collect();
    Err(CliError::Run(format!(
        "rerun: different: {} number(s) of the {runs} run(s) differ from {}: {}{}",
        differences.len(),
        file.display(),
        shown.join("; "),
        if differences.len() > shown.len() {
            "; ..."
        } else {
            ""
        }
    )))
}
