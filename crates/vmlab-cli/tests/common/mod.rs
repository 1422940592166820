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
    vmlab_env(args, &[])
}

/// [`vmlab`] with environment variables set.
pub fn vmlab_env(args: &[&str], env: &[(&str, &str)]) -> Out {
    let output = assert_cmd::cargo::cargo_bin_cmd!("vmlab")
        .args(args)
        .envs(env.iter().copied())
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

/// Expects a usage error: status 2, nothing on stdout, and exactly one stderr line
/// `error: ...` that contains every one of `mentions`. Returns that line.
pub fn expect_usage_error(args: &[&str], mentions: &[&str]) -> String {
    expect_usage_error_env(args, &[], mentions)
}

/// [`expect_usage_error`] with environment variables set.
pub fn expect_usage_error_env(args: &[&str], env: &[(&str, &str)], mentions: &[&str]) -> String {
    let out = vmlab_env(args, env);
    assert_eq!(
        out.code,
        Some(2),
        "vmlab {args:?}: want status 2; stderr:\n{}",
        out.stderr
    );
    assert!(
        out.stdout.is_empty(),
        "vmlab {args:?}: want empty stdout, got:\n{}",
        out.stdout
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "vmlab {args:?}: want one stderr line, got:\n{}",
        out.stderr
    );
    let line = lines[0];
    assert!(
        line.starts_with("error: "),
        "vmlab {args:?}: stderr line does not start with 'error: ': {line}"
    );
    for m in mentions {
        assert!(
            line.contains(m),
            "vmlab {args:?}: error does not mention {m:?}: {line}"
        );
    }
    line.to_string()
}
