//! The e500 system: replays a recorded guest execution through hypervisor models. A sibling
//! of `scheme::System`: the kernel is the recorded guest, not `os/`.
//!
//! The driver keeps the guest's architectural state ([`GuestState`]) from the trace's
//! records (its TLB from `tlbwe`, `tlbivax` and MMUCSR0 writes; PID; MSR from `mtmsr`,
//! `wrtee(i)`, `rfi` and exception entries), hands every event to every model in order, and
//! splits the run into the trace's phases (boot, each benchmark, the time between), with
//! each model's counts per segment. Pricing them is `cost::e500`'s.

use super::model::{GuestEvent, GuestState, HvModel, ModelCounters, TlbEffect, MSR_DS, MSR_EE};
use super::model::{MSR_IS, MSR_PR};
use crate::hw::e500::mmu::{MMUCSR0_TLB0_FI, MMUCSR0_TLB1_FI};
use crate::hw::e500::{Access, Mas, PageSize, Perms, TlbEntry, TlbSel, TlbSlot};
use crate::trace::e500::format::{KERNEL_BASE, PHASE_END};
use crate::trace::e500::insn::{classify, spr_number, PrivClass};
use crate::trace::e500::{Phase, Reader, Record, TraceError};
use rustc_hash::FxHashMap;
use std::io::Read;

/// SPR numbers the driver follows.
const SPR_PID: u16 = 48;
const SPR_MMUCSR0: u16 = 1012;
const SPR_MAS6: u16 = 630;

/// What the driver noticed about the trace itself (not about any model): whether the replayed
/// guest is the recorded one. `labt` reports carry it as `replay_check`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DriverStats {
    /// Kernel data accesses the replayed guest TLB translated to the recorded
    /// guest-physical address.
    pub accesses_checked: u64,
    /// Kernel data accesses the replayed guest TLB did not map (it should map all).
    pub accesses_unmapped: u64,
    /// Kernel data accesses it mapped to another address than the recorded one.
    pub accesses_mismatched: u64,
    /// `tlbwe`s the MMU rejected (unsupported size, or TLB1 entries overlapping).
    pub tlbwe_rejected: u64,
    /// PID changes the driver took from a kernel access to user memory because the `mtspr
    /// PID` that made them had no recorded value (see `infer_pid`).
    pub pid_inferred: u64,
    /// The TID of the last `tlbwe` with a nonzero TID (the tie-break of `infer_pid`): the
    /// driver's working state, not a check.
    #[serde(skip)]
    pub last_tid: u8,
    /// Privileged records whose GPR-derived value was missing where the driver needed it
    /// (a PID or MSR write; the state keeps its previous value).
    pub values_unknown: u64,
}

impl DriverStats {
    /// True when the replayed guest translated every access as the recorded one did.
    pub fn sound(&self) -> bool {
        self.accesses_unmapped == 0 && self.accesses_mismatched == 0 && self.tlbwe_rejected == 0
    }
}

/// One part of the run: the boot, a benchmark phase, or the time between phases.
#[derive(Clone, Debug)]
pub struct Segment {
    /// `boot`, a phase's name, or `between`.
    pub name: String,
    /// Operations (1 for boot and between).
    pub ops: u64,
    /// User-mode instructions.
    pub user_insns: u64,
    /// Kernel-mode instructions.
    pub kernel_insns: u64,
    /// Each model's counts within the segment, in model order.
    pub models: Vec<ModelCounters>,
}

/// The result of a replay.
#[derive(Clone, Debug)]
pub struct ReplayReport {
    /// The models' names, in order.
    pub model_names: Vec<String>,
    /// Boot, then every phase of the trace's table in table order, then `between`.
    pub segments: Vec<Segment>,
    /// The whole run, per model.
    pub total: Vec<ModelCounters>,
    /// Total instructions (user, kernel).
    pub insns: (u64, u64),
    /// The driver's own checks.
    pub driver: DriverStats,
}

/// The mapping QEMU's ppce500 machine creates before the first instruction
/// (`hw/ppc/e500.c`, `mmubooke_create_initial_mapping`): TLB1 entry 0, effective 0 to
/// physical 0, supervisor read/write/execute, IPROT, 64 MiB (the smallest power-of-four size
/// covering the kernel and device tree of this guest; see docs/model.md).
pub fn qemu_initial_mapping() -> (TlbSlot, TlbEntry) {
    let mut e = TlbEntry::new(
        0,
        0,
        PageSize::M64,
        0,
        Perms::SR.union(Perms::SW).union(Perms::SX),
    );
    e.iprot = true;
    (
        TlbSlot {
            tlb: TlbSel::Tlb1,
            index: 0,
        },
        e,
    )
}

/// Replays `reader` through `models`; `observe` runs after every event has been given to
/// every model (the translation invariant test checks shadows there).
pub fn replay<R: Read>(
    reader: Reader<R>,
    models: &mut [Box<dyn HvModel>],
    mut observe: impl FnMut(&GuestState, &GuestEvent<'_>, &[Box<dyn HvModel>]),
) -> Result<ReplayReport, TraceError> {
    let header = reader.header().clone();
    let table: Vec<Phase> = header.phases();
    let index: FxHashMap<u16, usize> = table.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
    let mut guest = GuestState {
        kernel_text: header.kernel_text(),
        ..GuestState::default()
    };
    let (slot, e) = qemu_initial_mapping();
    guest
        .tlb
        .write(slot, e)
        .expect("an empty TLB1 takes the initial mapping");
    let mut driver = DriverStats::default();
    for m in models.iter_mut() {
        m.on_start(&header);
    }

    // Segment bookkeeping: 0 = boot, 1..=n phases, n+1 between.
    let nseg = table.len() + 2;
    let between = nseg - 1;
    let mut seg_insns = vec![(0u64, 0u64); nseg];
    let mut seg_counts: Vec<Vec<ModelCounters>> =
        vec![vec![ModelCounters::default(); models.len()]; nseg];
    let mut current = 0usize;
    let mut start: Vec<ModelCounters> = models.iter().map(|m| m.counters().clone()).collect();
    let mut switch = |to: usize, current: &mut usize, models: &[Box<dyn HvModel>]| {
        for (i, m) in models.iter().enumerate() {
            let now = m.counters();
            seg_counts[*current][i].add_all(&now.since(&start[i]));
            start[i] = now.clone();
        }
        *current = to;
    };
    let (mut user, mut kernel) = (0u64, 0u64);

    for event in reader {
        let event = event?;
        if event.user_insns + event.kernel_insns > 0 {
            user += event.user_insns;
            kernel += event.kernel_insns;
            seg_insns[current].0 += event.user_insns;
            seg_insns[current].1 += event.kernel_insns;
            let ev = GuestEvent::Insns {
                user: event.user_insns,
                kernel: event.kernel_insns,
            };
            deliver(&guest, &ev, models, &mut observe);
        }
        match &event.record {
            Record::Priv {
                pc,
                word,
                values,
                gprs_unknown,
            } => {
                let class = classify(*word).unwrap_or(PrivClass::Other);
                let tlb = apply_priv(&mut guest, &mut driver, class, *word, values, *gprs_unknown);
                let ev = GuestEvent::Priv {
                    pc: *pc,
                    word: *word,
                    class,
                    values,
                    gprs_unknown: *gprs_unknown,
                    tlb,
                };
                deliver(&guest, &ev, models, &mut observe);
            }
            Record::UserSyscall { pc, number } => {
                let ev = GuestEvent::Syscall {
                    pc: *pc,
                    number: *number,
                };
                deliver(&guest, &ev, models, &mut observe);
            }
            Record::Exception {
                kind,
                by_branch,
                srr0,
                srr1,
                dear,
                ..
            } => {
                // Interrupt entry: supervisor, external interrupts off, address space 0.
                guest.msr = *srr1 & !(MSR_PR | MSR_EE | MSR_IS | MSR_DS);
                let ev = GuestEvent::Exception {
                    kind: *kind,
                    by_branch: *by_branch,
                    srr0: *srr0,
                    srr1: *srr1,
                    dear: *dear,
                };
                deliver(&guest, &ev, models, &mut observe);
            }
            Record::Marker { id } => {
                let ev = GuestEvent::Marker { id: *id };
                deliver(&guest, &ev, models, &mut observe);
                let to = if id & PHASE_END == 0 {
                    index.get(id).map_or(between, |i| i + 1)
                } else {
                    between
                };
                if guest.booted {
                    switch(to, &mut current, models);
                }
            }
            Record::BootEnd { .. } => {
                guest.booted = true;
                guest.msr |= MSR_PR;
                switch(between, &mut current, models);
            }
            Record::Mem {
                pc,
                vaddr,
                paddr,
                store,
                size_log2,
                count,
            } => {
                let a = if *store { Access::Write } else { Access::Read };
                if *vaddr < KERNEL_BASE {
                    infer_pid(&mut guest, &mut driver, *vaddr, *paddr);
                }
                match guest.translate(*vaddr, guest.kernel_data(a)) {
                    Some(t) if t.gpa == *paddr => driver.accesses_checked += 1,
                    Some(_) => driver.accesses_mismatched += 1,
                    None => driver.accesses_unmapped += 1,
                }
                let ev = GuestEvent::Mem {
                    pc: *pc,
                    vaddr: *vaddr,
                    paddr: *paddr,
                    store: *store,
                    size_log2: *size_log2,
                    count: *count,
                };
                deliver(&guest, &ev, models, &mut observe);
            }
        }
    }
    switch(current, &mut current, models);

    let mut segments = Vec::with_capacity(nseg);
    let mut push = |i: usize, name: String, ops: u64| {
        segments.push(Segment {
            name,
            ops,
            user_insns: seg_insns[i].0,
            kernel_insns: seg_insns[i].1,
            models: std::mem::take(&mut seg_counts[i]),
        })
    };
    push(0, "boot".into(), 1);
    for (i, p) in table.iter().enumerate() {
        push(i + 1, p.name.clone(), p.ops.max(1));
    }
    push(between, "between".into(), 1);
    Ok(ReplayReport {
        model_names: models.iter().map(|m| m.name().to_string()).collect(),
        segments,
        total: models.iter().map(|m| m.counters().clone()).collect(),
        insns: (user, kernel),
        driver,
    })
}

fn deliver(
    guest: &GuestState,
    ev: &GuestEvent<'_>,
    models: &mut [Box<dyn HvModel>],
    observe: &mut impl FnMut(&GuestState, &GuestEvent<'_>, &[Box<dyn HvModel>]),
) {
    for m in models.iter_mut() {
        m.on_event(guest, ev);
    }
    observe(guest, ev, models);
}

/// Applies a privileged instruction to the guest state; returns its TLB effect.
fn apply_priv(
    guest: &mut GuestState,
    driver: &mut DriverStats,
    class: PrivClass,
    word: u32,
    values: &[u32],
    gprs_unknown: bool,
) -> TlbEffect {
    let value = values.first().copied();
    match class {
        PrivClass::Tlbwe => {
            let Some(mas) = Mas::from_values(values) else {
                driver.tlbwe_rejected += 1;
                return TlbEffect::None;
            };
            guest.mas = mas;
            match guest.tlb.tlbwe(&mas) {
                Ok((slot, old)) => {
                    let new = *guest.tlb.entry(slot);
                    if new.valid && new.tid != 0 {
                        driver.last_tid = new.tid;
                    }
                    TlbEffect::Write { slot, old, new }
                }
                Err(_) => {
                    driver.tlbwe_rejected += 1;
                    TlbEffect::None
                }
            }
        }
        PrivClass::Tlbivax => match value {
            Some(ea) if !gprs_unknown => invalidated(guest, |tlb| tlb.tlbivax(ea)),
            _ => {
                // Unknown address: invalidate both arrays, the conservative reading.
                driver.values_unknown += 1;
                invalidated(guest, |tlb| tlb.flash_invalidate(0x6))
            }
        },
        PrivClass::Mtspr => {
            let spr = spr_number(word);
            let Some(v) = value.filter(|_| !gprs_unknown) else {
                return match spr {
                    SPR_PID => {
                        // Learned from the next access to user memory (infer_pid).
                        driver.values_unknown += 1;
                        TlbEffect::None
                    }
                    SPR_MMUCSR0 => {
                        // Linux writes MMUCSR0 only to flash-invalidate every TLB
                        // (`_tlbil_all`, `_tlbil_pid`: MMUCSR0_TLBFI, loaded by `li` just
                        // before, so the recorder seldom has the value).
                        driver.values_unknown += 1;
                        invalidated(guest, |tlb| {
                            tlb.flash_invalidate(MMUCSR0_TLB0_FI | MMUCSR0_TLB1_FI)
                        })
                    }
                    _ => TlbEffect::None,
                };
            };
            match spr {
                SPR_PID => guest.pid = v as u8,
                SPR_MAS6 => guest.mas6 = v,
                SPR_MMUCSR0 => return invalidated(guest, |tlb| tlb.flash_invalidate(v)),
                _ => {}
            }
            TlbEffect::None
        }
        PrivClass::Mtmsr => {
            match value.filter(|_| !gprs_unknown) {
                Some(v) => guest.msr = v,
                None => driver.values_unknown += 1,
            }
            TlbEffect::None
        }
        PrivClass::Wrtee => {
            match value.filter(|_| !gprs_unknown) {
                Some(v) => guest.msr = (guest.msr & !MSR_EE) | (v & MSR_EE),
                None => driver.values_unknown += 1,
            }
            TlbEffect::None
        }
        PrivClass::Wrteei => {
            guest.msr = (guest.msr & !MSR_EE) | (word & MSR_EE);
            TlbEffect::None
        }
        PrivClass::Rfi => {
            if let Some(&srr1) = values.get(1) {
                guest.msr = srr1;
            }
            TlbEffect::None
        }
        _ => TlbEffect::None,
    }
}

fn invalidated(
    guest: &mut GuestState,
    op: impl FnOnce(&mut crate::hw::e500::Mmu) -> Vec<TlbSlot>,
) -> TlbEffect {
    let before = guest.tlb.clone();
    let slots = op(&mut guest.tlb);
    if slots.is_empty() {
        return TlbEffect::None;
    }
    TlbEffect::Invalidate {
        removed: slots.into_iter().map(|s| (s, *before.entry(s))).collect(),
    }
}

/// When a kernel access to user memory does not translate to the recorded guest-physical
/// address under the current PID, the recorded value of the `mtspr PID` before it was
/// missing (QEMU had not written the GPR back; docs/e500-trace.md): the PID is then the TID
/// of the one TLB entry that translates the access to the recorded address, which is what
/// the recording CPU used. Counted in [`DriverStats::pid_inferred`].
fn infer_pid(guest: &mut GuestState, driver: &mut DriverStats, vaddr: u32, paddr: u64) {
    let ts = guest.msr & MSR_DS != 0;
    if guest
        .tlb
        .lookup(vaddr, guest.pid, ts)
        .is_some_and(|(_, e)| e.translate(vaddr) == paddr)
    {
        return;
    }
    let set = crate::hw::e500::Tlb0::set_of(vaddr) * crate::hw::e500::mmu::TLB0_WAYS;
    let candidates = guest.tlb.tlb0().entries()[set..set + crate::hw::e500::mmu::TLB0_WAYS]
        .iter()
        .chain(guest.tlb.tlb1().entries().iter());
    let tids: smallvec::SmallVec<[u8; 4]> = candidates
        .filter(|e| e.valid && e.ts == ts && e.tid != 0 && e.covers(vaddr))
        .filter(|e| e.translate(vaddr) == paddr)
        .map(|e| e.tid)
        .collect();
    // A page shared by two processes (after fork) has an entry for each; they translate
    // alike, and the most recently written TID is the process that just ran into it.
    let tid = if tids.contains(&driver.last_tid) {
        Some(driver.last_tid)
    } else {
        tids.first().copied()
    };
    if let Some(tid) = tid {
        guest.pid = tid;
        driver.pid_inferred += 1;
    }
}
