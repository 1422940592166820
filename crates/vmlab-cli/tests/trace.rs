//! `vmlab trace info` on the committed e500 trace and on broken copies of it.

mod common;

use common::{expect_usage_error, vmlab_ok};
use std::path::PathBuf;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../guests/e500/traces/e500-linux-6.1.trace.zst")
}

#[test]
fn info_prints_every_phase_of_the_committed_trace() {
    let path = committed();
    let out = vmlab_ok(&["trace", "info", path.to_str().unwrap()]);
    for phase in [
        "boot",
        "echo_spawn",
        "find",
        "null_syscall",
        "fork_sh",
        "ctx_16p_32k",
    ] {
        assert!(out.contains(phase), "no row for {phase}:\n{out}");
    }
    let json: serde_json::Value = serde_json::from_str(&vmlab_ok(&[
        "trace",
        "info",
        "--json",
        path.to_str().unwrap(),
    ]))
    .expect("--json prints one JSON value");
    let phases = json["phases"].as_array().unwrap();
    assert_eq!(
        phases.len(),
        3 + 20,
        "total, boot, between and the 20 benchmarks"
    );
    assert_eq!(phases[0]["phase"], "total");
    // The whole run's privileged executions are the sum over boot, between and the phases.
    let sum: u64 = phases[1..]
        .iter()
        .map(|p| p["privileged"].as_u64().unwrap())
        .sum();
    assert_eq!(sum, phases[0]["privileged"].as_u64().unwrap());
}

#[test]
fn broken_traces_are_one_line_errors() {
    let bytes = std::fs::read(committed()).unwrap();
    let dir = std::env::temp_dir().join(format!("vmlab-trace-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let foreign = dir.join("foreign");
    std::fs::write(&foreign, b"not a trace at all").unwrap();
    for (path, mention) in [
        (cut.clone(), "cut.zst"),
        (foreign.clone(), "not a vmlab e500 trace"),
        (dir.join("missing"), "cannot read"),
    ] {
        expect_usage_error(&["trace", "info", path.to_str().unwrap()], &[mention]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
