//! The shadow MMU's own work, counted per unit rather than folded into a flat price per exit:
//! how many entries a resync read, how many shadow entries a zap dropped, how many roots were
//! built. Each unit has a cost in the machine profile, under `[shadow]`, keyed by its name;
//! the cost model adds them to the hypervisor's cycles.
//!
//! The units follow what KVM does (arch/x86/kvm/mmu/mmu.c and paging_tmpl.h, Linux 6.x):
//! - resync (`kvm_sync_page` -> `FNAME(sync_page)`): every one of the page's 512 entries is
//!   looked at; each present one reads the guest's entry (`kvm_vcpu_read_guest_atomic`) and
//!   is rebuilt (`make_spte`, `mmu_spte_update`) or dropped;
//! - zap (`kvm_mmu_prepare_zap_page`): `kvm_mmu_page_unlink_children` visits the 512
//!   entries and drops each present one (`mmu_page_zap_pte`: `drop_spte`'s reverse-map
//!   removal, or `drop_parent_pte`), `kvm_mmu_unlink_parents` drops every entry pointing at
//!   the page, `unaccount_shadowed` ends its write tracking;
//! - unprotect (`unaccount_shadowed` -> `kvm_write_track_remove_gfn`): when the last shadow
//!   page of a guest frame goes, the frame's write tracking ends and the guest may write it
//!   freely again;
//! - write-protect (`kvm_mmu_slot_gfn_write_protect` -> `rmap_write_protect`): when a guest
//!   frame gets a shadow page, every shadow entry mapping it (its reverse map) loses W;
//! - remote TLB flush (`kvm_flush_remote_tlbs`): after any change to a present shadow entry;
//! - shadow page allocation (`kvm_mmu_alloc_shadow_page`, from a cache topped up with zeroed
//!   pages) and root building (`mmu_alloc_shadow_roots` on a root-cache miss in
//!   `kvm_mmu_load` / `fast_pgd_switch`).

crate::named_enum! {
    /// One unit of the shadow MMU's work that has a cost in the profile (`[shadow]`).
    pub enum ShadowWork {
        /// An entry of an unsync shadow page looked at by a resync (512 per page synced).
        SyncScan => "sync_scan",
        /// A present shadow entry resynced: the guest's entry read and the shadow entry rebuilt.
        SyncEntry => "sync_entry",
        /// An entry of a zapped shadow page looked at (512 per page zapped).
        ZapScan => "zap_scan",
        /// A present shadow entry dropped (reverse-map removal or parent unlink).
        SpteDrop => "spte_drop",
        /// A shadow page zapped: unhashed, its write tracking ended, freed.
        PageZap => "page_zap",
        /// A guest frame unprotected: its last shadow page went, so its write tracking ended.
        Unprotect => "unprotect",
        /// A shadow entry visited to write-protect a frame that became a shadowed table.
        RmapProtect => "rmap_protect",
        /// A remote TLB flush after a change to present shadow entries (kvm_flush_remote_tlbs).
        RemoteFlush => "remote_flush",
        /// A shadow page allocated (zeroed page, hashed, write tracking started).
        PageAlloc => "page_alloc",
        /// A shadow root built on a root-cache miss (mmu_alloc_shadow_roots), beyond its page.
        RootBuild => "root_build",
    }
}

/// Units of shadow-MMU work done, by kind (exact counts).
pub type ShadowWorkCounters = crate::stats::named::Counters<ShadowWork, { ShadowWork::COUNT }>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_unit_and_interval() {
        let mut c = ShadowWorkCounters::default();
        c.add(ShadowWork::SyncScan, 512);
        let snapshot = c;
        c.add(ShadowWork::SyncScan, 512);
        c.add(ShadowWork::RootBuild, 1);
        assert_eq!(c.get(ShadowWork::SyncScan), 1024);
        let iv = c.since(&snapshot);
        assert_eq!(
            (iv.get(ShadowWork::SyncScan), iv.get(ShadowWork::RootBuild)),
            (512, 1)
        );
        assert!(ShadowWork::ALL
            .iter()
            .enumerate()
            .all(|(i, &w)| w as usize == i));
        for w in ShadowWork::ALL {
            assert!(!w.doc().is_empty() && !w.doc().contains('\n'));
        }
    }
}
