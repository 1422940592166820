//! The translation invariant of the kernel-model and trace-replay property tests: every page
//! of every live process translates the same way under every scheme, checked over a region.

use proptest::prelude::*;
use vmlab_core::addr::{Gva, PageSize};
use vmlab_core::cost::Profile;
use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::hv::x86::vm::BackingConfig;
use vmlab_core::scheme::{Paging, System, SystemConfig};

/// The region the tests map and touch.
pub const REGION: u64 = 0x40_0000_0000;
pub const PAGE: u64 = 4096;
/// Pages of the region the invariant is checked over.
pub const PAGES: u64 = 96;

pub fn system(paging: Paging, guest_pages: PageSize, pcid: bool) -> System {
    system_with(paging, guest_pages, pcid, false, None)
}

pub fn system_with(
    paging: Paging,
    guest_pages: PageSize,
    pcid: bool,
    kpti: bool,
    shadow: Option<ShadowConfig>,
) -> System {
    let profile = Profile::builtin("skylake").unwrap();
    System::new(&SystemConfig {
        paging,
        levels: 4,
        host_memory: 16 << 30,
        guest_memory: 4 << 30,
        guest_pages,
        pcid,
        kpti,
        shadow,
        agile: Default::default(),
        tag_reads: false,
        backing: BackingConfig {
            host_pages: PageSize::Size4K,
            fragmentation: 0.0,
            seed: 1,
        },
        program: "test",
        tpt_task: Some("test"),
        tlb: profile.tlb.clone(),
        memory: profile.memory.clone(),
    })
    .unwrap()
}

pub fn va(page: u64) -> Gva {
    Gva::new(REGION + page * PAGE)
}

/// Every page of every live process: the kernel's view, in every system, and the hardware's
/// for the running process.
pub fn check_same(systems: &mut [System]) -> Result<(), TestCaseError> {
    let pids: Vec<u32> = systems[0].kernel().processes().map(|p| p.pid).collect();
    let current = systems[0].kernel().current();
    let frames = systems[0].kernel().frames_in_use();
    for other in systems.iter() {
        let other_pids: Vec<u32> = other.kernel().processes().map(|p| p.pid).collect();
        prop_assert_eq!(&pids, &other_pids);
        prop_assert_eq!(current, other.kernel().current());
        // Page-table isolation adds a user top-level table per process; PV runs without it.
        if other.kernel().config().kpti == systems[0].kernel().config().kpti {
            prop_assert_eq!(frames, other.kernel().frames_in_use());
        }
    }
    for &pid in &pids {
        for page in 0..PAGES {
            let a = systems[0].kernel_lookup(pid, va(page));
            let kpti = systems[0].kernel().config().kpti;
            for other in systems.iter_mut() {
                let b = other.kernel_lookup(pid, va(page));
                if other.kernel().config().kpti == kpti {
                    prop_assert_eq!(a, b, "{:?}: pid {} page {}", other.paging(), pid, page);
                } else {
                    // PV runs without KPTI's user tables, so its frame numbers differ.
                    prop_assert_eq!(
                        a.map(|(_, size, w)| (size, w)),
                        b.map(|(_, size, w)| (size, w)),
                        "{:?}: pid {} page {}",
                        other.paging(),
                        pid,
                        page
                    );
                }
            }
            if pid != current {
                continue;
            }
            for sys in systems.iter_mut() {
                let a = sys.kernel_lookup(pid, va(page));
                // TLB coherence: whatever the TLBs hold for the running process agrees with
                // its tables (same frame, no write permission the tables do not give).
                if let Some((hpa, perms)) = sys.mmu().cached_translation(va(page)) {
                    let Some((gfn, _, writable)) = a else {
                        return Err(TestCaseError::fail(format!(
                            "{:?}: pid {pid} page {page}: TLB holds {hpa:?} for an unmapped page",
                            sys.paging()
                        )));
                    };
                    prop_assert_eq!(
                        Some(hpa.frame()),
                        sys.host_frame(gfn),
                        "{:?}: stale TLB frame, pid {} page {}",
                        sys.paging(),
                        pid,
                        page
                    );
                    prop_assert!(
                        writable || !perms.write,
                        "{:?}: TLB allows a write the tables deny, pid {} page {}",
                        sys.paging(),
                        pid,
                        page
                    );
                }
                // The MMU (TLBs, walk caches, 1D, 2D or shadow walk) translates to the kernel's frame.
                if let Some((gfn, _, _)) = a {
                    let hpa = sys.access(va(page), false).unwrap();
                    prop_assert_eq!(
                        Some(hpa.frame()),
                        sys.host_frame(gfn),
                        "{:?}: pid {} page {}",
                        sys.paging(),
                        pid,
                        page
                    );
                }
            }
        }
    }
    Ok(())
}
