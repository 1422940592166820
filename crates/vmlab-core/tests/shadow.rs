//! Shadow paging's mechanisms, exit by exit.

mod common;

use common::{exits_of, va, Setup, PAGE};

use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::hv::ExitReason;
use vmlab_core::hw::x86::mmu::TlbConfig;
use vmlab_core::scheme::{Paging, System};

fn shadow_system(unsync: bool, bypass_not_present: bool, tlb: Option<TlbConfig>) -> System {
    let setup = Setup {
        shadow: Some(ShadowConfig {
            unsync,
            bypass_not_present,
            budget_pages: 100_000,
        }),
        ..Setup::skylake(Paging::Shadow)
    };
    Setup {
        tlb: tlb.unwrap_or(setup.tlb.clone()),
        ..setup
    }
    .build()
}

/// A system whose guest already touched (backed) the frames the next faults will get, with
/// the region's page table shadowed: what a demand fault costs in a warm VM.
fn warm(unsync: bool, bypass: bool) -> System {
    let mut sys = shadow_system(unsync, bypass, None);
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..16 {
        sys.access(va(page), true).unwrap();
    }
    // Free pages 1..16: their frames stay backed and are handed out again, last first.
    sys.madvise_dontneed(va(1), 15 * PAGE).unwrap();
    // A read through the region re-syncs and re-shadows its page table.
    sys.access(va(0), false).unwrap();
    sys
}

#[test]
fn a_demand_fault_costs_kvms_two_exits_with_update_on_write() {
    // Without unsync or bypass: the guest's #PF is reflected (1), the guest's PTE write
    // traps and is applied to the shadow entry in place (2); the retried access hits.
    let mut sys = warm(false, false);
    let exits = exits_of(&mut sys, |s| {
        s.access(va(1), true).unwrap();
    });
    assert_eq!(exits, vec![("write_protect", 1), ("pf_reflect", 1)]);
}

#[test]
fn bypassing_not_present_faults_saves_the_reflection() {
    let mut sys = warm(false, true);
    let exits = exits_of(&mut sys, |s| {
        s.access(va(1), true).unwrap();
    });
    assert_eq!(exits, vec![("write_protect", 1)]);
}

#[test]
fn an_unsync_page_table_takes_writes_without_exits() {
    // With unsync, madvise's first PTE write unsynced the page table (INVLPG syncs single
    // entries only); later PTE writes do not exit, and each new page costs one shadow fault.
    let mut sys = warm(true, true);
    assert!(sys.shadow().unwrap().stats().unsyncs >= 1);
    for page in 1..4 {
        let exits = exits_of(&mut sys, |s| {
            s.access(va(page), true).unwrap();
        });
        assert_eq!(exits, vec![("shadow_fault", 1)], "page {page}");
    }
}

#[test]
fn write_flooding_unshadows_a_page_table() {
    let mut sys = shadow_system(false, true, None);
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..8 {
        sys.access(va(page), true).unwrap();
    }
    let zapped = sys.shadow().unwrap().stats().flood_unshadows;
    // Write-protecting 8 PTEs: the third emulated write without a fault using the table
    // (counting the last demand fault's PTE write, which the retried access did not need a
    // fault for) unshadows it, and the writes after it do not trap.
    let exits = exits_of(&mut sys, |s| s.mprotect(va(0), 8 * PAGE, false).unwrap());
    assert_eq!(sys.shadow().unwrap().stats().flood_unshadows, zapped + 1);
    assert_eq!(exits, vec![("write_protect", 2), ("invlpg", 8)]);
}

#[test]
fn cr3_loads_reuse_the_four_cached_roots() {
    let mut sys = shadow_system(true, true, None);
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    for _ in 0..3 {
        sys.fork().unwrap();
    }
    let round = |sys: &mut System, pids: &[u32]| {
        for &pid in pids {
            sys.switch_to(pid).unwrap();
            sys.access(va(0), false).unwrap();
        }
    };
    round(&mut sys, &[1, 2, 3, 0]);
    let created = sys.shadow().unwrap().stats().pages_created;
    let exits = exits_of(&mut sys, |s| round(s, &[1, 2, 3, 0]));
    // Four address spaces fit the root cache: no shadow page is rebuilt, each switch is one
    // CR3 exit and nothing faults.
    assert_eq!(sys.shadow().unwrap().stats().pages_created, created);
    assert_eq!(exits, vec![("cr3_load", 4)]);
    // A fifth address space pushes roots out of the cache, but their shadow pages stay in
    // the hash (as in KVM, where a dropped root is found again by kvm_mmu_get_page): the
    // switches still cost one exit each and rebuild nothing.
    sys.fork().unwrap();
    round(&mut sys, &[4, 0, 1, 2, 3]);
    let created = sys.shadow().unwrap().stats().pages_created;
    let exits = exits_of(&mut sys, |s| round(s, &[4, 0, 1, 2, 3]));
    assert_eq!(sys.shadow().unwrap().stats().pages_created, created);
    assert_eq!(exits, vec![("cr3_load", 5)]);
}

#[test]
fn a_shadow_walk_is_one_dimensional() {
    let mut sys = shadow_system(true, true, Some(TlbConfig::all_disabled()));
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    let before = sys.mmu().counters();
    sys.access(va(0), false).unwrap();
    let d = sys.mmu().counters().since(&before);
    assert_eq!((d.walks, d.guest_refs, d.ept_refs), (1, 4, 0));
    assert_eq!(sys.exits().get(ExitReason::EptViolation), 0);
}
