//! The `labt` hypervisor models: KVM/e500 with guest memory in huge host pages (the
//! guest's TLB1 entries shadowed by host TLB1 entries, which is what makes tracing
//! expensive) plus LABT's [`Translator`]. Every privileged instruction goes to the
//! translator first: exits are KVM's (its emulation, its shadow TLB), in-place rewrites run
//! in the guest, routines run the paravirtual templates' paths from the translation cache.
//! Every kernel data access is checked against the execute-only pieces: a trap is a
//! `tracing` exit. When resizing splits a mapping, the host TLB holds the pieces: a host
//! TLB miss in a split mapping installs the piece, not the guest's whole entry.

use super::{LabtConfig, LabtStats, Translator};
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::kvm::{priv_exit, shadow_size, HostConfig, Kvm, Shadow};
use crate::hv::e500::labt::resize::Block;
use crate::hv::e500::labt::translator::{PrivOutcome, SiteKind};
use crate::hv::e500::labt::Rewrite;
use crate::hv::e500::model::{
    AccessCtx, GuestEvent, GuestState, HvModel, ModelCounters, TlbEffect, Translation,
};
use crate::hv::e500::pv::model::{settle, EeWindow};
use crate::hv::e500::pv::templates::MSR_EE;
use crate::hv::e500::pv::TemplateInput;
use crate::hv::e500::work::E500Work;
use crate::hw::e500::{Access, PageSize, TlbSel};

/// Default execute-only unit of adaptive resizing: 256 KiB, the study's lower bound, which
/// is an e500v2 TLB1 size (TSIZE 4, 4^9 bytes).
pub const DEFAULT_RESIZE_UNIT: u64 = 256 << 10;
/// Default avoid-read-faults threshold: tracing faults by one load before it is redirected.
/// An assumption (a round number; the study's value is not known here).
pub const DEFAULT_READ_FAULT_THRESHOLD: u32 = 64;
/// Default translation cache: 64 KiB, the size of Linux's own template area (`kvm_tmp`).
pub const DEFAULT_TC_BYTES: u32 = 64 << 10;
/// Default translation cache address: within ±32 MiB of the whole kernel text
/// (0xC0000000..0xC02A6000 in the recorded guest) so that single branches reach it both
/// ways, in guest memory the recorded guest never touches (it has no access between
/// 0xC1C00000 and 0xC2000000), which the host would reserve from the guest (a
/// `/memreserve/` in the device tree). The model counts guest data accesses to the window
/// (`tc_window_accesses`) to show it stays unused.
pub const DEFAULT_TC_BASE: u32 = 0xC1F0_0000;

/// The LABT variants compared in `vmlab reproduce labt`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// Binary translation with read/write tracing, no optimization.
    Tracing,
    /// + adaptive shadow-TLB resizing.
    Resize,
    /// + avoiding read faults.
    AvoidReads,
    /// Both optimizations.
    All,
}

impl Variant {
    /// The configuration's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Tracing => "labt",
            Variant::Resize => "labt-resize",
            Variant::AvoidReads => "labt-avoid",
            Variant::All => "labt-all",
        }
    }

    /// The translator's configuration for this variant, with the defaults above.
    pub fn config(self) -> LabtConfig {
        let resize = matches!(self, Variant::Resize | Variant::All);
        let avoid = matches!(self, Variant::AvoidReads | Variant::All);
        LabtConfig {
            resize_unit: resize.then_some(DEFAULT_RESIZE_UNIT),
            read_fault_threshold: avoid.then_some(DEFAULT_READ_FAULT_THRESHOLD),
            tc_base: DEFAULT_TC_BASE,
            tc_bytes: DEFAULT_TC_BYTES,
        }
    }
}

/// A LABT model.
#[derive(Debug, Clone)]
pub struct Labt {
    name: &'static str,
    kvm: Kvm,
    tr: Translator,
    prev_msr: u32,
    window: Option<EeWindow>,
    synced: LabtStats,
}

impl Labt {
    /// A LABT model of `variant` with the profile's costs.
    pub fn new(host: &HostConfig, variant: Variant) -> Self {
        Self::with_config(host, variant.name(), variant.config())
    }

    /// A LABT model with an explicit configuration.
    pub fn with_config(host: &HostConfig, name: &'static str, cfg: LabtConfig) -> Self {
        Labt {
            name,
            kvm: Kvm::new(host, true),
            tr: Translator::new(cfg),
            prev_msr: 0,
            window: None,
            synced: LabtStats::default(),
        }
    }

    /// The translator (its statistics).
    pub fn translator(&self) -> &Translator {
        &self.tr
    }

    /// The shadow mapping holding `ea`, LABT's execute-only unit: KVM's shadow of the
    /// guest's TLB1 entry (the entry, or its piece of the host's huge page when the entry is
    /// larger), or the 4 KiB page for TLB0 mappings and addresses the guest does not map.
    fn mapping_of(guest: &GuestState, limit: PageSize, ea: u32) -> Block {
        let ctx = guest.kernel_fetch();
        match guest.tlb.lookup(ea, ctx.pid, ctx.ts) {
            Some((slot, e)) if slot.tlb == TlbSel::Tlb1 => {
                let size = shadow_size(e.size, limit).bytes();
                Block {
                    base: (ea as u64 & !(size - 1)) as u32,
                    size,
                }
            }
            _ => Block {
                base: ea & !0xFFF,
                size: 4096,
            },
        }
    }

    /// Instructions of the routines, run in the guest.
    fn insns(&mut self, insns: u64) {
        self.kvm.counters_mut().added_insns += insns;
    }

    /// Before KVM handles an access to `ea`: in a split mapping, make sure the host TLB
    /// holds the piece of `ea` rather than a shadow of the guest's whole entry.
    fn piece_shadow(&mut self, guest: &GuestState, pc: u32, ea: u32, ctx: AccessCtx) {
        let Some(piece) = self.tr.piece_of(ea) else {
            return;
        };
        let Some((gslot, g)) = guest.tlb.lookup(ea, ctx.pid, ctx.ts) else {
            return;
        };
        if piece.block.size >= shadow_size(g.size, self.kvm.shadow_limit()).bytes() {
            return;
        }
        let host = self.kvm.host_mut();
        if let Some(s) = host.lookup(ea, ctx) {
            if s.size.bytes() <= piece.block.size {
                return;
            }
            // A shadow of the whole unit (KVM's premap): the pieces replace it.
            host.invalidate_gslot(gslot);
        }
        let Some(size) = PageSize::from_bytes(piece.block.size) else {
            return;
        };
        self.kvm.page_lookup(gslot);
        self.kvm.write_shadow(Shadow {
            epn: piece.block.base,
            size,
            gpa: g.translate(piece.block.base),
            perms: g.perms,
            tid: g.tid,
            ts: g.ts,
            pr: ctx.user,
            gslot,
        });
        self.kvm.count_exit(E500Exit::HostTlbMiss, pc);
    }

    fn access(&mut self, guest: &GuestState, pc: u32, ea: u32, ctx: AccessCtx) {
        self.piece_shadow(guest, pc, ea, ctx);
        self.kvm.guest_access(guest, pc, ea, ctx);
    }

    /// Copies the translator's counts into the model's counters when they changed.
    fn sync_stats(&mut self) {
        let s = *self.tr.stats();
        if s == self.synced {
            return;
        }
        let k = self.kvm.counters_mut();
        for (name, now, was) in [
            (
                "rewrites_in_place",
                s.rewrites_in_place,
                self.synced.rewrites_in_place,
            ),
            (
                "rewrites_routine",
                s.rewrites_routine,
                self.synced.rewrites_routine,
            ),
            (
                "untranslatable_sites",
                s.untranslatable,
                self.synced.untranslatable,
            ),
            ("out_of_reach", s.out_of_reach, self.synced.out_of_reach),
            ("tc_evictions", s.evictions, self.synced.evictions),
            (
                "undone_by_write",
                s.undone_by_write,
                self.synced.undone_by_write,
            ),
            ("read_faults", s.read_faults, self.synced.read_faults),
            ("write_faults", s.write_faults, self.synced.write_faults),
            ("hot_loads", s.hot_loads, self.synced.hot_loads),
        ] {
            if now != was {
                k.bump(name, now - was);
            }
        }
        self.synced = s;
    }

    /// After the translator changed its pieces, drops the host shadows of the mappings
    /// that hold sites (the guest's next accesses refill them as pieces); true if it did.
    fn relayout(&mut self, guest: &GuestState, before: (u64, u64)) -> bool {
        self.sync_stats();
        let s = *self.tr.stats();
        if (s.splits, s.merges) == before {
            return false;
        }
        let k = self.kvm.counters_mut();
        k.splits = s.splits;
        k.merges = s.merges;
        let ctx = guest.kernel_fetch();
        let mut slots: Vec<_> = self
            .tr
            .mapping_bases()
            .filter_map(|b| guest.tlb.lookup(b, ctx.pid, ctx.ts).map(|(slot, _)| slot))
            .collect();
        slots.dedup();
        for slot in slots {
            let n = self.kvm.host_mut().invalidate_gslot(slot);
            let k = self.kvm.counters_mut();
            k.bump("shadow_invalidations", n);
            k.work(E500Work::ShadowWrite, 1);
        }
        true
    }

    fn on_priv(&mut self, guest: &GuestState, event: &GuestEvent<'_>) {
        let GuestEvent::Priv {
            pc,
            word,
            class,
            tlb,
            ..
        } = event
        else {
            return;
        };
        let (pc, word) = (*pc, *word);
        let limit = self.kvm.shadow_limit();
        if !matches!(tlb, TlbEffect::None) {
            // TLB instructions always exit; a change to the guest's TLB1 moves sites.
            self.kvm.on_event(guest, event);
            let tlb1 = match tlb {
                TlbEffect::Write { slot, .. } => slot.tlb == TlbSel::Tlb1,
                TlbEffect::Invalidate { removed } => {
                    removed.iter().any(|(s, _)| s.tlb == TlbSel::Tlb1)
                }
                TlbEffect::None => false,
            };
            if tlb1 {
                self.tr.remap(|ea| Self::mapping_of(guest, limit, ea));
            }
            return;
        }
        let before = (self.tr.stats().splits, self.tr.stats().merges);
        let input = TemplateInput {
            old_msr: self.prev_msr,
            value: guest.msr,
            int_pending: false,
        };
        match self
            .tr
            .on_priv(pc, word, Self::mapping_of(guest, limit, pc), input)
        {
            PrivOutcome::Exit { translated } => {
                self.kvm.on_event(guest, event);
                if translated {
                    let k = self.kvm.counters_mut();
                    k.work(E500Work::Translate, 1);
                    k.bump("rewrites", 1);
                }
            }
            PrivOutcome::InPlace => {
                self.access(guest, pc, pc, guest.kernel_fetch());
                self.kvm.counters_mut().bump("in_place", 1);
            }
            PrivOutcome::Routine(r) => {
                self.access(guest, pc, pc, guest.kernel_fetch());
                self.insns(r.insns as u64);
                if r.exits {
                    self.kvm.count_emulated_exit(guest, *class, word, pc);
                } else if guest.msr & MSR_EE != 0 {
                    if let Some(SiteKind::Priv(Rewrite::Routine(template))) =
                        self.tr.site(pc).map(|s| s.kind)
                    {
                        self.window = Some(EeWindow {
                            pc,
                            class: *class,
                            template,
                            input,
                            counted: r,
                        });
                    }
                }
            }
        }
        if self.relayout(guest, before) {
            // The guest resumes at the site: its fetch refills the host TLB.
            self.access(guest, pc, pc, guest.kernel_fetch());
        }
    }

    fn on_mem(&mut self, guest: &GuestState, event: &GuestEvent<'_>) {
        let GuestEvent::Mem {
            pc,
            vaddr,
            paddr,
            store,
            size_log2,
            count,
        } = event
        else {
            return;
        };
        let (pc, vaddr) = (*pc, *vaddr);
        self.access(guest, pc, pc, guest.kernel_fetch());
        // A device register: KVM emulates every access (no shadow, nothing to trace).
        if self.kvm.device_access(pc, *paddr, *count) {
            return;
        }
        let a = if *store { Access::Write } else { Access::Read };
        self.access(guest, pc, vaddr, guest.kernel_data(a));
        // Split pieces share the few TLB1 slots: the data piece may have evicted the code's,
        // which the next instruction's fetch then misses.
        self.access(guest, pc, pc, guest.kernel_fetch());
        let tc = self.tr.config();
        if vaddr >= tc.tc_base && (vaddr as u64) < tc.tc_base as u64 + tc.tc_bytes as u64 {
            self.kvm
                .counters_mut()
                .bump("tc_window_accesses", *count as u64);
        }
        let limit = self.kvm.shadow_limit();
        let before = (self.tr.stats().splits, self.tr.stats().merges);
        let out = self.tr.on_data(
            pc,
            vaddr,
            *store,
            *size_log2,
            *count,
            Self::mapping_of(guest, limit, pc),
        );
        if out.faults > 0 {
            let k = self.kvm.counters_mut();
            k.exits_at(E500Exit::Tracing, pc, out.faults);
            k.tracing_faults += out.faults;
        }
        if out.cached_reads > 0 {
            self.kvm
                .counters_mut()
                .bump("cached_reads", out.cached_reads);
        }
        if out.routine_insns > 0 {
            self.insns(out.routine_insns);
        }
        if self.relayout(guest, before) {
            self.access(guest, pc, pc, guest.kernel_fetch());
            self.access(guest, pc, vaddr, guest.kernel_data(a));
        }
    }
}

impl HvModel for Labt {
    fn name(&self) -> &str {
        self.name
    }

    fn on_event(&mut self, guest: &GuestState, event: &GuestEvent<'_>) {
        if !matches!(event, GuestEvent::Insns { .. }) {
            if let Some((w, t)) = settle(self.window.take(), event) {
                self.insns((t.insns - w.counted.insns) as u64);
                self.kvm.count_exit(priv_exit(w.class), w.pc);
                self.kvm.counters_mut().bump("pending_interrupt_exits", 1);
            }
        }
        match event {
            GuestEvent::Priv { .. } => self.on_priv(guest, event),
            GuestEvent::Mem { .. } => self.on_mem(guest, event),
            _ => self.kvm.on_event(guest, event),
        }
        self.prev_msr = guest.msr;
    }

    fn counters(&self) -> &ModelCounters {
        self.kvm.counters()
    }

    fn shadow_translate(&self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> Option<Translation> {
        self.kvm.shadow_translate(guest, ea, ctx)
    }
}
