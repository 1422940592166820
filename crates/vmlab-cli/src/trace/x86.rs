//! `vmlab trace info` on an x86 trace: the summary as tables, or as JSON.

use super::InfoArgs;
use crate::{CliError, UsageError};
use std::fmt::Write;
use vmlab_core::trace::x86::{open_unfinished, Summary, TraceError};

pub fn info(args: &InfoArgs) -> Result<(), CliError> {
    // Tolerant: a recording still running, or cut short, is summarised up to its last whole
    // chunk (the summary says so); corrupt chunks are still errors.
    let summary = open_unfinished(&args.file)
        .and_then(Summary::read)
        .map_err(|e| usage(args, e))?;
    if args.json {
        let doc = serde_json::json!({
            "file": args.file.display().to_string(),
            "format": "x86",
            "summary": summary,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", render(&summary));
    }
    Ok(())
}

fn usage(args: &InfoArgs, e: TraceError) -> CliError {
    match e {
        TraceError::Open { .. } => CliError::Usage(UsageError(e.to_string())),
        e => CliError::Usage(UsageError(format!("{}: {e}", args.file.display()))),
    }
}

fn share(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

fn render(s: &Summary) -> String {
    let mut out = String::new();
    let h = &s.header;
    let t = &s.totals;
    let _ = writeln!(out, "x86 trace of {} {}", h.program, h.args.join(" "));
    let _ = writeln!(out, "  cwd {}", h.cwd);
    let _ = writeln!(
        out,
        "  recorded {} on {} ({}; {})",
        h.date, h.host.hostname, h.host.kernel, h.host.cpu
    );
    let _ = writeln!(
        out,
        "  recorder {}, QEMU {}; interleaving: {}",
        h.recorder, h.qemu, h.interleaving
    );
    match (&s.trailer, &s.unfinished) {
        (Some(tr), _) => {
            let whole = if tr.complete {
                "complete"
            } else {
                "incomplete"
            };
            let _ = writeln!(out, "  ended: {} ({whole})", tr.end);
        }
        (None, Some(why)) => {
            let _ = writeln!(
                out,
                "  UNFINISHED: {why}; what follows covers the whole chunks"
            );
        }
        (None, None) => {}
    }
    let _ = writeln!(
        out,
        "\n{} events in {} chunks; {} processes, {} threads; {} instructions, {} references ({:.3} per instruction)",
        t.events.total(),
        t.chunks,
        t.processes,
        t.threads,
        t.instructions,
        t.events.refs,
        t.events.refs as f64 / t.instructions.max(1) as f64
    );
    if let Some(sample) = &h.sample {
        let _ = writeln!(
            out,
            "sampled: the last {} of every {} references of each thread in full, after a summary of the {} before; {} window events, {} warm-up lines; the program made {} references, {} of them not written (the rest of this summary covers what was written)",
            sample.window,
            sample.period,
            sample.warm,
            t.events.windows,
            t.events.warms,
            t.program_refs(),
            t.unrecorded_refs
        );
    }
    if !s.programs.is_empty() {
        let _ = writeln!(out, "programs executed: {}", s.programs.join(", "));
    }

    let _ = writeln!(out, "\nReferences by size");
    let _ = writeln!(
        out,
        "{:<10}{:>14}{:>14}{:>14}{:>9}",
        "size", "loads", "stores", "total", "share"
    );
    for size in [1u8, 2, 4, 8] {
        let l = s.loads_by_size.get(&size).copied().unwrap_or(0);
        let st = s.stores_by_size.get(&size).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "{:<10}{l:>14}{st:>14}{:>14}{:>8.1}%",
            format!("{size} B"),
            l + st,
            share(l + st, t.events.refs)
        );
    }
    let _ = writeln!(
        out,
        "{:<10}{:>14}{:>14}{:>14}{:>8.1}%",
        "all", t.loads, t.stores, t.events.refs, 100.0
    );

    let _ = writeln!(
        out,
        "\nPages touched (4 KiB, per process): {} data ({:.1} MiB), {} code",
        s.data_pages,
        s.data_pages as f64 / 256.0,
        s.code_pages
    );
    let _ = write!(out, "{:<14}", "refs");
    for p in &s.footprint {
        let _ = write!(out, "{:>12}", p.refs);
    }
    let _ = write!(out, "\n{:<14}", "data pages");
    for p in &s.footprint {
        let _ = write!(out, "{:>12}", p.data_pages);
    }
    let _ = write!(out, "\n{:<14}", "code pages");
    for p in &s.footprint {
        let _ = write!(out, "{:>12}", p.code_pages);
    }
    let _ = writeln!(out);

    let m = &s.mapping;
    let calls: Vec<String> = m.syscalls.iter().map(|(n, c)| format!("{n} {c}")).collect();
    let _ = writeln!(
        out,
        "\nMappings: {} regions at load ({:.1} MiB); calls: {}",
        m.map_events,
        m.mapped_bytes as f64 / f64::from(1 << 20),
        if calls.is_empty() {
            "none".to_string()
        } else {
            calls.join(", ")
        }
    );
    let _ = writeln!(
        out,
        "Kernel writes: {} ({} bytes)",
        t.events.kernel_writes, s.kernel_written_bytes
    );
    let exits: Vec<String> = s
        .exit_codes
        .iter()
        .map(|(c, n)| format!("{c} x{n}"))
        .collect();
    let _ = writeln!(
        out,
        "Forks: {}, execs: {}, exits: {}",
        t.events.forks,
        t.events.execs,
        if exits.is_empty() {
            "none".to_string()
        } else {
            exits.join(", ")
        }
    );

    let _ = writeln!(
        out,
        "\nSystem calls: {} ({} did not return)",
        t.events.syscalls, s.syscalls_not_returned
    );
    let mut by_count: Vec<_> = s.syscalls.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, n) in by_count {
        let _ = writeln!(
            out,
            "  {name:<24}{n:>12}{:>8.1}%",
            share(*n, t.events.syscalls)
        );
    }
    out
}
