//! `vmlab guest`: run a program under the user-level guest kernel (crate `vmlab-guest`), and
//! `vmlab reproduce guest`: its benchmark suite.

use crate::args::ReproduceArgs;
use crate::{CliError, UsageError};
use clap::Args;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use vmlab_guest::{Config, GuestError, Mechanism};

pub const AFTER_HELP: &str = "Examples:\n  \
    vmlab guest -- sh -c 'echo $$; uname -n'           guest pid 1, the guest's hostname\n  \
    vmlab guest --mechanism ptrace --strace -- ls /     every call and its result on stderr\n  \
    vmlab guest --root /srv/tree -- /bin/sh             a shell that sees /srv/tree as /\n  \
    vmlab reproduce guest --quick                       the benchmark table: each mechanism's cost\n\n\
    Mechanisms: ptrace (PTRACE_SYSCALL, two stops per call), sysemu (PTRACE_SYSEMU, one stop),\n\
    seccomp-trace (only the calls the guest kernel must see stop), seccomp-notify (a supervisor\n\
    thread answers, no ptrace), sigsys (a stub in each guest process answers the id calls itself,\n\
    uname and set*id through shared memory, no stop; the rest as seccomp-notify), user-dispatch\n\
    (sigsys with syscall user dispatch: every call of a program's main thread goes to the stub,\n\
    which runs the ones the guest kernel need not see itself). The exit status is the guest's (128+N if signal N killed it).\n\
    docs/guest.md explains the design and lists every system call.";

#[derive(Args)]
pub struct GuestArgs {
    /// Trap mechanism: ptrace, sysemu, seccomp-trace, seccomp-notify, sigsys, user-dispatch.
    #[arg(long, short = 'M', value_name = "M", default_value = "seccomp-trace")]
    pub mechanism: String,
    /// Guest root directory: every path the guest uses resolves inside it.
    #[arg(long, value_name = "DIR", default_value = "/")]
    pub root: PathBuf,
    /// Print each guest system call and its result on stderr (guest pids).
    #[arg(long)]
    pub strace: bool,
    /// The guest's hostname.
    #[arg(long, value_name = "NAME", default_value = "vmlab-guest")]
    pub hostname: String,
    /// The guest's user id.
    #[arg(long, value_name = "UID", default_value_t = 0)]
    pub uid: u32,
    /// The guest's group id.
    #[arg(long, value_name = "GID", default_value_t = 0)]
    pub gid: u32,
    /// Pin the guest kernel and the guest to this CPU.
    #[arg(long, value_name = "N")]
    pub cpu: Option<usize>,
    /// Share the host's network (by default the guest has its own, with only a loopback).
    #[arg(long)]
    pub host_network: bool,
    /// At the end, print how many guest system calls were trapped (on stderr), and how many of
    /// them the sigsys (or user-dispatch) stub answered inside the guest process.
    #[arg(long)]
    pub count: bool,
    /// The program and its arguments (after --).
    #[arg(
        value_name = "PROGRAM",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub command: Vec<OsString>,
}

fn error(msg: &str) -> ExitCode {
    eprintln!("error: {msg}");
    ExitCode::from(2)
}

/// `vmlab guest`: the guest's exit status is the command's.
pub fn guest(a: GuestArgs) -> ExitCode {
    let mechanism = match Mechanism::parse(&a.mechanism) {
        Ok(m) => m,
        Err(e) => return error(&e.to_string()),
    };
    let config = Config {
        mechanism,
        root: a.root,
        strace: a.strace,
        hostname: a.hostname,
        uid: a.uid,
        gid: a.gid,
        cpu: a.cpu,
        host_network: a.host_network,
    };
    match vmlab_guest::run(&config, &a.command) {
        Ok(out) => {
            if a.count {
                eprintln!("vmlab guest: {}", out.count_line(mechanism));
            }
            ExitCode::from(out.status.clamp(0, 255) as u8)
        }
        Err(GuestError::Usage(m)) => error(&m),
        Err(GuestError::Host(m)) => {
            eprintln!("error: {m}");
            ExitCode::from(1)
        }
    }
}

/// `vmlab reproduce guest`: the benchmark suite under every mechanism.
pub fn reproduce(a: ReproduceArgs) -> Result<(), CliError> {
    if a.html {
        return Err(UsageError(
            "--html is for experiments of experiments/*.toml (vmlab reproduce --list); guest writes no HTML report yet"
                .into(),
        )
        .into());
    }
    if a.traces.is_some() {
        return Err(
            UsageError("--traces is for experiments that replay recordings (apps)".into()).into(),
        );
    }
    let exe = std::env::current_exe()
        .map_err(|e| CliError::Run(format!("cannot find the vmlab binary: {e}")))?;
    let opts = vmlab_guest::bench::Options {
        quick: a.quick,
        out: a.out.unwrap_or_else(|| PathBuf::from("results/guest")),
        vmlab: exe,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
    };
    let report = vmlab_guest::bench::reproduce(&opts).map_err(|e| match e {
        GuestError::Usage(m) => CliError::Usage(UsageError(m)),
        GuestError::Host(m) => CliError::Run(m),
    })?;
    if a.json {
        println!("{}", report.json);
    } else {
        print!("{}", report.text);
    }
    Ok(())
}
