//! The lab as a library: experiments run from code give what `vmlab reproduce` gives, run
//! specs and reports survive a trip through JSON, and a progress callback stops a run; a run
//! comparison gives what its runs give one by one, profile overrides move times and not
//! counts, a comparison reruns from its JSON, and sweeps expand into their runs.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use vmlab_core::engine::{self, EngineError, Phase};
use vmlab_core::lab;
use vmlab_core::lab::runner::Event;
use vmlab_core::lab::{
    compare, report, run_experiment, run_plan, Comparison, ComparisonReport, Experiment,
    ExperimentReport, LabError, RunSpec, SettingNames,
};
use vmlab_core::provenance::Provenance;
use vmlab_core::stats::RunReport;

/// A small experiment: two sizes, two guest page sizes (tpt skips 2M guest pages on 4K host
/// pages), three schemes.
const MINI: &str = r#"
name = "mini"
title = "a small sweep"
summary = "for tests"
duration = "a second"
schemes = ["native", "nested", "tpt"]
guest_pages = ["4k", "2m"]
host_pages = ["4k"]
seed = 3

[[workloads]]
spec = "tlb-bench:size={size}"
sizes = ["1M", "4M"]

[sample]
accesses = 20_000
warmup = 5_000

[quick]
accesses = 4_000
warmup = 1_000

[report]
tables = ["seconds", "slowdown"]
plot = { kind = "lines", metric = "ns_per_access" }
"#;

fn go(_: &Event<'_>) -> ControlFlow<()> {
    ControlFlow::Continue(())
}

#[test]
fn an_experiment_run_from_code_matches_its_runs_one_by_one() {
    let exp = Experiment::from_toml(MINI, "mini").expect("valid");
    let outcome = run_experiment(&exp, false, 3, &go).expect("runs");
    assert_eq!(outcome.rows.len(), 2 * 2 * 3);
    let skipped: Vec<_> = outcome
        .rows
        .iter()
        .filter(|r| r.job.skip.is_some())
        .collect();
    assert_eq!(
        skipped.len(),
        2,
        "tpt with 2M guest pages on 4K host pages, per size"
    );
    assert!(skipped.iter().all(|r| r.report.is_none()));
    // Each run, as a serializable spec, reproduces its report exactly.
    for row in &outcome.rows {
        let Some(report) = &row.report else { continue };
        let spec = outcome.plan.run_spec(&row.job);
        let again = spec
            .run(&mut |_| ControlFlow::Continue(()))
            .expect("the spec runs");
        assert_eq!(&again, report, "{spec:?}");
    }
    // One thread gives the same rows as three.
    let one = run_experiment(&exp, false, 1, &go).expect("runs");
    let reports = |rows: &[report::Row]| -> Vec<Option<RunReport>> {
        rows.iter().map(|r| r.report.clone()).collect()
    };
    assert_eq!(reports(&one.rows), reports(&outcome.rows));
}

#[test]
fn run_specs_and_reports_round_trip_through_json() {
    let exp = Experiment::from_toml(MINI, "mini").expect("valid");
    let outcome = run_experiment(&exp, true, 2, &go).expect("runs");
    let profile = outcome.plan.profile().expect("profile loads");
    let provenance = Provenance::new("vmlab reproduce mini --quick", &profile, exp.seed);
    let full = ExperimentReport::new(&exp, &outcome.plan, &outcome.rows, provenance.clone());
    assert!(full.quick);
    assert_eq!(full.provenance, provenance);
    assert_eq!(full.skipped.len(), 2);
    let text = full.to_json().expect("renders");
    let back = ExperimentReport::from_json(&text).expect("reads back");
    assert_eq!(
        back.to_json().expect("renders"),
        text,
        "same bytes after a round trip"
    );
    assert_eq!(back.runs.len(), full.runs.len());
    assert_eq!(back.skipped, full.skipped);
    assert_eq!(back.runs[0].exits_by_reason, full.runs[0].exits_by_reason);

    // One run report on its own, through serde_json directly.
    let one = serde_json::to_string(&full.runs[1]).expect("serializable");
    let report: RunReport = serde_json::from_str(&one).expect("deserializable");
    assert_eq!(serde_json::to_string(&report).expect("serializable"), one);

    // Run specs: JSON and TOML, with defaults for what is left out.
    let spec = outcome.plan.run_spec(&outcome.plan.jobs[1]);
    let json = serde_json::to_string(&spec).expect("serializable");
    assert_eq!(
        serde_json::from_str::<RunSpec>(&json).expect("reads back"),
        spec
    );
    let toml_text = toml::to_string(&spec).expect("serializable");
    assert_eq!(
        toml::from_str::<RunSpec>(&toml_text).expect("reads back"),
        spec
    );
    let short: RunSpec =
        serde_json::from_str(r#"{"workload": "gups:table=1M"}"#).expect("defaults");
    assert_eq!(short, RunSpec::new("gups:table=1M"));
    assert!(serde_json::from_str::<RunSpec>(r#"{"workload": "gups", "bogus": 1}"#).is_err());
}

#[test]
fn bad_run_specs_are_user_errors_that_name_the_problem() {
    let cases: [(&str, &str, &str); 5] = [
        ("workload", "no-such-workload", "no-such-workload"),
        ("paging", "hybrid", "unknown paging scheme 'hybrid'"),
        ("guest_pages", "1g", "invalid guest_pages '1g'"),
        ("machine", "no-such-machine", "no-such-machine"),
        (
            "machine",
            "/no/such.toml",
            "cannot read machine profile /no/such.toml",
        ),
    ];
    for (field, value, expected) in cases {
        let mut spec = RunSpec::new("gups:table=1M");
        match field {
            "workload" => spec.workload = value.into(),
            "paging" => spec.paging = value.into(),
            "guest_pages" => spec.guest_pages = value.into(),
            _ => spec.machine = value.into(),
        }
        let e = spec.resolve().expect_err(value);
        assert!(e.is_user_error(), "{field}={value}: {e}");
        assert!(e.to_string().contains(expected), "{field}={value}: {e}");
    }
}

#[test]
fn a_spec_names_its_settings_as_fields_or_as_flags() {
    let mut spec = RunSpec::new("gups:table=1M");
    spec.host_pages = "3m".into();
    let profile = || lab::load_profile("skylake").expect("built in");
    let fields = spec.resolve_named(profile(), SettingNames::Fields);
    assert!(fields
        .expect_err("3m")
        .to_string()
        .contains("invalid host_pages '3m'"));
    let flags = spec.resolve_named(profile(), SettingNames::Flags);
    assert!(flags
        .expect_err("3m")
        .to_string()
        .contains("invalid --host-pages '3m'"));
    spec.host_pages = "2m".into();
    spec.fragmentation = 1.5;
    let flags = spec.resolve_named(profile(), SettingNames::Flags);
    assert!(flags
        .expect_err("1.5")
        .to_string()
        .contains("--fragmentation 1.5 must be between 0 and 1"));
    spec.fragmentation = 0.5;
    spec.tolerance = -1.0;
    assert!(spec.resolve().expect_err("tolerance").is_user_error());
}

#[test]
fn the_engine_stops_at_the_first_progress_report_when_told() {
    let mut spec = RunSpec::new("sysbench-mem:block=64M,mode=rnd");
    spec.accesses = 4_000_000;
    spec.warmup = 0;
    let config = spec.resolve().expect("valid");
    let mut reports = Vec::new();
    let result = engine::run(&config, &mut |p| {
        reports.push(p);
        ControlFlow::Break(())
    });
    assert!(matches!(result, Err(EngineError::Stopped)), "{result:?}");
    // The first report is the first page of set-up's first touch: nothing ran after it.
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].phase, Phase::Setup);
    assert_eq!(reports[0].done, 0);
    // The lab's single-run entry point says the same.
    assert!(matches!(
        spec.run(&mut |_| ControlFlow::Break(())),
        Err(LabError::Stopped)
    ));
}

#[test]
fn a_sweep_stops_when_its_callback_says_so() {
    let exp = Experiment::from_toml(MINI, "mini").expect("valid");
    let plan = exp.plan(false).expect("plans");
    let profile = plan.profile().expect("loads");
    for threads in [1, 4] {
        let (runs, finished) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let result = run_plan(&plan, &profile, threads, &|event| {
            match event {
                Event::Run { .. } => runs.fetch_add(1, Ordering::Relaxed),
                Event::Finished { .. } => finished.fetch_add(1, Ordering::Relaxed),
            };
            ControlFlow::Break(())
        });
        assert!(matches!(result, Err(LabError::Stopped)), "{result:?}");
        // Each thread hears at most one report before it sees the stop; no run finishes.
        assert!(runs.load(Ordering::Relaxed) <= threads, "{threads} threads");
        assert_eq!(finished.load(Ordering::Relaxed), 0);
    }
}

#[test]
fn a_run_that_cannot_be_done_fails_the_experiment_before_any_run_starts() {
    // Nested and tpt could remap; host remapping under shadow cannot: nothing runs.
    let text = MINI
        .replace(
            r#"schemes = ["native", "nested", "tpt"]"#,
            r#"schemes = ["nested", "tpt", "shadow"]"#,
        )
        .replace("tlb-bench:size={size}", "host-remap:size={size}");
    let exp = Experiment::from_toml(&text, "mini").expect("valid");
    let events = AtomicUsize::new(0);
    let count = |_: &Event<'_>| {
        events.fetch_add(1, Ordering::Relaxed);
        ControlFlow::Continue(())
    };
    let e = run_experiment(&exp, true, 2, &count).expect_err("shadow cannot remap");
    assert!(e.is_user_error(), "{e}");
    assert!(
        e.to_string().contains(
            "under shadow: host-remap does not run under shadow: it needs one of nested, tpt"
        ),
        "{e}"
    );
    assert_eq!(events.load(Ordering::Relaxed), 0, "no run started");
}

/// A small comparison: a TLB-bound loop, two schemes.
fn small_comparison(seeds: u64) -> Comparison {
    let mut spec = RunSpec::new("tlb-bench:size=8M,accesses=40000");
    spec.accesses = 20_000;
    spec.warmup = 5_000;
    spec.seed = 5;
    Comparison {
        spec,
        schemes: vec!["native".into(), "nested".into()],
        seeds,
    }
}

#[test]
fn a_comparison_gives_the_reports_of_its_runs_one_by_one() {
    let c = small_comparison(2);
    let report = c
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect("runs");
    // Scheme by scheme, seeds in order: what `vmlab run` did before the lab had it.
    let order: Vec<(String, u64)> = report
        .runs
        .iter()
        .map(|r| (r.paging.clone(), r.seed))
        .collect();
    assert_eq!(
        order,
        [
            ("native".to_string(), 5),
            ("native".to_string(), 6),
            ("nested".to_string(), 5),
            ("nested".to_string(), 6)
        ]
    );
    for run in &report.runs {
        let spec = RunSpec {
            paging: run.paging.clone(),
            seed: run.seed,
            ..c.spec.clone()
        };
        let config = spec.resolve().expect("valid");
        let alone = engine::run(&config, &mut |_| ControlFlow::Continue(())).expect("runs");
        assert_eq!(&alone, run, "{spec:?}");
    }
    let across = report.across_seeds.as_ref().expect("two seeds");
    assert_eq!(across.len(), 2);
    assert_eq!(across[0].seeds, [5, 6]);
    assert_eq!(report.provenance.seed, 5);
    assert_eq!(report.comparison, c);
    // One seed: no summary over seeds.
    let one = small_comparison(1)
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect("runs");
    assert!(one.across_seeds.is_none());
    assert_eq!(
        one.runs[..],
        [report.runs[0].clone(), report.runs[2].clone()]
    );
}

#[test]
fn a_comparison_checks_every_run_first_and_stops_when_told() {
    let mut c = small_comparison(1);
    c.schemes = vec!["native".into(), "hybrid".into()];
    let e = c
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect_err("hybrid is no scheme");
    assert!(e.is_user_error() && e.to_string().contains("hybrid"), "{e}");
    c.schemes = vec!["nested".into(), "shadow".into()];
    c.spec.workload = "host-remap:size=4M,accesses=1000,every=100".into();
    let mut started = 0;
    let e = c
        .run("test", &mut |event| {
            if let compare::Event::Start { .. } = event {
                started += 1;
            }
            ControlFlow::Continue(())
        })
        .expect_err("shadow cannot remap");
    assert!(e.to_string().contains("under shadow"), "{e}");
    assert_eq!(started, 0, "no run started");
    let c = small_comparison(1);
    assert!(matches!(
        c.run("test", &mut |_| ControlFlow::Break(())),
        Err(LabError::Stopped)
    ));
}

#[test]
fn a_profile_override_moves_the_time_but_not_the_counts() {
    let base = small_comparison(1)
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect("runs");
    let mut c = small_comparison(1);
    c.spec
        .overrides
        .insert("latency.dram_ns".into(), "45".into());
    let fast = c
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect("runs");
    assert_eq!(
        fast.provenance
            .overrides
            .get("latency.dram_ns")
            .map(String::as_str),
        Some("45")
    );
    assert_eq!(fast.provenance.profile["latency"]["dram_ns"], 45.0);
    assert_eq!(base.provenance.profile["latency"]["dram_ns"], 90.0);
    // The file's fingerprint, with the overrides beside it.
    assert_eq!(
        fast.provenance.machine_fingerprint,
        base.provenance.machine_fingerprint
    );
    for (a, b) in base.runs.iter().zip(&fast.runs) {
        assert_eq!(a.tlb_misses, b.tlb_misses);
        assert_eq!(a.walk_refs, b.walk_refs);
        assert_eq!(a.data_served, b.data_served);
        assert!(b.seconds < a.seconds, "{} then {}", a.seconds, b.seconds);
    }
    // A bad override is the user's error, naming it.
    c.spec.overrides.insert("latency.dram".into(), "45".into());
    let e = c
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect_err("no such key");
    assert!(e.is_user_error(), "{e}");
    assert!(e.to_string().contains("latency.dram=45"), "{e}");
}

#[test]
fn a_comparison_report_reruns_from_its_json_alone() {
    let mut c = small_comparison(2);
    c.spec
        .overrides
        .insert("exits.ept_violation".into(), "1234".into());
    let report = c
        .run("test", &mut |_| ControlFlow::Continue(()))
        .expect("runs");
    let text = report.to_json().expect("renders");
    let back = ComparisonReport::from_json(&text).expect("reads back");
    assert_eq!(back.to_json().expect("renders"), text, "same bytes");
    let rerun = back
        .rerun("rerun", &mut |_| ControlFlow::Continue(()))
        .expect("reruns");
    assert!(rerun.differences.is_empty(), "{:?}", rerun.differences);
    assert_eq!(rerun.report.runs, report.runs);
    // The same file and overrides, as the first report named them.
    assert_eq!(
        rerun.report.provenance.machine_fingerprint,
        report.provenance.machine_fingerprint
    );
    assert_eq!(
        rerun.report.provenance.overrides,
        report.provenance.overrides
    );
    assert_eq!(rerun.report.provenance.profile, report.provenance.profile);
    // A number changed in the file is found.
    let mut edited = back.clone();
    edited.runs[1].tlb_misses += 1;
    let rerun = edited
        .rerun("rerun", &mut |_| ControlFlow::Continue(()))
        .expect("reruns");
    assert_eq!(rerun.differences.len(), 1, "{:?}", rerun.differences);
    assert!(rerun.differences[0].starts_with("runs[1].tlb_misses: "));
}

#[test]
fn a_sweep_expands_into_runs_with_its_values_as_columns() {
    let text = MINI.replace(
        "seed = 3\n",
        "seed = 3\nsweep = { \"latency.dram_ns\" = [60, 120], seed = [1, 2] }\n",
    );
    let exp = Experiment::from_toml(&text, "mini").expect("valid");
    let plan = exp.plan(true).expect("plans");
    // 2 sizes x 2 guest page sizes x 4 points x 3 schemes.
    assert_eq!(plan.jobs.len(), 2 * 2 * 4 * 3);
    let points: Vec<&Vec<(String, String)>> = plan.jobs.iter().map(|j| &j.group.point).collect();
    assert_eq!(
        *points[0],
        [
            ("latency.dram_ns".to_string(), "60".to_string()),
            ("seed".to_string(), "1".to_string())
        ]
    );
    let spec = plan.run_spec(&plan.jobs[3 * 3]);
    assert_eq!(spec.seed, 2);
    assert_eq!(spec.overrides["latency.dram_ns"], "120");
    let outcome = run_experiment(&exp, true, 2, &go).expect("runs");
    let csv = report::csv(&exp, &outcome.rows).expect("renders");
    let header: Vec<&str> = csv.lines().next().expect("a header").split(',').collect();
    assert_eq!(header[header.len() - 2..], ["latency.dram_ns", "seed"]);
    assert_eq!(
        csv.lines().count(),
        1 + 2 * (2 * 4 * 3 - 4),
        "runs less tpt's skipped"
    );
    // Lines over sizes: a panel per point of the sweep, titled with it.
    let figure = report::figure(&exp, &outcome.plan, &outcome.rows);
    let titles: Vec<Option<String>> = figure.panels.iter().map(|p| p.title.clone()).collect();
    assert_eq!(titles.len(), 4);
    assert_eq!(titles[3].as_deref(), Some("latency.dram_ns=120, seed=2"));
    // Each run is its spec: the swept values reach the engine.
    let runs: Vec<&report::Row> = outcome.rows.iter().filter(|r| r.report.is_some()).collect();
    for row in &runs {
        let report = row.report.as_ref().expect("ran");
        let spec = outcome.plan.run_spec(&row.job);
        assert_eq!(report.seed, spec.seed);
        let again = spec.run(&mut |_| ControlFlow::Continue(())).expect("runs");
        assert_eq!(&again, report, "{spec:?}");
    }
    // DRAM latency moves time, not events: the same seed at 60 and 120 ns.
    let find = |dram: &str, seed: &str| {
        runs.iter()
            .find(|r| {
                r.job.paging.name() == "nested"
                    && r.job.group.point[0].1 == dram
                    && r.job.group.point[1].1 == seed
            })
            .and_then(|r| r.report.clone())
            .expect("ran")
    };
    let (slow, fast) = (find("120", "1"), find("60", "1"));
    assert_eq!(slow.tlb_misses, fast.tlb_misses);
    assert!(slow.seconds > fast.seconds);
    // The report file lists the sweep and every run's spec.
    let profile = outcome.plan.profile().expect("loads");
    let file = ExperimentReport::new(
        &exp,
        &outcome.plan,
        &outcome.rows,
        Provenance::new("test", &profile, 3),
    );
    assert_eq!(file.sweep["seed"], ["1", "2"]);
    assert_eq!(file.specs.len(), file.runs.len());
}

#[test]
fn a_sweep_of_an_unknown_setting_or_a_bad_value_is_an_error() {
    let with = |sweep: &str| {
        let text = MINI.replace("seed = 3\n", &format!("seed = 3\nsweep = {{ {sweep} }}\n"));
        let exp = Experiment::from_toml(&text, "mini").expect("parses");
        exp.plan(true).and_then(|plan| plan.profile().map(|_| plan))
    };
    assert!(with("fragmentation = [0.0, 0.5], pretouch = [false, true]").is_ok());
    for (sweep, message) in [
        ("seeds = [1, 2]", "unknown setting 'seeds'"),
        ("seed = [-1]", "seed = -1 is not a seed"),
        ("fragmentation = [1.5]", "is not a fraction"),
        ("pretouch = [1]", "pretouch = 1 is not true or false"),
        ("\"latency.dram\" = [60]", "unknown key 'latency.dram'"),
        (
            "\"latency.dram_ns\" = [-60]",
            "latency.dram_ns = -60 is out of range",
        ),
        ("\"latency.dram_ns\" = []", "needs at least one value"),
    ] {
        let e = with(sweep).expect_err(sweep);
        assert!(e.is_user_error(), "{sweep}: {e}");
        assert!(e.to_string().contains(message), "{sweep}: {e}");
    }
}
