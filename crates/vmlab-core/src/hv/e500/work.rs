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
        /// LABT: a privileged instruction rewritten in place or into a routine.
        Translate => "labt.translate",
    }
}

/// Units of work done, by kind (exact counts).
pub type E500WorkCounts = crate::stats::named::Counters<E500Work, { E500Work::COUNT }>;
