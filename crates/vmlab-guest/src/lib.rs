//! A user-level guest kernel: Linux on Linux.
//!
//! The guest kernel is an ordinary host process (the supervisor). It runs an unmodified program
//! and all of its descendants as guest processes, each one a host process, and intercepts their
//! system calls with one of several trap [`Mechanism`]s. It owns the guest's identity (its own
//! process ids, hostname, uid and gid) and its view of the file system (a guest root directory
//! that contains every path), and forwards everything else to the host on the guest's behalf.
//!
//! The mechanisms differ in how many host context switches one guest system call costs, which is
//! what the benchmark suite ([`bench`](mod@bench)) measures. `docs/guest.md` explains the design and the
//! numbers, and lists every system call with how the guest kernel treats it ([`calls`]).
//!
//! Linux on x86-64 only: elsewhere [`run`] fails with a one-line error.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

pub mod bench;
pub mod sysnames;

#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod calls;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod imp;

/// How the guest kernel traps the guest's system calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mechanism {
    /// `PTRACE_SYSCALL`: the tracer stops the guest at every call's entry and exit.
    Ptrace,
    /// `PTRACE_SYSEMU`: one stop per call; the guest kernel runs forwarded calls by rewinding
    /// the guest over its `syscall` instruction and single-stepping it.
    Sysemu,
    /// A seccomp filter returns `SECCOMP_RET_TRACE` for the calls the guest kernel must see; the
    /// rest run at native speed without the tracer.
    SeccompTrace,
    /// `SECCOMP_RET_USER_NOTIF`: a supervisor thread receives the calls the guest kernel must
    /// see on a notification descriptor; no ptrace at all.
    SeccompNotify,
    /// `SECCOMP_RET_TRAP`: a stub the guest kernel puts into each guest process catches SIGSYS
    /// and hands the call to the guest kernel through a shared page (no ptrace stop); the calls
    /// the host must run go the `SeccompNotify` way.
    Sigsys,
    /// `sigsys` with syscall user dispatch (PR_SET_SYSCALL_USER_DISPATCH) instead of the
    /// SECCOMP_RET_TRAP filter: every call of a program's main thread raises SIGSYS; the stub
    /// answers the guest kernel's calls as `sigsys` does and runs the rest itself from its own
    /// code, which dispatch lets through (the notify filter still sees them).
    UserDispatch,
}

impl Mechanism {
    /// Every mechanism, in the order of the benchmark table.
    pub const ALL: [Mechanism; 6] = [
        Mechanism::Ptrace,
        Mechanism::Sysemu,
        Mechanism::SeccompTrace,
        Mechanism::SeccompNotify,
        Mechanism::Sigsys,
        Mechanism::UserDispatch,
    ];

    /// The name `--mechanism` takes.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Ptrace => "ptrace",
            Mechanism::Sysemu => "sysemu",
            Mechanism::SeccompTrace => "seccomp-trace",
            Mechanism::SeccompNotify => "seccomp-notify",
            Mechanism::Sigsys => "sigsys",
            Mechanism::UserDispatch => "user-dispatch",
        }
    }

    /// The mechanism called `name`, or a one-line error listing the valid names.
    pub fn parse(name: &str) -> Result<Mechanism, GuestError> {
        Self::ALL.iter().copied().find(|m| m.name() == name).ok_or_else(|| {
            GuestError::Usage(format!("unknown mechanism '{name}'; valid mechanisms: {}", Self::names()))
        })
    }

    /// The valid names, comma-separated.
    pub fn names() -> String {
        Self::ALL.iter().map(|m| m.name()).collect::<Vec<_>>().join(", ")
    }

    /// Whether this host can run the mechanism: an error naming what is missing if not.
    pub fn check_host(self) -> Result<(), GuestError> {
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        {
            imp::check_host(self)
        }
        #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
        {
            Err(unsupported_platform())
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the guest kernel is asked to run, and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// The trap mechanism.
    pub mechanism: Mechanism,
    /// The guest root directory; `/` shares the host's file system.
    pub root: PathBuf,
    /// Print every guest system call the guest kernel sees, and its result, on stderr.
    pub strace: bool,
    /// The guest's hostname (uname's nodename).
    pub hostname: String,
    /// The guest's user id (real, effective and saved).
    pub uid: u32,
    /// The guest's group id (real, effective and saved).
    pub gid: u32,
    /// Pin the guest kernel and every guest process to this CPU.
    pub cpu: Option<usize>,
    /// Share the host's network. By default the guest has a network namespace of its own,
    /// with only a loopback interface (up), so that a guest running as host root cannot
    /// change the host's interfaces, addresses or routes.
    pub host_network: bool,
}

impl Config {
    /// The defaults: `mechanism`, root `/`, hostname `vmlab-guest`, uid and gid 0, unpinned,
    /// a network of its own.
    pub fn new(mechanism: Mechanism) -> Config {
        Config {
            mechanism,
            root: PathBuf::from("/"),
            strace: false,
            hostname: "vmlab-guest".into(),
            uid: 0,
            gid: 0,
            cpu: None,
            host_network: false,
        }
    }
}

/// How a guest run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// The exit status of guest pid 1, as a shell reports it: its exit code, or 128 + N when a
    /// signal N killed it.
    pub status: i32,
    /// The guest system calls the guest kernel handled (those its mechanism trapped), including
    /// `in_process`.
    pub trapped: u64,
    /// Of those, the calls answered inside the guest process without reaching the guest kernel
    /// (the `sigsys` stub's id calls); 0 for the other mechanisms.
    pub in_process: u64,
}

impl Outcome {
    /// The `--count` line: the calls trapped, and those answered in the process if any.
    pub fn count_line(&self, mechanism: Mechanism) -> String {
        let inside = if self.in_process > 0 {
            format!(", {} of them answered inside the guest process", self.in_process)
        } else {
            String::new()
        };
        format!("{} system calls trapped ({mechanism}{inside})", self.trapped)
    }
}

/// Why a guest could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestError {
    /// Bad input: an unknown mechanism, a missing program or root, a mechanism the host lacks.
    Usage(String),
    /// The host refused something the guest kernel needs.
    Host(String),
}

impl fmt::Display for GuestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GuestError::Usage(m) | GuestError::Host(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for GuestError {}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn unsupported_platform() -> GuestError {
    GuestError::Usage("vmlab guest runs on Linux on x86-64 only".into())
}

/// Runs `argv` (a program and its arguments; the program is looked up in the guest's `PATH`)
/// as guest pid 1 under `config`, with all its descendants, until pid 1 exits. Guest processes
/// left when pid 1 exits are killed, as in a pid namespace.
pub fn run(config: &Config, argv: &[OsString]) -> Result<Outcome, GuestError> {
    if argv.is_empty() {
        return Err(GuestError::Usage("name a program to run: vmlab guest [OPTIONS] -- PROGRAM [ARGS...]".into()));
    }
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        imp::run(config, argv)
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = config;
        Err(unsupported_platform())
    }
}
