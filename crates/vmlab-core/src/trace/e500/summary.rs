//! What `vmlab trace info` reports: per phase (the boot, each benchmark) and for the whole
//! run, instructions, privileged executions by class and by SPR, how concentrated they are
//! on few PCs, exceptions by kind, TLB writes, and the kernel's loads and stores.

use super::format::{Event, ExceptionKind, Header, Phase, Record, KERNEL_BASE, PHASE_END};
use super::insn::{classify, spr_name, spr_number, PrivClass};
use super::reader::{Reader, TraceError};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Read;

/// Counters over one stretch of a trace.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    /// User-mode instructions.
    pub user_insns: u64,
    /// Kernel-mode instructions.
    pub kernel_insns: u64,
    /// Privileged executions by class.
    pub by_class: BTreeMap<PrivClass, u64>,
    /// mfspr executions by SPR number.
    pub mfspr: BTreeMap<u16, u64>,
    /// mtspr executions by SPR number.
    pub mtspr: BTreeMap<u16, u64>,
    /// Privileged executions by PC.
    pub by_pc: FxHashMap<u32, u64>,
    /// `sc` from user mode.
    pub user_syscalls: u64,
    /// Exception entries by kind and whether the kernel branched there itself.
    pub exceptions: BTreeMap<(ExceptionKind, bool), u64>,
    /// tlbwe into TLB0 and into TLB1 (MAS0's TLBSEL).
    pub tlb_writes: [u64; 2],
    /// Kernel loads.
    pub loads: u64,
    /// Kernel stores.
    pub stores: u64,
    /// Kernel loads and stores to the kernel's own text.
    pub text_accesses: u64,
}

impl Stats {
    fn add(&mut self, e: &Event, text: (u32, u32)) {
        self.user_insns += e.user_insns;
        self.kernel_insns += e.kernel_insns;
        match &e.record {
            Record::Priv {
                pc, word, values, ..
            } => {
                let class = classify(*word).unwrap_or(PrivClass::Other);
                *self.by_class.entry(class).or_default() += 1;
                *self.by_pc.entry(*pc).or_default() += 1;
                match class {
                    PrivClass::Mfspr => *self.mfspr.entry(spr_number(*word)).or_default() += 1,
                    PrivClass::Mtspr => *self.mtspr.entry(spr_number(*word)).or_default() += 1,
                    PrivClass::Tlbwe => {
                        let tlbsel = values.first().map_or(0, |mas0| (mas0 >> 28) & 1);
                        self.tlb_writes[tlbsel as usize] += 1;
                    }
                    _ => {}
                }
            }
            Record::UserSyscall { .. } => self.user_syscalls += 1,
            Record::Exception {
                kind, by_branch, ..
            } => *self.exceptions.entry((*kind, *by_branch)).or_default() += 1,
            Record::Mem {
                vaddr,
                store,
                count,
                ..
            } => {
                let n = u64::from(*count);
                if *store {
                    self.stores += n;
                } else {
                    self.loads += n;
                }
                if (text.0..text.1).contains(vaddr) {
                    self.text_accesses += n;
                }
            }
            Record::Marker { .. } | Record::BootEnd { .. } => {}
        }
    }

    /// All privileged executions.
    pub fn privileged(&self) -> u64 {
        self.by_class.values().sum()
    }

    /// Hardware exception entries (not the kernel's own branches to a vector).
    pub fn hardware_exceptions(&self) -> u64 {
        self.exceptions
            .iter()
            .filter(|((_, b), _)| !b)
            .map(|(_, n)| n)
            .sum()
    }

    /// How many PCs account for `share` (0..=1) of the privileged executions, the most
    /// executed first.
    pub fn pcs_covering(&self, share: f64) -> usize {
        let mut counts: Vec<u64> = self.by_pc.values().copied().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let total: u64 = counts.iter().sum();
        let goal = (total as f64 * share).ceil() as u64;
        let mut sum = 0;
        for (i, c) in counts.iter().enumerate() {
            if sum >= goal {
                return i;
            }
            sum += c;
        }
        counts.len()
    }

    /// The serializable view, with per-operation rates for `ops` operations.
    pub fn report(&self, name: &str, ops: u64) -> StatsReport {
        let spr = |m: &BTreeMap<u16, u64>| {
            m.iter()
                .map(|(n, c)| (spr_name(*n).map_or(format!("SPR{n}"), str::to_string), *c))
                .collect()
        };
        let exceptions: BTreeMap<String, u64> = self
            .exceptions
            .iter()
            .map(|((k, b), n)| {
                let suffix = if *b { " (branch)" } else { "" };
                (format!("{}{suffix}", k.name()), *n)
            })
            .collect();
        let per_op = |n: u64| if ops == 0 { 0.0 } else { n as f64 / ops as f64 };
        StatsReport {
            phase: name.to_string(),
            ops,
            user_insns: self.user_insns,
            kernel_insns: self.kernel_insns,
            privileged: self.privileged(),
            privileged_by_class: self
                .by_class
                .iter()
                .map(|(c, n)| (c.name().to_string(), *n))
                .collect(),
            mfspr_by_spr: spr(&self.mfspr),
            mtspr_by_spr: spr(&self.mtspr),
            distinct_pcs: self.by_pc.len(),
            pcs_90: self.pcs_covering(0.9),
            pcs_99: self.pcs_covering(0.99),
            user_syscalls: self.user_syscalls,
            exceptions,
            hardware_exceptions: self.hardware_exceptions(),
            tlb0_writes: self.tlb_writes[0],
            tlb1_writes: self.tlb_writes[1],
            kernel_loads: self.loads,
            kernel_stores: self.stores,
            kernel_text_accesses: self.text_accesses,
            privileged_per_op: per_op(self.privileged()),
            exceptions_per_op: per_op(self.hardware_exceptions()),
        }
    }
}

/// One row of the report (a phase or the whole run).
#[derive(Debug, Clone, Serialize)]
pub struct StatsReport {
    /// `total`, `boot`, `between` (outside any phase) or the phase's name.
    pub phase: String,
    /// Operations of the phase (1 for boot and total).
    pub ops: u64,
    /// User-mode instructions.
    pub user_insns: u64,
    /// Kernel-mode instructions.
    pub kernel_insns: u64,
    /// Privileged executions.
    pub privileged: u64,
    /// By class.
    pub privileged_by_class: BTreeMap<String, u64>,
    /// mfspr by SPR name.
    pub mfspr_by_spr: BTreeMap<String, u64>,
    /// mtspr by SPR name.
    pub mtspr_by_spr: BTreeMap<String, u64>,
    /// Distinct PCs of privileged executions.
    pub distinct_pcs: usize,
    /// PCs covering 90% of them.
    pub pcs_90: usize,
    /// PCs covering 99% of them.
    pub pcs_99: usize,
    /// `sc` from user mode.
    pub user_syscalls: u64,
    /// Exception entries by kind (`(branch)`: the kernel's own branch to the vector).
    pub exceptions: BTreeMap<String, u64>,
    /// Hardware exception entries.
    pub hardware_exceptions: u64,
    /// tlbwe into TLB0.
    pub tlb0_writes: u64,
    /// tlbwe into TLB1.
    pub tlb1_writes: u64,
    /// Kernel loads.
    pub kernel_loads: u64,
    /// Kernel stores.
    pub kernel_stores: u64,
    /// Kernel loads and stores to the kernel text.
    pub kernel_text_accesses: u64,
    /// Privileged executions per operation.
    pub privileged_per_op: f64,
    /// Hardware exceptions per operation.
    pub exceptions_per_op: f64,
}

/// A whole trace summarised: the run, the boot, the time outside phases, each phase.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The trace's header.
    pub header: Header,
    /// The whole run.
    pub total: Stats,
    /// From the first instruction to the first user-mode instruction.
    pub boot: Stats,
    /// After the boot, outside every phase (setup between benchmarks).
    pub between: Stats,
    /// Each phase of the table with its counters, in table order.
    pub phases: Vec<(Phase, Stats)>,
    /// Records read.
    pub records: u64,
}

impl Summary {
    /// Reads a whole trace, checking it, and counts.
    pub fn read<R: Read>(mut reader: Reader<R>) -> Result<Self, TraceError> {
        let header = reader.header().clone();
        let text = header.kernel_text().unwrap_or((KERNEL_BASE, KERNEL_BASE));
        let table = header.phases();
        let mut phases: Vec<(Phase, Stats)> =
            table.into_iter().map(|p| (p, Stats::default())).collect();
        let index: FxHashMap<u16, usize> = phases
            .iter()
            .enumerate()
            .map(|(i, (p, _))| (p.id, i))
            .collect();
        let (mut total, mut boot, mut between) =
            (Stats::default(), Stats::default(), Stats::default());
        let mut booted = false;
        let mut current: Option<usize> = None;
        let mut records = 0;
        for event in reader.by_ref() {
            let event = event?;
            records += 1;
            total.add(&event, text);
            match (booted, current) {
                (false, _) => boot.add(&event, text),
                (true, Some(i)) => phases[i].1.add(&event, text),
                (true, None) => between.add(&event, text),
            }
            match event.record {
                Record::BootEnd { .. } => booted = true,
                Record::Marker { id } if id & PHASE_END == 0 => current = index.get(&id).copied(),
                Record::Marker { .. } => current = None,
                _ => {}
            }
        }
        Ok(Summary {
            header,
            total,
            boot,
            between,
            phases,
            records,
        })
    }

    /// The rows: total, boot, between, then every phase.
    pub fn reports(&self) -> Vec<StatsReport> {
        let mut rows = vec![
            self.total.report("total", 1),
            self.boot.report("boot", 1),
            self.between.report("between", 1),
        ];
        rows.extend(self.phases.iter().map(|(p, s)| s.report(&p.name, p.ops)));
        rows
    }
}
