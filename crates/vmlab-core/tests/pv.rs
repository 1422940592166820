//! Paravirtual direct paging: hypercalls, batching, and bounces through the hypervisor.

mod common;

use common::{va, Setup, PAGE};

use vmlab_core::hv::ExitReason;
use vmlab_core::hw::x86::mmu::Root;
use vmlab_core::scheme::{Paging, System};

fn pv() -> System {
    Setup::skylake(Paging::Pv).build()
}

#[test]
fn a_demand_fault_traps_into_xen_once_and_validates_its_pte_write() {
    let mut sys = pv();
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    sys.access(va(0), true).unwrap(); // builds the upper levels
    assert!(matches!(sys.mmu().root(), Root::OneD { .. }));
    let before = sys.exits();
    sys.access(va(1), true).unwrap();
    let d = sys.exits().since(&before);
    // Xen's #PF path bounces the fault to the guest kernel; the new page was populated at
    // domain build, so zeroing it is no exit; the PTE write is one mmu_update.
    assert_eq!(
        (
            d.get(ExitReason::PvPageFault),
            d.get(ExitReason::PvBounce),
            d.get(ExitReason::Hypercall),
            d.get(ExitReason::EptViolation)
        ),
        (1, 0, 1, 0)
    );
    assert_eq!(d.total(), 2);
}

#[test]
fn a_pv_guest_never_takes_an_ept_violation() {
    let mut sys = pv();
    // Boot, a region faulted in page by page (new table pages included), a fork and the
    // child's COW faults on fresh frames: all guest memory was populated at domain build.
    assert_eq!(sys.exits().get(ExitReason::EptViolation), 0, "boot");
    sys.mmap(va(0), 600 * PAGE, true).unwrap();
    for page in 0..600 {
        sys.access(va(page), true).unwrap();
    }
    let parent = sys.kernel().current();
    let child = sys.fork().unwrap();
    sys.switch_to(child).unwrap();
    for page in 0..16 {
        sys.access(va(page), true).unwrap();
    }
    sys.exit(parent).unwrap();
    let exits = sys.exits();
    assert_eq!(exits.get(ExitReason::EptViolation), 0);
    // 600 demand faults and the child's 16 COW faults, each one trap through Xen.
    assert_eq!(exits.get(ExitReason::PvPageFault), 600 + 16);
    // The frames the guest used are backed all the same.
    let backed = sys.vm().expect("a PV domain").backed_frames()[0];
    assert!(backed >= 600 + 16, "{backed} frames backed");
}

#[test]
fn fork_batches_its_updates_into_multicalls_of_32() {
    let mut sys = pv();
    sys.mmap(va(0), 256 * PAGE, true).unwrap();
    for page in 0..256 {
        sys.access(va(page), true).unwrap();
    }
    let before = sys.exits();
    sys.fork().unwrap();
    let d = sys.exits().since(&before);
    // 256 write-protections in the parent, 256 entries and 3 table links in the child:
    // 515 updates in one lazy-MMU section = 17 multicalls, then the parent's TLB flush.
    assert_eq!(d.get(ExitReason::Hypercall), 515_u64.div_ceil(32) + 1);
    assert_eq!(d.get(ExitReason::PvBounce), 1, "the fork system call");
}

#[test]
fn every_address_space_is_paravirtualized_and_cr3_loads_are_hypercalls() {
    let mut sys = pv();
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    let child = sys.fork().unwrap();
    let before = sys.exits();
    sys.switch_to(child).unwrap();
    assert!(
        matches!(sys.mmu().root(), Root::OneD { .. }),
        "forked children too"
    );
    let d = sys.exits().since(&before);
    assert_eq!(
        (d.get(ExitReason::PvBounce), d.get(ExitReason::Hypercall)),
        (1, 1)
    );
}

#[test]
fn an_exiting_address_space_is_unpinned_in_one_batch_and_torn_down_with_plain_stores() {
    // The child maps what the parent had: `pages` entries in `pages / 512` page tables,
    // under one page directory, one PDPT and its top-level table.
    for (pages, tables) in [(256u64, 1u64), (8192, 16)] {
        let mut sys = pv();
        sys.mmap(va(0), pages * PAGE, true).unwrap();
        for page in 0..pages {
            sys.access(va(page), true).unwrap();
        }
        let child = sys.fork().unwrap();
        sys.switch_to(child).unwrap();
        let before = sys.exits();
        sys.exit(0).unwrap();
        let d = sys.exits().since(&before);
        // xen_exit_mmap: one MMUEXT_UNPIN_TABLE, then an unpin and a remapping per page
        // table and a remapping per upper-level page (PD, PDPT, top level), 32 to a
        // multicall; zapping the entries and freeing the tables after it costs nothing.
        let unpin = (1 + 2 * tables + 3).div_ceil(32);
        // Besides: the dying PCID's flush and the switch to the parent (a CR3 load).
        assert_eq!(d.get(ExitReason::Hypercall), 2 + unpin, "{pages} pages");
    }
}
