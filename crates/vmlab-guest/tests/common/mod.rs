//! What the guest kernel's test binaries share: the runner and the mechanisms this host runs.

use std::process::Command;
use std::sync::OnceLock;

pub const GUEST: &str = env!("CARGO_BIN_EXE_vmlab-guest");
const MECHANISMS: [&str; 6] = ["ptrace", "sysemu", "seccomp-trace", "seccomp-notify", "sigsys", "user-dispatch"];

/// The mechanisms this host runs (probed once per test binary); the others are skipped with a
/// printed reason.
pub fn mechanisms() -> Vec<&'static str> {
    static RUNNABLE: OnceLock<Vec<&'static str>> = OnceLock::new();
    RUNNABLE
        .get_or_init(|| {
            MECHANISMS
                .iter()
                .copied()
                .filter(|m| {
                    let out = Command::new(GUEST).args(["-M", m, "--", "true"]).output().expect("run vmlab-guest");
                    if out.status.code() == Some(2) {
                        eprintln!("skipping mechanism {m}: {}", String::from_utf8_lossy(&out.stderr).trim());
                        return false;
                    }
                    true
                })
                .collect()
        })
        .clone()
}
