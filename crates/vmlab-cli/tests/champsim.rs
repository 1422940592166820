//! `vmlab run -w champsim:file=PATH`: a small ChampSim trace runs with exact counts and its
//! provenance, and a missing, truncated or corrupt trace is a one-line usage error.

mod common;

use common::{expect_usage_error, vmlab_ok};
use serde_json::Value;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmlab-cli-champsim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A ChampSim record: ip, branch and register bytes zero, then 2 destination (store) and 4
/// source (load) memory operands.
fn record(ip: u64, loads: [u64; 4], stores: [u64; 2]) -> Vec<u8> {
    let mut r = ip.to_le_bytes().to_vec();
    r.extend_from_slice(&[0; 8]);
    for a in stores.iter().chain(&loads) {
        r.extend_from_slice(&a.to_le_bytes());
    }
    assert_eq!(r.len(), 64);
    r
}

/// Three instructions: a load and a store to two pages of one 2 MiB region, then nothing,
/// then a load of the first page again.
fn trace() -> Vec<u8> {
    let base = 0x1000_0000_0000u64;
    [
        record(0x400000, [base, 0, 0, 0], [base + 0x1000, 0]),
        record(0x400004, [0; 4], [0; 2]),
        record(0x400008, [base + 8, 0, 0, 0], [0; 2]),
    ]
    .concat()
}

#[test]
fn a_small_trace_runs_with_exact_counts_and_its_provenance() {
    let path = scratch("small.champsim");
    std::fs::write(&path, trace()).unwrap();
    let spec = format!("champsim:file={}", path.display());
    let out: Value = serde_json::from_str(&vmlab_ok(&[
        "run",
        "--json",
        "-w",
        &spec,
        "-p",
        "native,nested",
    ]))
    .unwrap();
    for run in out["runs"].as_array().unwrap() {
        assert_eq!(run["accesses_total"], 3, "{run}");
        assert_eq!(run["accesses_simulated"], 3, "{run}");
        assert_eq!(run["page_faults"], 2, "{run}");
    }
    let header = &out["provenance"]["inputs"][0]["header"];
    assert_eq!(header["format"], "champsim");
    assert_eq!(header["compression"], "none");
    assert_eq!(header["records"], 3);
    assert_eq!(header["pages"], 2);
    assert!(header["mapping"].as_str().unwrap().starts_with("synthetic"));
    // --accesses caps the replay.
    let out: Value = serde_json::from_str(&vmlab_ok(&[
        "run",
        "--json",
        "-w",
        &spec,
        "-p",
        "native",
        "--accesses",
        "1",
        "--warmup",
        "0",
    ]))
    .unwrap();
    assert_eq!(out["runs"][0]["accesses_simulated"], 1);
}

#[test]
fn missing_truncated_and_corrupt_traces_are_one_line_errors() {
    let bytes = trace();
    let mut xz = vec![0xFD, b'7', b'z', b'X', b'Z', 0];
    xz.extend_from_slice(&[0x55; 40]);
    let variants: Vec<(&str, Option<Vec<u8>>, &str)> = vec![
        ("missing", None, "cannot read"),
        ("empty", Some(Vec::new()), "holds no record"),
        (
            "truncated",
            Some(bytes[..100].to_vec()),
            "ends inside record 1",
        ),
        ("corrupt.xz", Some(xz), "xz stream broken at record 0"),
        (
            "corrupt.gz",
            Some(vec![0x1F, 0x8B, 1, 2, 3]),
            "gzip stream broken",
        ),
    ];
    for (name, content, mention) in variants {
        let path = scratch(name);
        if let Some(content) = content {
            std::fs::write(&path, content).unwrap();
        }
        let spec = format!("champsim:file={}", path.display());
        expect_usage_error(
            &["run", "-w", &spec, "-p", "native"],
            &[mention, "champsim"],
        );
    }
    expect_usage_error(
        &["run", "-w", "champsim", "-p", "native"],
        &["missing parameter \"file\""],
    );
    let path = scratch("skip.champsim");
    std::fs::write(&path, trace()).unwrap();
    let spec = format!("champsim:file={},skip=4", path.display());
    expect_usage_error(
        &["run", "-w", &spec, "-p", "native"],
        &["fewer than skip=4"],
    );
}
