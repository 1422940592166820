//! The cost model: exact events in, cycles out. Events are the simulator's facts; cycles
//! are a model, and this file is all of it.
//!
//! Independent accesses (sysbench, GUPS) are throughput-bound: the core overlaps the loop's
//! instructions, its data misses (up to `core.mlp` in flight) and its page walks (up to
//! `core.page_walkers` in flight), so the time is that of the busiest of the three
//! resources. Dependent accesses (a pointer chase) expose every latency in sequence, so
//! their time is the sum. Hypervisor exits and kernel work serialize with everything and
//! are added in both cases.
//!
//! Simplifications: L1 hits of independent accesses are hidden by the pipeline; walk
//! references and data misses do not compete for the same fill buffers; a walk's latency
//! is the sum of its references' latencies (in-order walk); write-backs are free.

use crate::cost::profile::Profile;
use crate::hv::x86::shadow_work::ShadowWorkCounters;
use crate::hv::{ExitCounters, ExitReason, RemapCounters};
use crate::hw::cache::MemLevel;
use crate::os::KernelCounters;

crate::named_enum! {
    /// The kernel's operations that have a cost in the profile (`[kernel]`, cycles each).
    pub enum KernelCost {
        /// An anonymous page fault: entry, handling, exit (page zeroing separate).
        PageFault => "page_fault",
        /// Zeroing one 4 KiB page.
        ClearPage4k => "clear_page_4k",
        /// Copying one 4 KiB page (also the host's copy of a remapped frame).
        CopyPage4k => "copy_page_4k",
        /// A copy-on-write fault beyond a page fault and the copy.
        CowFault => "cow_fault",
        /// fork, with the child's exit and the parent's wait.
        Fork => "fork",
        /// Per leaf entry fork copies.
        ForkPerPte => "fork_per_pte",
        /// exec, beyond the faults of the new image.
        Exec => "exec",
        /// A context switch.
        ContextSwitch => "context_switch",
        /// Entry and exit of a memory system call (munmap, mprotect, madvise).
        Syscall => "syscall",
        /// A timer tick's interrupt handler (entry, tick_sched_timer's work, return).
        TimerTick => "timer_tick",
    }
}

impl KernelCost {
    /// How many times the kernel did it, by its counters.
    pub fn count(self, k: &KernelCounters) -> u64 {
        match self {
            KernelCost::PageFault => k.page_faults,
            KernelCost::ClearPage4k => k.frames_cleared,
            KernelCost::CopyPage4k => k.frames_copied,
            KernelCost::CowFault => k.cow_faults,
            KernelCost::Fork => k.forks,
            KernelCost::ForkPerPte => k.ptes_copied,
            KernelCost::Exec => k.execs,
            KernelCost::ContextSwitch => k.context_switches,
            KernelCost::Syscall => k.munmaps + k.mprotects + k.madvises,
            KernelCost::TimerTick => k.interrupts,
        }
    }
}

/// The events of one measured interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Events {
    /// The workload's memory accesses in the interval.
    pub accesses: u64,
    /// Non-memory instructions of the workload's loop.
    pub instructions: f64,
    /// Data accesses by the level that served them.
    pub data_served: [u64; 4],
    /// Walk references (both dimensions) by the level that served them.
    pub walk_served: [u64; 4],
    /// L1 TLB misses that hit the STLB, each charged the profile's `stlb_hit` latency.
    pub stlb_hits: u64,
    /// Memory-tag checks by the cache level that served their tag-table reads
    /// (`check_cost = "per-frame"`).
    pub tag_served: [u64; 4],
    /// TLB fills that were tag-checked (walks from a tagged root), each charged
    /// `tags.per_fill` cycles under `check_cost = "per-fill"`.
    pub tag_fills: u64,
    /// VM exits by reason, each charged its profile cost.
    pub exits: ExitCounters,
    /// The shadow MMU's work in the interval (zero under other schemes).
    pub shadow: ShadowWorkCounters,
    /// What the kernel did in the interval.
    pub kernel: KernelCounters,
    /// Host remapping of guest pages in the interval.
    pub remap: RemapCounters,
}

/// Cycles by resource, and the total.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct CycleBreakdown {
    /// Cycles the loop's instructions need on their own.
    pub compute: f64,
    /// Cycles of data-miss latency, divided by the misses in flight (all latency if dependent).
    pub data: f64,
    /// Cycles of STLB hits, walk references and tag checks, divided by the walks in flight.
    pub walk: f64,
    /// Cycles spent in the hypervisor.
    pub exits: f64,
    /// Cycles spent in the kernel (faults, zeroing and copying pages, fork, exec, context
    /// switches, system calls).
    pub kernel: f64,
    /// The model's total: max(compute, data, walk) + exits + kernel for independent
    /// accesses, the sum of all for dependent ones.
    pub total: f64,
    /// What dominates: "kernel" or "exits" when they outweigh the loop, else which of
    /// compute, data or walk bounds an independent loop ("serial" for a dependent one).
    pub bound: &'static str,
}

impl Profile {
    /// Latency in cycles of an access served at `level`.
    pub fn latency(&self, level: MemLevel) -> f64 {
        match level {
            MemLevel::L1 => self.latency.l1d,
            MemLevel::L2 => self.latency.l2,
            MemLevel::Llc => self.latency.llc,
            MemLevel::Dram => self.latency.dram_ns * self.machine.frequency_ghz,
        }
    }

    /// Cycles of one exit of `reason` (the profile's `[exits]` table).
    pub fn exit_cost(&self, reason: ExitReason) -> f64 {
        self.exits[reason]
    }

    /// Cycles of the shadow MMU's own work: every unit's count times its cost (`[shadow]`).
    pub fn shadow_cycles(&self, work: &ShadowWorkCounters) -> f64 {
        work.iter().map(|(w, n)| n as f64 * self.shadow[w]).sum()
    }

    /// Cycles of one `op` of the kernel (its cost in the profile's `[kernel]` table).
    pub fn kernel_cost(&self, op: KernelCost) -> f64 {
        self.kernel.costs[op]
    }

    /// Cycles of the kernel's work: every [`KernelCost`]'s count times its cost. Exits cost
    /// nothing apart: fork's measured cost includes the child's exit. TLB invalidations are
    /// inside the measured operation costs.
    pub fn kernel_cycles(&self, k: &KernelCounters) -> f64 {
        KernelCost::ALL
            .iter()
            .map(|&op| op.count(k) as f64 * self.kernel.costs[op])
            .sum()
    }

    /// Cycles of host remapping: the hypervisor's share (moves, copies, tag updates, global
    /// flushes) and the guest kernel's (TPT's notifications and devirt fix-ups).
    pub fn remap_cycles(&self, r: &RemapCounters) -> (f64, f64) {
        let v = &self.virt;
        let host = r.remaps as f64 * v.host_remap
            + r.frames_moved as f64 * self.kernel_cost(KernelCost::CopyPage4k)
            + r.tag_updates as f64 * v.tag_update
            + r.global_flushes as f64 * v.global_flush;
        let guest =
            r.guest_notifications as f64 * v.remap_notify + r.devirt_fixups as f64 * v.devirt_fixup;
        (host, guest)
    }

    /// Turn events into cycles.
    pub fn cycles(&self, e: &Events, dependent: bool) -> CycleBreakdown {
        let served = |counts: &[u64; 4]| -> f64 {
            MemLevel::ALL
                .iter()
                .map(|&l| counts[l as usize] as f64 * self.latency(l))
                .sum()
        };
        let compute = e.instructions / self.core.ipc;
        let tag_cycles = match self.tags.check_cost {
            crate::hw::tags::TagCheckCost::None => 0.0,
            crate::hw::tags::TagCheckCost::PerFill => e.tag_fills as f64 * self.tags.per_fill,
            crate::hw::tags::TagCheckCost::PerFrame => served(&e.tag_served),
        };
        // Tag checks sit on the fill path: they add to the walk's latency.
        let walk_latency =
            e.stlb_hits as f64 * self.latency.stlb_hit + served(&e.walk_served) + tag_cycles;
        let (remap_host, remap_guest) = self.remap_cycles(&e.remap);
        let exits = e
            .exits
            .iter()
            .map(|(r, n)| n as f64 * self.exit_cost(r))
            .sum::<f64>()
            + self.shadow_cycles(&e.shadow)
            + remap_host;
        let kernel = self.kernel_cycles(&e.kernel) + remap_guest;
        if dependent {
            let data = served(&e.data_served);
            let total = compute + data + walk_latency + exits + kernel;
            let loop_cycles = compute + data + walk_latency;
            let bound = dominant("serial", loop_cycles, exits, kernel);
            return CycleBreakdown {
                compute,
                data,
                walk: walk_latency,
                exits,
                kernel,
                total,
                bound,
            };
        }
        let data_accesses: u64 = e.data_served.iter().sum();
        let data = (served(&e.data_served) - data_accesses as f64 * self.latency.l1d).max(0.0)
            / self.core.mlp;
        let walk = walk_latency / self.core.page_walkers;
        let (bound, busiest) = [("compute", compute), ("data", data), ("walk", walk)]
            .into_iter()
            .fold(
                ("compute", f64::MIN),
                |best, c| if c.1 > best.1 { c } else { best },
            );
        let bound = dominant(bound, busiest, exits, kernel);
        CycleBreakdown {
            compute,
            data,
            walk,
            exits,
            kernel,
            total: busiest + exits + kernel,
            bound,
        }
    }
}

/// The loop's own bound, unless hypervisor exits or kernel work take more cycles.
fn dominant(loop_bound: &'static str, loop_cycles: f64, exits: f64, kernel: f64) -> &'static str {
    if kernel > loop_cycles.max(exits) {
        "kernel"
    } else if exits > loop_cycles {
        "exits"
    } else {
        loop_bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> Profile {
        Profile::builtin("skylake").unwrap()
    }

    #[test]
    fn dependent_accesses_add_every_latency() {
        let p = profile();
        let e = Events {
            accesses: 2,
            instructions: 4.0,
            data_served: [1, 0, 0, 1],
            walk_served: [0, 1, 0, 0],
            stlb_hits: 1,
            ..Events::default()
        };
        let c = p.cycles(&e, true);
        let expected = 4.0 / p.core.ipc
            + p.latency.l1d
            + p.latency.dram_ns * p.machine.frequency_ghz
            + p.latency.l2
            + p.latency.stlb_hit;
        assert!((c.total - expected).abs() < 1e-9, "{c:?}");
        assert_eq!(c.bound, "serial");
    }

    #[test]
    fn independent_accesses_are_bound_by_the_busiest_resource() {
        let p = profile();
        let e = Events {
            accesses: 10,
            instructions: 10.0,
            data_served: [0, 0, 0, 10],
            walk_served: [0, 0, 40, 0],
            ..Events::default()
        };
        let c = p.cycles(&e, false);
        let data = 10.0 * (p.latency(MemLevel::Dram) - p.latency.l1d) / p.core.mlp;
        let walk = 40.0 * p.latency.llc / p.core.page_walkers;
        assert!((c.data - data).abs() < 1e-9 && (c.walk - walk).abs() < 1e-9);
        assert_eq!(c.total, data.max(walk));
        assert_eq!(c.bound, if walk > data { "walk" } else { "data" });
    }

    #[test]
    fn shadow_work_is_priced_per_unit_with_the_exits() {
        use crate::hv::x86::shadow_work::{ShadowWork, ShadowWorkCounters};
        let p = profile();
        let mut shadow = ShadowWorkCounters::default();
        shadow.add(ShadowWork::SyncScan, 512);
        shadow.add(ShadowWork::SyncEntry, 3);
        shadow.add(ShadowWork::RootBuild, 1);
        let mut exits = ExitCounters::default();
        exits.record(ExitReason::Cr3Load);
        let e = Events {
            exits,
            shadow,
            ..Events::default()
        };
        let c = p.cycles(&e, false);
        let expected = p.exits[ExitReason::Cr3Load]
            + 512.0 * p.shadow[ShadowWork::SyncScan]
            + 3.0 * p.shadow[ShadowWork::SyncEntry]
            + p.shadow[ShadowWork::RootBuild];
        assert_eq!((c.exits, c.total), (expected, expected));
    }

    #[test]
    fn exits_and_kernel_work_add_on_top() {
        let p = profile();
        let mut exits = ExitCounters::default();
        exits.record(ExitReason::EptViolation);
        let kernel = KernelCounters {
            page_faults: 2,
            frames_cleared: 2,
            forks: 1,
            ptes_copied: 10,
            ..KernelCounters::default()
        };
        let e = Events {
            exits,
            kernel,
            ..Events::default()
        };
        let c = p.cycles(&e, false);
        let k = &p.kernel.costs;
        assert_eq!(
            c.total,
            p.exits[ExitReason::EptViolation]
                + 2.0 * (k[KernelCost::PageFault] + k[KernelCost::ClearPage4k])
                + k[KernelCost::Fork]
                + 10.0 * k[KernelCost::ForkPerPte]
        );
    }
}
