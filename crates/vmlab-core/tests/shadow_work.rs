//! KVM's shadow-MMU work counted per unit (`hv::x86::shadow_work`): exact counts on small
//! hand-built cases, each explained by what KVM does for the same guest operations.

mod common;

use common::{kvm_shadow, va, PAGE};

use vmlab_core::scheme::System;

/// A region in a top-level entry of its own (512 GiB above the test region).
const FAR: u64 = 1 << 27;

/// A process with `pages` written pages in a 64-page region, and a page mapped beyond them
/// (so the region's page table outlives a munmap of the region); every root linked.
fn warm(kpti: bool, pages: u64) -> System {
    let mut sys = kvm_shadow(kpti);
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..pages {
        sys.access(va(page), true).unwrap();
    }
    sys.mmap(va(100), PAGE, true).unwrap();
    sys
}

/// The shadow MMU's work during `f`, by unit (units that did not occur left out).
fn work_of(sys: &mut System, f: impl FnOnce(&mut System)) -> Vec<(&'static str, u64)> {
    let before = *sys.shadow().unwrap().work();
    f(sys);
    sys.shadow()
        .unwrap()
        .work()
        .since(&before)
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(w, n)| (w.name(), n))
        .collect()
}

#[test]
fn a_resync_looks_at_every_entry_and_reads_the_present_ones() {
    let mut sys = warm(false, 16);
    // mprotect rewrites 16 entries of one synced page table: the first write unsyncs it
    // (an exit, no unit of work), then Linux flushes each page with INVLPG: KVM's
    // kvm_mmu_invlpg finds an unsync leaf, reads the guest entry, and drops the now too
    // permissive shadow entry (and flushes).
    let protect = work_of(&mut sys, |s| s.mprotect(va(0), 16 * PAGE, false).unwrap());
    assert_eq!(
        protect,
        [("sync_entry", 16), ("spte_drop", 16), ("remote_flush", 16)]
    );
    // The pages are read again: 16 shadow faults install read-only entries, no work units.
    let reread = work_of(&mut sys, |s| {
        for page in 0..16 {
            s.access(va(page), false).unwrap();
        }
    });
    assert_eq!(reread, []);
    // fork ends with a full flush: kvm_sync_page looks at all 512 entries of the one unsync
    // page and reads the 16 present ones, which match the guest's: nothing dropped.
    let fork = work_of(&mut sys, |s| {
        s.fork().unwrap();
    });
    assert_eq!(fork, [("sync_scan", 512), ("sync_entry", 16)]);
}

#[test]
fn a_root_cache_miss_builds_a_root_and_a_hit_does_not() {
    // Under KPTI the child has two roots (kernel and user table), each a miss.
    for (kpti, roots) in [(false, 1), (true, 2)] {
        let mut sys = warm(kpti, 1);
        let child = sys.fork().unwrap();
        let switch = work_of(&mut sys, |s| s.switch_to(child).unwrap());
        assert_eq!(
            switch,
            [("page_alloc", roots), ("root_build", roots)],
            "kpti {kpti}"
        );
        // Back to the parent: its roots are among the 4 cached (fast_pgd_switch).
        let back = work_of(&mut sys, |s| s.switch_to(0).unwrap());
        assert_eq!(back, [], "kpti {kpti}");
    }
}

#[test]
fn a_freed_table_frame_reused_zaps_its_stale_shadow_page() {
    let mut sys = warm(false, 0);
    // One page in a top-level entry of its own: a PDPT, a PD and a PT, each a shadow page.
    let map = work_of(&mut sys, |s| {
        s.mmap(va(FAR), 64 * PAGE, true).unwrap();
        s.access(va(FAR), true).unwrap();
    });
    assert_eq!(map, [("page_alloc", 3)]);
    // munmap: the leaf's clear unsyncs the PT; the flush resyncs it (512 looked at, the one
    // present entry read and dropped); free_pgd_range's three upper-level clears are
    // emulated and each drops the shadow entry linking the table below. A flush per drop.
    let unmap = work_of(&mut sys, |s| s.munmap(va(FAR), 64 * PAGE).unwrap());
    assert_eq!(
        unmap,
        [
            ("sync_scan", 512),
            ("sync_entry", 1),
            ("spte_drop", 4),
            ("remote_flush", 4)
        ]
    );
    // Mapped again, the kernel reuses the three freed table frames and zeroes each: the
    // stale shadow page of each is zapped (512 entries looked at, none present: their
    // parents went at munmap), its frame unprotected, a flush each; then three new pages.
    let again = work_of(&mut sys, |s| {
        s.mmap(va(FAR), 64 * PAGE, true).unwrap();
        s.access(va(FAR), true).unwrap();
    });
    assert_eq!(
        again,
        [
            ("zap_scan", 3 * 512),
            ("page_zap", 3),
            ("unprotect", 3),
            ("remote_flush", 3),
            ("page_alloc", 3)
        ]
    );
}
