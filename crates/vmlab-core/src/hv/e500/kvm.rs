//! `kvm`: KVM's e500v2 trap-and-emulate (Linux `arch/powerpc/kvm/`: booke.c, emulate.c,
//! booke_emulate.c, e500_emulate.c, e500_mmu.c, e500_mmu_host.c). The guest kernel runs in
//! the host's user mode, so every privileged instruction, `sc` and exception exits. KVM keeps
//! a copy of the guest TLB (here: the guest state's TLB) and installs shadow entries in the
//! host TLB:
//! - a guest `tlbwe` invalidates the shadows of the entry it overwrites and premaps the new
//!   entry's first page (`kvmppc_e500_emul_tlbwe`: "Premap the faulting page");
//! - a host TLB miss whose address the guest TLB maps installs a shadow (`kvmppc_mmu_map`):
//!   a guest TLB0 entry becomes a host TLB0 entry; a guest TLB1 entry becomes a host TLB0
//!   4 KiB entry, or, when guest memory is backed by huge host pages, a host TLB1 entry of
//!   the smaller of the host's huge page and the guest entry (`kvmppc_e500_shadow_map`:
//!   "the largest page size that satisfies both host and guest mapping"), placed
//!   round-robin in the TLB1 slots the host's own entries and the magic page leave free
//!   (`kvmppc_e500_tlb1_map_tlb1`, `tlb1_max_shadow_size`);
//! - `tlbivax` and an MMUCSR0 flash invalidation flush every shadow
//!   (`kvmppc_core_flush_tlb`); a `tlbwe` over a guest TLB1 entry that KVM shadowed with
//!   4 KiB host pages drops every shadow too (`inval_gtlbe_on_host`: "Invalidate
//!   everything");
//! - shadows are tagged with shadow IDs ([`super::sid`]); when the host CPU's IDs run out,
//!   the whole host TLB goes;
//! - the guest's decrementer is a host hrtimer: each DEC write restarts it
//!   (`kvmppc_emulate_dec`), and its expiry interrupts the guest (`kvmppc_decrementer_func`)
//!   before KVM delivers the guest's decrementer interrupt;
//! - a guest access to a guest-physical page that is no RAM (a device register in QEMU's
//!   CCSR block) is never shadowed: each access exits and is emulated (`kvmppc_emulate_mmio`),
//!   in the kernel for the in-kernel MPIC, by QEMU in user space for every other device.
//!
//! Shadows are tagged by the guest's (TID, TS, PR), which is what KVM's shadow IDs map to
//! one host TID, so a PID change needs no flush. A host TLB0 victim is chosen round-robin
//! per set.

use super::exits::E500Exit;
use super::model::{
    AccessCtx, GuestEvent, GuestState, HvModel, ModelCounters, TlbEffect, Translation, MSR_DS,
    MSR_IS, MSR_PR,
};
use super::sid::{GuestId, ShadowIds, SidLookup};
use super::work::E500Work;
use crate::hw::e500::mmu::{
    Tlb0, MMUCSR0_TLB0_FI, MMUCSR0_TLB1_FI, TLB0_ENTRIES, TLB0_SETS, TLB0_WAYS, TLB1_ENTRIES,
};
use crate::hw::e500::{Access, PageSize, Perms, TlbEntry, TlbSel, TlbSlot};
use crate::trace::e500::insn::{spr_number, PrivClass};
use crate::trace::e500::ExceptionKind;

/// One shadow entry in the host TLB.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shadow {
    /// Guest effective base.
    pub epn: u32,
    /// Size.
    pub size: PageSize,
    /// Guest-physical base (the host-physical page backs it; the model keeps the
    /// guest-physical side, which is what the invariant compares).
    pub gpa: u64,
    /// The guest entry's permissions.
    pub perms: Perms,
    /// The guest entry's TID.
    pub tid: u8,
    /// The guest entry's TS.
    pub ts: bool,
    /// Created while the guest was in user mode (part of KVM's shadow ID).
    pub pr: bool,
    /// The guest TLB slot it shadows.
    pub gslot: TlbSlot,
}

impl Shadow {
    fn matches(&self, ea: u32, ctx: AccessCtx) -> bool {
        self.ts == ctx.ts
            && self.pr == ctx.user
            && (self.tid == 0 || self.tid == ctx.pid)
            && (ea as u64) >= self.epn as u64
            && (ea as u64) < self.epn as u64 + self.size.bytes()
    }
}

/// The host TLB as KVM fills it with shadows.
#[derive(Clone, Debug)]
pub struct HostTlb {
    tlb0: Vec<Option<Shadow>>,
    tlb0_victim: Vec<u8>,
    tlb1: [Option<Shadow>; TLB1_ENTRIES],
    tlb1_first: usize,
    tlb1_victim: usize,
}

impl HostTlb {
    /// An empty host TLB whose first `reserved` TLB1 entries the host keeps for itself.
    pub fn new(reserved: usize) -> Self {
        let reserved = reserved.min(TLB1_ENTRIES - 1);
        HostTlb {
            tlb0: vec![None; TLB0_SETS * TLB0_WAYS],
            tlb0_victim: vec![0; TLB0_SETS],
            tlb1: [None; TLB1_ENTRIES],
            tlb1_first: reserved,
            tlb1_victim: reserved,
        }
    }

    /// The shadow translating `ea` in `ctx`.
    pub fn lookup(&self, ea: u32, ctx: AccessCtx) -> Option<&Shadow> {
        let set = Tlb0::set_of(ea) * TLB0_WAYS;
        self.tlb1
            .iter()
            .flatten()
            .chain(self.tlb0[set..set + TLB0_WAYS].iter().flatten())
            .find(|s| s.matches(ea, ctx))
    }

    /// Installs `s`: 4 KiB shadows in TLB0 (round-robin way), larger ones in TLB1
    /// (round-robin over the free slots). Returns true when a valid shadow was evicted.
    pub fn install(&mut self, s: Shadow) -> bool {
        if s.size == PageSize::K4 {
            let set = Tlb0::set_of(s.epn);
            let way = self.tlb0_victim[set] as usize;
            self.tlb0_victim[set] = ((way + 1) % TLB0_WAYS) as u8;
            self.tlb0[set * TLB0_WAYS + way].replace(s).is_some()
        } else {
            // KVM keeps no two host TLB1 shadows overlapping: drop any the new one covers.
            for e in self.tlb1[self.tlb1_first..].iter_mut() {
                if e.is_some_and(|o| {
                    o.ts == s.ts
                        && o.pr == s.pr
                        && o.tid == s.tid
                        && (o.epn as u64) < s.epn as u64 + s.size.bytes()
                        && (s.epn as u64) < o.epn as u64 + o.size.bytes()
                }) {
                    *e = None;
                }
            }
            let i = self.tlb1_victim;
            self.tlb1_victim = if i + 1 == TLB1_ENTRIES {
                self.tlb1_first
            } else {
                i + 1
            };
            self.tlb1[i].replace(s).is_some()
        }
    }

    /// Removes the shadows of guest slot `gslot`; returns how many.
    pub fn invalidate_gslot(&mut self, gslot: TlbSlot) -> u64 {
        let mut n = 0;
        for e in self.tlb0.iter_mut().chain(self.tlb1.iter_mut()) {
            if e.is_some_and(|s| s.gslot == gslot) {
                *e = None;
                n += 1;
            }
        }
        n
    }

    /// Removes every shadow; returns how many there were.
    pub fn flush(&mut self) -> u64 {
        let mut n = 0;
        for e in self.tlb0.iter_mut().chain(self.tlb1.iter_mut()) {
            n += e.take().is_some() as u64;
        }
        n
    }
}

/// MMUCSR0's SPR number (e500 Core Family RM): a write flash-invalidates the TLBs.
const SPR_MMUCSR0: u16 = 1012;
/// PID's SPR number (PID0).
const SPR_PID: u16 = 48;
/// DEC's SPR number.
const SPR_DEC: u16 = 22;

/// Guest-physical base of QEMU's ppce500 CCSR block (hw/ppc/e500plat.c `ccsrbar_base`).
pub const CCSR_BASE: u64 = 0xF_E000_0000;
/// Size of the CCSR block (hw/ppc/e500.c `MPC8544_CCSRBAR_SIZE`).
pub const CCSR_SIZE: u64 = 0x10_0000;
/// The interrupt controller's registers in the CCSR block (hw/ppc/e500.c
/// `MPC8544_MPIC_REGS_OFFSET`, an OpenPIC region of 0x40000 bytes); under KVM QEMU creates it
/// in the kernel (`ppce500_init_mpic_kvm`).
pub const MPIC_REGS: std::ops::Range<u64> = 0x4_0000..0x8_0000;

/// Who emulates a device access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceSide {
    /// KVM's in-kernel device (the MPIC): handled on the io bus, back to the guest at once.
    Kernel,
    /// QEMU in user space (KVM_EXIT_MMIO): serial ports, GPIO, everything else.
    User,
}

/// Where an access to guest-physical `gpa` outside RAM is emulated.
pub fn device_side(gpa: u64) -> DeviceSide {
    if (CCSR_BASE..CCSR_BASE + CCSR_SIZE).contains(&gpa) && MPIC_REGS.contains(&(gpa - CCSR_BASE)) {
        DeviceSide::Kernel
    } else {
        DeviceSide::User
    }
}

/// The exit reason of a privileged instruction class.
pub fn priv_exit(class: PrivClass) -> E500Exit {
    match class {
        PrivClass::Mfmsr => E500Exit::Mfmsr,
        PrivClass::Mtmsr => E500Exit::Mtmsr,
        PrivClass::Wrtee | PrivClass::Wrteei => E500Exit::Wrtee,
        PrivClass::Rfi | PrivClass::RfOther => E500Exit::Rfi,
        PrivClass::Mfspr => E500Exit::Mfspr,
        PrivClass::Mtspr => E500Exit::Mtspr,
        PrivClass::Tlbwe => E500Exit::Tlbwe,
        PrivClass::Tlbre => E500Exit::Tlbre,
        PrivClass::Tlbsx => E500Exit::Tlbsx,
        PrivClass::Tlbivax | PrivClass::Tlbsync => E500Exit::Tlbivax,
        PrivClass::Other => E500Exit::OtherPriv,
    }
}

/// The exit reason of a guest exception the hardware raised (the host takes every
/// interrupt first and reflects it), or `None` for the kernel's own branch to a vector.
pub fn exception_exit(kind: ExceptionKind, by_branch: bool) -> Option<E500Exit> {
    if by_branch {
        return None;
    }
    Some(match kind {
        ExceptionKind::DATA_TLB | ExceptionKind::INSN_TLB => E500Exit::GuestTlbMiss,
        ExceptionKind(2) | ExceptionKind(3) => E500Exit::Storage,
        ExceptionKind::SYSCALL => E500Exit::Syscall,
        _ => E500Exit::OtherException,
    })
}

/// The size of KVM's shadows of a guest entry of `entry` when the host page behind it is at
/// most `limit` (`kvmppc_e500_shadow_map`: "the largest page size that satisfies both host
/// and guest mapping").
pub fn shadow_size(entry: PageSize, limit: PageSize) -> PageSize {
    if entry.bytes() <= limit.bytes() {
        entry
    } else {
        limit
    }
}

/// What KVM's models need of the machine besides prices: sizes that decide what happens,
/// not what it costs (the e500 profile's `hv.host_tlb1_reserved`, `hv.guest_ram_mib` and
/// `hv.host_huge_page_kib`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostConfig {
    /// Host TLB1 entries the host keeps for itself (its linear map, the magic page).
    pub tlb1_reserved: usize,
    /// The guest's RAM, from guest-physical 0 (one memslot).
    pub guest_ram_bytes: u64,
    /// The host's huge page backing guest memory in the `-huge` models (hugetlbfs): the
    /// largest shadow KVM makes of a guest TLB1 entry.
    pub huge_page: PageSize,
}

/// The KVM model.
#[derive(Clone, Debug)]
pub struct Kvm {
    name: &'static str,
    /// The largest shadow of a guest TLB1 entry: 4 KiB, or the host's huge page.
    shadow_limit: PageSize,
    host: HostTlb,
    ram_bytes: u64,
    /// Per guest TLB0 entry: KVM holds its host page (`tlbe_ref` E500_TLB_VALID), so a
    /// host TLB miss on it writes the shadow without looking the page up again.
    tlb0_ref: Vec<bool>,
    /// Per guest TLB1 entry: shadowed by 4 KiB host TLB0 entries since its last
    /// invalidation (`tlbe_ref` E500_TLB_TLB0).
    tlb1_in_tlb0: [bool; TLB1_ENTRIES],
    sids: ShadowIds,
    /// The guest context KVM last computed shadow IDs for: (AS, PID, PR).
    context: GuestId,
    counters: ModelCounters,
}

impl Kvm {
    /// KVM with guest memory in 4 KiB host pages (`huge` false: guest TLB1 entries shadowed
    /// by 4 KiB TLB0 entries) or in huge host pages (`huge`: TLB1 shadows).
    pub fn new(config: &HostConfig, huge: bool) -> Self {
        Kvm {
            name: if huge { "kvm-huge" } else { "kvm" },
            shadow_limit: if huge { config.huge_page } else { PageSize::K4 },
            host: HostTlb::new(config.tlb1_reserved),
            ram_bytes: config.guest_ram_bytes,
            tlb0_ref: vec![false; TLB0_ENTRIES],
            tlb1_in_tlb0: [false; TLB1_ENTRIES],
            sids: ShadowIds::default(),
            context: GuestId {
                as_: false,
                tid: 0,
                pr: false,
            },
            counters: ModelCounters::default(),
        }
    }

    /// The largest shadow KVM makes of a guest TLB1 entry (4 KiB without huge pages).
    pub fn shadow_limit(&self) -> PageSize {
        self.shadow_limit
    }

    /// Whether guest-physical `gpa` is RAM (in the one memslot; `kvm_is_visible_gfn`).
    pub fn is_ram(&self, gpa: u64) -> bool {
        gpa < self.ram_bytes
    }

    /// A recorded kernel access to a device register (its guest-physical page is no RAM):
    /// every one of its `count` accesses exits (booke.c, the DTLB-miss case: the guest TLB
    /// maps it, `kvm_is_visible_gfn` fails, `kvmppc_emulate_mmio`) and is emulated in the
    /// kernel (the MPIC) or by QEMU (KVM_EXIT_MMIO). Returns false, doing nothing, for RAM.
    pub fn device_access(&mut self, pc: u32, gpa: u64, count: u32) -> bool {
        if self.is_ram(gpa) {
            return false;
        }
        let n = count as u64;
        self.counters.exits_at(E500Exit::Mmio, pc, n);
        let work = match device_side(gpa) {
            DeviceSide::Kernel => E500Work::MmioInKernel,
            DeviceSide::User => E500Work::MmioUser,
        };
        self.counters.work(work, n);
        true
    }

    /// `kvmppc_core_flush_tlb` (e500_mmu_host.c), after every guest `tlbivax` and MMUCSR0
    /// flash invalidation whether or not an entry went: the shadow-ID table reset
    /// (`kvmppc_e500_tlbil_all`), so no shadow is reachable any more; every guest entry's host
    /// page reference released (`clear_tlb_privs`); the TLB1 maps cleared.
    fn flush_tlb(&mut self, guest: &GuestState) {
        self.tlb0_ref.fill(false);
        self.tlb1_in_tlb0.fill(false);
        self.forget_shadow_ids(guest);
        self.counters.work(E500Work::FlushTlb, 1);
    }

    /// `kvmppc_e500_tlbil_all`: the vcpu's shadow-ID table reset, so no shadow is reachable
    /// any more, and the current context's IDs allocated again.
    fn forget_shadow_ids(&mut self, guest: &GuestState) {
        let n = self.host.flush();
        self.counters.bump("shadow_invalidations", n);
        self.sids.reset_all();
        self.recalc_shadow_pid(guest);
    }

    /// `kvmppc_e500_recalc_shadow_pid`: the shadow IDs of the current context, (AS, PID, PR)
    /// and (AS, 0, PR), after a PID or MSR change or a reset.
    fn recalc_shadow_pid(&mut self, guest: &GuestState) {
        self.context = GuestId {
            as_: guest.msr & (MSR_IS | MSR_DS) != 0,
            tid: guest.pid,
            pr: guest.msr & MSR_PR != 0,
        };
        self.recalc_context();
    }

    fn recalc_context(&mut self) {
        let c = self.context;
        for tid in [c.tid, 0] {
            self.shadow_id(GuestId { tid, ..c });
        }
    }

    /// One `kvmppc_e500_get_sid`; when the IDs run out, the whole host TLB goes.
    fn shadow_id(&mut self, id: GuestId) -> SidLookup {
        let outcome = self.sids.get(id);
        match outcome {
            SidLookup::Hit => {}
            SidLookup::Allocated => self.counters.bump("shadow_ids", 1),
            SidLookup::Rollover => {
                self.counters.bump("shadow_ids", 1);
                let n = self.host.flush();
                self.counters.bump("shadow_invalidations", n);
                self.counters.work(E500Work::SidRollover, 1);
            }
        }
        outcome
    }

    /// The guest-TLB walk of `kvmppc_e500_emul_mt_mmucsr0` and of an invalidate-all
    /// `tlbivax` (`kvmppc_e500_emul_tlbivax`): `kvmppc_e500_gtlbe_invalidate` on each of
    /// `entries` entries.
    fn gtlb_walk(&mut self, entries: u64) {
        self.counters.work(E500Work::GtlbeInvalidate, entries);
    }

    /// What a privileged instruction makes KVM flush: MMUCSR0 flash invalidation walks the
    /// selected guest arrays (512 TLB0 entries, 16 TLB1) and flushes; `tlbivax` walks one
    /// array when it invalidates all (EA bit 61, the array by bit 60) and flushes.
    fn flushes(
        &mut self,
        guest: &GuestState,
        class: PrivClass,
        word: u32,
        values: &[u32],
        gprs_unknown: bool,
    ) {
        let value = values.first().copied().filter(|_| !gprs_unknown);
        match class {
            PrivClass::Mtspr if spr_number(word) == SPR_MMUCSR0 => {
                // An unknown value is Linux's flash invalidation of both arrays (replay.rs).
                let v = value.unwrap_or(MMUCSR0_TLB0_FI | MMUCSR0_TLB1_FI);
                let mut entries = 0;
                if v & MMUCSR0_TLB0_FI != 0 {
                    entries += TLB0_ENTRIES as u64;
                }
                if v & MMUCSR0_TLB1_FI != 0 {
                    entries += TLB1_ENTRIES as u64;
                }
                self.counters.bump("mmucsr0_flushes", 1);
                self.gtlb_walk(entries);
                self.flush_tlb(guest);
            }
            PrivClass::Tlbivax => {
                if let Some(ea) = value.filter(|ea| ea & 0x4 != 0) {
                    let n = if ea & 0x8 != 0 {
                        TLB1_ENTRIES
                    } else {
                        TLB0_ENTRIES
                    };
                    self.gtlb_walk(n as u64);
                }
                self.flush_tlb(guest);
            }
            _ => {}
        }
    }

    /// What emulating a privileged instruction does beyond the instruction itself: a full
    /// MSR write (`rfi`, `mtmsr`: `kvmppc_set_msr` -> `kvmppc_mmu_msr_notify`) and a PID
    /// change (`kvmppc_set_pid`) recompute the shadow IDs; a DEC write restarts the
    /// decrementer's hrtimer (`kvmppc_emulate_dec`).
    fn emulation_side_effects(&mut self, guest: &GuestState, class: PrivClass, word: u32) {
        match class {
            PrivClass::Rfi | PrivClass::RfOther | PrivClass::Mtmsr => self.recalc_shadow_pid(guest),
            PrivClass::Mtspr => match spr_number(word) {
                SPR_PID if guest.pid != self.context.tid => self.recalc_shadow_pid(guest),
                SPR_DEC => self.counters.work(E500Work::DecHrtimer, 1),
                _ => {}
            },
            _ => {}
        }
    }

    /// The host TLB.
    pub fn host(&self) -> &HostTlb {
        &self.host
    }

    fn exit(&mut self, reason: E500Exit, pc: u32) {
        self.counters.exit(reason, pc);
    }

    /// The shadow of guest entry `g` (at `gslot`) for `ea`, as KVM sizes it: the smaller of
    /// the guest entry and the host page behind it.
    fn shadow_for(&self, g: &TlbEntry, gslot: TlbSlot, ea: u32, pr: bool) -> Shadow {
        let size = shadow_size(g.size, self.shadow_limit);
        let epn = (ea as u64 & !size.offset_mask()) as u32;
        Shadow {
            epn,
            size,
            gpa: g.translate(epn),
            perms: g.perms,
            tid: g.tid,
            ts: g.ts,
            pr,
            gslot,
        }
    }

    /// What `kvmppc_mmu_map` (e500_mmu_host.c) costs beyond the shadow's write for guest
    /// entry `gslot`: a guest TLB0 entry whose host page KVM still holds is written from the
    /// cached reference; otherwise `kvmppc_e500_shadow_map` looks the page up in full
    /// (`hv.page_lookup`: memslot, gfn_to_pfn with the page pinned, mmu_lock, the host page
    /// table walk), and for a guest TLB1 entry always, with the VMA found first under the
    /// mmap lock (`hv.vma_lookup`).
    pub fn page_lookup(&mut self, gslot: TlbSlot) {
        match gslot.tlb {
            TlbSel::Tlb0 if self.tlb0_ref[gslot.index] => {
                self.counters.bump("page_lookups_cached", 1);
            }
            TlbSel::Tlb0 => {
                self.tlb0_ref[gslot.index] = true;
                self.counters.work(E500Work::PageLookup, 1);
            }
            TlbSel::Tlb1 => {
                self.counters.work(E500Work::PageLookup, 1);
                self.counters.work(E500Work::VmaLookup, 1);
            }
        }
    }

    /// Maps `ea` from the guest TLB into the host TLB, if the guest maps it.
    fn map(&mut self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> bool {
        let Some((gslot, g)) = guest.tlb.lookup(ea, ctx.pid, ctx.ts) else {
            return false;
        };
        self.page_lookup(gslot);
        let s = self.shadow_for(g, gslot, ea, ctx.user);
        self.write_shadow(s);
        true
    }

    /// `write_stlbe`: the shadow's ID found (`kvmppc_e500_get_tlb_stid`, which may run the
    /// IDs out and flush the host TLB first), then the shadow written into the host TLB.
    pub fn write_shadow(&mut self, s: Shadow) {
        let id = GuestId {
            as_: s.ts,
            tid: s.tid,
            pr: s.pr,
        };
        if self.shadow_id(id) == SidLookup::Rollover {
            // get_sid without avoid_recursion: the current context's IDs come again.
            self.recalc_context();
        }
        if s.gslot.tlb == TlbSel::Tlb1 && s.size == PageSize::K4 {
            self.tlb1_in_tlb0[s.gslot.index] = true;
        }
        if self.host.install(s) {
            self.counters.bump("shadow_evictions", 1);
        }
        self.counters.bump("shadow_fills", 1);
        self.counters.work(E500Work::ShadowWrite, 1);
    }

    /// An access by the guest: a host TLB miss exits when only the shadow is missing.
    fn access(&mut self, guest: &GuestState, pc: u32, ea: u32, ctx: AccessCtx) {
        if self.host.lookup(ea, ctx).is_some() {
            return;
        }
        if self.map(guest, ea, ctx) {
            self.exit(E500Exit::HostTlbMiss, pc);
        } else {
            // The recorded guest made this access, so its TLB mapped it; a miss here means
            // the replayed guest TLB differs from the recorded one.
            self.counters.bump("unmapped_accesses", 1);
        }
    }
}

impl HvModel for Kvm {
    fn name(&self) -> &str {
        self.name
    }

    fn on_event(&mut self, guest: &GuestState, event: &GuestEvent<'_>) {
        match event {
            GuestEvent::Priv {
                pc,
                word,
                class,
                values,
                gprs_unknown,
                tlb,
            } => {
                self.access(guest, *pc, *pc, guest.kernel_fetch());
                self.exit(priv_exit(*class), *pc);
                self.emulation_side_effects(guest, *class, *word);
                self.flushes(guest, *class, *word, values, *gprs_unknown);
                match tlb {
                    TlbEffect::None => {}
                    TlbEffect::Write { slot, new, .. } => {
                        // inval_gtlbe_on_host: the old entry's shadows and host page go; a
                        // TLB1 entry shadowed in 4 KiB pages takes every shadow with it.
                        match slot.tlb {
                            TlbSel::Tlb0 => self.tlb0_ref[slot.index] = false,
                            TlbSel::Tlb1 if self.tlb1_in_tlb0[slot.index] => {
                                self.tlb1_in_tlb0[slot.index] = false;
                                self.forget_shadow_ids(guest);
                                self.counters.work(E500Work::TlbilAll, 1);
                            }
                            TlbSel::Tlb1 => {}
                        }
                        let n = self.host.invalidate_gslot(*slot);
                        self.counters.bump("shadow_invalidations", n);
                        // Premap the new entry's page when it is host-safe (e500.h
                        // tlbe_is_host_safe: valid, in the current instruction address space,
                        // and RAM).
                        let is = guest.msr & super::model::MSR_IS != 0;
                        if new.valid && new.ts == is && self.is_ram(new.translate(new.epn)) {
                            let s = self.shadow_for(new, *slot, new.epn, guest.msr & MSR_PR != 0);
                            self.page_lookup(*slot);
                            self.write_shadow(s);
                        }
                    }
                    // The shadows went with the flush above (flushes).
                    TlbEffect::Invalidate { .. } => {}
                }
            }
            GuestEvent::Exception {
                kind,
                by_branch,
                srr0,
                ..
            } => {
                if let Some(r) = exception_exit(*kind, *by_branch) {
                    self.exit(r, *srr0);
                    if *kind == ExceptionKind::DECREMENTER {
                        self.counters.work(E500Work::DecTimerFire, 1);
                    }
                    // kvmppc_booke_irqprio_deliver: the new MSR through kvmppc_set_msr.
                    self.recalc_shadow_pid(guest);
                }
            }
            GuestEvent::Mem {
                pc,
                vaddr,
                paddr,
                store,
                count,
                ..
            } => {
                let fetch = guest.kernel_fetch();
                self.access(guest, *pc, *pc, fetch);
                if self.device_access(*pc, *paddr, *count) {
                    return;
                }
                let a = if *store { Access::Write } else { Access::Read };
                self.access(guest, *pc, *vaddr, guest.kernel_data(a));
                if self.host.lookup(*pc, fetch).is_none() {
                    // The data shadow evicted the instruction's own page (same TLB0 set,
                    // round-robin victim): the instruction restarts and misses on its fetch.
                    self.access(guest, *pc, *pc, fetch);
                }
            }
            GuestEvent::Insns { .. } | GuestEvent::Syscall { .. } | GuestEvent::Marker { .. } => {}
        }
    }

    fn counters(&self) -> &ModelCounters {
        &self.counters
    }

    fn shadow_translate(&self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> Option<Translation> {
        match self.host.lookup(ea, ctx) {
            Some(s) => Some(Translation {
                gpa: s.gpa | (ea as u64 & s.size.offset_mask()),
                perms: s.perms,
            }),
            // A device page has no shadow: KVM translates each access through its copy of
            // the guest TLB (kvmppc_mmu_xlate) and emulates it, so the guest observes its own
            // translation.
            None => guest.translate(ea, ctx).filter(|t| !self.is_ram(t.gpa)),
        }
    }
}

/// What models built on KVM's host side (`pv`, `labt`) use: they decide which privileged
/// instructions still exit and add their own work, and leave the shadow TLB to KVM.
impl Kvm {
    /// A guest access at `ea` by the instruction at `pc` (a host TLB miss exits when only
    /// the shadow is missing).
    pub fn guest_access(&mut self, guest: &GuestState, pc: u32, ea: u32, ctx: AccessCtx) {
        self.access(guest, pc, ea, ctx);
    }

    /// Counts one exit for `reason` at `pc`.
    pub fn count_exit(&mut self, reason: E500Exit, pc: u32) {
        self.exit(reason, pc);
    }

    /// A privileged instruction that exits after all (a paravirtual template's or a LABT
    /// routine's slow path runs the original instruction): KVM emulates it as it would
    /// without them, with what emulating it does to the shadow IDs and the decrementer.
    pub fn count_emulated_exit(
        &mut self,
        guest: &GuestState,
        class: PrivClass,
        word: u32,
        pc: u32,
    ) {
        self.exit(priv_exit(class), pc);
        self.emulation_side_effects(guest, class, word);
    }

    /// The counters, for a wrapping model's own counts.
    pub fn counters_mut(&mut self) -> &mut ModelCounters {
        &mut self.counters
    }

    /// The host TLB, for a wrapping model that installs its own shadows.
    pub fn host_mut(&mut self) -> &mut HostTlb {
        &mut self.host
    }
}

#[cfg(test)]
#[path = "kvm_tests.rs"]
mod tests;
