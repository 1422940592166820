//! `vmlab list`: what can be run.

use crate::args::ListArgs;
use crate::CliError;
use std::fmt::Write as _;
use vmlab_core::cost::profile::BUILTIN;
use vmlab_core::cost::{Profile, DEFAULT_PROFILE};
use vmlab_core::engine::check::max_footprint;
use vmlab_core::scheme::Paging;
use vmlab_core::units::format_size;
use vmlab_core::workload::catalog;

/// Lines are wrapped to this many columns.
const WIDTH: usize = 100;

pub fn list(args: ListArgs) -> Result<(), CliError> {
    let profiles: Vec<Profile> = BUILTIN
        .iter()
        .map(|(name, _)| Profile::builtin(name).expect("built-in profiles are valid"))
        .collect();
    if args.json {
        let value = serde_json::json!({
            "workloads": catalog().iter().map(|w| serde_json::json!({
                "name": w.name,
                "summary": w.summary,
                "params": w.params.iter().map(|p| serde_json::json!({"key": p.key, "default": p.default, "help": p.help})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "schemes": Paging::ALL.iter().map(|p| serde_json::json!({"name": p.name(), "summary": p.summary()})).collect::<Vec<_>>(),
            "profiles": profiles.iter().map(|p| serde_json::json!({
                "name": p.machine.name,
                "description": p.machine.description,
                "max_footprint_native": format_size(max_footprint(p.machine.host_memory)),
                "max_footprint_vm": format_size(max_footprint(p.machine.guest_memory)),
            })).collect::<Vec<_>>(),
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).expect("serializable")
        );
        return Ok(());
    }
    print!("{}", text(&profiles));
    Ok(())
}

/// The text listing: every column as wide as its widest entry, long text wrapped under its
/// column.
fn text(profiles: &[Profile]) -> String {
    let workloads = catalog();
    let mut out = String::new();
    let name_w = workloads
        .iter()
        .map(|w| w.name.len())
        .chain(Paging::ALL.iter().map(|p| p.name().len()))
        .chain(profiles.iter().map(|p| p.machine.name.len()))
        .max()
        .unwrap_or(8);
    let params = workloads.iter().flat_map(|w| &w.params);
    let key_w = params.clone().map(|p| p.key.len()).max().unwrap_or(4);
    let default_w = params.map(|p| p.default.len()).max().unwrap_or(4);
    out.push_str("Workloads (--workload NAME[:key=value,...]):\n");
    for w in &workloads {
        row(&mut out, &format!("  {:<name_w$} ", w.name), w.summary);
        for p in &w.params {
            let lead = format!("      {:<key_w$} default {:<default_w$} ", p.key, p.default);
            row(&mut out, &lead, p.help);
        }
    }
    let default = profiles
        .iter()
        .find(|p| p.name() == DEFAULT_PROFILE)
        .or(profiles.first());
    out.push('\n');
    let mut sizes =
        "Sizes are binary: 4K = 4096 bytes, 1G = 2^30 (also written 4k, 4KiB, 1GiB; 4KB and \
        4GB are refused as ambiguous). A size parameter takes 4K to 64T, but a run also needs its \
        footprint, page tables and kernel to fit the machine's memory"
            .to_string();
    if let Some(p) = default {
        let _ = write!(
            sizes,
            ": under the default profile {} that is at most {} natively (host_memory {}) and {} in a VM (guest_memory {})",
            p.name(),
            format_size(max_footprint(p.machine.host_memory)),
            format_size(p.machine.host_memory),
            format_size(max_footprint(p.machine.guest_memory)),
            format_size(p.machine.guest_memory),
        );
    }
    sizes.push('.');
    row(&mut out, "", &sizes);
    out.push_str("\nPaging schemes (--paging a,b,...):\n");
    for p in Paging::ALL {
        row(&mut out, &format!("  {:<name_w$} ", p.name()), p.summary());
    }
    out.push_str("\nMachine profiles (--machine NAME, or a path to a .toml file):\n");
    for p in profiles {
        row(
            &mut out,
            &format!("  {:<name_w$} ", p.machine.name),
            &p.machine.description,
        );
    }
    out
}

/// `lead` then `text` wrapped at [`WIDTH`] columns, continuation lines indented to the
/// width of `lead`.
fn row(out: &mut String, lead: &str, text: &str) {
    let indent = lead.chars().count();
    let room = WIDTH.saturating_sub(indent).max(30);
    let mut line = String::new();
    let mut first = true;
    let flush = |line: &str, first: &mut bool, out: &mut String| {
        if *first {
            out.push_str(lead);
            *first = false;
        } else {
            out.push_str(&" ".repeat(indent));
        }
        out.push_str(line);
        out.push('\n');
    };
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > room {
            flush(&line, &mut first, out);
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() || first {
        flush(&line, &mut first, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_wrap_under_their_column() {
        let mut out = String::new();
        let words = "word ".repeat(40);
        row(&mut out, "  lead ", &words);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1);
        assert!(lines[0].starts_with("  lead word"));
        for l in &lines {
            assert!(l.chars().count() <= WIDTH, "{l}");
        }
        for l in &lines[1..] {
            assert!(l.starts_with("       word"), "{l}");
        }
    }
}
