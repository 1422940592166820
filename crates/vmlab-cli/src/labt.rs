//! `vmlab reproduce labt`: the recorded e500 Linux guest (guests/e500/traces/) replayed
//! through every e500 hypervisor model; the table to stdout, CSV, JSON and SVG to a directory.
//! The experiment itself is the library's (`vmlab_core::lab::e500`).

use crate::args::ReproduceArgs;
use crate::{CliError, UsageError};
use std::fmt::Write as _;
use std::path::PathBuf;
use vmlab_core::cost::e500::E500Costs;
use vmlab_core::hv::e500::registry::{ModelSpec, MODELS};
use vmlab_core::lab::e500::{self, LabtReport};
use vmlab_core::provenance::shell_command;

/// The trace to replay (`e500::trace_to_replay`: `--trace FILE`, `--trace minimal`, else the
/// committed one).
fn trace_path(given: Option<PathBuf>) -> Result<PathBuf, CliError> {
    e500::trace_to_replay(given).map_err(|wanted| {
        UsageError(format!(
            "labt replays the recorded e500 guest: run from the repository root or give --trace FILE ({wanted})"
        ))
        .into()
    })
}

pub fn reproduce(args: ReproduceArgs) -> Result<(), CliError> {
    if args.html {
        return Err(UsageError(
            "--html is for experiments of experiments/*.toml (vmlab reproduce --list); labt writes no HTML report yet"
                .into(),
        )
        .into());
    }
    if args.traces.is_some() {
        return Err(
            UsageError("--traces is for experiments that replay recordings (apps)".into()).into(),
        );
    }
    let overrides: Vec<(String, String)> = args.set.overrides()?.into_iter().collect();
    let costs = E500Costs::builtin()
        .with_overrides(&overrides)
        .map_err(|e| UsageError(e.to_string()))?;
    let command = shell_command(std::env::args());
    let report = match &args.reprice {
        Some(saved) => {
            e500::reprice_file(saved, &costs, &command).map_err(|e| UsageError(e.to_string()))?
        }
        None => {
            let trace = trace_path(args.trace.clone())?;
            let specs: Vec<&ModelSpec> = MODELS.iter().collect();
            e500::run(&trace, &costs, &specs, &command).map_err(|e| match e {
                e500::LabtError::Trace(t) => CliError::Usage(UsageError(t.to_string())),
                e => CliError::Run(e.to_string()),
            })?
        }
    };
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results").join("labt"));
    std::fs::create_dir_all(&out_dir)
        .map_err(|e| CliError::Run(format!("cannot create {}: {e}", out_dir.display())))?;
    let files = [
        (out_dir.join("labt.csv"), report.to_csv()),
        (out_dir.join("labt.json"), report.to_json()),
        (out_dir.join("labt.svg"), report.figure().to_svg()),
    ];
    for (path, text) in &files {
        std::fs::write(path, text)
            .map_err(|e| CliError::Run(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        print!("{}", report.to_json());
    } else {
        let mut text = render(&report);
        for (path, _) in &files {
            let _ = writeln!(text, "wrote {}", path.display());
        }
        print!("{text}");
    }
    Ok(())
}

/// The text report: slowdown and exits per operation (benchmarks x configurations), then
/// each configuration's exits over PCs.
pub fn render(r: &LabtReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "experiment labt: the recorded e500 Linux guest under each hypervisor model\ntrace      {}\nmachine    {} ({} MHz, CPI {}; profiles/e500.toml)\n",
        r.trace, r.provenance.machine, r.frequency_mhz, r.cpi
    );
    let benches = r.benchmarks();
    let bw = benches.iter().map(|b| b.len()).max().unwrap_or(9).max(12);
    let cw = r.configs.iter().map(|c| c.len()).max().unwrap_or(8).max(9) + 1;
    let table = |out: &mut String, title: &str, cell: &dyn Fn(&str, &str) -> String| {
        let _ = write!(out, "{title:<bw$}");
        for c in &r.configs {
            let _ = write!(out, " {c:>cw$}");
        }
        out.push('\n');
        for b in &benches {
            let _ = write!(out, "{b:<bw$}");
            for c in &r.configs {
                let _ = write!(out, " {:>cw$}", cell(b, c));
            }
            out.push('\n');
        }
        out.push('\n');
    };
    table(&mut out, "time/op", &|b, c| {
        r.row(b, c)
            .map_or("-".into(), |x| time(x.seconds / x.ops as f64))
    });
    table(&mut out, "slowdown", &|b, c| {
        r.row(b, c)
            .map_or("-".into(), |x| format!("{:.2}", x.slowdown))
    });
    table(&mut out, "exits/op", &|b, c| {
        r.row(b, c)
            .map_or("-".into(), |x| format!("{:.1}", x.exits_per_op))
    });
    table(&mut out, "trace faults", &|b, c| {
        r.row(b, c)
            .map_or("-".into(), |x| x.tracing_faults.to_string())
    });
    for (segment, title) in [("boot", "boot"), ("total", "whole run")] {
        let rows: Vec<_> = r
            .pc_distribution
            .iter()
            .filter(|d| d.segment == segment)
            .collect();
        let Some(first) = rows.first() else {
            continue;
        };
        let _ = writeln!(out, "exits over guest PCs, {title} (PCs / share of exits)");
        let _ = write!(out, "{:<bw$} {:>10} {:>6}", "config", "exits", "PCs");
        for b in &first.bands {
            let _ = write!(out, " {:>14}", b.band);
        }
        out.push('\n');
        for d in rows {
            let _ = write!(out, "{:<bw$} {:>10} {:>6}", d.config, d.exits, d.pcs);
            for b in &d.bands {
                let _ = write!(
                    out,
                    " {:>14}",
                    format!("{} / {:.1}%", b.pcs, b.share * 100.0)
                );
            }
            out.push('\n');
        }
        out.push('\n');
    }
    if let Some(c) = &r.replay_check {
        let _ = writeln!(
            out,
            "replay check: {} of {} kernel access records translated to their recorded address ({} unmapped, {} elsewhere), {} tlbwe rejected{}; {} PID writes inferred\n",
            c.accesses_checked,
            c.accesses_checked + c.accesses_unmapped + c.accesses_mismatched,
            c.accesses_unmapped,
            c.accesses_mismatched,
            c.tlbwe_rejected,
            if c.sound() {
                ""
            } else {
                ": the replay differs from the recording"
            },
            c.pid_inferred,
        );
    }
    if let Some(line) = crate::run::overrides_line(&r.provenance.overrides) {
        out.push_str(&line);
    }
    out.push_str(
        "slowdown: time over bare's for the same benchmark. time = recorded instructions x CPI + the cycles each\nmodel adds (exits and their work, by the profile). Exits by reason, splits, merges: in the JSON and CSV.\n",
    );
    out
}

/// A duration with a unit that suits it.
fn time(s: f64) -> String {
    match s {
        s if s >= 1.0 => format!("{s:.2} s"),
        s if s >= 1e-3 => format!("{:.2} ms", s * 1e3),
        s => format!("{:.2} us", s * 1e6),
    }
}
