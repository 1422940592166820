//! The interface every e500 hypervisor model implements (`bare`, `kvm`, `pv`, the `labt`
//! variants). The replay driver (`replay`) reads a recorded guest execution, keeps
//! the guest's own architectural state ([`GuestState`]: its TLB as its `tlbwe`s built it, PID,
//! MSR) and tells each model every event in order; the model decides what exits, keeps its
//! shadow state and counts. Models count, they do not price: an exit by reason, a unit of
//! work ([`E500Work`]), an instruction they run in the guest; `cost::e500` turns the counts
//! into time (the recorded instructions at the profile's CPI plus what each model added).

use super::exits::{E500Exit, E500ExitCounts};
use super::work::{E500Work, E500WorkCounts};
use crate::hw::e500::{Access, Mas, Mmu, Perms, TlbEntry, TlbSlot};
use crate::trace::e500::insn::PrivClass;
use crate::trace::e500::ExceptionKind;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// `MSR[PR]`: user mode.
pub const MSR_PR: u32 = 0x4000;
/// `MSR[EE]`: external interrupts enabled.
pub const MSR_EE: u32 = 0x8000;
/// `MSR[IS]`: instruction address space.
pub const MSR_IS: u32 = 0x20;
/// `MSR[DS]`: data address space.
pub const MSR_DS: u32 = 0x10;

/// The guest's architectural state as the recorded execution defines it: what a guest
/// running on bare hardware would have in its MMU and registers. Models read it (KVM's copy
/// of the guest TLB is this TLB) and never write it.
#[derive(Clone, Debug, Default)]
pub struct GuestState {
    /// The guest's TLB: TLB0 and TLB1 as its `tlbwe`/`tlbivax`/MMUCSR0 writes left them.
    pub tlb: Mmu,
    /// The PID register.
    pub pid: u8,
    /// The MSR as far as the trace shows it (mtmsr, wrtee(i), rfi, exception entry).
    pub msr: u32,
    /// MAS registers as last written by mtspr (MAS0-3, MAS6 in `mas6`, MAS7).
    pub mas: Mas,
    /// MAS6 (SPID, SAS) for tlbsx.
    pub mas6: u32,
    /// `[start, end)` of the kernel text, from the trace's System.map.
    pub kernel_text: Option<(u32, u32)>,
    /// True once the guest reached user mode for the first time (boot over).
    pub booted: bool,
}

impl GuestState {
    /// The context of a kernel data access now (supervisor, `MSR[DS]`, the current PID).
    pub fn kernel_data(&self, access: Access) -> AccessCtx {
        AccessCtx {
            access,
            user: false,
            ts: self.msr & MSR_DS != 0,
            pid: self.pid,
        }
    }

    /// The context of a kernel instruction fetch now (supervisor, `MSR[IS]`).
    pub fn kernel_fetch(&self) -> AccessCtx {
        AccessCtx {
            access: Access::Execute,
            user: false,
            ts: self.msr & MSR_IS != 0,
            pid: self.pid,
        }
    }

    /// What the guest's own TLB gives for `ea` in `ctx`: its guest-physical address and the
    /// entry's permissions, or `None` on a miss. Permissions are not checked here.
    pub fn translate(&self, ea: u32, ctx: AccessCtx) -> Option<Translation> {
        self.tlb
            .lookup(ea, ctx.pid, ctx.ts)
            .map(|(_, e)| Translation {
                gpa: e.translate(ea),
                perms: e.perms,
            })
    }
}

/// Who accesses what, in which address space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AccessCtx {
    /// Load, store or fetch.
    pub access: Access,
    /// Guest user mode (`MSR[PR]`).
    pub user: bool,
    /// Address space (`MSR[IS]` for fetches, `MSR[DS]` for data).
    pub ts: bool,
    /// The guest's PID.
    pub pid: u8,
}

/// A translation as the guest sees it: guest-physical address and the guest's permission
/// bits (UX/SX/UW/SW/UR/SR in the guest's terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Translation {
    /// Guest-physical address.
    pub gpa: u64,
    /// Permissions, in the guest's terms.
    pub perms: Perms,
}

/// What a privileged instruction did to the guest's TLB, decoded by the driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlbEffect {
    /// Nothing (not a TLB instruction, or one that changes no entry).
    None,
    /// `tlbwe` wrote `new` at `slot`, replacing `old`.
    Write {
        /// Where.
        slot: TlbSlot,
        /// The entry it replaced.
        old: TlbEntry,
        /// The entry written.
        new: TlbEntry,
    },
    /// `tlbivax` or an MMUCSR0 flash invalidation removed these entries (they are invalid
    /// in the guest's TLB now; `removed` holds their former contents).
    Invalidate {
        /// The entries invalidated, with their former contents.
        removed: Vec<(TlbSlot, TlbEntry)>,
    },
}

/// One event of the recorded guest, as models see it. Every `pc` is also an instruction
/// fetch by the guest kernel at that address.
#[derive(Clone, Debug)]
pub enum GuestEvent<'a> {
    /// Instructions retired since the previous event (user and kernel mode).
    Insns {
        /// User-mode instructions.
        user: u64,
        /// Kernel-mode instructions.
        kernel: u64,
    },
    /// A privileged instruction executed by the guest kernel. The guest state already holds
    /// its effect (the TLB after a `tlbwe`, the MSR after `mtmsr`).
    Priv {
        /// Guest virtual address.
        pc: u32,
        /// Encoding.
        word: u32,
        /// Class (the usual exit classes).
        class: PrivClass,
        /// The recorded values (see `trace::e500::Record::Priv`).
        values: &'a [u32],
        /// The GPR-derived values are missing.
        gprs_unknown: bool,
        /// What it did to the guest TLB.
        tlb: TlbEffect,
    },
    /// `sc` from guest user mode.
    Syscall {
        /// Address of the `sc`.
        pc: u32,
        /// r0.
        number: u32,
    },
    /// An exception the guest's own vector took (hardware-raised, or the kernel's own branch
    /// to the storage vector from its TLB-miss handler when `by_branch`).
    Exception {
        /// Which vector.
        kind: ExceptionKind,
        /// The kernel branched to the vector itself.
        by_branch: bool,
        /// Where it was taken.
        srr0: u32,
        /// MSR then.
        srr1: u32,
        /// Faulting data address.
        dear: u32,
    },
    /// `count` kernel loads or stores by the instruction at `pc` to the 4 KiB page of
    /// `vaddr`, with nothing else between them (the trace's grouping).
    Mem {
        /// The instruction.
        pc: u32,
        /// The first access's effective address.
        vaddr: u32,
        /// Its guest-physical address as the recording CPU translated it.
        paddr: u64,
        /// Store or load.
        store: bool,
        /// log2 of the access size.
        size_log2: u8,
        /// How many accesses.
        count: u32,
    },
    /// A phase marker (`id & PHASE_END` ends phase `id`).
    Marker {
        /// The marker id.
        id: u16,
    },
}

/// What a model counted: everything it adds over bare hardware, as counts the profile prices
/// (`exits`, `work`, `added_insns`), and what explains them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelCounters {
    /// Exits by reason (each priced by the profile's `[exits]`).
    pub exits: E500ExitCounts,
    /// Units of hypervisor work beyond the exits (each priced by its profile key).
    pub work: E500WorkCounts,
    /// Instructions the model runs in the guest (paravirtual templates, LABT routines),
    /// priced at the profile's CPI like the recorded ones.
    pub added_insns: u64,
    /// Exits by the guest PC that caused them.
    pub exits_by_pc: FxHashMap<u32, u64>,
    /// Read/write tracing faults (LABT: data accesses to execute-only shadow pages).
    pub tracing_faults: u64,
    /// Shadow TLB entries split (adaptive resizing).
    pub splits: u64,
    /// Shadow TLB entries merged back.
    pub merges: u64,
    /// Model-specific counts (e.g. `shadow_fills`, `rewrites`), reported by name.
    pub extra: BTreeMap<&'static str, u64>,
}

impl ModelCounters {
    /// Counts `n` exits for `reason` at `pc`.
    pub fn exits_at(&mut self, reason: E500Exit, pc: u32, n: u64) {
        self.exits.add(reason, n);
        *self.exits_by_pc.entry(pc).or_default() += n;
    }

    /// Counts one exit for `reason` at `pc`.
    pub fn exit(&mut self, reason: E500Exit, pc: u32) {
        self.exits_at(reason, pc, 1);
    }

    /// Counts `n` units of `work`.
    pub fn work(&mut self, work: E500Work, n: u64) {
        self.work.add(work, n);
    }

    /// Adds `n` to the model-specific counter `name`.
    pub fn bump(&mut self, name: &'static str, n: u64) {
        *self.extra.entry(name).or_default() += n;
    }

    /// The counts accumulated since `before`, a snapshot of these counters.
    pub fn since(&self, before: &ModelCounters) -> ModelCounters {
        let mut d = self.clone();
        d.exits = self.exits.since(&before.exits);
        d.work = self.work.since(&before.work);
        d.added_insns -= before.added_insns;
        d.tracing_faults -= before.tracing_faults;
        d.splits -= before.splits;
        d.merges -= before.merges;
        for (k, v) in &before.extra {
            *d.extra.entry(k).or_default() -= v;
        }
        d.extra.retain(|_, v| *v != 0);
        for (pc, n) in &before.exits_by_pc {
            *d.exits_by_pc.entry(*pc).or_default() -= n;
        }
        d.exits_by_pc.retain(|_, n| *n != 0);
        d
    }

    /// Adds `d`'s counts to these.
    pub fn add_all(&mut self, d: &ModelCounters) {
        self.exits.add_all(&d.exits);
        self.work.add_all(&d.work);
        self.added_insns += d.added_insns;
        self.tracing_faults += d.tracing_faults;
        self.splits += d.splits;
        self.merges += d.merges;
        for (k, v) in &d.extra {
            *self.extra.entry(k).or_default() += v;
        }
        for (pc, n) in &d.exits_by_pc {
            *self.exits_by_pc.entry(*pc).or_default() += n;
        }
    }
}

/// An e500 hypervisor model replaying a recorded guest.
pub trait HvModel {
    /// The configuration's name (`bare`, `kvm`, `kvm-huge`, `pv`, `labt-...`).
    fn name(&self) -> &str;

    /// One event, in guest order. `guest` is the guest's state after the event took effect.
    fn on_event(&mut self, guest: &GuestState, event: &GuestEvent<'_>);

    /// The counts so far.
    fn counters(&self) -> &ModelCounters;

    /// The translation invariant's probe: what the model's shadow state (the entries the
    /// host TLB would use, after the model handled the last event) gives for guest address
    /// `ea` in `ctx`, as the guest observes it: guest-physical address and guest permission
    /// bits (an access the shadow denies but the host emulates, as LABT's tracing does,
    /// counts as permitted). `None` when the shadow has no entry. Implementations must answer
    /// from their shadow state, not from `guest.tlb`.
    fn shadow_translate(&self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> Option<Translation>;

    /// Called once before the first event with the trace's header (System.map: `pv` finds
    /// Linux's patching code and templates there). Models that need nothing ignore it.
    fn on_start(&mut self, _header: &crate::trace::e500::Header) {}
}
