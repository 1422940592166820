//! The e500 hypervisor's work beyond the exit itself, counted per unit: what a model did,
//! not what it cost. Each unit's name is the key of its price in the e500 profile
//! (`section.key`); `cost::e500` prices the counts, so a replay's counters can be priced
//! again under another profile without replaying (docs/model.md, "e500").

crate::named_enum! {
    /// One unit of hypervisor work that has a price in the e500 profile.
    pub enum E500Work {
        /// A shadow entry written into the host TLB (its MAS set-up and `tlbwe`), or the
        /// shadows of a mapping dropped after LABT re-laid its pieces.
        ShadowWrite => "hv.shadow_write",
        /// `kvmppc_core_flush_tlb`: the shadow-ID table reset and every guest entry's host
        /// page reference released, after a guest `tlbivax` or MMUCSR0 flash invalidation.
        FlushTlb => "hv.flush_tlb",
        /// One guest TLB entry visited by `kvmppc_e500_gtlbe_invalidate` (an MMUCSR0 flash
        /// invalidation or an invalidate-all `tlbivax` walks a whole array).
        GtlbeInvalidate => "hv.gtlbe_invalidate",
        /// The full host page lookup of `kvmppc_e500_shadow_map` (memslot, gfn_to_pfn with the
        /// page pinned, mmu_lock, the host page-table walk).
        PageLookup => "hv.page_lookup",
        /// The VMA lookup under the mmap lock before a guest TLB1 entry's page lookup.
        VmaLookup => "hv.vma_lookup",
        /// A device access emulated by KVM's in-kernel interrupt controller.
        MmioInKernel => "mmio.in_kernel",
        /// A device access emulated by QEMU in user space (KVM_EXIT_MMIO and back).
        MmioUser => "mmio.user",
        /// `kvmppc_e500_tlbil_all` alone: the vcpu's shadow-ID table reset (its 8 KiB
        /// memset) and the shadow PIDs recomputed, after a guest `tlbwe` over a TLB1 entry
        /// that KVM backed with 4 KiB host pages (`inval_gtlbe_on_host`, E500_TLB_TLB0).
        TlbilAll => "hv.tlbil_all",
        /// The host CPU's shadow IDs ran out (`kvmppc_e500_get_sid`): the whole host TLB
        /// flash-invalidated (`_tlbil_all`), the CPU's ID table cleared, and the host's own
        /// TLB0 entries refilled afterwards.
        SidRollover => "hv.sid_rollover",
        /// A guest write to DEC (`kvmppc_emulate_dec`): the vcpu's decrementer hrtimer
        /// cancelled and started again with the new expiry.
        DecHrtimer => "hv.dec_hrtimer",
        /// The guest's decrementer firing: the host timer interrupt that made the guest
        /// exit, its hrtimer run (`kvmppc_decrementer_func`: `TSR[DIS]` set, the vcpu
        /// kicked) and the guest interrupt delivered on the way back in.
        DecTimerFire => "hv.dec_timer_fire",
        /// LABT: a privileged instruction rewritten in place or into a routine.
        Translate => "labt.translate",
    }
}

/// Units of work done, by kind (exact counts).
pub type E500WorkCounts = crate::stats::named::Counters<E500Work, { E500Work::COUNT }>;
