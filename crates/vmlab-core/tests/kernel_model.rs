//! The kernel model: copy-on-write semantics, exact frame accounting, no leaks, and the
//! invariant that every scheme translates every mapped address the same way after every
//! step of random OS operation sequences.

use proptest::prelude::*;
use vmlab_core::addr::PageSize;
use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::scheme::{Paging, SimError, System};

mod common;

use common::invariant::{check_same, system, system_with, va, PAGE, PAGES};

fn frame_of(sys: &mut System, pid: u32, page: u64) -> Option<(u64, bool)> {
    sys.kernel_lookup(pid, va(page))
        .map(|(gfn, _, writable)| (gfn.raw(), writable))
}

#[test]
fn fork_shares_pages_copy_on_write_and_exit_frees_everything() {
    let mut sys = system(Paging::Native, PageSize::Size4K, true);
    sys.mmap(va(0), 16 * PAGE, true).unwrap();
    for page in 0..16 {
        sys.access(va(page), true).unwrap();
    }
    // 16 data frames, PML4 + PDPT + PD + PT.
    let baseline = sys.kernel().frames_in_use();
    assert_eq!(baseline, 20);
    let original: Vec<u64> = (0..16)
        .map(|p| frame_of(&mut sys, 0, p).unwrap().0)
        .collect();

    let child = sys.fork().unwrap();
    assert_eq!(child, 1);
    for page in 0..16 {
        assert_eq!(
            frame_of(&mut sys, 0, page),
            Some((original[page as usize], false))
        );
        assert_eq!(
            frame_of(&mut sys, child, page),
            Some((original[page as usize], false))
        );
        assert_eq!(
            sys.kernel()
                .refcount(vmlab_core::addr::Gfn::new(original[page as usize])),
            2
        );
    }
    assert_eq!(sys.kernel().counters().ptes_copied, 16);
    assert_eq!(
        sys.kernel().frames_in_use(),
        baseline + 4,
        "the child's four table pages"
    );

    // The parent writes page 0: it gets a private copy, the child keeps the original.
    sys.access(va(0), true).unwrap();
    let (parent_copy, writable) = frame_of(&mut sys, 0, 0).unwrap();
    assert!(writable && parent_copy != original[0]);
    assert_eq!(frame_of(&mut sys, child, 0), Some((original[0], false)));
    assert_eq!(sys.kernel().counters().cow_faults, 1);

    // The child writes page 0, now its own alone: reused, not copied.
    sys.switch_to(child).unwrap();
    sys.access(va(0), true).unwrap();
    assert_eq!(frame_of(&mut sys, child, 0), Some((original[0], true)));
    assert_eq!(
        (
            sys.kernel().counters().cow_faults,
            sys.kernel().counters().cow_reuses
        ),
        (1, 1)
    );
    // The child writes page 1, still shared: copied.
    sys.access(va(1), true).unwrap();
    assert_ne!(frame_of(&mut sys, child, 1).unwrap().0, original[1]);
    assert_eq!(frame_of(&mut sys, 0, 1), Some((original[1], false)));
    assert_eq!(sys.kernel().counters().cow_faults, 2);

    sys.exit(0).unwrap();
    assert_eq!(sys.kernel().current(), 0);
    assert!(sys.kernel().process(child).is_none());
    assert_eq!(sys.kernel().frames_in_use(), baseline);
    assert_eq!(sys.kernel().counters().table_pages, 4);
    assert_eq!(sys.host_memory().table_pages(), 4);
    // The parent's read-only pages go back to writable without a copy (last reference).
    sys.access(va(5), true).unwrap();
    assert_eq!(frame_of(&mut sys, 0, 5), Some((original[5], true)));
    assert_eq!(sys.kernel().counters().cow_faults, 1 + 1);
}

#[test]
fn munmap_madvise_and_mprotect_keep_frames_exact() {
    let mut sys = system(Paging::Native, PageSize::Size4K, true);
    let before = sys.kernel().frames_in_use();
    sys.mmap(va(0), 1024 * PAGE, true).unwrap();
    for page in 0..1024 {
        sys.access(va(page), true).unwrap();
    }
    // 1024 data pages, 2 PTs, a PD and a PDPT.
    assert_eq!(sys.kernel().frames_in_use(), before + 1024 + 4);

    sys.madvise_dontneed(va(0), 512 * PAGE).unwrap();
    assert_eq!(sys.kernel().frames_in_use(), before + 512 + 4);
    assert_eq!(frame_of(&mut sys, 0, 3), None);
    let faults = sys.kernel().counters().page_faults;
    sys.access(va(3), false).unwrap();
    assert_eq!(sys.kernel().counters().page_faults, faults + 1);

    sys.mprotect(va(600), 10 * PAGE, false).unwrap();
    assert_eq!(frame_of(&mut sys, 0, 600).map(|f| f.1), Some(false));
    assert!(matches!(sys.access(va(600), true), Err(SimError::Os(_))));
    sys.mprotect(va(600), 10 * PAGE, true).unwrap();
    let frame = frame_of(&mut sys, 0, 600).unwrap().0;
    sys.access(va(600), true).unwrap();
    assert_eq!(
        frame_of(&mut sys, 0, 600),
        Some((frame, true)),
        "reused, not copied"
    );

    sys.munmap(va(0), 1024 * PAGE).unwrap();
    assert_eq!(
        sys.kernel().frames_in_use(),
        before,
        "data and every emptied table freed"
    );
    assert!(matches!(sys.access(va(700), false), Err(SimError::Os(_))));
}

#[test]
fn exec_replaces_the_address_space() {
    let mut sys = system(Paging::Native, PageSize::Size4K, true);
    let before = sys.kernel().frames_in_use();
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..64 {
        sys.access(va(page), true).unwrap();
    }
    let child = sys.fork().unwrap();
    sys.switch_to(child).unwrap();
    sys.exec(&vmlab_core::os::HELLO).unwrap();
    assert_eq!(frame_of(&mut sys, child, 0), None);
    // 16 + 4 + 8 image pages, faulted in by the program's first touches.
    let image_pages = 28;
    let counters = *sys.kernel().counters();
    assert_eq!(counters.execs, 1);
    assert_eq!(counters.page_faults, 64 + image_pages);
    sys.exit(0).unwrap();
    sys.munmap(va(0), 64 * PAGE).unwrap();
    assert_eq!(sys.kernel().frames_in_use(), before);
}

#[test]
fn nested_fork_exits_only_for_frames_the_guest_never_touched() {
    let mut sys = system(Paging::Nested, PageSize::Size4K, true);
    sys.mmap(va(0), 256 * PAGE, true).unwrap();
    for page in 0..256 {
        sys.access(va(page), true).unwrap();
    }
    let cycle = |sys: &mut System| {
        let before = sys.exits().total();
        let child = sys.fork().unwrap();
        sys.switch_to(child).unwrap();
        sys.access(va(0), true).unwrap(); // one copy-on-write page
        sys.exit(0).unwrap();
        sys.exits().total() - before
    };
    // The first fork needs new frames for the child's tables and the copy: EPT violations.
    assert!(cycle(&mut sys) > 0);
    // The kernel reuses the frames the first child freed: no new backing, no exits.
    assert_eq!(cycle(&mut sys), 0);
}

#[test]
fn context_switches_keep_or_flush_the_tlb_by_pcid() {
    for pcid in [true, false] {
        let mut sys = system(Paging::Native, PageSize::Size4K, pcid);
        sys.mmap(va(0), PAGE, true).unwrap();
        sys.access(va(0), true).unwrap();
        let child = sys.fork().unwrap();
        sys.access(va(0), false).unwrap(); // refill after fork's flush
        sys.switch_to(child).unwrap();
        sys.switch_to(0).unwrap();
        let misses = sys.mmu().counters().tlb_misses;
        sys.access(va(0), false).unwrap();
        let missed = sys.mmu().counters().tlb_misses - misses;
        assert_eq!(missed, if pcid { 0 } else { 1 }, "pcid {pcid}");
        assert_eq!(sys.kernel().counters().context_switches, 2);
    }
}

/// One step of a random OS operation sequence.
#[derive(Clone, Debug)]
enum Step {
    Touch {
        page: u64,
        write: bool,
    },
    Fork,
    Switch(usize),
    Exit(usize),
    Unmap {
        page: u64,
        pages: u64,
    },
    DontNeed {
        page: u64,
        pages: u64,
    },
    Protect {
        page: u64,
        pages: u64,
        writable: bool,
    },
    Map {
        page: u64,
        pages: u64,
    },
    /// The host moves the page backing `page` of the running process (under nested and tpt
    /// paging, where remapping is modeled; a no-op elsewhere, invisible to the guest).
    Remap {
        page: u64,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (0..PAGES, any::<bool>()).prop_map(|(page, write)| Step::Touch { page, write }),
        1 => Just(Step::Fork),
        1 => (0..8usize).prop_map(Step::Switch),
        1 => (0..8usize).prop_map(Step::Exit),
        1 => (0..PAGES, 1..16u64).prop_map(|(page, pages)| Step::Unmap { page, pages }),
        1 => (0..PAGES, 1..16u64).prop_map(|(page, pages)| Step::DontNeed { page, pages }),
        1 => (0..PAGES, 1..16u64, any::<bool>()).prop_map(|(page, pages, writable)| Step::Protect { page, pages, writable }),
        1 => (0..PAGES, 1..16u64).prop_map(|(page, pages)| Step::Map { page, pages }),
        1 => (0..PAGES).prop_map(|page| Step::Remap { page }),
    ]
}

/// Apply a step; errors that the workload would see (segfaults, overlaps) are fine as long
/// as every system sees the same one.
fn apply(sys: &mut System, s: &Step) -> String {
    let live: Vec<u32> = sys.kernel().processes().map(|p| p.pid).collect();
    let pick = |i: usize| live[i % live.len()];
    let clamp = |page: u64, pages: u64| pages.min(PAGES - page) * PAGE;
    let result = match *s {
        Step::Touch { page, write } => sys.access(va(page), write).map(|_| ()),
        Step::Fork => sys.fork().map(|_| ()),
        Step::Switch(i) => sys.switch_to(pick(i)),
        Step::Exit(i) => {
            let next = pick(i);
            if next == sys.kernel().current() {
                Ok(())
            } else {
                sys.exit(next)
            }
        }
        Step::Unmap { page, pages } => sys.munmap(va(page), clamp(page, pages)),
        Step::DontNeed { page, pages } => sys.madvise_dontneed(va(page), clamp(page, pages)),
        Step::Protect {
            page,
            pages,
            writable,
        } => sys.mprotect(va(page), clamp(page, pages), writable),
        Step::Map { page, pages } => sys.mmap(va(page), clamp(page, pages), true),
        Step::Remap { page } => {
            let mapped = sys
                .kernel_lookup(sys.kernel().current(), va(page))
                .is_some();
            if mapped && matches!(sys.paging(), Paging::Nested | Paging::Tpt) {
                sys.host_remap(va(page))
            } else {
                Ok(())
            }
        }
    };
    format!("{:?}", result.err().map(|e| e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_step_translates_the_same_under_every_scheme(
        steps in proptest::collection::vec(step(), 1..40),
        pcid in any::<bool>(),
        kpti in any::<bool>(),
        unsync in any::<bool>(),
        bypass_not_present in any::<bool>(),
        budget_pages in prop_oneof![Just(64usize), Just(100_000)],
    ) {
        let shadow = ShadowConfig { unsync, bypass_not_present, budget_pages };
        let mut systems: Vec<System> = Paging::ALL.iter().map(|&p| system_with(p, PageSize::Size4K, pcid, kpti, Some(shadow))).collect();
        let baselines: Vec<u64> = systems.iter().map(|s| s.kernel().frames_in_use()).collect();
        for sys in systems.iter_mut() {
            sys.mmap(va(0), PAGES * PAGE, true).unwrap();
        }
        for s in &steps {
            let outcomes: Vec<String> = systems.iter_mut().map(|sys| apply(sys, s)).collect();
            for o in &outcomes[1..] {
                prop_assert_eq!(&outcomes[0], o, "step {:?}", s);
            }
            check_same(&mut systems)?;
        }
        // Tear everything down: one process and its top-level table (two with KPTI) remain,
        // like at boot.
        for (sys, &baseline) in systems.iter_mut().zip(&baselines) {
            let keep = sys.kernel().current();
            let others: Vec<u32> = sys.kernel().processes().map(|p| p.pid).filter(|&p| p != keep).collect();
            for pid in others {
                sys.switch_to(pid).unwrap();
                sys.exit(keep).unwrap();
            }
            sys.munmap(va(0), PAGES * PAGE).unwrap();
            prop_assert_eq!(sys.kernel().frames_in_use(), baseline);
            prop_assert_eq!(sys.kernel().counters().table_pages, 1 + sys.kernel().config().kpti as u64, "{:?}", sys.paging());
        }
    }
}
