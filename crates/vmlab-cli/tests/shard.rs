//! Integration tests of job arrays: `vmlab reproduce NAME --list-runs`, `--shard I/N` and
//! `vmlab merge`, on a tiny experiment file of 18 distinct runs (with skipped combinations,
//! and native runs that stand for several host page sizes) that runs in about a second.

mod common;

use common::{expect_usage_error, vmlab, vmlab_ok};
use serde_json::Value;
use std::path::{Path, PathBuf};

const TINY: &str = r#"name = "tiny"
title = "a tiny experiment"
summary = "tlb-bench 1M and 4M under native, nested and pv, guest and host 4k and 2m pages"
duration = "seconds"
schemes = ["native", "nested", "pv"]
guest_pages = ["4k", "2m"]
host_pages = ["4k", "2m"]
[[workloads]]
spec = "tlb-bench:size={size},accesses=20000"
sizes = ["1M", "4M"]
[sample]
accesses = 20000
warmup = 1000
[quick]
accesses = 10000
warmup = 1000
[report]
tables = ["ns_per_access", "slowdown"]
plot = { kind = "lines", metric = "ns_per_access" }
"#;

/// Runs of TINY: per size, native under 2 guest page sizes (one run for both host page
/// sizes), nested under 4 page-size pairs, pv under 3 (guest 2m on host 4k is skipped).
const RUNS: usize = 2 * (2 + 4 + 3);

/// A fresh directory for one test, with the experiment file in it; returns the directory and
/// the file's path.
fn setup(name: &str) -> (PathBuf, String) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("shard")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("tiny.toml");
    std::fs::write(&file, TINY).expect("written");
    (dir, text(&file))
}

fn text(path: &Path) -> String {
    path.to_str().expect("UTF-8 path").to_string()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The JSON file's text without its provenance (the one part that names the command).
fn without_provenance(path: &Path) -> String {
    let mut json: Value = serde_json::from_str(&read(path)).expect("JSON");
    let object = json.as_object_mut().expect("an object");
    assert!(object.remove("provenance").is_some());
    serde_json::to_string_pretty(&json).expect("renders")
}

#[test]
fn three_parts_merge_into_the_files_of_one_unsharded_run() {
    let (dir, exp) = setup("three");
    let whole = dir.join("whole");
    let parts = dir.join("parts");
    let merged = dir.join("merged");
    vmlab_ok(&["reproduce", &exp, "-j", "2", "--out", &text(&whole)]);
    for i in 1..=3 {
        let shard = format!("{i}/3");
        let stdout = vmlab_ok(&[
            "reproduce",
            &exp,
            "--shard",
            &shard,
            "-j",
            "1",
            "--out",
            &text(&parts),
        ]);
        assert!(
            stdout.starts_with(&format!("part {i}/3 of tiny: 6 of its {RUNS} runs: ")),
            "{stdout}"
        );
        let file = parts.join(format!("part-{i}-of-3.json"));
        assert!(stdout.contains(&format!("wrote {}", file.display())));
    }
    let stdout = vmlab_ok(&["merge", &text(&parts), "-o", &text(&merged)]);
    assert!(stdout.contains("time per access (ns)"), "{stdout}");
    for ext in ["csv", "json", "svg"] {
        assert!(stdout.contains(&format!(
            "wrote {}",
            merged.join(format!("tiny.{ext}")).display()
        )));
    }
    for ext in ["csv", "svg"] {
        let name = format!("tiny.{ext}");
        assert_eq!(
            read(&merged.join(&name)),
            read(&whole.join(&name)),
            "{name}"
        );
    }
    assert_eq!(
        without_provenance(&merged.join("tiny.json")),
        without_provenance(&whole.join("tiny.json"))
    );
    // The merge's provenance names the merge; the profile and build are the parts'.
    let provenance = |path: &Path| -> Value {
        serde_json::from_str::<Value>(&read(path)).expect("JSON")["provenance"].clone()
    };
    let (m, w) = (
        provenance(&merged.join("tiny.json")),
        provenance(&whole.join("tiny.json")),
    );
    assert!(m["command"].as_str().is_some_and(|c| c.contains(" merge ")));
    for key in ["git_commit", "machine_fingerprint", "profile", "seed"] {
        assert_eq!(m[key], w[key], "{key}");
    }
    // Parts named one by one merge the same, in any order.
    let again = dir.join("again");
    vmlab_ok(&[
        "merge",
        &text(&parts.join("part-3-of-3.json")),
        &text(&parts.join("part-1-of-3.json")),
        &text(&parts.join("part-2-of-3.json")),
        "--out",
        &text(&again),
    ]);
    assert_eq!(read(&again.join("tiny.csv")), read(&whole.join("tiny.csv")));
    // Merged beside its parts, `vmlab report` renders the result and passes the parts by.
    vmlab_ok(&["merge", &text(&parts), "-o", &text(&parts)]);
    let stdout = vmlab_ok(&["report", &text(&parts)]);
    assert_eq!(
        stdout.trim_end(),
        format!("wrote {}", parts.join("tiny.html").display())
    );
}

#[test]
fn list_runs_numbers_every_distinct_run_in_order() {
    let (_, exp) = setup("list");
    let stdout = vmlab_ok(&["reproduce", &exp, "--list-runs"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "tiny: {RUNS} distinct runs, plan fingerprint fnv1a64:"
        )),
        "{stdout}"
    );
    let runs: Vec<&str> = lines
        .iter()
        .copied()
        .skip_while(|l| !l.trim_start().starts_with("run "))
        .skip(1)
        .collect();
    assert_eq!(runs.len(), RUNS, "{stdout}");
    for (i, line) in runs.iter().enumerate() {
        assert!(
            line.trim_start().starts_with(&format!("{} ", i + 1)),
            "{line}"
        );
    }
    assert!(runs[0].contains("native") && runs[0].contains("tlb-bench:size=1M"));

    let json: Value = serde_json::from_str(&vmlab_ok(&[
        "reproduce",
        &exp,
        "--list-runs",
        "--quick",
        "--set",
        "latency.dram_ns=60",
        "--json",
    ]))
    .expect("JSON");
    assert_eq!(json["plan"]["experiment"], "tiny");
    assert_eq!(json["plan"]["quick"], true);
    assert_eq!(json["plan"]["overrides"]["latency.dram_ns"], "60");
    assert_eq!(json["plan"]["runs"], RUNS);
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), RUNS);
    for (i, run) in runs.iter().enumerate() {
        assert_eq!(run["run"], i + 1);
        assert_eq!(run["spec"]["accesses"], 10000, "--quick's sample");
        assert_eq!(run["spec"]["overrides"]["latency.dram_ns"], "60");
    }
}

#[test]
fn a_completed_part_is_not_run_again() {
    let (dir, exp) = setup("rerun");
    let out = text(&dir.join("parts"));
    let part = dir.join("parts").join("part-2-of-2.json");
    vmlab_ok(&["reproduce", &exp, "--shard", "2/2", "--out", &out]);
    let first = read(&part);

    let again = vmlab(&["reproduce", &exp, "--shard", "2/2", "--out", &out]);
    assert_eq!(again.code, Some(0), "{}", again.stderr);
    assert!(again.stdout.is_empty(), "{}", again.stdout);
    assert_eq!(
        again.stderr.trim_end(),
        format!(
            "part 2/2 of tiny is complete in {} (same plan, same build): not running it again; delete the file to rerun it",
            part.display()
        )
    );
    assert_eq!(read(&part), first, "the file is left as it was");

    // Another plan (the quick variant) in the same place runs and replaces it.
    let other = vmlab(&[
        "reproduce",
        &exp,
        "--quick",
        "--shard",
        "2/2",
        "--out",
        &out,
    ]);
    assert_eq!(other.code, Some(0), "{}", other.stderr);
    assert!(
        other.stderr.contains("running the part again"),
        "{}",
        other.stderr
    );
    assert!(
        other.stdout.contains("part 2/2 of tiny --quick"),
        "{}",
        other.stdout
    );
    assert_ne!(read(&part), first);
}

#[test]
fn bad_shards_are_one_line_usage_errors() {
    let (_, exp) = setup("bad");
    for (shard, mention) in [
        ("0/0", "shard '0/0': N is the number of parts, at least 1"),
        ("3/2", "shard '3/2': there are only 2 parts, so I is 1 to 2"),
        ("x", "shard 'x': want I/N, part I of N parts counted from 1"),
        ("0/3", "parts are counted from 1"),
        ("1/", "want I/N"),
    ] {
        expect_usage_error(&["reproduce", &exp, "--shard", shard], &[mention]);
    }
    for name in ["labt", "guest"] {
        expect_usage_error(
            &["reproduce", name, "--shard", "1/2"],
            &[
                "--shard and --list-runs split an experiment file's simulated runs",
                name,
            ],
        );
        expect_usage_error(&["reproduce", name, "--list-runs"], &["runs whole"]);
    }
    expect_usage_error(
        &["reproduce", &exp, "--shard", "1/2", "--html"],
        &["--html"],
    );
}

#[test]
fn merge_refuses_parts_of_other_plans_and_missing_or_repeated_parts() {
    let (dir, exp) = setup("refuse");
    let parts = dir.join("parts");
    let other = dir.join("other");
    let out = dir.join("out");
    vmlab_ok(&[
        "reproduce",
        &exp,
        "--quick",
        "--shard",
        "1/3",
        "--out",
        &text(&parts),
    ]);
    vmlab_ok(&[
        "reproduce",
        &exp,
        "--quick",
        "--shard",
        "2/3",
        "--out",
        &text(&parts),
    ]);
    let one = text(&parts.join("part-1-of-3.json"));
    let two = text(&parts.join("part-2-of-3.json"));

    expect_usage_error(
        &["merge", &text(&parts), "-o", &text(&out)],
        &["missing part 3/3 of tiny --quick (runs 3, 6, 9, 12, 15, 18 of 18)"],
    );
    expect_usage_error(
        &["merge", &one, &two, &one, "-o", &text(&out)],
        &[&format!(
            "part 1/3 of tiny --quick given twice: {one} and {one}"
        )],
    );

    // Part 3 of the same experiment with a --set of its own: another plan.
    vmlab_ok(&[
        "reproduce",
        &exp,
        "--quick",
        "--set",
        "latency.dram_ns=60",
        "--shard",
        "3/3",
        "--out",
        &text(&other),
    ]);
    let three = text(&other.join("part-3-of-3.json"));
    expect_usage_error(
        &["merge", &one, &two, &three, "-o", &text(&out)],
        &[
            &format!("cannot merge {three} with {one}: parts of different plans"),
            "tiny --quick --set latency.dram_ns=60 (18 runs, fnv1a64:",
        ],
    );
    assert!(!out.exists(), "nothing is written");

    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    expect_usage_error(&["merge", &text(&empty)], &["no part files", "in "]);
    let not_a_part = dir.join("tiny.toml");
    expect_usage_error(
        &["merge", &text(&not_a_part)],
        &["not a part of a sharded run"],
    );
    expect_usage_error(
        &["merge", &text(&dir.join("nonexistent"))],
        &["cannot read part"],
    );
}
