//! `vmlab reproduce NAME --list-runs` and `--shard I/N`: an experiment's distinct runs, and
//! one part of them written as `part-I-of-N.json` for `vmlab merge`. Dealing the runs out and
//! the part's contents are the library's (`vmlab_core::lab::shard`); this module prints, shows
//! progress and writes the file.

use crate::progress::CountProgress;
use crate::run::cli_error;
use crate::CliError;
use serde::Serialize;
use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::Path;
use vmlab_core::lab::runner::Event;
use vmlab_core::lab::shard::{PlannedRun, ShardedPlan};
use vmlab_core::lab::{Experiment, PartialResult, PlanId, Shard};
use vmlab_core::provenance::shell_command;

/// `--list-runs`: every distinct run, numbered, in the runner's order; or with `json` the
/// plan's identity and the runs as JSON.
pub(super) fn list_runs(exp: Experiment, quick: bool, json: bool) -> Result<(), CliError> {
    let sharded = ShardedPlan::new(exp, quick).map_err(cli_error)?;
    let runs = sharded.runs();
    let text = if json {
        #[derive(Serialize)]
        struct Listing<'a> {
            plan: &'a PlanId,
            runs: &'a [PlannedRun],
        }
        let listing = Listing {
            plan: &sharded.id,
            runs: &runs,
        };
        // Keys sorted at every level, as in every JSON vmlab writes.
        serde_json::to_value(&listing)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .map_err(|e| CliError::Run(format!("cannot write the JSON: {e}")))?
            + "\n"
    } else {
        render_list(&sharded.id, &runs)
    };
    super::print_stdout(&text)
}

/// The text of `--list-runs`: a heading that says how many runs there are and how `--shard`
/// deals them out, then a line per run.
fn render_list(id: &PlanId, runs: &[PlannedRun]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} distinct run{}, plan fingerprint {}",
        id.name(),
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        id.fingerprint
    );
    let _ = writeln!(
        out,
        "in the order they run; --shard I/N runs those with (RUN - 1) mod N = I - 1\n"
    );
    let width = |f: &dyn Fn(&PlannedRun) -> usize, title: &str| {
        runs.iter().map(f).chain([title.len()]).max().unwrap_or(0)
    };
    let wr = width(&|r| r.run.to_string().len(), "run");
    let ws = width(&|r| r.spec.paging.len(), "scheme");
    let wg = width(&|r| r.spec.guest_pages.len(), "guest");
    let wh = width(&|r| r.spec.host_pages.len(), "host");
    let wl = width(&|r| r.label.len(), "label");
    let _ = writeln!(
        out,
        "{:>wr$}  {:<ws$}  {:<wg$}  {:<wh$}  {:<wl$}  workload",
        "run", "scheme", "guest", "host", "label"
    );
    for r in runs {
        let line = format!(
            "{:>wr$}  {:<ws$}  {:<wg$}  {:<wh$}  {:<wl$}  {}",
            r.run, r.spec.paging, r.spec.guest_pages, r.spec.host_pages, r.label, r.spec.workload
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    out
}

/// `--shard I/N`: runs part `shard` of the experiment's runs on `threads` threads and writes
/// `out_dir/part-I-of-N.json`, unless that file is already the complete part of this plan.
pub(super) fn run_part(
    exp: Experiment,
    quick: bool,
    shard: Shard,
    threads: usize,
    out_dir: &Path,
) -> Result<(), CliError> {
    let sharded = ShardedPlan::new(exp, quick).map_err(cli_error)?;
    let path = out_dir.join(shard.file_name());
    let name = sharded.id.name();
    if let Ok(text) = std::fs::read_to_string(&path) {
        match PartialResult::from_json(&text) {
            Ok(part) if part.completes(&sharded.id, shard) => {
                eprintln!(
                    "part {shard} of {name} is complete in {} (same plan, same build): not running it again; delete the file to rerun it",
                    path.display()
                );
                return Ok(());
            }
            _ => eprintln!(
                "note: {} is not the complete part {shard} of this plan by this build: running the part again",
                path.display()
            ),
        }
    }
    let runs = shard.runs(sharded.id.runs);
    let progress = CountProgress::new(
        &format!("{} {shard}", sharded.experiment.name),
        runs.len() as u64,
    );
    let provenance = crate::provenance(&sharded.profile, sharded.plan.seed);
    let part = sharded.run(
        shard,
        threads,
        &|event| {
            if let Event::Finished { .. } = event {
                progress.inc();
            }
            ControlFlow::Continue(())
        },
        provenance,
    );
    progress.finish();
    let text = part.map_err(cli_error)?.to_json().map_err(cli_error)?;
    std::fs::create_dir_all(out_dir)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", out_dir.display())))?;
    // Written whole, then renamed: a part cut short leaves no part file behind.
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, &path))
        .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    let mut numbers: Vec<String> = runs.iter().take(8).map(usize::to_string).collect();
    if runs.len() > 8 {
        numbers.push(format!("and {} more", runs.len() - 8));
    }
    let mut out = format!(
        "part {shard} of {name}: {} of its {} runs{}{}\nwrote {}\n",
        runs.len(),
        sharded.id.runs,
        if runs.is_empty() { "" } else { ": " },
        numbers.join(", ").replace(", and", " and"),
        path.display()
    );
    let dir = out_dir.display().to_string();
    let _ = writeln!(
        out,
        "when all {} parts are there: {}",
        shard.count(),
        shell_command(["vmlab", "merge", &dir, "-o", &dir])
    );
    super::print_stdout(&out)
}
