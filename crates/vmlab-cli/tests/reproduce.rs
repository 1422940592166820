//! Integration tests of `vmlab reproduce`: every built-in experiment runs in its `--quick`
//! form through the real binary, and its outputs are checked for structure (the table, CSV
//! header and rows, the JSON's runs = workloads x sizes x page sizes x schemes, the SVG is
//! well-formed with one series per scheme) and for invariants between schemes, never for
//! timings. The experiments run concurrently (one test each), each on two threads.

mod common;

use common::{vmlab, vmlab_ok};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const ALL_SCHEMES: [&str; 7] = [
    "native",
    "nested",
    "shadow",
    "agile",
    "pv",
    "tpt",
    "tpt-prototype",
];
const SIZES: [&str; 11] = [
    "4K", "16K", "64K", "256K", "1M", "8M", "16M", "32M", "64M", "128M", "256M",
];
const CSV_HEADER: &str = "experiment,label,workload,size,scheme,guest_pages,host_pages,seconds,slowdown_vs_native,\
ns_per_access,cycles_per_access,us_per_fork,us_per_iter,tlb_misses,walks,walk_refs_per_walk,walk_refs,vm_exits,page_faults,\
accesses_simulated,extrapolated,accesses_warmup,warmup_end,seconds_ci,ns_per_access_ci,tlb_misses_per_kilo_access,\
walk_refs_per_kilo_access,speedup_over_nested,speedup_over_shadow";

/// A fresh output directory for one test.
fn out_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("reproduce")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What one quick experiment produced.
struct Experiment {
    /// `--json` on stdout.
    stdout_runs: Vec<Value>,
    /// NAME.json.
    file: Value,
    csv: Vec<csv::StringRecord>,
    svg: String,
}

impl Experiment {
    /// Runs `vmlab reproduce NAME --quick --json --out DIR -j 2` and reads its files.
    fn run(name: &str) -> Experiment {
        let dir = out_dir(name);
        let dir_text = dir.to_str().expect("UTF-8 path");
        let stdout = vmlab_ok(&[
            "reproduce",
            name,
            "--quick",
            "--json",
            "--out",
            dir_text,
            "-j",
            "2",
        ]);
        let json: Value = serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("{name}: stdout is not JSON ({e}):\n{stdout}"));
        let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
        assert_eq!(
            keys,
            ["provenance", "runs"],
            "{name}: --json prints {{\"provenance\": ..., \"runs\": [...]}} like vmlab run"
        );
        let stdout_runs = json["runs"].as_array().expect("runs").clone();
        let file: Value = serde_json::from_str(&read(&dir.join(format!("{name}.json"))))
            .expect("NAME.json is JSON");
        let text = read(&dir.join(format!("{name}.csv")));
        assert_eq!(text.lines().next(), Some(CSV_HEADER), "{name}: CSV header");
        let csv: Vec<csv::StringRecord> = csv::Reader::from_reader(text.as_bytes())
            .records()
            .map(|r| r.expect("well-formed CSV row"))
            .collect();
        let svg = read(&dir.join(format!("{name}.svg")));
        Experiment {
            stdout_runs,
            file,
            csv,
            svg,
        }
    }

    fn runs(&self) -> &Vec<Value> {
        self.file["runs"].as_array().expect("runs in NAME.json")
    }

    /// Checks the structure common to every experiment: `expected` runs plus `skipped`, the
    /// same runs on stdout and in the file, one CSV row per run, the file's provenance, and an
    /// SVG with one series per scheme.
    fn check_structure(&self, name: &str, schemes: &[&str], expected: usize, skipped: usize) {
        assert_eq!(self.file["experiment"], name);
        assert_eq!(self.file["quick"], true);
        let provenance = &self.file["provenance"];
        assert_eq!(provenance["vmlab_version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(provenance["machine"], "skylake");
        assert_eq!(
            provenance["machine_fingerprint"],
            vmlab_core::cost::Profile::builtin("skylake")
                .unwrap()
                .fingerprint_hex()
        );
        assert_eq!(provenance["seed"], 1);
        let command = provenance["command"].as_str().expect("command");
        assert!(
            command.contains(&format!("reproduce {name} --quick --json --out")),
            "{command}"
        );
        let file_schemes: Vec<&str> = self.file["schemes"]
            .as_array()
            .expect("schemes")
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        assert_eq!(file_schemes, schemes);
        assert_eq!(
            self.file["skipped"].as_array().expect("skipped").len(),
            skipped,
            "{name}: skipped combinations"
        );
        assert_eq!(self.runs().len(), expected, "{name}: runs");
        assert_eq!(
            &self.stdout_runs,
            self.runs(),
            "{name}: --json and NAME.json have the same runs"
        );
        assert_eq!(self.csv.len(), expected, "{name}: one CSV row per run");
        for (row, run) in self.csv.iter().zip(self.runs()) {
            assert_eq!(&row[0], name);
            assert_eq!(&row[2], run["workload"].as_str().unwrap());
            assert_eq!(&row[4], run["paging"].as_str().unwrap());
            assert_eq!(&row[5], run["guest_pages"].as_str().unwrap());
            assert_eq!(
                &row[6],
                run["host_pages"].as_str().unwrap(),
                "{name}: the CSV's host pages are the run's own"
            );
            let seconds: f64 = row[7].parse().expect("seconds is a number");
            // serde_json parses floats to within an ulp (no float_roundtrip feature).
            let want = run["seconds"].as_f64().unwrap();
            assert!(
                (seconds - want).abs() <= 1e-12 * want.abs(),
                "{name}: CSV seconds {seconds} vs JSON {want}"
            );
            if &row[4] == "native" {
                assert_eq!(&row[8], "1", "{name}: native's slowdown over itself");
            }
        }
        check_svg(name, &self.svg, schemes);
    }

    /// The run of `scheme` whose workload starts with `workload` and whose page sizes match.
    /// Native has no host pages: its rows say `-` whatever `host` is asked for.
    fn run_of(&self, workload: &str, scheme: &str, guest: &str, host: &str) -> &Value {
        let host = if scheme == "native" { "-" } else { host };
        let i = self
            .csv
            .iter()
            .position(|r| {
                r[2].starts_with(workload) && &r[4] == scheme && &r[5] == guest && &r[6] == host
            })
            .unwrap_or_else(|| panic!("no run of {workload} under {scheme} with {guest}/{host}"));
        &self.runs()[i]
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The SVG is well-formed XML with a title, axis labels, a legend entry and one series
/// group per scheme.
fn check_svg(name: &str, svg: &str, schemes: &[&str]) {
    let doc = roxmltree::Document::parse(svg)
        .unwrap_or_else(|e| panic!("{name}.svg is not well-formed XML: {e}"));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let series: BTreeSet<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .map(|n| n.attribute("data-series").expect("a series has a name"))
        .collect();
    assert_eq!(
        series,
        schemes.iter().copied().collect(),
        "{name}.svg: one series per scheme"
    );
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for scheme in schemes {
        assert!(texts.contains(scheme), "{name}.svg: legend lacks {scheme}");
    }
    assert!(
        texts.iter().any(|t| t.contains('(') && t.contains(')')),
        "{name}.svg: an axis label with its unit"
    );
    for series in doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
    {
        assert!(
            series.children().any(|c| c.is_element()),
            "{name}.svg: series {:?} draws nothing",
            series.attribute("data-series")
        );
    }
    // The labels over bars (a value, or a slowdown `1.23x`) use one precision per figure.
    let label_decimals: BTreeSet<usize> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("series"))
        .flat_map(|g| g.children())
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .filter_map(|t| t.split(' ').next())
        .filter(|v| v.trim_end_matches('x').parse::<f64>().is_ok())
        .map(|v| {
            v.trim_end_matches('x')
                .split('.')
                .nth(1)
                .map_or(0, str::len)
        })
        .collect();
    assert!(
        label_decimals.len() <= 1,
        "{name}.svg: bar labels mix precisions {label_decimals:?}"
    );
}

fn f(run: &Value, key: &str) -> f64 {
    run[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {}", run["workload"]))
}

fn u(run: &Value, key: &str) -> u64 {
    run[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not a count in {}", run["workload"]))
}

#[test]
fn tpt_runs_every_scheme_on_the_headline_workload() {
    let e = Experiment::run("tpt");
    e.check_structure("tpt", &ALL_SCHEMES, ALL_SCHEMES.len(), 0);
    let run = |s| e.run_of("sysbench-mem:block=4G", s, "4k", "4k");
    for s in ALL_SCHEMES {
        assert_eq!(
            run(s)["workload"],
            "sysbench-mem:block=4G,oper=write,mode=rnd,events=1"
        );
    }
    // Shadow paging walks the same 1D tables as native once set up: identical walk counts.
    for key in ["walks", "walk_refs", "tlb_misses"] {
        assert_eq!(u(run("native"), key), u(run("shadow"), key), "{key}");
    }
    assert!(f(run("nested"), "seconds") > f(run("native"), "seconds"));
    assert!(u(run("nested"), "ept_walk_refs") > 0 && u(run("native"), "ept_walk_refs") == 0);
    // TPT checks a tag per walk; the prototype has no tags.
    assert!(u(run("tpt"), "tag_checks") > 0);
    assert_eq!(u(run("tpt-prototype"), "tag_checks"), 0);
    assert_eq!(u(run("tpt"), "tag_violations"), 0);
}

#[test]
fn pagetable_has_a_fork_time_per_size_and_scheme() {
    let e = Experiment::run("pagetable");
    e.check_structure(
        "pagetable",
        &ALL_SCHEMES,
        SIZES.len() * ALL_SCHEMES.len(),
        0,
    );
    for size in SIZES {
        let spec = format!("fork-bench:rss={size},");
        let native = e.run_of(&spec, "native", "4k", "-");
        assert_eq!(u(native, "forks"), 10, "--quick forks 10 times");
        for s in ALL_SCHEMES {
            assert!(f(e.run_of(&spec, s, "4k", "4k"), "us_per_fork") > 0.0);
        }
        // Shadow paging adds exits to every fork.
        let shadow = e.run_of(&spec, "shadow", "4k", "4k");
        assert!(
            f(shadow, "us_per_fork") >= f(native, "us_per_fork"),
            "{size}"
        );
        assert!(u(shadow, "vm_exits") > 0);
    }
    // Copying page tables grows with the resident set.
    let first = f(
        e.run_of("fork-bench:rss=4K,", "native", "4k", "-"),
        "us_per_fork",
    );
    let last = f(
        e.run_of("fork-bench:rss=256M,", "native", "4k", "-"),
        "us_per_fork",
    );
    assert!(last > 10.0 * first, "{first} -> {last}");
}

#[test]
fn tlb_reports_per_access_costs_over_sizes() {
    let e = Experiment::run("tlb");
    e.check_structure("tlb", &ALL_SCHEMES, SIZES.len() * ALL_SCHEMES.len(), 0);
    for size in SIZES {
        let spec = format!("tlb-bench:size={size},");
        for s in ALL_SCHEMES {
            let r = e.run_of(&spec, s, "4k", "4k");
            assert!(f(r, "ns_per_access") > 0.0 && f(r, "cycles_per_access") > 0.0);
        }
    }
    // Past the STLB's reach nested paging's 2D walks cost more than native's.
    for size in ["64M", "128M", "256M"] {
        let spec = format!("tlb-bench:size={size},");
        let (native, nested) = (
            e.run_of(&spec, "native", "4k", "-"),
            e.run_of(&spec, "nested", "4k", "4k"),
        );
        assert!(
            f(nested, "ns_per_access") > f(native, "ns_per_access"),
            "{size}"
        );
        assert!(
            f(nested, "walk_refs_per_walk") > f(native, "walk_refs_per_walk"),
            "{size}"
        );
    }
    // Every run warmed up before its sample (the chase is long enough for both), and says
    // how much and why it stopped; the text says what the runs did.
    for r in e.runs() {
        let (warm, sim, total) = (
            u(r, "accesses_warmup"),
            u(r, "accesses_simulated"),
            u(r, "accesses_total"),
        );
        assert!(warm > 0 && warm + sim <= total, "{warm} + {sim} of {total}");
        assert_eq!(u(&r["sample"], "warmup_accesses"), warm);
        let end = r["sample"]["warmup_end"].as_str().unwrap();
        assert!(end == "converged" || end == "cap", "{end}");
    }
    assert!(e.file["warmup_used"]
        .as_str()
        .unwrap()
        .starts_with("warm-up used "));
    // A region the L1 TLB covers misses nothing under any scheme.
    for s in ALL_SCHEMES {
        assert_eq!(
            u(e.run_of("tlb-bench:size=4K,", s, "4k", "4k"), "tlb_misses"),
            0,
            "{s}"
        );
    }
}

#[test]
fn lmbench_has_every_op_under_every_scheme() {
    let e = Experiment::run("lmbench");
    e.check_structure("lmbench", &ALL_SCHEMES, 5 * ALL_SCHEMES.len(), 0);
    for op in ["fork-exit", "fork-exec", "page-fault", "mmap", "ctxsw"] {
        let spec = format!("lmbench:op={op},");
        let native = e.run_of(&spec, "native", "4k", "-");
        assert!(
            native["workload"].as_str().unwrap().ends_with("iters=20"),
            "--quick runs 20 iterations"
        );
        // Shadow paging traps on every one of these operations.
        assert!(
            f(e.run_of(&spec, "shadow", "4k", "4k"), "seconds") > f(native, "seconds"),
            "{op}"
        );
        assert_eq!(u(native, "vm_exits"), 0);
    }
}

#[test]
fn hugepages_crosses_guest_and_host_page_sizes() {
    let e = Experiment::run("hugepages");
    let schemes = ["native", "nested", "shadow", "agile", "tpt"];
    // 2 workloads x 2 guest x 3 host page sizes x 5 schemes, less tpt with guest 2M on host 4K.
    e.check_structure("hugepages", &schemes, 2 * 2 * 3 * 5 - 2, 2);
    for skipped in e.file["skipped"].as_array().unwrap() {
        assert_eq!(skipped["paging"], "tpt");
        assert_eq!(
            (
                skipped["guest_pages"].as_str(),
                skipped["host_pages"].as_str()
            ),
            (Some("2m"), Some("4k"))
        );
    }
    for w in ["sysbench-mem", "tlb-bench"] {
        let nested = |g, h| f(e.run_of(w, "nested", g, h), "ns_per_access");
        let native = |g| f(e.run_of(w, "native", g, "-"), "ns_per_access");
        // Larger host pages shorten the 2D walk; 1G host pages make nested like native.
        assert!(nested("4k", "4k") > nested("4k", "2m"), "{w}");
        assert!(nested("4k", "2m") >= nested("4k", "1g"), "{w}");
        assert!(
            (nested("4k", "1g") - native("4k")).abs() <= 0.02 * native("4k"),
            "{w}"
        );
        // Guest 2M pages help native; on 4K host pages nested still walks 4K EPT leaves.
        assert!(native("2m") < native("4k"), "{w}");
        assert!(nested("2m", "4k") > nested("2m", "2m"), "{w}");
        // Native has no host dimension: "-" in the CSV as in the JSON, one run for every host
        // page size of its group.
        let native_rows = e
            .csv
            .iter()
            .filter(|r| r[2].starts_with(w) && &r[4] == "native" && &r[5] == "4k")
            .map(|r| &r[6])
            .collect::<Vec<_>>();
        assert_eq!(native_rows, ["-", "-", "-"], "{w}");
    }
}

#[test]
fn remap_prices_host_page_moves_under_nested_paging_and_tpt() {
    let e = Experiment::run("remap");
    let schemes = ["nested", "tpt"];
    e.check_structure("remap", &schemes, 5 * 2, 0);
    // The quick variant reads 400,000 times: no move at "every 1M", then 4 to 4,000 moves.
    let run = |every: u64, scheme: &str| -> &Value {
        let workload = format!("host-remap:size=256M,accesses=400000,every={every}");
        e.runs()
            .iter()
            .find(|r| r["workload"] == workload.as_str() && r["paging"] == scheme)
            .unwrap_or_else(|| panic!("no run of {workload} under {scheme}"))
    };
    let every = [1_000_000u64, 100_000, 10_000, 1_000, 100];
    for scheme in schemes {
        let runs: Vec<&Value> = every.iter().map(|&n| run(n, scheme)).collect();
        let moves: Vec<u64> = runs.iter().map(|r| u(&r["remap"], "remaps")).collect();
        assert_eq!(
            moves,
            [0, 4, 40, 400, 4000],
            "{scheme}: one move per `every` reads"
        );
        for r in &runs {
            assert_eq!(
                u(&r["remap"], "global_flushes"),
                u(&r["remap"], "remaps"),
                "{scheme}: a global flush per move"
            );
        }
        // More frequent moves cost more per read.
        for pair in runs.windows(2) {
            assert!(
                f(pair[1], "ns_per_access") > f(pair[0], "ns_per_access"),
                "{scheme}: {} vs {}",
                pair[1]["workload"],
                pair[0]["workload"]
            );
        }
    }
    let ns = |n: u64, scheme| f(run(n, scheme), "ns_per_access");
    // With rare moves TPT keeps its native-speed walks; each move costs TPT more (tags, the
    // guest's notification and devirt fix-up), so at a move every 100 reads nested wins.
    assert!(ns(1_000_000, "tpt") < 0.6 * ns(1_000_000, "nested"));
    assert!(ns(100, "tpt") > ns(100, "nested"));
    assert_eq!(u(&run(100, "tpt")["remap"], "guest_notifications"), 4000);
    assert_eq!(
        u(&run(100, "nested")["remap"], "guest_notifications"),
        0,
        "nested paging needs no guest help"
    );
}

#[test]
fn the_table_names_rows_and_schemes_and_the_files_it_wrote() {
    let dir = out_dir("table");
    let stdout = vmlab_ok(&[
        "reproduce",
        "lmbench",
        "--quick",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        stdout.starts_with("experiment lmbench (quick): "),
        "{stdout}"
    );
    let header = stdout
        .lines()
        .find(|l| l.starts_with("time per iteration (us)"))
        .expect("a us/iter table");
    let columns: Vec<&str> = header.split_whitespace().skip(4).collect();
    assert_eq!(columns, ALL_SCHEMES);
    for op in ["fork-exit", "fork-exec", "page-fault", "mmap", "ctxsw"] {
        assert_eq!(
            stdout.lines().filter(|l| l.starts_with(op)).count(),
            2,
            "{op}: a row in each table"
        );
    }
    for ext in ["csv", "json", "svg"] {
        let path = dir.join(format!("lmbench.{ext}"));
        assert!(stdout.contains(&format!("wrote {}", path.display())));
        assert!(path.exists());
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let one = vmlab_ok(&[
        "reproduce",
        "lmbench",
        "--quick",
        "--json",
        "-j",
        "1",
        "--out",
        out_dir("j1").to_str().unwrap(),
    ]);
    let two = vmlab_ok(&[
        "reproduce",
        "lmbench",
        "--quick",
        "--json",
        "-j",
        "3",
        "--out",
        out_dir("j3").to_str().unwrap(),
    ]);
    // The provenance names each command line; the runs must match exactly.
    let runs = |out: &str| serde_json::from_str::<serde_json::Value>(out).unwrap()["runs"].clone();
    assert!(runs(&one).as_array().is_some_and(|r| !r.is_empty()));
    assert_eq!(runs(&one), runs(&two));
}

#[test]
fn list_describes_each_experiment_in_one_line() {
    let stdout = vmlab_ok(&["reproduce", "--list"]);
    for name in ["tpt", "pagetable", "tlb", "lmbench", "hugepages", "remap"] {
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.trim_start().starts_with(&format!("{name} ")))
            .collect();
        assert_eq!(lines.len(), 1, "{name}:\n{stdout}");
        assert!(
            lines[0].contains("full ~") && lines[0].contains("--quick "),
            "{name} says how long it takes: {}",
            lines[0]
        );
    }
}

#[test]
fn bad_experiments_are_one_line_usage_errors() {
    let cases: [(&[&str], &[&str]); 6] = [
        (
            &["reproduce", "nope"],
            &[
                "unknown experiment 'nope'",
                "tpt, pagetable, tlb, lmbench, hugepages, remap, apps",
            ],
        ),
        (
            &["reproduce", "/nonexistent/x.toml"],
            &["cannot read experiment /nonexistent/x.toml"],
        ),
        (&["reproduce", "tpt", "--jobs", "0"], &["--jobs"]),
        // The apps experiment replays recordings: a missing one says how to make them.
        (
            &["reproduce", "apps", "--traces", "/nonexistent"],
            &[
                "experiment apps: no recording /nonexistent/redis.vmtrace",
                "apps/record.sh /nonexistent",
                "minutes",
            ],
        ),
        (
            &["reproduce", "apps", "--quick", "--traces", "/nonexistent/"],
            &["no recording /nonexistent/redis.vmtrace"],
        ),
        (
            &["reproduce", "tpt", "--traces", "/tmp"],
            &["--traces is for experiments that replay recordings"],
        ),
    ];
    for (args, mentions) in cases {
        let out = vmlab(args);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty());
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", out.stderr);
        for m in mentions {
            assert!(lines[0].contains(m), "{args:?}: {}", lines[0]);
        }
    }
    // No name at all: clap's usage error, also status 2.
    assert_eq!(vmlab(&["reproduce"]).code, Some(2));
}

#[test]
fn an_experiment_file_runs_by_path_and_bad_files_name_the_problem() {
    let dir = out_dir("file");
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("mine.toml");
    std::fs::write(
        &good,
        r#"name = "mine"
title = "a small experiment"
summary = "tlb-bench 1M and 64M, native and nested"
duration = "full ~1 s, --quick ~1 s"
schemes = ["native", "nested"]
[[workloads]]
spec = "tlb-bench:size={size},accesses=20000"
sizes = ["1M", "64M"]
[sample]
accesses = 20000
warmup = 1000
[quick]
accesses = 10000
warmup = 1000
[report]
tables = ["ns_per_access"]
plot = { kind = "lines", metric = "ns_per_access" }
"#,
    )
    .unwrap();
    let out = dir.join("out");
    let stdout = vmlab_ok(&[
        "reproduce",
        good.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(stdout.contains("time per access (ns)"), "{stdout}");
    let file: Value = serde_json::from_str(&read(&out.join("mine.json"))).unwrap();
    assert_eq!(file["runs"].as_array().unwrap().len(), 4);
    assert_eq!(file["quick"], false);
    check_svg("mine", &read(&out.join("mine.svg")), &["native", "nested"]);

    let bad = dir.join("bad.toml");
    std::fs::write(&bad, read(&good).replace("schemes = ", "shemes = ")).unwrap();
    let out = vmlab(&["reproduce", bad.to_str().unwrap()]);
    assert_eq!(out.code, Some(2));
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("experiment ") && out.stderr.contains("schemes"),
        "{}",
        out.stderr
    );
}
