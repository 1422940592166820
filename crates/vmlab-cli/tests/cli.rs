//! Integration tests of the `vmlab` command line: usage errors, the JSON and table reports of
//! `run`, `list`, `bench` and `--help`, all through the real binary on small workloads.

mod common;

use common::{expect_usage_error, vmlab, vmlab_ok};
use serde_json::Value;
use std::path::PathBuf;

/// Small workloads: each simulates in a few tens of milliseconds.
const TLB_64M: &str = "tlb-bench:size=64M,accesses=20000";
const SYSBENCH_64M: &str = "sysbench-mem:block=64M";
const GUPS_16M: &str = "gups:table=16M,updates=20000";
const SAMPLE: [&str; 4] = ["--accesses", "20000", "--warmup", "1000"];

/// `vmlab run ARGS --json` plus the small sample options, parsed.
fn run_json(args: &[&str]) -> Value {
    let mut all = vec!["run", "--json"];
    all.extend_from_slice(args);
    let stdout = vmlab_ok(&all);
    serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("vmlab {all:?}: stdout is not one JSON value ({e}):\n{stdout}"))
}

/// `run` arguments for a workload with the small sample and the given schemes.
fn run_args<'a>(workload: &'a str, paging: &'a str) -> Vec<&'a str> {
    let mut v = vec!["-w", workload, "-p", paging];
    v.extend_from_slice(&SAMPLE);
    v
}

fn skylake_toml_path() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/skylake.toml"
    ))
}

fn skylake_toml() -> String {
    std::fs::read_to_string(skylake_toml_path()).expect("profiles/skylake.toml is readable")
}

/// A scratch file path in cargo's per-target temporary directory (unique per test name).
fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vmlab-cli-tests");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir.join(name)
}

/// Writes a copy of the Skylake profile with `edit` applied; returns its path.
fn write_profile(name: &str, edit: impl Fn(&str) -> String) -> String {
    let text = edit(&skylake_toml());
    let path = scratch(name);
    std::fs::write(&path, text).expect("write profile copy");
    path.to_str().expect("UTF-8 path").to_string()
}

/// Replaces the one line equal to `line` (trimmed) by `with`; fails if there is no such line.
fn replace_line(text: &str, line: &str, with: &str) -> String {
    assert_eq!(
        text.lines().filter(|l| l.trim() == line).count(),
        1,
        "profile has exactly one line {line:?}"
    );
    text.lines()
        .map(|l| if l.trim() == line { with } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn runs(report: &Value) -> &Vec<Value> {
    let obj = report.as_object().expect("report is an object");
    let keys: Vec<&String> = obj.keys().collect();
    assert!(
        keys == ["comparison", "provenance", "runs"]
            || keys == ["across_seeds", "comparison", "provenance", "runs"],
        "report has the keys 'comparison', 'provenance' and 'runs' (and 'across_seeds' with --seeds): {keys:?}"
    );
    report["runs"].as_array().expect("'runs' is an array")
}

fn u(run: &Value, key: &str) -> u64 {
    run[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} is not an unsigned integer in {}", run["paging"]))
}

fn f(run: &Value, key: &str) -> f64 {
    run[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {}", run["paging"]))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The clock of the Skylake profile, read from the file rather than restated here.
fn skylake_ghz() -> f64 {
    skylake_toml()
        .lines()
        .find_map(|l| l.trim().strip_prefix("frequency_ghz"))
        .and_then(|rest| rest.trim().strip_prefix('=')?.trim().parse().ok())
        .expect("skylake.toml has frequency_ghz = N")
}

// ---------------------------------------------------------------------------------------
// 1. Usage errors: status 2, one `error:` line naming the problem and the valid choices.
// ---------------------------------------------------------------------------------------

#[test]
fn unknown_workload_lists_valid_workloads() {
    let mut args = vec!["run"];
    args.extend(run_args("memcached", "native"));
    expect_usage_error(&args, &["memcached", "sysbench-mem", "gups", "tlb-bench"]);
    // Names are exact, not case-folded.
    let mut args = vec!["run"];
    args.extend(run_args("TLB-bench:size=64M", "native"));
    expect_usage_error(&args, &["TLB-bench", "tlb-bench"]);
}

#[test]
fn unknown_workload_key_lists_valid_keys() {
    let mut args = vec!["run"];
    args.extend(run_args("tlb-bench:size=64M,stride=64", "native"));
    expect_usage_error(&args, &["stride", "size", "accesses"]);
    let mut args = vec!["run"];
    args.extend(run_args("gups:tabel=16M", "native"));
    expect_usage_error(&args, &["tabel", "table", "updates"]);
    let mut args = vec!["run"];
    args.extend(run_args("sysbench-mem:size=64M", "native"));
    expect_usage_error(&args, &["size", "block", "oper", "mode", "events"]);
}

#[test]
fn malformed_key_value_is_rejected() {
    for spec in [
        "tlb-bench:size",
        "tlb-bench:size=64M,accesses",
        "tlb-bench:",
    ] {
        let mut args = vec!["run"];
        args.extend(run_args(spec, "native"));
        let line = expect_usage_error(&args, &["tlb-bench"]);
        assert!(
            line.contains("malformed") && line.contains("key=value"),
            "{spec}: {line}"
        );
    }
}

#[test]
fn invalid_size_suffix_is_rejected() {
    let mut args = vec!["run"];
    args.extend(run_args("tlb-bench:size=4Q", "native"));
    expect_usage_error(&args, &["4Q", "size"]);
    let mut args = vec!["run"];
    args.extend(run_args("sysbench-mem:block=4Q", "native"));
    expect_usage_error(&args, &["4Q", "block"]);
}

#[test]
fn sizes_are_binary_and_decimal_looking_units_are_refused() {
    let mut args = vec!["run"];
    args.extend(run_args("sysbench-mem:block=4GB", "native"));
    expect_usage_error(&args, &["\"4GB\"", "block", "ambiguous", "G or GiB"]);
    let help = vmlab_ok(&["run", "--help"]);
    assert!(help.contains("4GB are refused as ambiguous"), "{help}");
    // 4GiB, 4g and 4G are one size.
    let canonical = |block: &str| {
        let json = run_json(&[
            "-w",
            &format!("tlb-bench:size={block},accesses=100"),
            "-p",
            "native",
        ]);
        runs(&json)[0]["workload"].as_str().unwrap().to_string()
    };
    assert_eq!(canonical("4MiB"), "tlb-bench:size=4M,accesses=100");
    assert_eq!(canonical("4m"), canonical("4MiB"));
}

#[test]
fn unknown_paging_scheme_lists_valid_schemes() {
    let mut args = vec!["run"];
    args.extend(run_args(TLB_64M, "native,hybrid"));
    expect_usage_error(
        &args,
        &[
            "hybrid",
            "native",
            "agile",
            "nested",
            "shadow",
            "pv",
            "tpt",
            "tpt-prototype",
        ],
    );
}

#[test]
fn duplicate_paging_scheme_is_rejected() {
    let mut args = vec!["run"];
    args.extend(run_args(TLB_64M, "native,nested,native"));
    expect_usage_error(&args, &["native", "twice"]);
}

#[test]
fn unknown_machine_profile_mentions_skylake() {
    let mut args = vec!["run", "-m", "haswell"];
    args.extend(run_args(TLB_64M, "native"));
    expect_usage_error(&args, &["haswell", "skylake"]);
}

#[test]
fn guest_pages_1g_is_rejected() {
    let mut args = vec!["run", "--guest-pages", "1g"];
    args.extend(run_args(TLB_64M, "native"));
    expect_usage_error(&args, &["--guest-pages", "1g", "4k", "2m"]);
}

#[test]
fn host_pages_3m_is_rejected() {
    let mut args = vec!["run", "--host-pages", "3m"];
    args.extend(run_args(TLB_64M, "nested"));
    expect_usage_error(&args, &["--host-pages", "3m", "4k", "2m", "1g"]);
}

#[test]
fn fragmentation_out_of_range_is_rejected() {
    for value in ["2", "1.5", "NaN"] {
        let mut args = vec!["run", "--fragmentation", value];
        args.extend(run_args(TLB_64M, "nested"));
        expect_usage_error(&args, &["--fragmentation", value, "between 0 and 1"]);
    }
}

#[test]
fn footprint_too_large_for_guest_memory_under_nested() {
    let mut args = vec!["run"];
    args.extend(run_args("sysbench-mem:block=32G", "nested"));
    expect_usage_error(&args, &["32G", "guest_memory", "skylake"]);
}

#[test]
fn footprint_error_after_a_successful_scheme_prints_no_partial_report() {
    // A profile whose VM has 1G: tlb-bench over 1G fits natively but not in the VM, so native
    // runs first and nested then fails; the command must still print only the error.
    let profile = write_profile("guest-1g.toml", |t| {
        replace_line(t, "guest_memory = \"16G\"", "guest_memory = \"1G\"")
    });
    for json in [false, true] {
        let mut args = vec![
            "run",
            "-m",
            profile.as_str(),
            "-w",
            "tlb-bench:size=1G,accesses=1000",
            "-p",
            "native,nested",
            "-n",
            "1000",
        ];
        if json {
            args.push("--json");
        }
        expect_usage_error(&args, &["1G", "guest_memory"]);
    }
}

#[test]
fn every_scheme_is_checked_before_the_first_runs() {
    // The issue's examples: each failed only after the schemes before it had run.
    let cases: [(&[&str], &[&str]); 3] = [
        (
            &[
                "-w",
                "sysbench-mem:block=4G",
                "--guest-pages",
                "2m",
                "-p",
                "native,nested,shadow,tpt",
            ],
            &["under tpt", "--host-pages 2m"],
        ),
        (
            &["-w", "tpt-isolation-probe", "-p", "native"],
            &["under native", "pv, tpt, tpt-prototype"],
        ),
        (
            &["-w", "host-remap", "-p", "nested,shadow"],
            &["under shadow", "nested, tpt"],
        ),
    ];
    for (args, mentions) in cases {
        // bench has no --guest-pages: it checks the other two.
        let commands: &[&str] = if args.contains(&"--guest-pages") {
            &["run"]
        } else {
            &["run", "bench"]
        };
        for &cmd in commands {
            let mut all = vec![cmd];
            all.extend_from_slice(args);
            expect_usage_error(&all, mentions);
        }
    }
}

#[test]
fn parser_errors_are_one_line_naming_the_choices() {
    expect_usage_error(
        &["frob"],
        &["'frob'", "valid commands: run, list, bench, reproduce"],
    );
    expect_usage_error(&[], &["needs a command", "valid commands: run"]);
    expect_usage_error(
        &["run", "-w", "gups", "--pagin", "nested"],
        &[
            "'--pagin'",
            "did you mean '--paging'",
            "--host-pages",
            "--seed",
        ],
    );
    expect_usage_error(&["run"], &["--workload", "vmlab run --help"]);
    expect_usage_error(&["bench", "-r", "0"], &["--repeat", "vmlab bench --help"]);
    expect_usage_error(&["profile"], &["valid commands: show, list"]);
}

#[test]
fn flags_of_host_backing_warn_once_when_native_runs() {
    let tlb = "tlb-bench:size=4M,accesses=100";
    let out = vmlab(&[
        "run",
        "--json",
        "-w",
        tlb,
        "-p",
        "native,nested",
        "--host-pages",
        "2m",
        "--pretouch",
        "--fragmentation",
        "0.5",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "warning: --host-pages 2m, --fragmentation 0.5, --pretouch: host backing, which native paging has not; the native run ignores it\n"
    );
    // Without native, or without those flags, nothing to say.
    vmlab_ok(&["run", "-w", tlb, "-p", "nested", "--host-pages", "2m"]);
    vmlab_ok(&["run", "-w", tlb, "-p", "native"]);
}

#[test]
fn the_table_header_gives_the_host_pages_every_run_used() {
    let tlb = "tlb-bench:size=4M,accesses=100";
    let header = |paging: &str| {
        let out = vmlab(&["run", "-w", tlb, "-p", paging, "--host-pages", "2m"]);
        assert_eq!(out.code, Some(0), "{}", out.stderr);
        out.stdout.lines().nth(1).unwrap_or("").to_string()
    };
    assert!(header("nested,tpt").contains("host pages 2m, seed"));
    assert!(header("native,nested").contains("host pages 2m (none under native)"));
    assert!(header("native").contains("host pages none (native)"));
}

#[test]
fn reproduce_lists_every_experiment_or_the_one_named() {
    let all = vmlab_ok(&["reproduce", "--list"]);
    for name in [
        "tpt",
        "pagetable",
        "tlb",
        "lmbench",
        "hugepages",
        "remap",
        "guest",
    ] {
        assert!(all.contains(&format!("\n  {name} ")), "{name}: {all}");
    }
    let one = vmlab_ok(&["reproduce", "tpt", "--list"]);
    assert_eq!(one.lines().count(), 2, "{one}");
    assert!(one.contains("\n  tpt "), "{one}");
    let guest = vmlab_ok(&["reproduce", "guest", "--list"]);
    assert!(guest.contains("\n  guest "), "{guest}");
    let help = vmlab_ok(&["reproduce", "--help"]);
    assert!(help.contains("remap") && help.contains("guest"), "{help}");
    expect_usage_error(
        &["reproduce", "nope", "--list"],
        &["unknown experiment 'nope'"],
    );
}

#[test]
fn missing_profile_file_is_a_usage_error() {
    let path = scratch("no-such-profile.toml");
    let _ = std::fs::remove_file(&path);
    let path = path.to_str().unwrap().to_string();
    let mut args = vec!["run", "-m", path.as_str()];
    args.extend(run_args(TLB_64M, "native"));
    expect_usage_error(&args, &[path.as_str()]);
}

#[test]
fn profile_file_with_unknown_key_names_the_key() {
    // The unmodified copy loads and runs: the failure below is due to the extra key only.
    let good = write_profile("skylake-copy.toml", |t| t.to_string());
    let mut args = vec!["run", "-m", good.as_str()];
    args.extend(run_args(TLB_64M, "native"));
    vmlab_ok(&args);

    let bad = write_profile("skylake-turbo.toml", |t| {
        replace_line(t, "[core]", "[core]\nturbo = true")
    });
    let mut args = vec!["run", "-m", bad.as_str()];
    args.extend(run_args(TLB_64M, "native"));
    expect_usage_error(&args, &["turbo", bad.as_str()]);
}

/// The TOML of `vmlab profile show ARGS`: stdout without its leading comment lines.
fn profile_show_body(args: &[&str]) -> String {
    let mut all = vec!["profile", "show"];
    all.extend_from_slice(args);
    let stdout = vmlab_ok(&all);
    assert!(stdout.starts_with("# Machine profile"), "{stdout}");
    stdout
        .lines()
        .skip_while(|l| l.starts_with('#') || l.is_empty())
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn profile_show_prints_toml_that_loads_back_to_the_same_profile() {
    use vmlab_core::cost::Profile;
    let body = profile_show_body(&[]);
    assert_eq!(
        body,
        profile_show_body(&["skylake"]),
        "skylake is the default"
    );
    let skylake = Profile::builtin("skylake").unwrap();
    let shown = Profile::from_toml(&body, "shown").unwrap_or_else(|e| panic!("{e}\n{body}"));
    assert_eq!(shown.to_toml(), skylake.to_toml());
    assert_eq!(body, skylake.to_toml());
    for section in [
        "[machine]",
        "[core]",
        "[latency]",
        "[tlb]",
        "[memory]",
        "[virt]",
        "[exits]",
        "[tags]",
        "[kernel]",
    ] {
        assert!(body.contains(section), "{section} missing:\n{body}");
    }
    // Shown from its own output, it is the same; run on it, every result is the same.
    let path = scratch("skylake-shown.toml");
    std::fs::write(&path, &body).unwrap();
    let path = path.to_str().unwrap();
    assert_eq!(profile_show_body(&[path]), body);
    let mut shown_args = vec!["-m", path];
    shown_args.extend(run_args(TLB_64M, "native,shadow"));
    assert_eq!(
        run_json(&shown_args)["runs"],
        run_json(&run_args(TLB_64M, "native,shadow"))["runs"]
    );
}

#[test]
fn profile_with_a_value_out_of_bounds_fails_at_load_naming_the_key() {
    let cases = [
        (
            "l2 = 14",
            "l2 = 1e300",
            vec!["latency.l2 = 1e300", "at most"],
        ),
        (
            "host_memory = \"64G\"",
            "host_memory = \"2T\"",
            vec!["machine.host_memory = 2T", "tag"],
        ),
        (
            "cr3_load = 3000",
            "cr3_load = -1",
            vec!["exits.cr3_load = -1", "at least 0"],
        ),
    ];
    for (i, (line, with, mentions)) in cases.into_iter().enumerate() {
        let path = write_profile(&format!("out-of-bounds-{i}.toml"), |t| {
            replace_line(t, line, with)
        });
        let mut mentions = mentions;
        mentions.push(path.as_str());
        expect_usage_error(&["profile", "show", path.as_str()], &mentions);
        let mut args = vec!["run", "-m", path.as_str()];
        args.extend(run_args(TLB_64M, "native"));
        expect_usage_error(&args, &mentions);
    }
    let path = write_profile("unknown-exit.toml", |t| {
        replace_line(t, "[exits]", "[exits]\nvmcall = 1000")
    });
    expect_usage_error(
        &["profile", "show", path.as_str()],
        &["exits.vmcall", "ept_violation"],
    );
    expect_usage_error(&["profile", "show", "haswell"], &["haswell", "skylake"]);
}

#[test]
fn profile_list_and_help_name_the_profiles_and_sections() {
    let stdout = vmlab_ok(&["profile", "list"]);
    assert!(
        stdout.starts_with("skylake ") && stdout.contains("fnv1a64:"),
        "{stdout}"
    );
    let help = vmlab_ok(&["profile", "--help"]);
    for word in ["show", "list", "[exits]", "--machine", "bound"] {
        assert!(
            help.contains(word),
            "profile --help does not mention {word}:\n{help}"
        );
    }
}

#[test]
fn bench_rejects_bad_workload_and_profile_as_usage_errors() {
    expect_usage_error(
        &["bench", "--json", "-w", "memcached", "-n", "1000"],
        &["memcached", "tlb-bench"],
    );
    expect_usage_error(
        &[
            "bench", "--json", "-w", TLB_64M, "-n", "1000", "-m", "haswell",
        ],
        &["haswell", "skylake"],
    );
}

#[test]
fn bench_footprint_too_large_is_a_usage_error() {
    let profile = write_profile("guest-1g-bench.toml", |t| {
        replace_line(t, "guest_memory = \"16G\"", "guest_memory = \"1G\"")
    });
    expect_usage_error(
        &[
            "bench",
            "--json",
            "-m",
            profile.as_str(),
            "-w",
            "tlb-bench:size=1G,accesses=1000",
            "-n",
            "1000",
        ],
        &["1G", "guest_memory"],
    );
}

// ---------------------------------------------------------------------------------------
// 2. `run --json`: the report's shape and invariants between schemes.
// ---------------------------------------------------------------------------------------

const RUN_FIELDS: [&str; 11] = [
    "workload",
    "paging",
    "accesses_simulated",
    "accesses_total",
    "cycles",
    "seconds",
    "tlb_misses",
    "walks",
    "walk_refs",
    "vm_exits",
    "page_faults",
];

fn check_run_shape(run: &Value) {
    for key in RUN_FIELDS {
        assert!(run.get(key).is_some(), "run lacks {key}: {run}");
    }
    assert!(run["workload"].is_string() && run["paging"].is_string());
    for key in [
        "accesses_simulated",
        "accesses_total",
        "tlb_misses",
        "walks",
        "walk_refs",
        "vm_exits",
        "page_faults",
    ] {
        u(run, key);
    }
    assert!(
        f(run, "cycles") > 0.0 && f(run, "seconds") > 0.0,
        "positive time: {run}"
    );
    assert!(
        run["extrapolated"].is_boolean(),
        "extrapolated is a boolean"
    );
    assert!(
        run["exits_by_reason"].is_object(),
        "exits_by_reason is an object"
    );
    let setup = &run["setup"];
    assert!(setup.is_object(), "setup is an object");
    for key in ["page_faults", "vm_exits"] {
        assert!(setup[key].is_u64(), "setup.{key} is an unsigned integer");
    }
    assert!(
        setup["exits_by_reason"].is_object(),
        "setup.exits_by_reason is an object"
    );

    // Internal consistency of one run.
    let sum_exits: u64 = run["exits_by_reason"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        sum_exits,
        u(run, "vm_exits"),
        "exits_by_reason sums to vm_exits"
    );
    assert_eq!(
        u(run, "guest_walk_refs") + u(run, "ept_walk_refs"),
        u(run, "walk_refs"),
        "walk refs are guest + EPT"
    );
    let served: u64 = run["walk_refs_served"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        served,
        u(run, "walk_refs"),
        "every walk reference is served by some level"
    );
    if u(run, "walks") > 0 {
        assert!(close(
            f(run, "walk_refs_per_walk"),
            u(run, "walk_refs") as f64 / u(run, "walks") as f64
        ));
    }
    assert!(
        close(
            f(run, "cycles"),
            f(run, "cycles_per_access") * u(run, "accesses_total") as f64
        ),
        "cycles = cpa x total"
    );
    assert!(
        close(f(run, "cycles"), f(run, "seconds") * skylake_ghz() * 1e9),
        "seconds = cycles / clock"
    );
    assert!(u(run, "accesses_simulated") <= u(run, "accesses_total"));
}

#[test]
fn run_json_has_one_run_per_scheme_in_order() {
    for workload in [TLB_64M, SYSBENCH_64M, GUPS_16M] {
        for paging in ["native,nested", "nested,native", "nested"] {
            let report = run_json(&run_args(workload, paging));
            let runs = runs(&report);
            let names: Vec<&str> = runs.iter().map(|r| r["paging"].as_str().unwrap()).collect();
            assert_eq!(
                names,
                paging.split(',').collect::<Vec<_>>(),
                "{workload}: schemes in the order given"
            );
            for run in runs {
                check_run_shape(run);
                let name = workload.split(':').next().unwrap();
                assert!(
                    run["workload"].as_str().unwrap().starts_with(name),
                    "workload named in {run}"
                );
            }
            // The same workload, in canonical form, in every run.
            assert!(runs.iter().all(|r| r["workload"] == runs[0]["workload"]));
        }
    }
}

#[test]
fn native_and_nested_differ_as_expected() {
    for workload in [TLB_64M, SYSBENCH_64M, GUPS_16M] {
        let report = run_json(&run_args(workload, "native,nested"));
        let (native, nested) = (&runs(&report)[0], &runs(&report)[1]);
        // Bare metal: no hypervisor, no EPT, 1D walks of at most 4 references.
        assert_eq!(u(native, "vm_exits"), 0, "{workload}");
        assert_eq!(u(native, "ept_walk_refs"), 0, "{workload}");
        assert_eq!(u(&native["setup"], "vm_exits"), 0, "{workload}");
        assert!(
            u(native, "walks") > 0,
            "{workload}: a 4K-paged random workload over 16M+ walks"
        );
        let native_rpw = f(native, "walk_refs_per_walk");
        let nested_rpw = f(nested, "walk_refs_per_walk");
        assert!(
            native_rpw > 0.0 && native_rpw <= 4.0,
            "{workload}: native refs/walk {native_rpw}"
        );
        // 2D walks: more references per walk, at most 24.
        assert!(
            nested_rpw > native_rpw,
            "{workload}: nested {nested_rpw} vs native {native_rpw}"
        );
        assert!(
            nested_rpw <= 24.0,
            "{workload}: nested refs/walk {nested_rpw}"
        );
        assert!(u(nested, "ept_walk_refs") > 0, "{workload}");
        // Backing guest memory costs EPT violations during set-up.
        assert!(u(&nested["setup"], "vm_exits") > 0, "{workload}");
    }
    let report = run_json(&run_args(TLB_64M, "native,nested"));
    let (native, nested) = (&runs(&report)[0], &runs(&report)[1]);
    assert!(
        f(nested, "seconds") > f(native, "seconds"),
        "tlb-bench over 64M is slower nested"
    );
    assert!(f(nested, "cycles") > f(native, "cycles"));
}

#[test]
fn sample_counts_that_overflow_are_usage_errors() {
    expect_usage_error(
        &[
            "run",
            "-w",
            GUPS_16M,
            "--warmup",
            "18446744073709551606",
            "-n",
            "10",
        ],
        &["overflows", "--warmup"],
    );
    expect_usage_error(
        &["run", "-w", GUPS_16M, "--tolerance", "-1"],
        &["tolerance"],
    );
}

#[test]
fn the_report_gives_the_warmup_used_and_an_interval() {
    // A 4K region costs 5 cycles per access once its 64 lines are cached; the first 1M-access
    // window pays their cold misses (5.0117), so the blocks of windows 1-2 and 3-4 are the
    // first two within 0.1%: a warm-up of 5M accesses, well under the cap.
    let report = run_json(&[
        "-w",
        "tlb-bench:size=4K,accesses=20000000",
        "-p",
        "native",
        "-n",
        "100000",
        "--warmup",
        "10000000",
    ]);
    let run = &runs(&report)[0];
    let s = &run["sample"];
    assert_eq!(s["warmup_end"], "converged");
    assert_eq!(s["converged"], true);
    assert_eq!(u(run, "accesses_warmup"), 5_000_000);
    assert_eq!(u(s, "warmup_accesses"), 5_000_000);
    assert_eq!(u(s, "warmup_cap"), 10_000_000);
    assert_eq!(u(s, "windows"), 10);
    assert_eq!(u(s, "window_accesses"), 10_000);
    assert_eq!(s["window_cycles_per_access"].as_array().unwrap().len(), 10);
    assert_eq!(s["warmup_cycles_per_access"].as_array().unwrap().len(), 5);
    assert!(f(s, "seconds_ci") >= 0.0);
    assert!(run["sample_method"]
        .as_str()
        .unwrap()
        .contains("within 0.1% of the 2 before"));
    // --fixed-warmup runs the cap in full.
    let report = run_json(&[
        "-w",
        "tlb-bench:size=4K,accesses=20000000",
        "-p",
        "native",
        "-n",
        "100000",
        "--warmup",
        "1500000",
        "--fixed-warmup",
    ]);
    let s = &runs(&report)[0]["sample"];
    assert_eq!(
        (u(s, "warmup_accesses"), s["warmup_end"].as_str()),
        (1_500_000, Some("fixed"))
    );
    assert!(s["tolerance"].is_null());
}

#[test]
fn a_warmup_that_did_not_happen_is_never_reported() {
    // 100,000 accesses: 20,000 measured leave 80,000 for the warm-up, not the 1M asked.
    let report = run_json(&[
        "-w",
        "tlb-bench:size=64M,accesses=100000",
        "-p",
        "native,nested",
        "-n",
        "20000",
        "--warmup",
        "1000000",
    ]);
    for run in runs(&report) {
        assert_eq!(u(run, "accesses_warmup"), 80_000);
        assert_eq!(run["sample"]["warmup_end"], "workload");
        assert_eq!(u(&run["sample"], "warmup_cap"), 80_000);
    }
    // A sample as long as the workload: all of it simulated from cold, no warm-up, no interval.
    let report = run_json(&[
        "-w",
        "tlb-bench:size=64M,accesses=20000",
        "-p",
        "native",
        "-n",
        "20000",
        "--warmup",
        "1000000",
    ]);
    let run = &runs(&report)[0];
    assert_eq!(u(run, "accesses_warmup"), 0);
    assert_eq!(run["sample"]["warmup_end"], "none");
    assert!(run["sample"]["seconds_ci"].is_null());
    assert!(run["sample_method"]
        .as_str()
        .unwrap()
        .contains("from a cold start"));
    let table = vmlab_ok(&[
        "run",
        "-w",
        "tlb-bench:size=64M,accesses=20000",
        "-p",
        "native",
        "-n",
        "20000",
    ]);
    assert!(table.contains("simulated from cold"), "{table}");
    assert!(!table.contains("warm-up of"), "{table}");
}

#[test]
fn sample_is_extrapolated_only_when_the_workload_is_longer() {
    // Longer than warm-up + sample: exactly --accesses simulated, the rest extrapolated.
    for (workload, total) in [
        ("tlb-bench:size=64M,accesses=100000", 100_000),
        (SYSBENCH_64M, 64 << 20 >> 2),
    ] {
        let report = run_json(&run_args(workload, "native,nested"));
        for run in runs(&report) {
            assert_eq!(u(run, "accesses_simulated"), 20000, "{workload}");
            assert_eq!(u(run, "accesses_warmup"), 1000, "{workload}");
            assert_eq!(u(run, "accesses_total"), total, "{workload}");
            assert_eq!(run["extrapolated"], true, "{workload}");
        }
    }
    // --accesses 0: every access simulated, nothing extrapolated.
    let report = run_json(&["-w", GUPS_16M, "-p", "native,nested", "--accesses", "0"]);
    for run in runs(&report) {
        assert_eq!(u(run, "accesses_total"), 20000);
        assert_eq!(u(run, "accesses_simulated"), u(run, "accesses_total"));
        assert_eq!(run["extrapolated"], false);
    }
}

// ---------------------------------------------------------------------------------------
// 3. Determinism.
// ---------------------------------------------------------------------------------------

#[test]
fn same_command_gives_identical_json_and_seed_changes_it() {
    let mut args = vec!["run", "--json"];
    args.extend(run_args(TLB_64M, "native,nested"));
    let first = vmlab_ok(&args);
    let second = vmlab_ok(&args);
    assert_eq!(first, second, "same command, same bytes");
    args.extend(["--seed", "2"]);
    let other = vmlab_ok(&args);
    assert_ne!(first, other, "a different seed changes the report");
    let other: Value = serde_json::from_str(&other).unwrap();
    assert!(
        runs(&other).iter().all(|r| r["seed"] == 2),
        "the seed is reported"
    );
}

#[test]
fn seeds_run_every_scheme_under_each_seed_and_sum_them_up() {
    let mut args = run_args(TLB_64M, "native,nested");
    args.extend(["--seed", "5", "--seeds", "3"]);
    let report = run_json(&args);
    let got: Vec<(String, u64)> = runs(&report)
        .iter()
        .map(|r| (r["paging"].as_str().unwrap().to_string(), u(r, "seed")))
        .collect();
    let want: Vec<(String, u64)> = ["native", "nested"]
        .iter()
        .flat_map(|p| (5..8).map(move |s| (p.to_string(), s)))
        .collect();
    assert_eq!(got, want, "scheme by scheme, every seed in order");
    // Each run is the run `--seed S` alone gives.
    let mut alone = run_args(TLB_64M, "native");
    alone.extend(["--seed", "6"]);
    let alone = run_json(&alone);
    assert_eq!(runs(&alone)[0], runs(&report)[1]);
    // The summary: per scheme, the seeds' times, their mean and the Student-t interval.
    let across = report["across_seeds"].as_array().expect("across_seeds");
    assert_eq!(across.len(), 2);
    for (i, s) in across.iter().enumerate() {
        let times: Vec<f64> = runs(&report)[3 * i..3 * i + 3]
            .iter()
            .map(|r| f(r, "seconds"))
            .collect();
        assert_eq!(s["paging"], runs(&report)[3 * i]["paging"]);
        assert_eq!(s["seeds"], serde_json::json!([5, 6, 7]));
        let listed: Vec<f64> = s["seconds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(listed, times);
        let mean = times.iter().sum::<f64>() / 3.0;
        let sd = (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!(close(s["mean_seconds"].as_f64().unwrap(), mean));
        let half = s["seconds_ci"].as_f64().unwrap();
        assert!(
            (half - 4.303 * sd / 3f64.sqrt()).abs() <= 1e-9 * mean,
            "{half}"
        );
        assert!(half > 0.0, "different seeds, different times");
        assert_eq!(s["confidence"], 0.95);
    }
    // Without --seeds the JSON has no summary.
    assert!(run_json(&run_args(TLB_64M, "native"))
        .get("across_seeds")
        .is_none());
}

#[test]
fn the_seeds_table_follows_the_first_seeds_table() {
    let mut args = vec!["run"];
    args.extend(run_args(TLB_64M, "native,nested"));
    args.extend(["--seeds", "2"]);
    let table = vmlab_ok(&args);
    assert!(table.contains(", seed 1\n"), "{table}");
    assert!(table.contains("across 2 seeds (1, 2):"), "{table}");
    let rows: Vec<&str> = table
        .lines()
        .skip_while(|l| !l.starts_with("across"))
        .filter(|l| l.starts_with("native ") || l.starts_with("nested "))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(rows.iter().all(|r| r.contains(" ± ")), "{table}");
}

#[test]
fn seeds_out_of_range_are_usage_errors() {
    let mut args = vec!["run"];
    args.extend(run_args(TLB_64M, "native"));
    let mut zero = args.clone();
    zero.extend(["--seeds", "0"]);
    expect_usage_error(&zero, &["--seeds", "1..=1000"]);
    let mut past = args.clone();
    past.extend(["--seed", "18446744073709551615", "--seeds", "2"]);
    expect_usage_error(&past, &["--seeds 2", "largest seed"]);
}

// ---------------------------------------------------------------------------------------
// 4. Exact counts of a tiny case.
// ---------------------------------------------------------------------------------------

#[test]
fn single_4k_page_counts_are_exact() {
    let report = run_json(&[
        "-w",
        "tlb-bench:size=4K,accesses=1000",
        "--accesses",
        "0",
        "-p",
        "native,nested",
    ]);
    let runs = runs(&report);
    assert_eq!(runs.len(), 2);
    for run in runs {
        let paging = run["paging"].as_str().unwrap();
        assert_eq!(u(run, "accesses_simulated"), 1000, "{paging}");
        assert_eq!(u(run, "accesses_total"), 1000, "{paging}");
        assert_eq!(run["extrapolated"], false, "{paging}");
        // The page was touched in set-up and stays in the TLB.
        assert_eq!(u(run, "tlb_misses"), 0, "{paging}");
        assert_eq!(u(run, "walks"), 0, "{paging}");
        assert_eq!(u(run, "walk_refs"), 0, "{paging}");
        assert_eq!(u(run, "page_faults"), 0, "{paging}");
        assert_eq!(u(run, "vm_exits"), 0, "{paging}");
        let setup = &run["setup"];
        assert_eq!(
            u(setup, "page_faults"),
            1,
            "{paging}: one first-touch fault"
        );
        let exits = u(setup, "vm_exits");
        match paging {
            "native" => assert_eq!(exits, 0),
            "nested" => {
                assert!(exits >= 1, "nested set-up exits to back the page");
                assert_eq!(
                    setup["exits_by_reason"]["ept_violation"].as_u64(),
                    Some(exits),
                    "all set-up exits are EPT violations"
                );
            }
            other => panic!("unexpected scheme {other}"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// 5. The table.
// ---------------------------------------------------------------------------------------

#[test]
fn table_has_header_one_row_per_scheme_and_ratio_one_first() {
    for paging in ["native,nested", "nested,native"] {
        let mut args = vec!["run"];
        args.extend(run_args(TLB_64M, paging));
        let stdout = vmlab_ok(&args);
        let lines: Vec<&str> = stdout.lines().collect();
        let header_at = lines
            .iter()
            .position(|l| l.starts_with("paging") && l.contains("time (s)"))
            .unwrap_or_else(|| panic!("no header line in:\n{stdout}"));
        let header = lines[header_at];
        let columns: Vec<&str> = header.split_whitespace().collect();
        let ratio_col = columns
            .iter()
            .position(|c| *c == "ratio")
            .expect("a ratio column");
        // "time (s)" is two words, before ratio: the ratio is field ratio_col - 1 of a row.
        let ratio_field = ratio_col - 1;
        let schemes: Vec<&str> = paging.split(',').collect();
        let rows = &lines[header_at + 1..header_at + 1 + schemes.len()];
        for (row, scheme) in rows.iter().zip(&schemes) {
            assert_eq!(
                row.split_whitespace().next(),
                Some(*scheme),
                "row starts with the scheme: {row}"
            );
        }
        let first: Vec<&str> = rows[0].split_whitespace().collect();
        assert_eq!(first[ratio_field], "1.00", "first row's ratio: {}", rows[0]);
        let second: Vec<&str> = rows[1].split_whitespace().collect();
        let ratio: f64 = second[ratio_field].parse().expect("ratio is a number");
        if paging == "native,nested" {
            assert!(ratio > 1.0, "nested is slower than native: {}", rows[1]);
        } else {
            assert!(ratio < 1.0, "native is faster than nested: {}", rows[1]);
        }
        // No other line starts with a scheme name.
        let scheme_lines = lines
            .iter()
            .filter(|l| schemes.iter().any(|s| l.starts_with(s)))
            .count();
        assert_eq!(scheme_lines, schemes.len(), "one row per scheme:\n{stdout}");
        assert!(stdout.contains("tlb-bench"), "the workload is named");
    }
}

// ---------------------------------------------------------------------------------------
// 6. `list`.
// ---------------------------------------------------------------------------------------

#[test]
fn list_mentions_workloads_schemes_and_profiles() {
    let stdout = vmlab_ok(&["list"]);
    for word in [
        "sysbench-mem",
        "gups",
        "tlb-bench",
        "native",
        "nested",
        "skylake",
    ] {
        assert!(
            stdout.contains(word),
            "list does not mention {word}:\n{stdout}"
        );
    }
    // Every parameter key that `run` accepts is listed.
    for key in [
        "block", "oper", "mode", "events", "table", "updates", "size", "accesses",
    ] {
        assert!(
            stdout.contains(key),
            "list does not mention parameter {key}"
        );
    }
}

#[test]
fn list_json_has_workloads_schemes_and_profiles() {
    let stdout = vmlab_ok(&["list", "--json"]);
    let value: Value = serde_json::from_str(&stdout).expect("list --json is JSON");
    let names = |key: &str| -> Vec<String> {
        value[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} is an array"))
            .iter()
            .map(|e| e["name"].as_str().expect("entries have a name").to_string())
            .collect()
    };
    let workloads = names("workloads");
    for w in ["sysbench-mem", "gups", "tlb-bench"] {
        assert!(workloads.iter().any(|n| n == w), "workloads: {workloads:?}");
    }
    assert_eq!(
        names("schemes"),
        vec![
            "native",
            "nested",
            "shadow",
            "agile",
            "pv",
            "tpt",
            "tpt-prototype"
        ]
    );
    assert!(names("profiles").iter().any(|n| n == "skylake"));
    // Workload parameters come with their keys.
    let tlb = value["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "tlb-bench")
        .unwrap();
    let keys: Vec<&str> = tlb["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, vec!["size", "accesses", "tpt_task"]);
}

// ---------------------------------------------------------------------------------------
// 7. `bench`.
// ---------------------------------------------------------------------------------------

/// Runs `vmlab bench` and expects success, with exactly one stderr line per scheme, in order,
/// each saying how many accesses it timed: the bench's sign of life when stderr is a pipe.
fn bench_ok(args: &[&str], schemes: &[&str], accesses: u64) -> String {
    let mut all = vec!["bench"];
    all.extend_from_slice(args);
    let out = vmlab(&all);
    assert_eq!(
        out.code,
        Some(0),
        "vmlab {all:?} failed; stderr:\n{}",
        out.stderr
    );
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), schemes.len(), "{}", out.stderr);
    for (line, scheme) in lines.iter().zip(schemes) {
        let done = format!("bench: {scheme} done, {accesses} accesses in ");
        assert!(
            line.starts_with(&done) && line.ends_with(" s"),
            "want `{done}... s`, got `{line}`"
        );
    }
    out.stdout
}

#[test]
fn bench_json_reports_a_positive_rate_per_scheme() {
    let all = [
        "native",
        "nested",
        "shadow",
        "agile",
        "pv",
        "tpt",
        "tpt-prototype",
    ];
    let stdout = bench_ok(&["--json", "-w", TLB_64M, "-n", "20000"], &all, 20000);
    let value: Value = serde_json::from_str(&stdout).expect("bench --json is JSON");
    let provenance = &value["provenance"];
    assert_eq!(provenance["vmlab_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(provenance["machine"], "skylake");
    assert_eq!(provenance["seed"], 1);
    assert!(
        provenance["command"]
            .as_str()
            .is_some_and(|c| c.ends_with(&format!("bench --json -w {TLB_64M} -n 20000"))),
        "{provenance}"
    );
    let rows = value["bench"].as_array().expect("'bench' is an array");
    let names: Vec<&str> = rows.iter().map(|r| r["paging"].as_str().unwrap()).collect();
    assert_eq!(names, all, "one entry per scheme");
    for row in rows {
        let rate = row["accesses_per_second"]
            .as_f64()
            .expect("accesses_per_second is a number");
        assert!(rate > 0.0 && rate.is_finite(), "{row}");
        assert_eq!(row["accesses"].as_u64(), Some(20000), "{row}");
        let threads = if available_cpus() >= 2 { 2 } else { 1 };
        assert_eq!(row["threads"].as_u64(), Some(threads), "the default: {row}");
    }
    let host = &value["host"];
    assert_eq!(
        host["cpus"].as_u64(),
        Some(available_cpus() as u64),
        "{host}"
    );
    if cfg!(target_arch = "x86_64") {
        assert!(
            host["vendor"].as_str().is_some_and(|v| !v.is_empty()),
            "{host}"
        );
        assert!(host["family"].as_u64().is_some_and(|f| f > 0), "{host}");
    }
}

fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn bench_times_the_chosen_schemes_and_reports_the_best_of_its_repeats() {
    let stdout = bench_ok(
        &[
            "--json",
            "-w",
            TLB_64M,
            "-n",
            "5000",
            "--paging",
            "nested,native",
            "--repeat",
            "3",
        ],
        &["nested", "native"],
        5000,
    );
    let value: Value = serde_json::from_str(&stdout).expect("bench --json is JSON");
    let rows = value["bench"].as_array().expect("'bench' is an array");
    let names: Vec<&str> = rows.iter().map(|r| r["paging"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["nested", "native"],
        "the schemes asked for, in that order"
    );
    for row in rows {
        assert_eq!(row["repeats"].as_u64(), Some(3), "{row}");
        let each: Vec<f64> = row["accesses_per_second_each"]
            .as_array()
            .expect("rates of each repeat")
            .iter()
            .map(|r| r.as_f64().unwrap())
            .collect();
        assert_eq!(each.len(), 3, "{row}");
        let best = each.iter().copied().fold(0.0, f64::max);
        assert_eq!(
            row["accesses_per_second"].as_f64(),
            Some(best),
            "the reported rate is the fastest repeat: {row}"
        );
        // With two threads, a round trip probed before each repeat (null where the probe gave
        // up on a busy host); the fastest repeat's is the row's.
        let trips = row["thread_round_trip_ns_each"]
            .as_array()
            .expect("a round trip per repeat");
        assert_eq!(trips.len(), 3, "{row}");
        let fastest = each.iter().position(|&r| r == best).unwrap();
        assert_eq!(row["thread_round_trip_ns"], trips[fastest], "{row}");
        if available_cpus() < 2 {
            assert!(
                trips.iter().all(Value::is_null),
                "one thread, no probe: {row}"
            );
        }
        assert!(
            trips
                .iter()
                .all(|t| t.is_null() || t.as_u64().is_some_and(|ns| ns > 0)),
            "{row}"
        );
    }
    let text = bench_ok(
        &[
            "-w", TLB_64M, "-n", "5000", "-p", "pv", "-r", "2", "-t", "1",
        ],
        &["pv"],
        5000,
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with("host: ") && lines[0].ends_with("; memory pipeline on 1 thread"),
        "{text}"
    );
    assert!(
        lines[1].starts_with("pv ")
            && lines[1].contains("best of 2")
            && !lines[1].contains("round trip"),
        "one thread, no probe: {text}"
    );
    let zero = vmlab(&["bench", "-w", TLB_64M, "-n", "5000", "-p", "pv", "-r", "0"]);
    assert_eq!(zero.code, Some(2), "{}", zero.stderr);
    assert!(
        zero.stderr.starts_with("error: ")
            && zero.stderr.lines().next().unwrap().contains("--repeat"),
        "{}",
        zero.stderr
    );
    expect_usage_error(
        &["bench", "-w", TLB_64M, "-n", "5000", "-p", "ept"],
        &["ept", "nested"],
    );
}

#[test]
fn bench_with_zero_accesses_times_the_whole_workload_and_says_so() {
    // TLB_64M has 20000 accesses: -n 0 times every one of them.
    let text = bench_ok(
        &["-w", TLB_64M, "-n", "0", "-p", "native"],
        &["native"],
        20000,
    );
    assert!(text.contains("(20000 accesses in "), "{text}");
    let help = vmlab_ok(&["bench", "--help"]);
    assert!(
        help.contains("0, or at least the workload's accesses"),
        "{help}"
    );
    assert!(
        help.contains("about a billion accesses per scheme"),
        "{help}"
    );
}

// ---------------------------------------------------------------------------------------
// 8. Help.
// ---------------------------------------------------------------------------------------

#[test]
fn run_help_documents_the_main_flags() {
    let stdout = vmlab_ok(&["run", "--help"]);
    for flag in ["--workload", "--paging", "--json"] {
        assert!(
            stdout.contains(flag),
            "run --help does not mention {flag}:\n{stdout}"
        );
    }
}

#[test]
fn top_level_help_exits_zero_and_shows_an_example() {
    let stdout = vmlab_ok(&["--help"]);
    for word in ["run", "list", "bench", "--workload", "--paging"] {
        assert!(
            stdout.contains(word),
            "vmlab --help does not mention {word}:\n{stdout}"
        );
    }
}

#[test]
fn top_level_help_mentions_json() {
    let stdout = vmlab_ok(&["--help"]);
    assert!(
        stdout.contains("--json"),
        "vmlab --help does not mention --json:\n{stdout}"
    );
}

// ---------------------------------------------------------------------------------------
// 9. Pipes.
// ---------------------------------------------------------------------------------------

/// `vmlab list | head -1` closes the pipe early: the command must end quietly (killed by
/// SIGPIPE, as other Unix tools are) rather than panic on the failed write.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("vmlab"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vmlab starts");
    // Close the read end before vmlab writes anything.
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("vmlab ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.is_empty(),
        "vmlab list wrote to stderr on a closed pipe:\n{stderr}"
    );
    // Nearly always SIGPIPE; a plain exit if vmlab wrote everything before the close.
    assert!(
        output.status.success() || output.status.signal() == Some(libc::SIGPIPE),
        "{:?}",
        output.status
    );
}
