//! `vmlab merge PARTS... -o DIR`: the parts of a sharded `vmlab reproduce NAME --shard I/N`
//! merged into NAME.csv, NAME.json and NAME.svg (and NAME.html), written by the same code as
//! an unsharded run's. Checking and merging the parts is the library's
//! (`vmlab_core::lab::shard::merge`); this module finds and reads the part files.

use crate::args::MergeArgs;
use crate::run::cli_error;
use crate::{CliError, UsageError};
use std::path::{Path, PathBuf};
use vmlab_core::lab::{self, PartialResult, Shard};
use vmlab_core::provenance::shell_command;

pub fn merge(args: MergeArgs) -> Result<(), CliError> {
    let mut parts = Vec::new();
    for path in part_files(&args.parts)? {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| UsageError(format!("cannot read part {}: {e}", path.display())))?;
        let part = PartialResult::from_json(&text)
            .map_err(|e| UsageError(format!("{}: {e}", path.display())))?;
        parts.push((path.display().to_string(), part));
    }
    let merged = lab::merge(&parts).map_err(cli_error)?;
    let mut provenance = merged.provenance;
    provenance.command = shell_command(crate::argv());
    let out_dir = args
        .out
        .unwrap_or_else(|| PathBuf::from("results").join(&merged.experiment.name));
    crate::reproduce::write_results(
        &merged.experiment,
        &merged.plan,
        &merged.rows,
        provenance,
        &out_dir,
        args.html,
        args.json,
    )
}

/// The part files `paths` name: each file as given, and the `part-I-of-N.json` files of each
/// directory (in order of N, then I).
fn part_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut out = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .map_err(|e| UsageError(format!("cannot read part {}: {e}", path.display())))?;
        if !meta.is_dir() {
            out.push(path.clone());
            continue;
        }
        let mut found: Vec<((usize, usize), PathBuf)> = std::fs::read_dir(path)
            .map_err(|e| UsageError(format!("cannot read directory {}: {e}", path.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter_map(|p| Some((part_number(&p)?, p)))
            .collect();
        if found.is_empty() {
            return Err(UsageError(format!(
                "no part files (part-I-of-N.json of `vmlab reproduce NAME --shard I/N`) in {}",
                path.display()
            )));
        }
        found.sort();
        out.extend(found.into_iter().map(|(_, p)| p));
    }
    Ok(out)
}

/// (N, I) of a file named `part-I-of-N.json`.
fn part_number(path: &Path) -> Option<(usize, usize)> {
    let shard = Shard::from_file_name(path.file_name()?.to_str()?)?;
    Some((shard.count(), shard.index()))
}
