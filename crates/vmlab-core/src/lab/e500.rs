//! The `labt` experiment: the recorded e500 guest replayed through every e500 hypervisor
//! model (`hv::e500::registry`), a row per recorded benchmark and model: time, slowdown over
//! `bare`, exits by reason, tracing faults, shadow-TLB splits and merges; and the
//! distribution of each model's exits over guest PCs. CSV, JSON and an SVG figure.

use super::plot::{Figure, Kind, Panel, XAxis};
use crate::cost::e500::{E500Costs, CHANGE_COUNTS};
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::registry::ModelSpec;
use crate::hv::e500::replay::{replay, DriverStats, ReplayReport, Segment};
use crate::hv::e500::{E500ExitCounts, E500WorkCounts};
use crate::hv::e500::{HvModel, ModelCounters};
use crate::provenance::Provenance;
use crate::trace::e500::{open, TraceError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// Why the experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum LabtError {
    /// The trace cannot be read.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// A model needs a cost the profile lacks.
    #[error(transparent)]
    Profile(#[from] crate::cost::e500::E500ProfileError),
    /// `bare` is not among the models (slowdowns are over it).
    #[error("the labt experiment needs the 'bare' model as its baseline")]
    NoBaseline,
    /// A saved report cannot be priced again under this profile.
    #[error("{0}")]
    Reprice(String),
}

/// Exit-count bands of the PC distribution: a PC is in the first band whose lower bound its
/// exit count exceeds (`> 20000`, `> 10000`, ..., then `<= 1000`).
pub const PC_BANDS: [u64; 5] = [20_000, 10_000, 5_000, 2_000, 1_000];

/// How many PCs cause how many exits, in [`PC_BANDS`].
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PcBand {
    /// `>20000`, ..., `<=1000`.
    pub band: String,
    /// PCs whose exit count falls in the band.
    pub pcs: u64,
    /// Exits those PCs cause.
    pub exits: u64,
    /// Their share of all exits (0..1).
    pub share: f64,
}

/// The distribution of `exits_by_pc` over [`PC_BANDS`].
pub fn pc_distribution(c: &ModelCounters) -> Vec<PcBand> {
    let total: u64 = c.exits_by_pc.values().sum();
    let mut bands: Vec<PcBand> = PC_BANDS
        .iter()
        .map(|b| format!(">{b}"))
        .chain(std::iter::once(format!(
            "<={}",
            PC_BANDS[PC_BANDS.len() - 1]
        )))
        .map(|band| PcBand {
            band,
            pcs: 0,
            exits: 0,
            share: 0.0,
        })
        .collect();
    for &n in c.exits_by_pc.values() {
        let i = PC_BANDS
            .iter()
            .position(|&b| n > b)
            .unwrap_or(PC_BANDS.len());
        bands[i].pcs += 1;
        bands[i].exits += n;
    }
    for b in &mut bands {
        b.share = if total == 0 {
            0.0
        } else {
            b.exits as f64 / total as f64
        };
    }
    bands
}

/// One benchmark under one model.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct LabtRow {
    /// `boot`, a phase of the trace (`null_syscall`, `ctx_2p_0k`, ...).
    pub benchmark: String,
    /// The model configuration.
    pub config: String,
    /// Operations the benchmark performed (1 for boot).
    pub ops: u64,
    /// Recorded instructions (user + kernel).
    pub instructions: u64,
    /// Simulated time of the whole benchmark.
    pub seconds: f64,
    /// Milliseconds per operation (`seconds / ops * 1000`).
    pub ms_per_op: f64,
    /// Time over bare's.
    pub slowdown: f64,
    /// Cycles the model adds over bare (its counts priced by the profile).
    pub added_cycles: f64,
    /// Exits.
    pub exits: u64,
    /// Exits per operation.
    pub exits_per_op: f64,
    /// Exits by reason (nonzero ones).
    pub exits_by_reason: BTreeMap<String, u64>,
    /// Units of hypervisor work by their profile key (nonzero ones).
    pub work: BTreeMap<String, u64>,
    /// Instructions the model ran in the guest (templates, routines).
    pub added_insns: u64,
    /// LABT's read/write tracing faults.
    pub tracing_faults: u64,
    /// Shadow TLB entries split.
    pub splits: u64,
    /// Shadow TLB entries merged.
    pub merges: u64,
    /// Model-specific counts.
    pub extra: BTreeMap<String, u64>,
    /// Distinct PCs that caused exits.
    pub exit_pcs: u64,
}

/// A model's distribution of exits over PCs, for the boot or the whole run.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PcDistribution {
    /// `boot` or `total` (the whole run).
    pub segment: String,
    /// The model configuration.
    pub config: String,
    /// All exits.
    pub exits: u64,
    /// Distinct PCs.
    pub pcs: u64,
    /// The bands.
    pub bands: Vec<PcBand>,
}

/// The experiment's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LabtReport {
    /// `labt`.
    pub experiment: String,
    /// Where it comes from.
    pub provenance: Provenance,
    /// The trace file.
    pub trace: String,
    /// The trace's provenance lines (vmlinux hash, QEMU command, ...).
    pub trace_meta: String,
    /// The e500 profile's clock and CPI.
    pub frequency_mhz: f64,
    /// Cycles per recorded instruction.
    pub cpi: f64,
    /// Model configurations, in order.
    pub configs: Vec<String>,
    /// A row per benchmark and configuration.
    pub rows: Vec<LabtRow>,
    /// The exit distribution over PCs of the boot, then of the whole run, per configuration.
    pub pc_distribution: Vec<PcDistribution>,
    /// The replay driver's checks over the whole trace: whether the replayed guest was the
    /// recorded one (absent from reports written before it was kept: `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_check: Option<DriverStats>,
}

/// The committed trace of the e500 guest, relative to the repository root: the busybox
/// system's boot (rc scripts, daemons, a login shell) and the benchmarks after it; `labt`'s
/// default.
pub const COMMITTED_TRACE: &str = "guests/e500/traces/e500-linux-6.1-busybox.trace.zst";

/// The first, minimal guest's trace (one static init, the boot ends at its first user
/// instruction): small and fast, the input of the tests that pin exact counts.
pub const MINIMAL_TRACE: &str = "guests/e500/traces/e500-linux-6.1.trace.zst";

/// The committed trace: under the working directory, else in the source tree this library
/// was built from; `None` when neither has it.
pub fn committed_trace() -> Option<std::path::PathBuf> {
    find_in_tree(COMMITTED_TRACE)
}

/// [`MINIMAL_TRACE`], found as [`committed_trace`] is.
pub fn minimal_trace() -> Option<std::path::PathBuf> {
    find_in_tree(MINIMAL_TRACE)
}

/// The trace `labt` replays: `given` (a path, or `minimal` for [`MINIMAL_TRACE`]), else
/// [`COMMITTED_TRACE`]; `Err` is the repository path of a named trace not found here (the
/// front end says how to give one).
pub fn trace_to_replay(
    given: Option<std::path::PathBuf>,
) -> Result<std::path::PathBuf, &'static str> {
    let (found, wanted) = match given {
        Some(p) if p.as_os_str() == "minimal" => (minimal_trace(), MINIMAL_TRACE),
        Some(p) => return Ok(p),
        None => (committed_trace(), COMMITTED_TRACE),
    };
    found.ok_or(wanted)
}

fn find_in_tree(relative: &str) -> Option<std::path::PathBuf> {
    let here = std::path::PathBuf::from(relative);
    let built = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    [here, built].into_iter().find(|p| p.exists())
}

/// Runs the experiment: replays `trace` once through every model of `specs`.
pub fn run(
    trace: &Path,
    costs: &E500Costs,
    specs: &[&ModelSpec],
    command: &str,
) -> Result<LabtReport, LabtError> {
    let host = costs.host()?;
    let mut models: Vec<Box<dyn HvModel>> = specs.iter().map(|s| (s.build)(&host)).collect();
    let reader = open(trace)?;
    let trace_meta = reader.header().meta.clone();
    let r = replay(reader, &mut models, |_, _, _| {})?;
    report(&r, costs, command, trace.display().to_string(), trace_meta)
}

/// Where a report comes from: this build, `command`, and the profile `costs` as the models'
/// counts were priced under it.
fn provenance(costs: &E500Costs, command: &str) -> Provenance {
    Provenance {
        vmlab_version: crate::provenance::VERSION.to_string(),
        git_commit: crate::provenance::GIT_COMMIT.to_string(),
        command: command.to_string(),
        machine: costs.name.clone(),
        machine_fingerprint: costs.fingerprint.clone(),
        overrides: costs.overrides.clone(),
        profile: effective_profile(costs),
        seed: 0,
        // The trace is named, with its provenance, in the report itself.
        inputs: Vec::new(),
    }
}

/// The e500 profile as the models used it: clock, CPI, exit costs by reason, every named
/// cost (`section.key`) and the assumptions' ranges.
fn effective_profile(costs: &E500Costs) -> serde_json::Value {
    let exits: BTreeMap<&str, u64> = E500Exit::ALL
        .iter()
        .map(|&e| (e.name(), costs.exit_cycles[e as usize]))
        .collect();
    serde_json::json!({
        "machine": { "name": costs.name, "frequency_mhz": costs.frequency_mhz },
        "core": { "cpi": costs.cpi },
        "exits": exits,
        "costs": costs.named,
        "assumptions": costs.assumptions,
    })
}

/// Turns a replay into the experiment's rows: the counts, then their prices (one function
/// prices a replay and a saved report alike, [`LabtReport::repriced`]).
pub fn report(
    r: &ReplayReport,
    costs: &E500Costs,
    command: &str,
    trace: String,
    trace_meta: String,
) -> Result<LabtReport, LabtError> {
    if !r.model_names.iter().any(|n| n == "bare") {
        return Err(LabtError::NoBaseline);
    }
    let mut rows = Vec::new();
    // Every segment but the setup between benchmarks.
    for s in r.segments.iter().filter(|s| s.name != "between") {
        for (name, c) in r.model_names.iter().zip(&s.models) {
            rows.push(counted_row(s, name, c));
        }
    }
    price(&mut rows, costs);
    let boot = r.segments.iter().find(|s| s.name == "boot");
    let distributions = |segment: &str, counts: &[ModelCounters]| -> Vec<PcDistribution> {
        r.model_names
            .iter()
            .zip(counts)
            .map(|(name, c)| PcDistribution {
                segment: segment.into(),
                config: name.clone(),
                exits: c.exits.total(),
                pcs: c.exits_by_pc.len() as u64,
                bands: pc_distribution(c),
            })
            .collect()
    };
    let mut pc_distribution = boot.map_or(Vec::new(), |s| distributions("boot", &s.models));
    pc_distribution.extend(distributions("total", &r.total));
    Ok(LabtReport {
        experiment: "labt".into(),
        provenance: provenance(costs, command),
        trace,
        trace_meta,
        frequency_mhz: costs.frequency_mhz,
        cpi: costs.cpi,
        configs: r.model_names.clone(),
        rows,
        pc_distribution,
        replay_check: Some(r.driver.clone()),
    })
}

/// A row with the segment's counts and no prices yet.
fn counted_row(s: &Segment, config: &str, c: &ModelCounters) -> LabtRow {
    LabtRow {
        benchmark: s.name.clone(),
        config: config.to_string(),
        ops: s.ops,
        instructions: s.user_insns + s.kernel_insns,
        seconds: 0.0,
        ms_per_op: 0.0,
        slowdown: 0.0,
        added_cycles: 0.0,
        exits: c.exits.total(),
        exits_per_op: c.exits.total() as f64 / s.ops as f64,
        exits_by_reason: names(c.exits.nonzero()),
        work: names(c.work.nonzero()),
        added_insns: c.added_insns,
        tracing_faults: c.tracing_faults,
        splits: c.splits,
        merges: c.merges,
        extra: c.extra.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        exit_pcs: c.exits_by_pc.len() as u64,
    }
}

fn names<'a>(pairs: impl Iterator<Item = (&'a str, u64)>) -> BTreeMap<String, u64> {
    pairs.map(|(k, v)| (k.to_string(), v)).collect()
}

/// What pricing reads of a row: its exits, work and added instructions.
fn priced_counts(row: &LabtRow) -> Result<ModelCounters, String> {
    fn pairs(m: &BTreeMap<String, u64>) -> impl Iterator<Item = (&str, u64)> {
        m.iter().map(|(k, v)| (k.as_str(), *v))
    }
    Ok(ModelCounters {
        exits: E500ExitCounts::from_names(pairs(&row.exits_by_reason))
            .map_err(|e| format!("exits_by_reason: {e}"))?,
        work: E500WorkCounts::from_names(pairs(&row.work)).map_err(|e| format!("work: {e}"))?,
        added_insns: row.added_insns,
        ..ModelCounters::default()
    })
}

/// Prices every row's counts under `costs`: its time, time per operation, cycles added and
/// slowdown over `bare`'s row of the same benchmark. The one place a labt time is computed,
/// for a replay and for a saved report priced again alike.
fn price(rows: &mut [LabtRow], costs: &E500Costs) {
    for row in rows.iter_mut() {
        // Rows come from a replay or a report whose counts were checked on reading.
        let c = priced_counts(row).unwrap_or_default();
        row.added_cycles = costs.added_cycles(&c);
        row.seconds = costs.seconds_of(row.instructions, &c);
        row.ms_per_op = row.seconds / row.ops as f64 * 1e3;
    }
    let bare: BTreeMap<String, f64> = rows
        .iter()
        .filter(|r| r.config == "bare")
        .map(|r| (r.benchmark.clone(), r.seconds))
        .collect();
    for row in rows.iter_mut() {
        let t_bare = bare.get(&row.benchmark).copied().unwrap_or(0.0);
        row.slowdown = if t_bare > 0.0 {
            row.seconds / t_bare
        } else {
            1.0
        };
    }
}

/// A saved `labt.json` at `path`, its counts priced under `costs` ([`LabtReport::repriced`]).
pub fn reprice_file(
    path: &Path,
    costs: &E500Costs,
    command: &str,
) -> Result<LabtReport, LabtError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| LabtError::Reprice(format!("cannot read {}: {e}", path.display())))?;
    LabtReport::from_json(&text)
        .and_then(|r| r.repriced(costs, command))
        .map_err(|e| LabtError::Reprice(format!("{}: {e}", path.display())))
}

impl LabtReport {
    /// Reads a saved `labt.json`.
    pub fn from_json(text: &str) -> Result<Self, LabtError> {
        let report: LabtReport = serde_json::from_str(text)
            .map_err(|e| LabtError::Reprice(format!("not a labt report ({e})")))?;
        if report.experiment != "labt" {
            return Err(LabtError::Reprice(format!(
                "a report of experiment '{}', not labt",
                report.experiment
            )));
        }
        for row in &report.rows {
            priced_counts(row).map_err(|e| {
                LabtError::Reprice(format!("row {}/{}: {e}", row.benchmark, row.config))
            })?;
        }
        Ok(report)
    }

    /// The same counts priced under `costs`, without replaying: every exit, unit of work and
    /// instruction at the new prices. `costs` must agree with the report's profile on the
    /// sizes that decide the counts ([`CHANGE_COUNTS`]); a change there needs a replay.
    pub fn repriced(&self, costs: &E500Costs, command: &str) -> Result<LabtReport, LabtError> {
        let saved = &self.provenance.profile["costs"];
        for key in CHANGE_COUNTS {
            let was = saved[*key].as_u64();
            let now = costs.named.get(*key).copied();
            if was != now {
                return Err(LabtError::Reprice(format!(
                    "{key} is {} in the saved report and {} here: it changes what the models do, so replay the trace instead of pricing again",
                    was.map_or("missing".into(), |v| v.to_string()),
                    now.map_or("missing".into(), |v| v.to_string()),
                )));
            }
        }
        let mut out = self.clone();
        price(&mut out.rows, costs);
        out.frequency_mhz = costs.frequency_mhz;
        out.cpi = costs.cpi;
        out.provenance = provenance(costs, command);
        Ok(out)
    }

    /// The benchmarks, in row order.
    pub fn benchmarks(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.benchmark.as_str()) {
                out.push(&r.benchmark);
            }
        }
        out
    }

    /// The row of `benchmark` under `config`.
    pub fn row(&self, benchmark: &str, config: &str) -> Option<&LabtRow> {
        self.rows
            .iter()
            .find(|r| r.benchmark == benchmark && r.config == config)
    }

    /// The JSON report (pretty-printed).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serializes") + "\n"
    }

    /// The CSV: a line per row, a column per exit reason.
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header: Vec<String> = [
            "benchmark",
            "config",
            "ops",
            "instructions",
            "seconds",
            "ms_per_op",
            "slowdown",
            "added_cycles",
            "exits",
            "exits_per_op",
            "tracing_faults",
            "splits",
            "merges",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        header.extend(E500Exit::ALL.iter().map(|r| format!("exits_{}", r.name())));
        let _ = w.write_record(&header);
        for r in &self.rows {
            let mut rec = vec![
                r.benchmark.clone(),
                r.config.clone(),
                r.ops.to_string(),
                r.instructions.to_string(),
                format!("{:.9}", r.seconds),
                format!("{:.6}", r.ms_per_op),
                format!("{:.4}", r.slowdown),
                format!("{:.0}", r.added_cycles),
                r.exits.to_string(),
                format!("{:.2}", r.exits_per_op),
                r.tracing_faults.to_string(),
                r.splits.to_string(),
                r.merges.to_string(),
            ];
            rec.extend(E500Exit::ALL.iter().map(|e| {
                r.exits_by_reason
                    .get(e.name())
                    .copied()
                    .unwrap_or(0)
                    .to_string()
            }));
            let _ = w.write_record(&rec);
        }
        String::from_utf8(w.into_inner().expect("writing to memory")).expect("CSV is UTF-8")
    }

    /// The figure: slowdown over bare per benchmark (bars per configuration, log scale),
    /// and exits per operation.
    pub fn figure(&self) -> Figure {
        let benches: Vec<String> = self.benchmarks().into_iter().map(String::from).collect();
        let configs: Vec<&String> = self.configs.iter().filter(|c| *c != "bare").collect();
        let values = |f: &dyn Fn(&LabtRow) -> f64| -> Vec<Vec<Option<f64>>> {
            configs
                .iter()
                .map(|c| {
                    benches
                        .iter()
                        .map(|b| self.row(b, c).map(f))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        let empty_notes = vec![vec![None; benches.len()]; configs.len()];
        let slowdowns = values(&|r| r.slowdown);
        let exits = values(&|r| r.exits_per_op.max(0.01));
        Figure {
            title: "e500: the recorded Linux guest under each hypervisor model".into(),
            subtitle: format!(
                "slowdown over bare hardware and exits per operation; {} MHz, CPI {}",
                self.frequency_mhz, self.cpi
            ),
            // Each model in its name's style (plot::style).
            series: configs.iter().map(|c| c.to_string()).collect(),
            kind: Kind::Bars,
            panels: vec![
                Panel {
                    title: Some("slowdown over bare".into()),
                    x: XAxis::Categories {
                        label: "benchmark".into(),
                        names: benches.clone(),
                    },
                    y_label: "time / bare time".into(),
                    y_log: true,
                    values: slowdowns,
                    notes: empty_notes.clone(),
                },
                Panel {
                    title: Some("exits per operation".into()),
                    x: XAxis::Categories {
                        label: "benchmark".into(),
                        names: benches,
                    },
                    y_label: "exits / op".into(),
                    y_log: true,
                    values: exits,
                    notes: empty_notes,
                },
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pc_bands_count_pcs_and_shares_exactly() {
        let mut c = ModelCounters::default();
        for (pc, n) in [(1, 25_000), (2, 20_000), (3, 12_000), (4, 1_000), (5, 1)] {
            c.exits_by_pc.insert(pc, n);
        }
        let d = pc_distribution(&c);
        let got: Vec<(&str, u64, u64)> = d
            .iter()
            .map(|b| (b.band.as_str(), b.pcs, b.exits))
            .collect();
        assert_eq!(
            got,
            vec![
                (">20000", 1, 25_000),
                (">10000", 2, 32_000),
                (">5000", 0, 0),
                (">2000", 0, 0),
                (">1000", 0, 0),
                ("<=1000", 2, 1_001),
            ]
        );
        let total: f64 = d.iter().map(|b| b.share).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }
}
