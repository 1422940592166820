//! `vmlab record [-o FILE] [--] PROGRAM ARGS...`: record a real x86-64 Linux program (and the
//! processes it forks and execs) under QEMU's user-mode emulator, into a trace that
//! `vmlab run -w trace:file=FILE` replays.

use crate::{CliError, UsageError};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use vmlab_core::record::{record as record_program, RecordError, RecordProgress, RecordSpec};
use vmlab_core::trace::x86::Sampling;

pub const AFTER_HELP: &str = "Examples:\n  \
    vmlab record -o ls.vmtrace -- ls -la /usr                 one program\n  \
    vmlab record -o pipe.vmtrace -- sh -c 'sort big | uniq -c | head'   a shell and what it runs\n  \
    vmlab record --sample 100M:1M -o long.vmtrace -- ./server   a long run, sampled (below)\n  \
    vmlab trace info ls.vmtrace                                what was recorded\n  \
    vmlab run -w trace:file=ls.vmtrace -p native,nested,shadow  replay it under each scheme\n\n\
    The program runs under qemu-x86_64 (Debian's qemu-user) with vmlab's recorder plugin, which\n\
    records every data reference (address, size, load or store), the instructions between them,\n\
    the code pages fetched from, every system call with its arguments and result, and the memory\n\
    the kernel writes for the program (read, recv, stat...). Forked children are recorded as\n\
    processes of their own; exec'd programs too, through a preloaded library that runs them\n\
    under the recorder (statically linked programs that exec, and popen's, are not followed).\n\
    Addresses are QEMU's: a fixed layout from 0x4000000000, no randomisation, kept as recorded.\n\n\
    Recording is slow: a loop of random stores ran 14x slower than natively (0.55 s, 7.9 s\n\
    recorded and written), a short program far more (QEMU's start-up). Ctrl-C stops the program and\n\
    still writes a valid trace of what ran (its trailer says it was interrupted); so does a\n\
    program that crashes. The plugin is built from source with the system's C compiler (cc, or\n\
    $CC) on first use and cached. docs/x86-trace.md has the format and the recorder's quirks.\n\n\
    --sample PERIOD:WINDOW[:WARM] keeps, of every PERIOD references of each thread, the last\n\
    WINDOW in full, each after a summary of the WARM references before it (their cache lines in\n\
    order of last use, to rebuild TLB and cache state); elsewhere only the first touch and first\n\
    store of each page, with every system call, fork, exec and exit. The replay's page faults and\n\
    page tables are the full recording's; TLB, walk and cache events are extrapolated from the\n\
    windows, with an interval (docs/model.md, \"Sampled recordings\").";

#[derive(Args)]
pub struct RecordArgs {
    /// The trace to write (default: PROGRAM's name with .vmtrace, in the current directory).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Keep the recorder's raw files beside the trace (FILE.raw/), for debugging.
    #[arg(long)]
    pub keep_raw: bool,
    /// Record a sample: of every PERIOD references of each thread, the last WINDOW in full,
    /// each after a summary of the WARM references before it (default 1M); outside windows
    /// only first touches and first stores of pages. Counts take K, M, G (1000s):
    /// `--sample 100M:1M`.
    #[arg(long, value_name = "PERIOD:WINDOW[:WARM]", value_parser = Sampling::parse)]
    pub sample: Option<Sampling>,
    /// The program to record, then its arguments (put `--` before them if any starts with -).
    #[arg(
        value_name = "PROGRAM",
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<String>,
}

pub fn record(args: RecordArgs) -> Result<(), CliError> {
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| UsageError("no program to record".to_owned()))?;
    let output = args.output.unwrap_or_else(|| {
        let name = std::path::Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "program".to_owned());
        PathBuf::from(format!("{name}.vmtrace"))
    });
    let spec = RecordSpec {
        program: program.clone(),
        args: rest.to_vec(),
        output: output.clone(),
        keep_raw: args.keep_raw,
        sample: args.sample,
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new_spinner();
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        bar
    });
    let recorded = record_program(&spec, &mut |p| {
        let Some(bar) = &bar else { return };
        let msg = match p {
            RecordProgress::Running { raw_bytes, images } => format!(
                "recording: {} raw from {images} process image{}",
                format_bytes(raw_bytes),
                if images == 1 { "" } else { "s" }
            ),
            RecordProgress::Merging { refs } => {
                format!("writing the trace: {refs} references")
            }
        };
        bar.set_message(msg);
        bar.tick();
    })
    .map_err(|e| match e {
        RecordError::Trace(_) | RecordError::Raw(_) => CliError::Run(e.to_string()),
        other => CliError::Usage(UsageError(other.to_string())),
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let t = &recorded.trailer.totals;
    let per_ref = if t.events.refs > 0 {
        recorded.bytes as f64 / t.events.refs as f64
    } else {
        0.0
    };
    eprintln!(
        "recorded {}: {} ({})",
        output.display(),
        recorded.trailer.end,
        if recorded.trailer.complete {
            "complete"
        } else {
            "cut short: the trace holds what ran until then"
        }
    );
    eprintln!(
        "  {} references ({} loads, {} stores), {} instructions, {} system calls, {} processes, {} threads",
        t.events.refs, t.loads, t.stores, t.instructions, t.events.syscalls, t.processes, t.threads
    );
    if let Some(s) = args.sample {
        eprintln!(
            "  sampled: the last {} of every {} references of each thread in full; {} of the program's {} references not written",
            s.window,
            s.period,
            t.unrecorded_refs,
            t.program_refs()
        );
    }
    eprintln!(
        "  {} written ({per_ref:.2} bytes per reference; {} raw)",
        format_bytes(recorded.bytes),
        format_bytes(recorded.raw_bytes)
    );
    if recorded.merge.unfinished > 0 {
        eprintln!(
            "  {} process(es) ended without an exit the recorder saw (killed, or cut short)",
            recorded.merge.unfinished
        );
    }
    Ok(())
}

/// A byte count in the largest binary unit that keeps it above 1.
fn format_bytes(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64),
        b if b >= 1 << 20 => format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64),
        b if b >= 1 << 10 => format!("{:.1} KiB", b as f64 / 1024.0),
        b => format!("{b} B"),
    }
}
