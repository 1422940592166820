//! Kernel entries and exits, page-table isolation and the kernel half, fork and teardown as
//! Linux does them, seen from KVM's shadow MMU: exact exits on small hand-built cases.

mod common;

use common::{exits_of, kvm_shadow, va, PAGE};

use vmlab_core::hv::ExitReason;
use vmlab_core::scheme::System;

/// A process with `pages` written pages in a region of its own, and every root it uses
/// already linked to the kernel half (one system call made).
fn warm(kpti: bool, pages: u64) -> System {
    let mut sys = kvm_shadow(kpti);
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..pages {
        sys.access(va(page), true).unwrap();
    }
    sys
}

#[test]
fn a_new_root_links_each_kernel_entry_it_uses_with_one_shadow_fault() {
    // Boot leaves the first root unlinked; the first system call links the five top-level
    // entries of the kernel half (text, direct map, vmalloc, vmemmap, CPU entry area).
    let mut sys = kvm_shadow(false);
    let first = exits_of(&mut sys, |s| s.mmap(va(0), PAGE, true).unwrap());
    assert_eq!(first, [("shadow_fault", 5)]);
    assert_eq!(sys.shadow().unwrap().stats().kernel_links, 5);
    // Linked once per root: the next system call costs nothing.
    let second = exits_of(&mut sys, |s| s.mmap(va(8), PAGE, true).unwrap());
    assert_eq!(second, []);
    // Under KPTI the user root links the trampoline (2) and the kernel root all five.
    let mut kpti = kvm_shadow(true);
    let first = exits_of(&mut kpti, |s| s.mmap(va(0), PAGE, true).unwrap());
    assert_eq!(first, [("shadow_fault", 5), ("cr3_load", 2)]);
    assert_eq!(kpti.shadow().unwrap().stats().kernel_links, 7);
}

#[test]
fn kpti_adds_two_cr3_loads_per_system_call_under_shadow_and_changes_nothing_else() {
    let mut plain = warm(false, 16);
    let mut isolated = warm(true, 16);
    // Link every root first.
    plain.mmap(va(100), PAGE, true).unwrap();
    isolated.mmap(va(100), PAGE, true).unwrap();
    let calls = 10;
    let run = |sys: &mut System| {
        let mmu_before = sys.mmu().counters();
        let exits = exits_of(sys, |s| {
            for i in 0..calls {
                s.mmap(va(200 + 2 * i), PAGE, true).unwrap();
                for page in 0..16 {
                    s.access(va(page), page % 2 == 0).unwrap();
                }
            }
        });
        let mmu = sys.mmu().counters().since(&mmu_before);
        (exits, mmu.accesses, mmu.walks)
    };
    let (plain_exits, plain_accesses, plain_walks) = run(&mut plain);
    let (kpti_exits, kpti_accesses, kpti_walks) = run(&mut isolated);
    // A system call without isolation writes no CR3; with it, entry and exit each do.
    assert_eq!(plain_exits, []);
    assert_eq!(kpti_exits, [("cr3_load", 2 * calls)]);
    // The user's translations survive in their own PCID: the same accesses, the same walks.
    assert_eq!(plain_accesses, kpti_accesses);
    assert_eq!(plain_walks, kpti_walks);
    for page in 0..16 {
        assert_eq!(
            plain.kernel_lookup(0, va(page)).map(|(_, s, w)| (s, w)),
            isolated.kernel_lookup(0, va(page)).map(|(_, s, w)| (s, w))
        );
    }
}

#[test]
fn kpti_makes_a_context_switch_three_cr3_loads() {
    for (kpti, loads) in [(false, 1), (true, 3)] {
        let mut sys = warm(kpti, 4);
        let child = sys.fork().unwrap();
        sys.switch_to(child).unwrap();
        sys.switch_to(0).unwrap();
        let exits = exits_of(&mut sys, |s| s.switch_to(child).unwrap());
        assert_eq!(exits, [("cr3_load", loads)], "kpti {kpti}");
    }
}

#[test]
fn a_forked_childs_first_touch_of_each_page_is_a_shadow_fault() {
    for kpti in [false, true] {
        let pages = 8;
        let mut sys = warm(kpti, pages);
        let child = sys.fork().unwrap();
        sys.switch_to(child).unwrap();
        // fork copied the entries with the accessed bit clear, so KVM prefetched none of
        // them into the child's shadow tables: each first touch faults in the shadow tables
        // and the guest never sees it.
        let faults_before = sys.kernel().counters().page_faults;
        let exits = exits_of(&mut sys, |s| {
            for page in 0..pages {
                s.access(va(page), false).unwrap();
            }
        });
        assert_eq!(exits, [("shadow_fault", pages)], "kpti {kpti}");
        assert_eq!(sys.kernel().counters().page_faults, faults_before);
        // The second touch is a TLB hit or a walk of the shadow tables: no exit.
        let again = exits_of(&mut sys, |s| {
            for page in 0..pages {
                s.access(va(page), false).unwrap();
            }
        });
        assert_eq!(again, [], "kpti {kpti}");
    }
}

#[test]
fn teardown_clears_upper_level_entries_which_trap_when_shadowed() {
    // One page mapped alone in its top-level entry: munmap frees its PT, PD and PDPT, and
    // clears the PD entry, the PDPT entry and the top-level entry (free_pgd_range), each a
    // write to a shadowed table page: an emulated write. The leaf's own clear unsyncs its
    // page table (one more trap).
    let mut sys = warm(false, 1);
    let wp_before = sys.exits().get(ExitReason::WriteProtect);
    sys.munmap(va(0), 64 * PAGE).unwrap();
    assert_eq!(sys.exits().get(ExitReason::WriteProtect) - wp_before, 1 + 3);
    // Under KPTI the top-level clear is written into the user table too, also shadowed.
    let mut isolated = warm(true, 1);
    let wp_before = isolated.exits().get(ExitReason::WriteProtect);
    isolated.munmap(va(0), 64 * PAGE).unwrap();
    assert_eq!(
        isolated.exits().get(ExitReason::WriteProtect) - wp_before,
        1 + 3 + 1
    );
}

#[test]
fn an_exiting_childs_shadowed_tables_trap_as_its_upper_entries_are_cleared() {
    let mut sys = warm(false, 1);
    let child = sys.fork().unwrap();
    sys.switch_to(child).unwrap();
    sys.access(va(0), false).unwrap();
    let wp_before = sys.exits().get(ExitReason::WriteProtect);
    sys.exit(0).unwrap();
    // The child's PD, PDPT and top-level entries are cleared in shadowed pages; its leaf
    // table is unsynced by the zap of its one entry.
    assert_eq!(sys.exits().get(ExitReason::WriteProtect) - wp_before, 1 + 3);
}

#[test]
fn a_timer_tick_is_an_entry_and_a_return() {
    // Under shadow paging the tick itself exits (KVM's emulated LAPIC timer fires, then the
    // guest re-arms its TSC deadline); with KPTI the entry's and return's CR3 writes too.
    let tick = [("timer", 1), ("tsc_deadline", 1)];
    for (kpti, exits) in [
        (false, tick.to_vec()),
        (true, [&[("cr3_load", 2)][..], &tick].concat()),
    ] {
        let mut sys = warm(kpti, 1);
        sys.mmap(va(100), PAGE, true).unwrap();
        let before = sys.kernel().counters().interrupts;
        assert_eq!(exits_of(&mut sys, |s| s.timer_tick().unwrap()), exits);
        assert_eq!(sys.kernel().counters().interrupts, before + 1);
    }
}
