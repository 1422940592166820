//! `vmlab guest`: the command runs a program as a guest and exits with its status; bad input is a
//! one-line error with status 2.

#![cfg(all(target_os = "linux", target_arch = "x86_64"))]

use std::process::Command;

const VMLAB: &str = env!("CARGO_BIN_EXE_vmlab");

#[test]
fn vmlab_guest_runs_a_program_as_guest_pid_1_and_returns_its_status() {
    for m in ["ptrace", "seccomp-trace", "sigsys", "user-dispatch"] {
        let out = Command::new(VMLAB)
            .args([
                "guest",
                "--mechanism",
                m,
                "--hostname",
                "lab",
                "--",
                "sh",
                "-c",
                "echo $$ $(uname -n); exit 3",
            ])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "1 lab\n",
            "{m}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(3), "{m}");
    }
}

#[test]
fn vmlab_guest_count_and_strace_report_on_stderr() {
    let out = Command::new(VMLAB)
        .args(["guest", "-M", "sysemu", "--count", "--strace", "--", "true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success());
    assert!(
        err.contains("[pid 1] execve(\"") && err.contains("system calls trapped (sysemu)"),
        "{err}"
    );
}

#[test]
fn vmlab_guest_bad_input_is_one_line_and_status_2() {
    for args in [
        vec!["guest", "--mechanism", "nope", "--", "true"],
        vec!["guest", "--", "no-such-program-for-vmlab"],
        vec!["guest", "--mechanism", "ptrace"],
    ] {
        let out = Command::new(VMLAB).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{err}");
    }
}
