//! Translation Pass-Through: devirt copies, 1D tagged walks, and isolation.

mod common;

use common::{va, Setup, PAGE};

use proptest::prelude::*;
use vmlab_core::addr::{Gfn, Gva, Hpa};
use vmlab_core::hw::x86::mmu::{Root, TlbConfig};
use vmlab_core::hw::x86::pte::{FRAME_MASK, X86};
use vmlab_core::hw::x86::walker::level_shift;
use vmlab_core::scheme::{Paging, System};

fn tpt(tlb: Option<TlbConfig>) -> System {
    tpt_scheme(Paging::Tpt, tlb)
}

fn tpt_scheme(paging: Paging, tlb: Option<TlbConfig>) -> System {
    tpt_marked(paging, tlb, Some("test"))
}

/// A system whose first process runs program "test", with TPT's mark on `tpt_task`.
fn tpt_marked(paging: Paging, tlb: Option<TlbConfig>, tpt_task: Option<&'static str>) -> System {
    let setup = Setup {
        tpt_task,
        ..Setup::skylake(paging)
    };
    Setup {
        tlb: tlb.unwrap_or(setup.tlb.clone()),
        ..setup
    }
    .build()
}

/// The devirt leaf entry for `va`, walked in software from the running process's copy.
fn devirt_leaf(sys: &System, va: Gva) -> u64 {
    let mut table = sys
        .direct_tables()
        .unwrap()
        .copy_of(sys.kernel().pgd())
        .unwrap();
    for level in (2..=4u8).rev() {
        let entry = sys
            .host_memory()
            .read_u64(table.addr_at(((va.raw() >> level_shift(level)) & 0x1ff) * 8));
        table = Hpa::new(entry & FRAME_MASK).frame();
    }
    sys.host_memory()
        .read_u64(table.addr_at(((va.raw() >> 12) & 0x1ff) * 8))
}

#[test]
fn a_tpt_walk_is_one_dimensional_and_checks_every_frame_it_touches() {
    let mut sys = tpt(Some(TlbConfig::all_disabled()));
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    assert!(matches!(sys.mmu().root(), Root::Tagged { .. }));
    let before = sys.mmu().counters();
    sys.access(va(0), false).unwrap();
    let d = sys.mmu().counters().since(&before);
    // 4 table frames and the data frame.
    assert_eq!(
        (
            d.walks,
            d.guest_refs,
            d.ept_refs,
            d.tag_fills,
            d.tag_checks,
            d.tag_violations
        ),
        (1, 4, 0, 1, 5, 0)
    );
}

#[test]
fn devirt_copies_hold_host_frames_and_take_the_hardware_dirty_bits() {
    let mut sys = tpt(None);
    sys.mmap(va(0), 64 * PAGE, true).unwrap();
    for page in 0..64 {
        sys.access(va(page), false).unwrap();
    }
    let stats = *sys.direct_tables().unwrap().stats();
    // PML4 at boot, then PDPT, PD, PT: one copy each; every leaf copied once.
    assert_eq!(stats.copies_allocated, 4);
    assert_eq!(stats.gfn_to_hfn_reads, 64);
    for page in 0..64 {
        let (gfn, _, _) = sys.kernel_lookup(0, va(page)).unwrap();
        let leaf = devirt_leaf(&sys, va(page));
        assert_eq!(
            Some(Hpa::new(leaf & FRAME_MASK).frame()),
            sys.host_frame(gfn)
        );
        assert_eq!(leaf & X86::DIRTY_BIT, 0, "read faults leave the page clean");
    }
    sys.access(va(7), true).unwrap();
    assert_ne!(
        devirt_leaf(&sys, va(7)) & X86::DIRTY_BIT,
        0,
        "the hardware dirtied the copy"
    );
}

#[test]
fn forked_children_run_on_nested_paging() {
    let mut sys = tpt(None);
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    let child = sys.fork().unwrap();
    sys.switch_to(child).unwrap();
    assert!(matches!(sys.mmu().root(), Root::TwoD { .. }));
    sys.access(va(0), true).unwrap();
    sys.exit(0).unwrap();
    assert!(matches!(sys.mmu().root(), Root::Tagged { .. }));
    // The parent's copies were not touched by the child's tables.
    let (gfn, _, _) = sys.kernel_lookup(0, va(0)).unwrap();
    assert_eq!(
        Some(Hpa::new(devirt_leaf(&sys, va(0)) & FRAME_MASK).frame()),
        sys.host_frame(gfn)
    );
    let _ = Gfn::new(0);
}

#[test]
fn the_prototype_walks_without_tags_and_pays_three_exits_per_kernel_entry() {
    let mut sys = tpt_scheme(Paging::TptPrototype, Some(TlbConfig::all_disabled()));
    sys.mmap(va(0), 4 * PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    assert!(matches!(sys.mmu().root(), Root::OneD { .. }));
    let exits = sys.exits();
    let before = sys.mmu().counters();
    // A demand fault of the TPT process: one kernel round trip, 3 switches; the page's
    // first touch (the kernel zeroing it) is its EPT violation.
    sys.access(va(1), true).unwrap();
    let d = sys.exits().since(&exits);
    assert_eq!(d.get(vmlab_core::hv::ExitReason::TptSwitch), 3);
    assert_eq!(d.get(vmlab_core::hv::ExitReason::EptViolation), 1);
    let c = sys.mmu().counters().since(&before);
    assert_eq!((c.tag_checks, c.tag_violations, c.ept_refs), (0, 0, 0));
    // A forked child is not a TPT process: its kernel entries cost no switches.
    let child = sys.fork().unwrap();
    let exits = sys.exits();
    sys.switch_to(child).unwrap();
    sys.access(va(2), true).unwrap();
    assert_eq!(
        sys.exits()
            .since(&exits)
            .get(vmlab_core::hv::ExitReason::TptSwitch),
        3,
        "only the parent's switch away"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// A guest that writes a foreign host frame into its devirt tables, at any level, never
    /// reaches it: the tag check refuses, nothing is read or written.
    #[test]
    fn foreign_frames_in_devirt_tables_are_never_reached(pages in proptest::collection::vec((0..512u64, 1..=4u8, any::<bool>()), 1..16)) {
        let mut sys = tpt(None);
        sys.mmap(va(0), 512 * PAGE, true).unwrap();
        for &(page, _, _) in &pages {
            sys.access(va(page), true).unwrap();
        }
        for &(page, level, write) in &pages {
            let violations = sys.mmu().counters().tag_violations;
            let reached = sys.tpt_foreign_access(va(page), level, write).unwrap();
            prop_assert!(!reached, "page {} level {}", page, level);
            prop_assert_eq!(sys.mmu().counters().tag_violations, violations + 1);
            // The process goes on, translating as before.
            let (gfn, _, _) = sys.kernel_lookup(0, va(page)).unwrap();
            let hpa = sys.access(va(page), write).unwrap();
            prop_assert_eq!(Some(hpa.frame()), sys.host_frame(gfn));
        }
    }
}

#[test]
fn a_host_remap_moves_the_page_and_the_guest_fixes_its_devirt_entry() {
    let mut sys = tpt(None);
    sys.mmap(va(0), 8 * PAGE, true).unwrap();
    for page in 0..8 {
        sys.access(va(page), true).unwrap();
    }
    let (gfn, _, _) = sys.kernel_lookup(0, va(3)).unwrap();
    let old = sys.host_frame(gfn).unwrap();
    let dirty_before = devirt_leaf(&sys, va(3)) & X86::DIRTY_BIT;
    sys.host_remap(va(3)).unwrap();
    let new = sys.host_frame(gfn).unwrap();
    assert_ne!(new, old);
    let leaf = devirt_leaf(&sys, va(3));
    assert_eq!(
        Hpa::new(leaf & FRAME_MASK).frame(),
        new,
        "the devirt entry names the new frame"
    );
    assert_eq!(
        leaf & X86::DIRTY_BIT,
        dirty_before,
        "hardware-set bits survive the fix-up"
    );
    assert!(
        sys.host_memory().tags().owned(new.raw()) && !sys.host_memory().tags().owned(old.raw())
    );
    let r = sys.remap_counters();
    assert_eq!(
        (
            r.remaps,
            r.frames_moved,
            r.tag_updates,
            r.global_flushes,
            r.gfn_to_hfn_updates,
            r.guest_notifications,
            r.devirt_fixups
        ),
        (1, 1, 2, 1, 1, 1, 1)
    );
    // The flush dropped the old translation: the next access walks the fixed tables to the
    // new frame, and no tag check fails.
    assert_eq!(sys.mmu().cached_translation(va(3)), None);
    let hpa = sys.access(va(3), false).unwrap();
    assert_eq!(hpa.frame(), new);
    assert_eq!(sys.mmu().counters().tag_violations, 0);
}

#[test]
fn a_remap_fixes_only_tpt_entries_and_nested_paging_needs_no_fix_up() {
    // A copy-on-write page shared with a forked child: the child runs on nested paging, so
    // only the parent's devirt entry names the frame.
    let mut sys = tpt(None);
    sys.mmap(va(0), PAGE, true).unwrap();
    sys.access(va(0), true).unwrap();
    let child = sys.fork().unwrap();
    sys.host_remap(va(0)).unwrap();
    assert_eq!(sys.remap_counters().devirt_fixups, 1);
    let (gfn, _, _) = sys.kernel_lookup(0, va(0)).unwrap();
    let new = sys.host_frame(gfn).unwrap();
    sys.switch_to(child).unwrap();
    assert_eq!(
        sys.access(va(0), false).unwrap().frame(),
        new,
        "the child reaches the new frame through the EPT"
    );

    let mut nested = tpt_scheme(Paging::Nested, None);
    nested.mmap(va(0), PAGE, true).unwrap();
    nested.access(va(0), true).unwrap();
    nested.host_remap(va(0)).unwrap();
    let r = nested.remap_counters();
    assert_eq!(
        (
            r.remaps,
            r.global_flushes,
            r.tag_updates,
            r.gfn_to_hfn_updates,
            r.devirt_fixups
        ),
        (1, 1, 0, 0, 0)
    );
    let (gfn, _, _) = nested.kernel_lookup(0, va(0)).unwrap();
    assert_eq!(
        nested.access(va(0), false).unwrap().frame(),
        nested.host_frame(gfn).unwrap()
    );
}

#[test]
fn remapping_is_refused_where_it_is_not_modeled() {
    for paging in [
        Paging::Shadow,
        Paging::Agile,
        Paging::Pv,
        Paging::TptPrototype,
    ] {
        let mut sys = tpt_scheme(paging, None);
        sys.mmap(va(0), PAGE, true).unwrap();
        sys.access(va(0), true).unwrap();
        let err = sys.host_remap(va(0)).unwrap_err().to_string();
        assert!(err.contains("nested and tpt"), "{paging:?}: {err}");
    }
    let mut sys = tpt(None);
    assert!(sys
        .host_remap(va(5))
        .unwrap_err()
        .to_string()
        .contains("not mapped"));
}

#[test]
fn the_mark_enables_tpt_for_the_next_exec_of_that_program_only() {
    // Marked for "hello": the first process ("test") runs on nested paging.
    let mut sys = tpt_marked(Paging::Tpt, None, Some("hello"));
    assert!(matches!(sys.mmu().root(), Root::TwoD { .. }));
    assert!(!sys.kernel().process(0).unwrap().devirt);
    let first = sys.fork().unwrap();
    sys.switch_to(first).unwrap();
    sys.exec(&vmlab_core::os::HELLO).unwrap();
    assert!(
        sys.kernel().process(first).unwrap().devirt,
        "the next exec of hello runs with TPT"
    );
    assert!(matches!(sys.mmu().root(), Root::Tagged { .. }));
    assert_eq!(sys.kernel().tpt_task(), None, "the mark is used up");
    sys.exit(0).unwrap();
    let second = sys.fork().unwrap();
    sys.switch_to(second).unwrap();
    sys.exec(&vmlab_core::os::HELLO).unwrap();
    assert!(!sys.kernel().process(second).unwrap().devirt);
    assert!(matches!(sys.mmu().root(), Root::TwoD { .. }));
    // A TPT process that execs another program leaves TPT.
    let mut sys = tpt(None);
    assert!(sys.kernel().process(0).unwrap().devirt);
    sys.exec(&vmlab_core::os::HELLO).unwrap();
    assert!(!sys.kernel().process(0).unwrap().devirt);
    // Outside TPT the mark means nothing.
    let sys = tpt_marked(Paging::Nested, None, Some("test"));
    assert!(!sys.kernel().process(0).unwrap().devirt);
}
