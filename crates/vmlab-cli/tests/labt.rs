//! `vmlab reproduce labt` on the minimal e500 trace (`--trace minimal`, the small one of the
//! two committed): the files it writes, the JSON rows' fields and counts, and its errors.

mod common;

use common::{vmlab, vmlab_ok};
use std::path::PathBuf;

#[test]
fn reproduce_labt_writes_rows_per_benchmark_and_config() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("labt-test");
    let json = vmlab_ok(&[
        "reproduce",
        "labt",
        "--json",
        "--trace",
        "minimal",
        "--out",
        out.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("--json prints one value");
    let rows = v["rows"].as_array().unwrap();
    let configs = v["configs"].as_array().unwrap();
    assert!(configs.iter().any(|c| c == "bare") && configs.iter().any(|c| c == "kvm"));
    // boot and the trace's 20 benchmarks, under every configuration.
    assert_eq!(rows.len(), 21 * configs.len());
    let row = |b: &str, c: &str| {
        rows.iter()
            .find(|r| r["benchmark"] == b && r["config"] == c)
            .unwrap_or_else(|| panic!("no row {b}/{c}"))
    };
    for field in [
        "benchmark",
        "config",
        "seconds",
        "ms_per_op",
        "exits",
        "exits_by_reason",
        "tracing_faults",
        "slowdown",
        "splits",
        "merges",
    ] {
        assert!(rows[0].get(field).is_some(), "rows lack {field}");
    }
    // bare is the baseline: no exits, slowdown 1.
    let bare = row("null_syscall", "bare");
    assert_eq!(bare["exits"], 0);
    assert_eq!(bare["slowdown"], 1.0);
    // kvm: each of the 2000 null system calls exits once as a system call.
    let kvm = row("null_syscall", "kvm");
    assert_eq!(kvm["exits_by_reason"]["syscall"], 2000);
    assert_eq!(kvm["ops"], 2000);
    assert!(kvm["slowdown"].as_f64().unwrap() > 1.0);
    // The PC distribution accounts for every exit of the run.
    for d in v["pc_distribution"].as_array().unwrap() {
        let bands = d["bands"].as_array().unwrap();
        assert_eq!(bands.len(), 6);
        let sum: u64 = bands.iter().map(|b| b["exits"].as_u64().unwrap()).sum();
        assert_eq!(sum, d["exits"].as_u64().unwrap(), "{}", d["config"]);
    }
    // The files: CSV with a line per row, JSON equal to stdout, a well-formed SVG.
    let csv = std::fs::read_to_string(out.join("labt.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    assert!(csv.starts_with("benchmark,config,ops,"));
    assert_eq!(
        std::fs::read_to_string(out.join("labt.json")).unwrap(),
        json
    );
    let svg = std::fs::read_to_string(out.join("labt.svg")).unwrap();
    roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert!(svg.contains("data-series=\"kvm\""));
}

#[test]
fn reproduce_labt_names_a_missing_trace_in_one_line() {
    let out = vmlab(&["reproduce", "labt", "--trace", "/no/such/trace.zst"]);
    assert_eq!(out.code, Some(2));
    let err = &out.stderr;
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/no/such/trace.zst"), "{err}");
}

#[test]
fn reproduce_lists_labt() {
    let one = vmlab_ok(&["reproduce", "labt", "--list"]);
    assert_eq!(one.lines().count(), 2, "{one}");
    assert!(one.contains("\n  labt ") && one.contains("e500"), "{one}");
    let help = vmlab_ok(&["reproduce", "--help"]);
    assert!(help.contains("labt") && help.contains("--trace"), "{help}");
}

#[test]
fn trace_is_refused_outside_labt() {
    let out = vmlab(&["reproduce", "tpt", "--quick", "--trace", "x.zst"]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--trace is for"), "{}", out.stderr);
}
