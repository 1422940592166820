//! `vmlab sensitivity ARGS...`: the sensitivity analysis is the Python package's
//! (`vmlab.sensitivity`, Morris elementary effects from SALib, over the sweep machinery), so
//! that the command, the library call and a notebook are one implementation. This runs
//! `PYTHON -m vmlab sensitivity ARGS...` with the Python named by `VMLAB_PYTHON` (else
//! `python3`), passing its output and exit status through.

use clap::Args;
use std::process::{Command, ExitCode};

pub const AFTER_HELP: &str = "Examples:\n  \
    vmlab sensitivity -w sysbench-mem:block=1G,mode=rnd -p native,nested,tpt --accesses 500000\n  \
    vmlab sensitivity -w fork-bench:rss=64M -p native,shadow,nested --result shadow/nested --json\n  \
    vmlab sensitivity --labt results/labt/labt.json --result kvm/bare --benchmark boot\n\n\
    With --labt, the e500 table of a saved `vmlab reproduce labt`: each point's costs price the\n\
    saved counts again (milliseconds); only hv.host_tlb1_reserved, a size the models act on,\n\
    replays the trace, once per value.\n\n\
    Needs the Python package with SALib: pip install './crates/vmlab-py[sensitivity]' (README,\n\
    \"Python\"); VMLAB_PYTHON names the Python that has it (default: python3).";

#[derive(Args)]
pub struct SensitivityArgs {
    /// The options of `python -m vmlab sensitivity` (--help lists them).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<String>,
}

/// Runs the Python front end; its exit status is the command's.
pub fn sensitivity(args: SensitivityArgs) -> ExitCode {
    let python = std::env::var("VMLAB_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let missing = |why: &str| {
        eprintln!(
            "error: vmlab sensitivity runs the Python package vmlab with SALib, which {python} {why}: \
             pip install './crates/vmlab-py[sensitivity]' (or set VMLAB_PYTHON to a Python that has it)"
        );
        ExitCode::from(2)
    };
    // Ask first, so that a missing package is one line rather than a traceback.
    match Command::new(&python)
        .args(["-c", "import vmlab, SALib"])
        .output()
    {
        Err(e) => return missing(&format!("cannot be started ({e}), so it")),
        Ok(out) if !out.status.success() => {
            if args.args.iter().any(|a| a == "--help" || a == "-h") {
                // The options are the Python front end's; say what it is and how to get it.
                println!(
                    "Usage: vmlab sensitivity [ARGS]...\n\nVary a machine profile's assumptions over their ranges and rank them by how\nmuch they move a result (Morris elementary effects). The options are those of\n`python -m vmlab sensitivity`, which {python} cannot run: it lacks the Python\npackage vmlab with SALib (pip install './crates/vmlab-py[sensitivity]').\n\n{AFTER_HELP}"
                );
                return ExitCode::SUCCESS;
            }
            return missing("does not have");
        }
        Ok(_) => {}
    }
    match Command::new(&python)
        .args(["-m", "vmlab", "sensitivity"])
        .args(&args.args)
        .status()
    {
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(0, 255) as u8)),
        Err(e) => {
            eprintln!("error: cannot run {python}: {e}");
            ExitCode::from(1)
        }
    }
}
