//! `vmlab report DIR`: renders the results `vmlab reproduce` wrote (NAME.json, and NAME.svg
//! beside it) as one self-contained HTML page per experiment, NAME.html beside the JSON.
//! The page is the library's (`vmlab_core::lab::html`); this module finds the files and
//! writes the pages.

use crate::{CliError, UsageError};
use clap::Args;
use std::path::{Path, PathBuf};
use vmlab_core::lab::{html, ExperimentReport, Shard};

pub const AFTER_HELP: &str = "Examples:\n  \
    vmlab report results                  every experiment under results/ (results/NAME/NAME.json)\n  \
    vmlab report results/tpt              one experiment's directory: writes results/tpt/tpt.html\n  \
    vmlab reproduce tpt --quick --html    run and render in one step\n\n\
    DIR is a directory that holds NAME.json files, or whose subdirectories do (one level down).\n\
    Each report of `vmlab reproduce` becomes NAME.html beside it: the heading, the figure\n\
    (NAME.svg, embedded), a table per metric (a row per workload and page sizes, a column per\n\
    scheme), every run's numbers and specification, the combinations not run, the method and the\n\
    provenance. The page needs nothing else to open: no network, no script, no external style or\n\
    font, so it can be mailed or archived. Other JSON files (labt's, guest's) are skipped with a\n\
    note on stderr, the parts of a sharded run (part-I-of-N.json, for `vmlab merge`) without\n\
    one; a DIR with no experiment report is an error (exit 2).";

#[derive(Args)]
pub struct ReportArgs {
    /// A results directory: NAME.json files (from `vmlab reproduce`) in it or in its
    /// subdirectories, e.g. results or results/tpt.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn report(args: ReportArgs) -> Result<(), CliError> {
    let dir = &args.dir;
    let unreadable = |e: std::io::Error| {
        UsageError(format!(
            "cannot read results directory {}: {e}",
            dir.display()
        ))
    };
    if !std::fs::metadata(dir).map_err(unreadable)?.is_dir() {
        return Err(UsageError(format!(
            "{} is not a directory; give the directory `vmlab reproduce` wrote (e.g. results or results/tpt)",
            dir.display()
        ))
        .into());
    }
    let mut candidates = json_files(dir).map_err(unreadable)?;
    for sub in subdirectories(dir).map_err(unreadable)? {
        // A subdirectory that cannot be listed holds nothing we can render.
        candidates.extend(json_files(&sub).unwrap_or_default());
    }
    let mut skipped: Vec<String> = Vec::new();
    let mut written: Vec<PathBuf> = Vec::new();
    for json in &candidates {
        let report = match std::fs::read_to_string(json)
            .map_err(|e| e.to_string())
            .and_then(|text| ExperimentReport::from_json(&text).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(why) => {
                skipped.push(format!("{}: {why}", json.display()));
                continue;
            }
        };
        let svg = std::fs::read_to_string(json.with_extension("svg")).ok();
        let page = html::render(&report, svg.as_deref());
        let path = json.with_extension("html");
        std::fs::write(&path, page)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
        written.push(path);
    }
    if written.is_empty() {
        let why = skipped
            .first()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        return Err(UsageError(format!(
            "no experiment results in {}: no NAME.json of `vmlab reproduce` there or one level down{why}",
            dir.display()
        ))
        .into());
    }
    for s in &skipped {
        eprintln!("note: skipped {s}");
    }
    for path in &written {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The `.json` files directly in `dir`, sorted, but the parts of a sharded run
/// (`part-I-of-N.json`, which `vmlab merge` reads).
fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let is_part = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .and_then(Shard::from_file_name)
            .is_some()
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "json") && !is_part(p))
        .collect();
    out.sort();
    Ok(out)
}

/// The directories directly in `dir`, sorted.
fn subdirectories(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}
