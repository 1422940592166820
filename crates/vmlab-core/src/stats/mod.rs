//! The run report: plain counters collected into one serde structure (JSON for machines,
//! a table for people; the CLI renders both from this).
//!
//! Event counts are exact and cover the simulated sample of the measured phase
//! (`accesses_simulated` accesses after `accesses_warmup` warm-up accesses); `cycles` and
//! `seconds` are the cost model's, extrapolated to `accesses_total` when `extrapolated`.
//! Set-up (mapping and first touch of the buffer) is reported apart, under `setup`.
//!
//! Every report type is `Deserialize` too, so a report written as JSON reads back into the
//! same value (names are owned strings; their JSON is the same as before).

use crate::cost::CycleBreakdown;
use crate::hv::ExitCounters;
use crate::hw::cache::MemLevel;
use crate::os::KernelCounters;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counts by the cache level that served them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCounts {
    pub l1: u64,
    pub l2: u64,
    pub llc: u64,
    pub dram: u64,
}

impl From<[u64; 4]> for LevelCounts {
    fn from(c: [u64; 4]) -> Self {
        LevelCounts {
            l1: c[MemLevel::L1 as usize],
            l2: c[MemLevel::L2 as usize],
            llc: c[MemLevel::Llc as usize],
            dram: c[MemLevel::Dram as usize],
        }
    }
}

/// Hits and misses of one translation structure over the whole run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructureStats {
    pub name: String,
    pub hits: u64,
    pub misses: u64,
}

/// What the set-up phase did (not part of the measured time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupReport {
    pub page_faults: u64,
    pub vm_exits: u64,
    pub exits_by_reason: BTreeMap<String, u64>,
    /// Guest (or native) page-table pages at the end of the run, and the peak.
    pub page_table_pages: u64,
    pub page_table_pages_peak: u64,
    /// EPT table pages (0 without a hypervisor).
    pub ept_table_pages: u64,
    /// Guest memory backed by the host, in bytes, by backing page size.
    pub backed_bytes: BTreeMap<String, u64>,
}

/// One run of one workload under one paging scheme.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub workload: String,
    pub paging: String,
    pub machine: String,
    pub guest_pages: String,
    /// The host's backing page size, "-" without a hypervisor.
    pub host_pages: String,
    pub seed: u64,
    /// All guest memory was backed before set-up (`--pretouch`).
    pub pretouch: bool,
    pub accesses_simulated: u64,
    pub accesses_warmup: u64,
    pub accesses_total: u64,
    /// True when `cycles` and `seconds` were scaled from the sample to `accesses_total`.
    pub extrapolated: bool,
    pub cycles: f64,
    pub seconds: f64,
    pub cycles_per_access: f64,
    pub ns_per_access: f64,
    /// Cycles of the whole measured phase by resource (extrapolated like `cycles`).
    pub cycles_breakdown: Breakdown,
    /// The same per access (all zero for a workload without measured accesses).
    pub cycles_per_access_breakdown: Breakdown,
    pub l1_tlb_misses: u64,
    pub stlb_hits: u64,
    pub tlb_misses: u64,
    pub walks: u64,
    pub walk_refs: u64,
    pub guest_walk_refs: u64,
    pub ept_walk_refs: u64,
    pub walk_refs_per_walk: f64,
    pub nested_tlb_hits: u64,
    pub nested_tlb_misses: u64,
    pub walk_refs_served: LevelCounts,
    pub data_served: LevelCounts,
    pub vm_exits: u64,
    pub exits_by_reason: BTreeMap<String, u64>,
    pub page_faults: u64,
    /// Memory-tag checks (TPT): frames checked, and checks that refused a translation.
    pub tag_checks: u64,
    pub tag_violations: u64,
    /// Paravirtual hypercalls (mmu_update multicalls, CR3 switches, flushes).
    pub hypercalls: u64,
    /// Accesses that reached a host frame the VM does not own (the isolation probe's
    /// verdict: must be 0), over the whole run.
    pub foreign_accesses: u64,
    /// Kernel events of the measured phase (forks, copy-on-write faults, context switches, ...).
    pub forks: u64,
    pub cow_faults: u64,
    pub context_switches: u64,
    /// Most page-table pages the kernel had at once, over the whole run.
    pub page_table_pages: u64,
    /// Modeled time per fork in microseconds, when the measured phase forked.
    pub us_per_fork: Option<f64>,
    /// Every kernel counter of the measured phase.
    pub os: KernelCounters,
    /// Host remapping of guest pages in the measured phase (`host-remap` workload).
    pub remap: crate::hv::RemapCounters,
    pub setup: SetupReport,
    pub structures: Vec<StructureStats>,
}

/// Cycles by resource and the total, as reported: the cost model's [`CycleBreakdown`] with
/// an owned `bound`, so that a report reads back from JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Breakdown {
    /// Cycles the loop's instructions need on their own.
    pub compute: f64,
    /// Cycles of data-miss latency, divided by the misses in flight.
    pub data: f64,
    /// Cycles of STLB hits, walk references and tag checks, divided by the walks in flight.
    pub walk: f64,
    /// Cycles spent in the hypervisor.
    pub exits: f64,
    /// Cycles spent in the kernel.
    pub kernel: f64,
    /// The model's total.
    pub total: f64,
    /// What dominates: compute, data, walk, serial, exits or kernel.
    pub bound: String,
}

impl From<CycleBreakdown> for Breakdown {
    fn from(b: CycleBreakdown) -> Self {
        Breakdown {
            compute: b.compute,
            data: b.data,
            walk: b.walk,
            exits: b.exits,
            kernel: b.kernel,
            total: b.total,
            bound: b.bound.to_string(),
        }
    }
}

/// Exit counts keyed by reason name, for reports.
pub fn exits_by_reason(exits: &ExitCounters) -> BTreeMap<String, u64> {
    exits
        .iter()
        .map(|(r, n)| (r.name().to_string(), n))
        .collect()
}
