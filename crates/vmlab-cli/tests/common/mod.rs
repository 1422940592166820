//! Running the `vmlab` binary from the CLI tests.

#![allow(dead_code)] // each test binary uses its own subset

/// What one invocation of `vmlab` produced.
pub struct Out {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `vmlab` with `args`; fails the test if anything in its output looks like a panic.
pub fn vmlab(args: &[&str]) -> Out {
    let output = assert_cmd::cargo::cargo_bin_cmd!("vmlab")
        .args(args)
        .output()
        .expect("vmlab runs");
    let out = Out {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    };
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !text.contains("panicked"),
            "vmlab {args:?} panicked; {name}:\n{text}"
        );
    }
    out
}

/// Runs `vmlab` and expects success (status 0, nothing on stderr).
pub fn vmlab_ok(args: &[&str]) -> String {
    let out = vmlab(args);
    assert_eq!(
        out.code,
        Some(0),
        "vmlab {args:?} failed; stderr:\n{}",
        out.stderr
    );
    assert!(
        out.stderr.is_empty(),
        "vmlab {args:?} wrote to stderr:\n{}",
        out.stderr
    );
    out.stdout
}
