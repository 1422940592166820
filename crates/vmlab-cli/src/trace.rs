//! `vmlab trace info FILE`: summarise a recorded trace, an e500 guest's (`guests/e500/`) or an
//! x86-64 Linux program's (`docs/x86-trace.md`), told apart by their first bytes.

mod x86;

use crate::{CliError, UsageError};
use clap::{Args, Subcommand};
use std::fmt::Write;
use std::io::Read;
use std::path::{Path, PathBuf};
use vmlab_core::trace::e500::summary::{StatsReport, Summary};
use vmlab_core::trace::e500::{open, TraceError};

pub const AFTER_HELP: &str = "Examples:\n  \
    vmlab trace info guests/e500/traces/e500-linux-6.1-busybox.trace.zst          per-phase table\n  \
    vmlab trace info guests/e500/traces/e500-linux-6.1-busybox.trace.zst --json   every counter, per phase\n  \
    vmlab trace info ls.x86t                                                      an x86 program's summary\n\n\
    Two kinds of trace are read, told apart by their first bytes:\n\
    - e500: what guests/e500/build-and-record.sh records, a PowerPC e500v2 Linux guest under QEMU:\n  \
    every privileged instruction, exception entry, TLB write and kernel load/store, with phase\n  \
    markers around each benchmark. docs/e500-trace.md has the format.\n\
    - x86: an x86-64 Linux program and the processes it forks and execs, recorded under QEMU user\n  \
    mode: data references, code pages, system calls, mappings. Summarised: processes, threads,\n  \
    references by size, instructions, system calls by name, pages touched and how they grow,\n  \
    mapping changes, kernel writes. docs/x86-trace.md has the format.\n\n\
    The whole file is read and checked (version, structure, totals, CRC-32); a corrupt file is an\n\
    error. A truncated e500 trace is an error; an x86 trace without its trailer (still being\n\
    recorded, or cut short) is summarised up to its last whole chunk and says so.";

#[derive(Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub command: TraceCommand,
}

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Summarise a trace: an e500 guest's per phase (instructions, privileged executions by
    /// class and SPR, exceptions, TLB writes, kernel loads and stores), or an x86 program's
    /// (processes, references, system calls, pages touched, mappings).
    Info(InfoArgs),
}

#[derive(Args)]
pub struct InfoArgs {
    /// The trace file: e500 (.trace.zst as recorded, or decompressed) or x86.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print every counter as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
}

pub fn trace(args: TraceArgs) -> Result<(), CliError> {
    match args.command {
        TraceCommand::Info(a) => info(a),
    }
}

/// True when `path` starts with the x86 trace magic (an e500 trace is a zstd stream, or
/// starts with its own magic once decompressed). Unreadable files go to the e500 reader,
/// which names the problem.
fn is_x86(path: &Path) -> bool {
    let mut magic = [0u8; 8];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == vmlab_core::trace::x86::format::MAGIC)
}

fn info(args: InfoArgs) -> Result<(), CliError> {
    if is_x86(&args.file) {
        return x86::info(&args);
    }
    let reader = open(&args.file).map_err(|e| usage(&args, e))?;
    let summary = Summary::read(reader).map_err(|e| usage(&args, e))?;
    let rows = summary.reports();
    if args.json {
        let doc = serde_json::json!({
            "file": args.file.display().to_string(),
            "records": summary.records,
            "meta": summary.header.meta.lines().collect::<Vec<_>>(),
            "kernel_text": summary.header.kernel_text(),
            "phases": rows,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", render(&summary, &rows));
    }
    Ok(())
}

fn usage(args: &InfoArgs, e: TraceError) -> CliError {
    match e {
        TraceError::Open { .. } => CliError::Usage(UsageError(e.to_string())),
        e => CliError::Usage(UsageError(format!("{}: {e}", args.file.display()))),
    }
}

const CLASSES: [&str; 13] = [
    "mfmsr", "mtmsr", "wrtee", "wrteei", "rfi", "mfspr", "mtspr", "tlbwe", "tlbre", "tlbsx",
    "tlbivax", "tlbsync", "other",
];
const EXCEPTIONS: [(&str, &str); 9] = [
    ("dtlb", "data_tlb_miss"),
    ("itlb", "instruction_tlb_miss"),
    ("dsi", "data_storage"),
    ("isi", "instruction_storage"),
    ("syscall", "system_call"),
    ("program", "program"),
    ("dec", "decrementer"),
    ("ext", "external"),
    ("align", "alignment"),
];

fn render(s: &Summary, rows: &[StatsReport]) -> String {
    let mut out = String::new();
    let t = &s.total;
    let _ = writeln!(
        out,
        "{} records; {} instructions ({} user, {} kernel)",
        s.records,
        t.user_insns + t.kernel_insns,
        t.user_insns,
        t.kernel_insns
    );
    if let Some((a, b)) = s.header.kernel_text() {
        let _ = writeln!(out, "kernel text {a:#010x}..{b:#010x}");
    }
    for line in s.header.meta.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(out, "\nPer operation (boot, total, between: per run); PCs: distinct privileged PCs, how many cover 90% and 99% of executions");
    let _ = writeln!(
        out,
        "{:<14}{:>6}{:>12}{:>12}{:>10}{:>7}{:>6}{:>6}{:>10}{:>9}{:>9}{:>10}{:>10}",
        "phase",
        "ops",
        "user ins",
        "kern ins",
        "priv",
        "PCs",
        "90%",
        "99%",
        "exc",
        "tlbwe0",
        "tlbwe1",
        "loads",
        "stores"
    );
    for r in rows {
        let per = |n: u64| n as f64 / r.ops.max(1) as f64;
        let _ = writeln!(
            out,
            "{:<14}{:>6}{:>12.0}{:>12.0}{:>10.1}{:>7}{:>6}{:>6}{:>10.1}{:>9.1}{:>9.1}{:>10.0}{:>10.0}",
            r.phase,
            r.ops,
            per(r.user_insns),
            per(r.kernel_insns),
            r.privileged_per_op,
            r.distinct_pcs,
            r.pcs_90,
            r.pcs_99,
            r.exceptions_per_op,
            per(r.tlb0_writes),
            per(r.tlb1_writes),
            per(r.kernel_loads),
            per(r.kernel_stores),
        );
    }
    let _ = writeln!(out, "\nPrivileged executions per operation, by class");
    let _ = write!(out, "{:<14}", "phase");
    for c in CLASSES {
        let _ = write!(out, "{c:>9}");
    }
    let _ = writeln!(out);
    for r in rows {
        let _ = write!(out, "{:<14}", r.phase);
        for c in CLASSES {
            let n = r.privileged_by_class.get(c).copied().unwrap_or(0);
            let _ = write!(out, "{:>9.1}", n as f64 / r.ops.max(1) as f64);
        }
        let _ = writeln!(out);
    }
    let _ = writeln!(out, "\nException entries per operation, by kind (+br: the kernel's own branch to the vector on a page fault); user sc");
    let _ = write!(out, "{:<14}", "phase");
    for (short, _) in EXCEPTIONS {
        let _ = write!(out, "{short:>9}");
    }
    let _ = writeln!(out, "{:>9}{:>9}{:>9}", "dsi+br", "isi+br", "user sc");
    for r in rows {
        let per = |n: u64| n as f64 / r.ops.max(1) as f64;
        let _ = write!(out, "{:<14}", r.phase);
        for (_, long) in EXCEPTIONS {
            let _ = write!(
                out,
                "{:>9.1}",
                per(r.exceptions.get(long).copied().unwrap_or(0))
            );
        }
        let get = |k: &str| r.exceptions.get(k).copied().unwrap_or(0);
        let _ = writeln!(
            out,
            "{:>9.1}{:>9.1}{:>9.1}",
            per(get("data_storage (branch)")),
            per(get("instruction_storage (branch)")),
            per(r.user_syscalls)
        );
    }
    if let Some(total) = rows.first() {
        let _ = writeln!(out, "\nWhole run, privileged SPR accesses by SPR");
        for (what, m) in [
            ("mfspr", &total.mfspr_by_spr),
            ("mtspr", &total.mtspr_by_spr),
        ] {
            let mut v: Vec<_> = m.iter().collect();
            v.sort_by(|a, b| b.1.cmp(a.1));
            let list: Vec<String> = v.iter().map(|(k, n)| format!("{k} {n}")).collect();
            let _ = writeln!(out, "  {what}: {}", list.join(", "));
        }
    }
    out
}
