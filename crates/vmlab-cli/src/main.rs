//! `vmlab`: the command-line front end of the simulator. A thin layer: it parses arguments,
//! loads the machine profile, calls `vmlab_core`, and renders reports.

mod args;
mod bench;
mod guest;
mod host;
mod labt;
mod list;
mod merge;
mod profile;
mod progress;
mod record;
mod report;
mod reproduce;
mod run;
mod sensitivity;
mod table;
mod trace;
mod usage;

use clap::Parser as _;
use std::process::ExitCode;
use vmlab_core::cost::Profile;
use vmlab_core::provenance::{shell_command, Provenance};

/// A user error (bad flag value, unknown workload or profile): one line, exit status 2.
#[derive(Debug)]
pub struct UsageError(pub String);

/// What a command can fail with.
#[derive(Debug)]
pub enum CliError {
    /// Bad input from the user: status 2.
    Usage(UsageError),
    /// The simulation itself failed (out of simulated memory, a simulator bug): status 1.
    Run(String),
}

impl From<UsageError> for CliError {
    fn from(e: UsageError) -> Self {
        CliError::Usage(e)
    }
}

/// The provenance of a report this process makes on `profile` with `seed`: this build's
/// version and commit, and this process's command line.
pub fn provenance(profile: &Profile, seed: u64) -> Provenance {
    Provenance::new(&shell_command(argv()), profile, seed)
}

/// This process's arguments, program first (not UTF-8 ones made so, as `std::env::args`
/// would panic on them).
pub(crate) fn argv() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// Let a closed stdout end the process quietly, as it does other Unix tools (`vmlab list |
/// head`): Rust ignores SIGPIPE, which would turn the write error into a panic.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: resetting one signal's disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    restore_default_sigpipe();
    let argv = argv();
    let cli = match args::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help and --version: stdout, status 0
        Err(e) => {
            eprintln!("error: {}", usage::one_line(&e, &argv));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        args::Command::Run(a) => run::run(a),
        args::Command::Rerun(a) => run::rerun(a),
        args::Command::List(a) => list::list(a),
        args::Command::Bench(a) => bench::bench(a),
        args::Command::Reproduce(a) => reproduce::reproduce(a),
        args::Command::Merge(a) => merge::merge(a),
        args::Command::Report(a) => report::report(a),
        args::Command::Profile(a) => profile::profile(a),
        args::Command::Guest(a) => return guest::guest(a),
        args::Command::Trace(a) => trace::trace(a),
        args::Command::Record(a) => record::record(a),
        args::Command::Sensitivity(a) => return sensitivity::sensitivity(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(UsageError(msg))) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(CliError::Run(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}
