//! The `labt` experiment: the recorded e500 guest replayed through every e500 hypervisor
//! model (`hv::e500::registry`), a row per recorded benchmark and model: time, slowdown over
//! `bare`, exits by reason, tracing faults, shadow-TLB splits and merges; and the
//! distribution of each model's exits over guest PCs. CSV, JSON and an SVG figure.

use super::plot::{Figure, Kind, Panel, XAxis};
use crate::cost::e500::E500Costs;
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::registry::ModelSpec;
use crate::hv::e500::replay::{replay, ReplayReport, Segment};
use crate::hv::e500::{HvModel, ModelCounters};
use crate::provenance::Provenance;
use crate::trace::e500::{open, TraceError};
use serde::Serialize;
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
}

/// Exit-count bands of the PC distribution: a PC is in the first band whose lower bound its
/// exit count exceeds (`> 20000`, `> 10000`, ..., then `<= 1000`).
pub const PC_BANDS: [u64; 5] = [20_000, 10_000, 5_000, 2_000, 1_000];

/// How many PCs cause how many exits, in [`PC_BANDS`].
#[derive(Clone, Debug, Serialize, PartialEq)]
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
#[derive(Clone, Debug, Serialize, PartialEq)]
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
    /// Cycles the model adds over bare.
    pub added_cycles: u64,
    /// Exits.
    pub exits: u64,
    /// Exits per operation.
    pub exits_per_op: f64,
    /// Exits by reason (nonzero ones).
    pub exits_by_reason: BTreeMap<String, u64>,
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

/// A model's distribution of exits over PCs, for the whole run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PcDistribution {
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
#[derive(Clone, Debug, Serialize)]
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
    /// The whole run's exit distribution over PCs, per configuration.
    pub pc_distribution: Vec<PcDistribution>,
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
    let mut models: Vec<Box<dyn HvModel>> = specs
        .iter()
        .map(|s| (s.build)(costs))
        .collect::<Result<_, _>>()?;
    let reader = open(trace)?;
    let trace_meta = reader.header().meta.clone();
    let r = replay(reader, &mut models, |_, _, _| {})?;
    let provenance = Provenance {
        vmlab_version: crate::provenance::VERSION.to_string(),
        git_commit: crate::provenance::GIT_COMMIT.to_string(),
        command: command.to_string(),
        machine: costs.name.clone(),
        machine_fingerprint: costs.fingerprint.clone(),
        overrides: BTreeMap::new(),
        profile: effective_profile(costs),
        seed: 0,
        // The trace is named, with its provenance, in the report itself.
        inputs: Vec::new(),
    };
    report(
        &r,
        costs,
        provenance,
        trace.display().to_string(),
        trace_meta,
    )
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

/// Turns a replay into the experiment's rows.
pub fn report(
    r: &ReplayReport,
    costs: &E500Costs,
    provenance: Provenance,
    trace: String,
    trace_meta: String,
) -> Result<LabtReport, LabtError> {
    let bare = r
        .model_names
        .iter()
        .position(|n| n == "bare")
        .ok_or(LabtError::NoBaseline)?;
    let seconds = |s: &Segment, i: usize| {
        let base = (s.user_insns + s.kernel_insns) as f64 * costs.cpi;
        costs.seconds(base + s.models[i].cycles as f64)
    };
    let mut rows = Vec::new();
    // Every segment but the setup between benchmarks.
    for s in r.segments.iter().filter(|s| s.name != "between") {
        let t_bare = seconds(s, bare);
        for (i, name) in r.model_names.iter().enumerate() {
            let c = &s.models[i];
            let t = seconds(s, i);
            rows.push(LabtRow {
                benchmark: s.name.clone(),
                config: name.clone(),
                ops: s.ops,
                instructions: s.user_insns + s.kernel_insns,
                seconds: t,
                ms_per_op: t / s.ops as f64 * 1e3,
                slowdown: if t_bare > 0.0 { t / t_bare } else { 1.0 },
                added_cycles: c.cycles,
                exits: c.exits.total(),
                exits_per_op: c.exits.total() as f64 / s.ops as f64,
                exits_by_reason: c.exits.nonzero().map(|(k, v)| (k.to_string(), v)).collect(),
                tracing_faults: c.tracing_faults,
                splits: c.splits,
                merges: c.merges,
                extra: c.extra.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
                exit_pcs: c.exits_by_pc.len() as u64,
            });
        }
    }
    let pc_distribution = r
        .model_names
        .iter()
        .zip(&r.total)
        .map(|(name, c)| PcDistribution {
            config: name.clone(),
            exits: c.exits.total(),
            pcs: c.exits_by_pc.len() as u64,
            bands: pc_distribution(c),
        })
        .collect();
    Ok(LabtReport {
        experiment: "labt".into(),
        provenance,
        trace,
        trace_meta,
        frequency_mhz: costs.frequency_mhz,
        cpi: costs.cpi,
        configs: r.model_names.clone(),
        rows,
        pc_distribution,
    })
}

impl LabtReport {
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
                r.added_cycles.to_string(),
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
