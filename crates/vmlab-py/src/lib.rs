//! `vmlab._vmlab`: the lab's calls as a Python extension module, for the `vmlab` package
//! (`python/vmlab`), which turns what they return into DataFrames.
//!
//! Everything crosses the boundary as JSON text of the lab's own serializable types (a
//! [`Comparison`] in, a [`ComparisonReport`] out, ...), so a result from Python is the very
//! JSON `vmlab run --json` prints for the same spec. Each long call runs on worker threads
//! while the calling thread waits with the GIL released (`wait.rs`): it hands progress to a
//! Python callback and checks for signals, so Ctrl-C stops a run or a sweep promptly.

mod wait;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use vmlab_core::cost::profile::BUILTIN;
use vmlab_core::cost::Profile;
use vmlab_core::lab::kinds::{self, ExperimentKind};
use vmlab_core::lab::{
    compare, runner, Comparison, ComparisonReport, ExperimentReport, LabError, RunSpec,
};
use wait::Message;

create_exception!(
    _vmlab,
    Error,
    PyException,
    "A vmlab run that failed (the simulation itself, a file it could not write), as opposed to a mistake in what was asked (ValueError)."
);

/// The Python exception of a lab error: `ValueError` for the user's mistakes (what the
/// command line exits 2 for), `vmlab.Error` for everything else, the same one-line message.
fn lab_error(e: LabError) -> PyErr {
    if e.is_user_error() {
        PyValueError::new_err(e.to_string())
    } else {
        Error::new_err(e.to_string())
    }
}

/// JSON given by the Python side that does not parse: a mistake in what was asked.
fn bad_json(what: &str, e: serde_json::Error) -> PyErr {
    PyValueError::new_err(format!("{what}: {e}"))
}

/// A comparison from the Python side's JSON, whose `spec` holds only the settings given:
/// the rest are `vmlab run`'s defaults for that workload (`RunSpec::new`; the default
/// sample depends on the workload, a recording's being all of it).
fn comparison_of(json: &str) -> PyResult<Comparison> {
    let mut value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| bad_json("comparison", e))?;
    let given = value
        .get("spec")
        .and_then(|s| s.as_object())
        .cloned()
        .ok_or_else(|| PyValueError::new_err("comparison: no run spec"))?;
    let workload = given
        .get("workload")
        .and_then(|w| w.as_str())
        .ok_or_else(|| PyValueError::new_err("comparison: the run spec names no workload"))?;
    let mut spec =
        serde_json::to_value(RunSpec::new(workload)).map_err(|e| Error::new_err(e.to_string()))?;
    if let Some(spec) = spec.as_object_mut() {
        spec.extend(given);
    }
    value["spec"] = spec;
    serde_json::from_value(value).map_err(|e| bad_json("comparison", e))
}

/// A comparison (`vmlab run`): `comparison` is a [`Comparison`]'s JSON; returns the
/// [`ComparisonReport`]'s JSON, as `vmlab run --json` prints it. `command` is what the
/// provenance records as the command.
///
/// [`ComparisonReport`]: vmlab_core::lab::ComparisonReport
#[pyfunction]
#[pyo3(signature = (comparison, command, progress=None))]
fn run(
    py: Python<'_>,
    comparison: &str,
    command: &str,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let comparison = comparison_of(comparison)?;
    let report = wait::detached(py, progress.as_ref(), |sink| {
        comparison.run(command, &mut |event| {
            sink.send(comparison_message(0, event))
        })
    })?;
    report.to_json().map_err(lab_error)
}

/// Many comparisons on `jobs` threads (a sweep's runs): returns each one's report JSON, in
/// order. The results do not depend on `jobs`: every run is seeded on its own.
#[pyfunction]
#[pyo3(signature = (comparisons, jobs, command, progress=None))]
fn run_many(
    py: Python<'_>,
    comparisons: Vec<String>,
    jobs: usize,
    command: &str,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<Vec<String>> {
    let comparisons: Vec<Comparison> = comparisons
        .iter()
        .map(|c| comparison_of(c))
        .collect::<PyResult<_>>()?;
    let total = comparisons.len();
    let reports = wait::detached(py, progress.as_ref(), |sink| {
        let finished = AtomicUsize::new(0);
        runner::in_parallel(total, jobs, sink.stop_flag(), |i| {
            let result = comparisons[i]
                .run(command, &mut |event| match event {
                    // The sweep reports its own start and end.
                    compare::Event::Run { .. } => sink.send(comparison_message(i, event)),
                    _ => sink.check(),
                })
                .and_then(|r| r.to_json());
            if result.is_ok() {
                let done = finished.fetch_add(1, Ordering::Relaxed) + 1;
                let _ = sink.send(Message::finished(i, done, total));
            }
            result
        })
    })?;
    Ok(reports)
}

/// The progress message of a comparison's event; `slot` numbers the comparison in a sweep.
fn comparison_message(slot: usize, event: &compare::Event<'_>) -> Message {
    match *event {
        compare::Event::Start {
            index,
            total,
            config,
        } => Message::start(slot + index, total, config),
        compare::Event::Run {
            index,
            config,
            progress,
        } => Message::progress(slot + index, config, progress),
        compare::Event::Finished { index, total, .. } => {
            Message::finished(slot + index, index + 1, total)
        }
    }
}

/// An experiment of `experiments/*.toml` (a built-in name or a path) or `labt`, as
/// `vmlab reproduce NAME` runs it; returns its report's JSON (`NAME.json`). `overrides` are
/// `--set`'s (`SECTION.KEY` to a value); `trace` is labt's recorded guest, `reprice` a saved
/// labt.json to price again instead of replaying.
#[pyfunction]
#[pyo3(signature = (name, quick, jobs, overrides, command, traces=None, trace=None, reprice=None, progress=None))]
#[allow(clippy::too_many_arguments)] // Python's keywords, one each.
fn reproduce(
    py: Python<'_>,
    name: &str,
    quick: bool,
    jobs: usize,
    overrides: Vec<(String, String)>,
    command: &str,
    traces: Option<PathBuf>,
    trace: Option<PathBuf>,
    reprice: Option<PathBuf>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    let kind = ExperimentKind::find(name).map_err(lab_error)?;
    let exp = match kind {
        ExperimentKind::Simulated(exp) => exp,
        ExperimentKind::Labt => return labt(py, trace, reprice, &overrides, command),
        ExperimentKind::Guest => {
            return Err(PyValueError::new_err(
                "guest measures real programs on this host, not a simulation: run `vmlab reproduce guest`",
            ))
        }
    };
    if trace.is_some() || reprice.is_some() {
        return Err(PyValueError::new_err(
            "trace= and reprice= are for reproduce('labt') only (the recorded e500 guest it replays)",
        ));
    }
    let exp = exp
        .with_traces(traces.as_deref())
        .map_err(lab_error)?
        .with_overrides(overrides);
    let plan = exp.plan(quick).map_err(lab_error)?;
    let profile = plan.profile().map_err(lab_error)?;
    let total = plan.distinct_jobs().len();
    let rows = wait::detached(py, progress.as_ref(), |sink| {
        runner::run_plan(&plan, &profile, jobs.max(1), &|event| match *event {
            runner::Event::Finished { done, .. } => sink.send(Message::finished(0, done, total)),
            runner::Event::Run { .. } => sink.check(),
        })
    })?;
    let provenance = vmlab_core::provenance::Provenance::new(command, &profile, plan.seed);
    ExperimentReport::new(&exp, &plan, &rows, provenance)
        .to_json()
        .map_err(lab_error)
}

/// `reproduce("labt")`: the recorded e500 guest under every e500 hypervisor model, or a saved
/// report's counts priced again (`reprice`).
fn labt(
    py: Python<'_>,
    trace: Option<PathBuf>,
    reprice: Option<PathBuf>,
    overrides: &[(String, String)],
    command: &str,
) -> PyResult<String> {
    use vmlab_core::cost::e500::E500Costs;
    use vmlab_core::hv::e500::registry::{ModelSpec, MODELS};
    use vmlab_core::lab::e500;
    if trace.is_some() && reprice.is_some() {
        return Err(PyValueError::new_err(
            "give trace= to replay or reprice= to price a saved report again, not both",
        ));
    }
    let costs = E500Costs::builtin()
        .with_overrides(overrides)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    if let Some(saved) = reprice {
        let report = e500::reprice_file(&saved, &costs, command)
            .map_err(|e| PyValueError::new_err(e.to_string()))?;
        return Ok(report.to_json());
    }
    let trace = e500::trace_to_replay(trace).map_err(|wanted| {
        PyValueError::new_err(format!(
            "labt replays the recorded e500 guest: run from the repository root or give trace= ({wanted})"
        ))
    })?;
    let specs: Vec<&ModelSpec> = MODELS.iter().collect();
    let report = py
        .detach(|| e500::run(&trace, &costs, &specs, command))
        .map_err(|e| match e {
            e500::LabtError::Trace(t) => PyValueError::new_err(t.to_string()),
            e => Error::new_err(e.to_string()),
        })?;
    Ok(report.to_json())
}

/// The e500 profile keys that change what the models count (a change needs a replay; every
/// other key is a price, and a saved report's counts can be priced again under it).
#[pyfunction]
fn labt_count_keys() -> Vec<&'static str> {
    vmlab_core::cost::e500::CHANGE_COUNTS.to_vec()
}

/// The effective machine profile `name` (a built-in name or a .toml path) with `overrides`
/// applied, as JSON (what a report's provenance carries), and as the TOML `vmlab profile
/// show` prints.
#[pyfunction]
#[pyo3(signature = (name, overrides))]
fn profile(name: &str, overrides: Vec<(String, String)>) -> PyResult<(String, String)> {
    let base = vmlab_core::lab::load_profile(name).map_err(lab_error)?;
    let profile = base
        .with_overrides(&overrides)
        .map_err(|e| PyValueError::new_err(e.to_string()))?;
    let json = serde_json::to_string(&profile).map_err(|e| Error::new_err(e.to_string()))?;
    Ok((json, profile.to_toml()))
}

/// What can be run, as JSON: workloads with their parameters, schemes, built-in profiles and
/// experiments (`vmlab list --json` and `vmlab reproduce --list`).
#[pyfunction]
fn catalog() -> PyResult<String> {
    use vmlab_core::scheme::Paging;
    let profiles: Vec<serde_json::Value> = BUILTIN
        .iter()
        .map(|(name, _)| {
            let p = Profile::builtin(name).map_err(|e| Error::new_err(e.to_string()))?;
            Ok(serde_json::json!({
                "name": p.machine.name,
                "description": p.machine.description,
                "fingerprint": p.fingerprint_hex(),
            }))
        })
        .collect::<PyResult<_>>()?;
    let value = serde_json::json!({
        "workloads": vmlab_core::workload::catalog().iter().map(|w| serde_json::json!({
            "name": w.name,
            "summary": w.summary,
            "params": w.params.iter().map(|p| serde_json::json!({
                "key": p.key, "default": p.default, "help": p.help,
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "schemes": Paging::ALL.iter().map(|p| serde_json::json!({
            "name": p.name(), "summary": p.summary(),
        })).collect::<Vec<_>>(),
        "profiles": profiles,
        "experiments": kinds::catalog().map_err(lab_error)?,
    });
    Ok(value.to_string())
}

/// `vmlab record`: records `program` with `args` under QEMU's user-mode emulator into
/// `output` (`sample`: `PERIOD:WINDOW[:WARM]`); returns what was recorded as JSON (the
/// trace's trailer with its totals, its size, the raw bytes, processes left unfinished).
#[pyfunction]
#[pyo3(signature = (program, args, output, keep_raw=false, sample=None, progress=None))]
fn record(
    py: Python<'_>,
    program: String,
    args: Vec<String>,
    output: PathBuf,
    keep_raw: bool,
    sample: Option<&str>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<String> {
    use vmlab_core::record::{record, RecordError, RecordProgress, RecordSpec};
    let sample = sample
        .map(vmlab_core::trace::x86::Sampling::parse)
        .transpose()
        .map_err(|e| PyValueError::new_err(format!("sample: {e}")))?;
    let spec = RecordSpec {
        program,
        args,
        output,
        keep_raw,
        sample,
    };
    let recorded = wait::detached(py, progress.as_ref(), |sink| {
        // The recording cannot be stopped half-way from here: Ctrl-C at a terminal reaches
        // the recorded program (one process group), which ends it, and the trace is kept.
        Ok(record(&spec, &mut |p| {
            let _ = sink.send(match p {
                RecordProgress::Running { raw_bytes, images } => {
                    Message::recording("running", raw_bytes, images)
                }
                RecordProgress::Merging { refs } => Message::recording("merging", refs, 0),
            });
        }))
    })?
    .map_err(|e| match e {
        RecordError::Trace(_) | RecordError::Raw(_) => Error::new_err(e.to_string()),
        other => PyValueError::new_err(other.to_string()),
    })?;
    let value = serde_json::json!({
        "trace": spec.output,
        "trailer": recorded.trailer,
        "bytes": recorded.bytes,
        "raw_bytes": recorded.raw_bytes,
        "unfinished_processes": recorded.merge.unfinished,
    });
    Ok(value.to_string())
}

/// The files `vmlab run --out DIR` writes, from a comparison report's JSON: (`run.csv`,
/// `run.svg`) text.
#[pyfunction]
fn render_comparison(report: &str) -> PyResult<(String, String)> {
    let report = ComparisonReport::from_json(report).map_err(lab_error)?;
    let csv = report.csv().map_err(lab_error)?;
    Ok((csv, report.figure().to_svg()))
}

/// The version and the git commit the module was built from.
#[pyfunction]
fn version() -> (String, String) {
    (
        vmlab_core::provenance::VERSION.to_string(),
        vmlab_core::provenance::GIT_COMMIT.to_string(),
    )
}

/// The module `vmlab._vmlab`.
#[pymodule]
fn _vmlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_many, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(profile, m)?)?;
    m.add_function(wrap_pyfunction!(catalog, m)?)?;
    m.add_function(wrap_pyfunction!(render_comparison, m)?)?;
    m.add_function(wrap_pyfunction!(record, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(labt_count_keys, m)?)?;
    Ok(())
}
