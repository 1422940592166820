//! The lab as a library: experiments run from code give what `vmlab reproduce` gives, run
//! specs and reports survive a trip through JSON, and a progress callback stops a run.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use vmlab_core::engine::{self, EngineError, Phase};
use vmlab_core::lab;
use vmlab_core::lab::runner::Event;
use vmlab_core::lab::{
    report, run_experiment, run_plan, Experiment, ExperimentReport, LabError, RunSpec, SettingNames,
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
