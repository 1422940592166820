//! The run report: plain counters collected into one serde structure (JSON for machines,
//! a table for people; the CLI renders both from this).
//!
//! Event counts are exact and cover the simulated sample of the measured phase
//! (`accesses_simulated` accesses after `accesses_warmup` warm-up accesses); `cycles` and
//! `seconds` are the cost model's, extrapolated to `accesses_total` when `extrapolated`, with
//! the half-width of their confidence interval over the sample's windows under `sample`.
//! Set-up (mapping and first touch of the buffer) is reported apart, under `setup`. A sampled
//! recording's report (`sample.warmup_end` "recorded") counts faults, exits and the kernel's
//! work over the whole run, and translation and memory events over its windows.
//!
//! Every report type is `Deserialize` too, so a report written as JSON reads back into the
//! same value (names are owned strings; their JSON is the same as before).

pub mod ci;
pub mod fields;
pub mod named;
pub mod seeds;

use crate::cost::CycleBreakdown;
use crate::hv::x86::shadow_work::ShadowWorkCounters;
use crate::hv::ExitCounters;
use crate::hw::cache::MemLevel;
use crate::os::KernelCounters;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Counts by the cache level that served them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LevelCounts {
    /// Served by the L1 data cache.
    pub l1: u64,
    /// Served by the L2.
    pub l2: u64,
    /// Served by the last-level cache.
    pub llc: u64,
    /// Missed every cache and went to memory.
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
    /// The structure, as the MMU names it (`l1_4k`, `stlb`, `nested_tlb`, `pde_cache`, ...).
    pub name: String,
    /// Lookups that found a usable entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
}

/// What the set-up phase did (not part of the measured time).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupReport {
    /// Guest (or native) page faults taken during set-up.
    pub page_faults: u64,
    /// VM exits during set-up (0 without a hypervisor).
    pub vm_exits: u64,
    /// Set-up's VM exits by reason name (every reason, zeros included).
    pub exits_by_reason: BTreeMap<String, u64>,
    /// Guest (or native) page-table pages at the end of the run.
    pub page_table_pages: u64,
    /// The most guest (or native) page-table pages at once, over the whole run.
    pub page_table_pages_peak: u64,
    /// EPT table pages (0 without a hypervisor).
    pub ept_table_pages: u64,
    /// Guest memory backed by the host, in bytes, by backing page size.
    pub backed_bytes: BTreeMap<String, u64>,
}

/// How a run sampled its workload: the warm-up it actually ran and why it stopped, the
/// measured windows, and the confidence interval over them (`engine::sampling`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleReport {
    /// Why the warm-up ended: `converged` (the steady-state test passed), `cap` (it ran
    /// `warmup_cap` accesses without converging), `workload` (the workload had no more
    /// accesses to spare before the sample), `fixed` (a fixed warm-up) or `none` (the whole
    /// workload was simulated from cold, with no warm-up).
    pub warmup_end: String,
    /// True when the steady-state test passed.
    pub converged: bool,
    /// Warm-up accesses run (as `accesses_warmup`), discarded samples included.
    pub warmup_accesses: u64,
    /// Samples measured, found still trending (their windows' cost drifted by more than the
    /// tolerance, significantly), and counted as warm-up before measuring again.
    pub discarded_samples: u64,
    /// The most warm-up accesses the run was allowed (`--warmup`, lowered to what the
    /// workload leaves before the sample).
    pub warmup_cap: u64,
    /// Accesses per warm-up window (0 without a warm-up).
    pub warmup_window_accesses: u64,
    /// Relative tolerance of the steady-state test (none for a fixed or no warm-up).
    pub tolerance: Option<f64>,
    /// Accesses per measured window (0 when the whole workload was simulated).
    pub window_accesses: u64,
    /// Measured windows.
    pub windows: u64,
    /// Cycles per access of each warm-up window, in order (discarded samples not included).
    pub warmup_cycles_per_access: Vec<f64>,
    /// Cycles per access of each measured window, in order.
    pub window_cycles_per_access: Vec<f64>,
    /// The LLC's DRRIP policy selector (0..=1023; at or above 512 its follower sets insert
    /// with BRRIP) at the end of each warm-up window, and of each measured window: the
    /// hidden state behind a cost that changes regime long after it looked steady
    /// (docs/model.md). Empty when the LLC does not use DRRIP.
    #[serde(default)]
    pub warmup_llc_policy_selector: Vec<u16>,
    /// The selector at the end of each measured window (see `warmup_llc_policy_selector`).
    #[serde(default)]
    pub window_llc_policy_selector: Vec<u16>,
    /// Confidence level of the intervals (0.95).
    pub confidence: f64,
    /// Half-width of the interval of `cycles_per_access` (Student t over the windows); none
    /// without windows.
    pub cycles_per_access_ci: Option<f64>,
    /// The same half-width in `seconds` of the whole measured phase.
    pub seconds_ci: Option<f64>,
    /// The same half-width in nanoseconds per access.
    pub ns_per_access_ci: Option<f64>,
}

/// One run of one workload under one paging scheme (`Default`: an empty report, for
/// building one by hand).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// The workload spec in canonical form (every key, catalog order), e.g. `gups:table=1G,...`.
    pub workload: String,
    /// The paging scheme's name (`native`, `nested`, `shadow`, ...).
    pub paging: String,
    /// The machine profile's name.
    pub machine: String,
    /// The guest's (or native kernel's) page size, e.g. `4k`.
    pub guest_pages: String,
    /// The host's backing page size, "-" without a hypervisor.
    pub host_pages: String,
    /// The seed of the run's random choices (`--seed`).
    pub seed: u64,
    /// All guest memory was backed before set-up (`--pretouch`).
    pub pretouch: bool,
    /// Measured accesses actually simulated (the sample).
    pub accesses_simulated: u64,
    /// Warm-up accesses actually run (see `sample` for why the warm-up ended).
    pub accesses_warmup: u64,
    /// Measured accesses the workload makes in all; `cycles` and `seconds` cover these.
    pub accesses_total: u64,
    /// How the run sampled its workload, in one sentence (for provenance).
    pub sample_method: String,
    /// The sample in numbers: warm-up used and why it ended, windows, interval.
    pub sample: SampleReport,
    /// True when `cycles` and `seconds` were scaled from the sample to `accesses_total`.
    pub extrapolated: bool,
    /// Modeled cycles of the whole measured phase.
    pub cycles: f64,
    /// `cycles` at the machine profile's frequency.
    pub seconds: f64,
    /// Modeled cycles per simulated access (0 without measured accesses).
    pub cycles_per_access: f64,
    /// `cycles_per_access` in nanoseconds at the profile's frequency.
    pub ns_per_access: f64,
    /// Cycles of the whole measured phase by resource (extrapolated like `cycles`).
    pub cycles_breakdown: Breakdown,
    /// The same per access (all zero for a workload without measured accesses).
    pub cycles_per_access_breakdown: Breakdown,
    /// Accesses that missed the L1 TLBs (measured sample, as every count below unless
    /// it says otherwise).
    pub l1_tlb_misses: u64,
    /// L1 TLB misses that hit the STLB.
    pub stlb_hits: u64,
    /// Accesses no TLB could translate (L1 and STLB miss).
    pub tlb_misses: u64,
    /// Page walks started (TLB misses, plus re-walks to set a dirty bit).
    pub walks: u64,
    /// Entry reads of all walks, both dimensions (`guest_walk_refs + ept_walk_refs`).
    pub walk_refs: u64,
    /// Entry reads of the guest (or native) page tables.
    pub guest_walk_refs: u64,
    /// Entry reads of the EPT (0 without nested paging).
    pub ept_walk_refs: u64,
    /// `walk_refs / walks` (0 without walks).
    pub walk_refs_per_walk: f64,
    /// GPA->HPA translations served by the nested TLB.
    pub nested_tlb_hits: u64,
    /// GPA->HPA translations that needed an EPT walk.
    pub nested_tlb_misses: u64,
    /// Walk entry reads by the cache level that served them.
    pub walk_refs_served: LevelCounts,
    /// Data accesses by the cache level that served them.
    pub data_served: LevelCounts,
    /// VM exits, hypercalls included (0 without a hypervisor).
    pub vm_exits: u64,
    /// VM exits by reason name (every reason, zeros included).
    pub exits_by_reason: BTreeMap<String, u64>,
    /// The shadow MMU's own work in the measured phase, by unit (`[shadow]` in the profile
    /// prices each; empty under other schemes).
    #[serde(default)]
    pub shadow_work: BTreeMap<String, u64>,
    /// Guest (or native) page faults the kernel handled.
    pub page_faults: u64,
    /// Memory-tag checks (TPT): frames checked.
    pub tag_checks: u64,
    /// Memory-tag checks that refused a translation.
    pub tag_violations: u64,
    /// Paravirtual hypercalls (mmu_update multicalls, CR3 switches, flushes).
    pub hypercalls: u64,
    /// Accesses that reached a host frame the VM does not own (the isolation probe's
    /// verdict: must be 0), over the whole run.
    pub foreign_accesses: u64,
    /// Forks in the measured phase (a copy of `os.forks`, as are the next two).
    pub forks: u64,
    /// Copy-on-write faults in the measured phase.
    pub cow_faults: u64,
    /// Context switches in the measured phase.
    pub context_switches: u64,
    /// Most page-table pages the kernel had at once, over the whole run.
    pub page_table_pages: u64,
    /// Modeled time per fork in microseconds, when the measured phase forked.
    pub us_per_fork: Option<f64>,
    /// Every kernel counter of the measured phase.
    pub os: KernelCounters,
    /// Host remapping of guest pages in the measured phase (`host-remap` workload).
    pub remap: crate::hv::RemapCounters,
    /// Agile paging's moves between shadow and nested mode over the whole run, set-up
    /// included (absent under other schemes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agile: Option<crate::hv::x86::shadow::agile::AgileStats>,
    /// What the set-up phase did, apart from the measured numbers.
    pub setup: SetupReport,
    /// Hits and misses of every TLB and walk cache, over the whole run.
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

/// Shadow-MMU work keyed by unit name, for reports (empty when there was none).
pub fn shadow_work(work: &ShadowWorkCounters) -> BTreeMap<String, u64> {
    if work.iter().all(|(_, n)| n == 0) {
        return BTreeMap::new();
    }
    work.iter()
        .map(|(w, n)| (w.name().to_string(), n))
        .collect()
}

/// Exit counts keyed by reason name, for reports.
pub fn exits_by_reason(exits: &ExitCounters) -> BTreeMap<String, u64> {
    exits
        .iter()
        .map(|(r, n)| (r.name().to_string(), n))
        .collect()
}

/// `value ± half_width` with the half-width to two significant digits and the value to the
/// same decimal place (`35.7339 ± 0.0029`, `35.73 ± 0.20`); a zero half-width prints as
/// `± 0` after `fallback_decimals` decimals.
pub fn format_ci(value: f64, half_width: f64, fallback_decimals: usize) -> String {
    if !(half_width.is_finite() && half_width > 0.0) {
        return format!("{value:.fallback_decimals$} ± 0");
    }
    let decimals = (1 - half_width.log10().floor() as i64).clamp(0, 12) as usize;
    format!("{value:.decimals$} ± {half_width:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::format_ci;

    #[test]
    fn intervals_print_to_two_significant_digits() {
        assert_eq!(format_ci(35.73391, 0.002946, 3), "35.7339 ± 0.0029");
        assert_eq!(format_ci(35.7312, 0.2012, 3), "35.73 ± 0.20");
        assert_eq!(format_ci(1234.5, 31.0, 3), "1234 ± 31");
        assert_eq!(format_ci(1.5, 0.0, 3), "1.500 ± 0");
    }
}
