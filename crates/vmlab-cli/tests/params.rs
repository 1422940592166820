//! Parameters through the real binary: `--set SECTION.KEY=VALUE` on run, reproduce and bench
//! (the effective profile in the JSON, times that move and counts that do not, one-line
//! errors), `vmlab rerun` of a `run --json` report, `run --out DIR`, and an experiment file
//! that sweeps profile keys and seeds.

mod common;

use common::{expect_usage_error, vmlab, vmlab_ok};
use serde_json::Value;
use std::path::PathBuf;

const TLB: &str = "tlb-bench:size=8M,accesses=50000";

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("params")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&vmlab_ok(args)).expect("JSON on stdout")
}

#[test]
fn set_changes_the_effective_profile_and_the_time_but_not_the_counts() {
    let base = json(&["run", "--json", "-w", TLB, "-p", "native,nested"]);
    let set = json(&[
        "run",
        "--json",
        "-w",
        TLB,
        "-p",
        "native,nested",
        "--set",
        "latency.dram_ns=45",
        "--set",
        "exits.ept_violation=100",
    ]);
    let (p, q) = (&base["provenance"], &set["provenance"]);
    assert_eq!(p["overrides"], serde_json::json!({}));
    assert_eq!(
        q["overrides"],
        serde_json::json!({"latency.dram_ns": "45", "exits.ept_violation": "100"})
    );
    assert_eq!(p["profile"]["latency"]["dram_ns"], 90.0);
    assert_eq!(q["profile"]["latency"]["dram_ns"], 45.0);
    assert_eq!(q["profile"]["exits"]["ept_violation"], 100.0);
    // The profile file is the same: its fingerprint is too.
    assert_eq!(p["machine_fingerprint"], q["machine_fingerprint"]);
    // What ran is recorded with the overrides.
    assert_eq!(
        set["comparison"]["spec"]["overrides"]["latency.dram_ns"],
        "45"
    );
    let (a, b) = (
        base["runs"].as_array().expect("runs"),
        set["runs"].as_array().expect("runs"),
    );
    assert_eq!(a.len(), 2);
    for (a, b) in a.iter().zip(b) {
        for key in [
            "tlb_misses",
            "walks",
            "walk_refs",
            "page_faults",
            "data_served",
        ] {
            assert_eq!(a[key], b[key], "{key} of {}", a["paging"]);
        }
        let (ta, tb) = (
            a["seconds"].as_f64().unwrap(),
            b["seconds"].as_f64().unwrap(),
        );
        assert!(tb < ta, "{}: {ta} then {tb}", a["paging"]);
    }
    // The table says what was overridden.
    let table = vmlab_ok(&[
        "run",
        "-w",
        TLB,
        "-p",
        "native",
        "--set",
        "latency.dram_ns=45",
    ]);
    assert!(
        table.contains("overrides: latency.dram_ns=45 (on top of"),
        "{table}"
    );
}

#[test]
fn bad_overrides_are_one_line_and_exit_2() {
    fn run(set: &str) -> Vec<&str> {
        vec!["run", "-w", TLB, "-p", "native", "--set", set]
    }
    let line = expect_usage_error(&run("latency.dram=60"), &["unknown key 'latency.dram'"]);
    assert!(line.contains("dram_ns"), "lists the valid keys: {line}");
    expect_usage_error(&run("lantency.dram_ns=60"), &["unknown section 'lantency'"]);
    expect_usage_error(&run("latency.dram_ns=fast"), &["takes a number"]);
    expect_usage_error(
        &run("latency.dram_ns=-1"),
        &["latency.dram_ns = -1 is out of range"],
    );
    expect_usage_error(&run("latency.dram_ns"), &["SECTION.KEY=VALUE"]);
    expect_usage_error(
        &[
            "bench",
            "-w",
            TLB,
            "-n",
            "1000",
            "--set",
            "tlb.stlb.entrys=1",
        ],
        &["unknown key 'tlb.stlb.entrys'", "entries"],
    );
    expect_usage_error(
        &["reproduce", "tpt", "--quick", "--set", "core.ipcc=2"],
        &["unknown key 'core.ipcc'"],
    );
    expect_usage_error(
        &["reproduce", "labt", "--set", "latency.dram_ns=60"],
        &["unknown key 'latency.dram_ns'", "exits.mfmsr"],
    );
}

#[test]
fn rerun_of_a_run_json_reproduces_identical_numbers() {
    let d = dir("rerun");
    let file = d.join("r.json");
    let out = vmlab_ok(&[
        "run",
        "--json",
        "-w",
        TLB,
        "-p",
        "native,nested",
        "--seeds",
        "2",
        "--set",
        "latency.llc=60",
    ]);
    std::fs::write(&file, &out).expect("written");
    let path = file.to_str().expect("UTF-8");
    let text = vmlab_ok(&["rerun", path]);
    assert!(
        text.ends_with(&format!(
            "rerun: identical: every number of the 4 run(s) matches {path}\n"
        )),
        "{text}"
    );
    let again: Value = serde_json::from_str(&vmlab_ok(&["rerun", path, "--json"])).expect("JSON");
    let old: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(again["runs"], old["runs"]);
    assert_eq!(again["across_seeds"], old["across_seeds"]);
    assert_eq!(
        again["provenance"]["overrides"],
        old["provenance"]["overrides"]
    );
    assert!(again["provenance"]["command"]
        .as_str()
        .is_some_and(|c| c.contains("rerun")));

    // The rerun uses the report's profile, not the file: a profile file edited since does
    // not change it.
    let profile = d.join("p.toml");
    std::fs::write(&profile, vmlab_ok(&["profile", "show"])).expect("written");
    let mine = vmlab_ok(&[
        "run",
        "--json",
        "-w",
        TLB,
        "-p",
        "nested",
        "-m",
        profile.to_str().unwrap(),
    ]);
    let mine_path = d.join("mine.json");
    std::fs::write(&mine_path, &mine).expect("written");
    let edited = std::fs::read_to_string(&profile)
        .unwrap()
        .replace("dram_ns = 90.0", "dram_ns = 10.0");
    assert!(
        edited.contains("dram_ns = 10.0"),
        "the profile file is edited"
    );
    std::fs::write(&profile, edited).expect("written");
    let text = vmlab_ok(&["rerun", mine_path.to_str().unwrap()]);
    assert!(text.contains("rerun: identical"), "{text}");

    // A number edited in the report is found: exit 1, the difference named.
    let mut tampered: Value = serde_json::from_str(&out).expect("JSON");
    let misses = tampered["runs"][1]["tlb_misses"].as_u64().unwrap();
    tampered["runs"][1]["tlb_misses"] = (misses + 1).into();
    let bad = d.join("bad.json");
    std::fs::write(&bad, serde_json::to_string_pretty(&tampered).unwrap()).expect("written");
    let out = vmlab(&["rerun", bad.to_str().unwrap()]);
    assert_eq!(out.code, Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("rerun: different: 1 number(s)")
            && out.stderr.contains("runs[1].tlb_misses"),
        "{}",
        out.stderr
    );
    // Not a run report: one line, exit 2.
    let notes = d.join("notes.json");
    std::fs::write(&notes, "{\"runs\": []}").expect("written");
    expect_usage_error(
        &["rerun", notes.to_str().unwrap()],
        &[
            "neither a `vmlab run --json` report",
            "experiment's NAME.json",
        ],
    );
    expect_usage_error(&["rerun", "/no/such.json"], &["cannot read /no/such.json"]);
}

#[test]
fn run_out_writes_csv_json_and_svg() {
    let d = dir("out");
    let text = vmlab_ok(&[
        "run",
        "-w",
        TLB,
        "-p",
        "native,nested,tpt",
        "--out",
        d.to_str().unwrap(),
    ]);
    for name in ["run.csv", "run.json", "run.svg"] {
        assert!(
            text.contains(&format!("wrote {}", d.join(name).display())),
            "{text}"
        );
    }
    let csv = std::fs::read_to_string(d.join("run.csv")).expect("run.csv");
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("workload,scheme,seed,guest_pages,host_pages,seconds,"));
    assert_eq!(lines.len(), 4, "a row per scheme:\n{csv}");
    assert!(lines[2].contains(",nested,1,4k,4k,"), "{csv}");
    let svg = std::fs::read_to_string(d.join("run.svg")).expect("run.svg");
    assert_eq!(
        svg.matches("class=\"series\"").count(),
        3,
        "a series per scheme"
    );
    // run.json is the --json report, which rerun takes.
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
    assert_eq!(file["runs"].as_array().unwrap().len(), 3);
    let again = vmlab_ok(&["rerun", d.join("run.json").to_str().unwrap()]);
    assert!(again.contains("rerun: identical"), "{again}");
}

const SWEEP: &str = r#"
name = "dram"
title = "DRAM latency and seeds"
summary = "a sweep for tests"
duration = "seconds"
schemes = ["native", "nested"]
sweep = { "latency.dram_ns" = [60, 120], seed = [1, 2] }

[[workloads]]
spec = "tlb-bench:size=8M,accesses=20000"

[sample]
accesses = 0
warmup = 0

[quick]
accesses = 0
warmup = 0

[report]
tables = ["seconds", "slowdown"]
plot = { kind = "bars", metric = "seconds" }
"#;

#[test]
fn an_experiment_sweep_expands_into_runs_with_swept_columns() {
    let d = dir("sweep");
    let file = d.join("dram.toml");
    std::fs::write(&file, SWEEP).expect("written");
    let out = d.join("results");
    let text = vmlab_ok(&[
        "reproduce",
        file.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "-j",
        "2",
        "--set",
        "latency.llc=40",
    ]);
    assert!(
        text.contains("overrides: latency.llc=40 (on top of the profile file"),
        "{text}"
    );
    for label in ["latency.dram_ns=60 seed=1", "latency.dram_ns=120 seed=2"] {
        assert!(text.contains(label), "row {label}:\n{text}");
    }
    let csv = std::fs::read_to_string(out.join("dram.csv")).expect("dram.csv");
    let mut rows = csv::Reader::from_reader(csv.as_bytes());
    let header = rows.headers().expect("header").clone();
    let col = |name: &str| header.iter().position(|h| h == name).expect(name);
    let (dram, seed, seconds, misses) = (
        col("latency.dram_ns"),
        col("seed"),
        col("seconds"),
        col("tlb_misses"),
    );
    let rows: Vec<csv::StringRecord> = rows.records().map(|r| r.expect("row")).collect();
    // 2 DRAM latencies x 2 seeds x 2 schemes.
    assert_eq!(rows.len(), 8, "{csv}");
    let of = |d: &str, s: &str, scheme: &str| {
        rows.iter()
            .find(|r| &r[dram] == d && &r[seed] == s && &r[4] == scheme)
            .unwrap_or_else(|| panic!("{d} {s} {scheme}"))
    };
    for s in ["1", "2"] {
        let (fast, slow) = (of("60", s, "nested"), of("120", s, "nested"));
        assert_eq!(fast[misses], slow[misses], "counts do not move");
        let t = |r: &csv::StringRecord| r[seconds].parse::<f64>().unwrap();
        assert!(t(fast) < t(slow), "time does");
    }
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("dram.json")).unwrap()).unwrap();
    assert_eq!(report["sweep"]["seed"], serde_json::json!(["1", "2"]));
    assert_eq!(report["overrides"]["latency.llc"], "40");
    assert_eq!(report["provenance"]["profile"]["latency"]["llc"], 40.0);
    let specs = report["specs"].as_array().expect("specs");
    assert_eq!(specs.len(), 8);
    assert_eq!(specs[0]["overrides"]["latency.dram_ns"], "60");
    assert_eq!(specs[0]["overrides"]["latency.llc"], "40");
    let seeds: Vec<u64> = report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(seeds, [1, 1, 2, 2, 1, 1, 2, 2]);

    // The report reruns from its JSON alone: every run from its spec (its sweep point and
    // overrides) on the effective profile, with the experiment file gone.
    std::fs::remove_file(&file).expect("removed");
    let json = out.join("dram.json");
    let path = json.to_str().expect("UTF-8");
    let text = vmlab_ok(&["rerun", path]);
    assert!(
        text.ends_with(&format!(
            "rerun: identical: every number of the 8 run(s) matches {path}\n"
        )),
        "{text}"
    );
    let again: Value = serde_json::from_str(&vmlab_ok(&["rerun", path, "--json"])).unwrap();
    assert_eq!(again["runs"], report["runs"]);
    assert_eq!(again["specs"], report["specs"]);
    // A number changed in the file is found, exit 1.
    let mut edited = report.clone();
    edited["runs"][5]["walks"] = serde_json::json!(1);
    std::fs::write(&json, serde_json::to_string(&edited).unwrap()).unwrap();
    let failed = vmlab(&["rerun", path]);
    assert_eq!(failed.code, Some(1));
    assert!(
        failed.stderr.contains("runs[5].walks: 1 then"),
        "{}",
        failed.stderr
    );

    // A sweep of something that is not a setting: one line, exit 2.
    std::fs::write(&file, SWEEP).expect("written");
    std::fs::write(&file, SWEEP.replace("seed = [1, 2]", "seeds = [1, 2]")).unwrap();
    expect_usage_error(
        &["reproduce", file.to_str().unwrap()],
        &["unknown setting 'seeds'", "fragmentation"],
    );
}

#[test]
fn help_teaches_set_rerun_and_out() {
    let run = vmlab_ok(&["run", "--help"]);
    for flag in [
        "--set <SECTION.KEY=VALUE>",
        "latency.dram_ns=60",
        "--out <DIR>",
    ] {
        assert!(run.contains(flag), "run --help: {flag}");
    }
    assert!(vmlab_ok(&["reproduce", "--help"]).contains("--set <SECTION.KEY=VALUE>"));
    assert!(vmlab_ok(&["bench", "--help"]).contains("--set <SECTION.KEY=VALUE>"));
    let rerun = vmlab_ok(&["rerun", "--help"]);
    assert!(rerun.contains("effective machine profile"), "{rerun}");
}
