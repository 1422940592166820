//! Agile paging's moves, event by event: a guest table whose writes keep trapping goes to
//! nested mode, after which its writes and the faults below it reach the guest without an
//! exit; a nested-mode table left alone for a scan interval goes back to shadow mode.

mod common;

use common::{exits_of, va, Setup, MIB};
use vmlab_core::hv::x86::shadow::agile::AgileConfig;
use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::scheme::{Paging, System};

/// Agile paging with unsync off (every write to a shadowed table traps), every TLB and cache
/// off, and 4 MiB mapped at the test region.
fn agile() -> System {
    let mut sys = Setup {
        shadow: Some(ShadowConfig {
            unsync: false,
            ..ShadowConfig::kvm_default(1 << 20)
        }),
        ..Setup::new(Paging::Agile)
    }
    .build();
    sys.mmap(va(0), 4 * MIB, true).unwrap();
    sys
}

fn stats(sys: &System) -> (u64, u64, usize) {
    let shadow = sys.shadow().unwrap();
    let agile = shadow.agile_stats().unwrap();
    (agile.to_nested, agile.to_shadow, shadow.nested_tables())
}

#[test]
fn a_leaf_table_written_twice_while_shadowed_goes_nested_and_stops_trapping() {
    let mut sys = agile();
    // Page 0 builds the tables; its leaf table is shadowed by the fault that maps it.
    sys.access(va(0), true).unwrap();
    // Page 1: the guest's fault (reflected), then its entry write traps (once).
    let first = exits_of(&mut sys, |s| {
        s.access(va(1), true).unwrap();
    });
    assert!(first.contains(&("write_protect", 1)), "{first:?}");
    assert_eq!(stats(&sys), (0, 0, 0));
    // Page 2: the second trapped write moves the leaf table to nested mode.
    sys.access(va(2), true).unwrap();
    assert_eq!(stats(&sys), (1, 0, 1));
    // Page 3: a fault below the switch is the guest's own (no reflected fault), and its
    // entry write is a plain store (no write_protect exit). The one exit left is the
    // kernel's first touch of the new data frame, which the hypervisor backs, as under
    // shadow paging.
    let below = exits_of(&mut sys, |s| {
        s.access(va(3), true).unwrap();
    });
    assert_eq!(below, vec![("shadow_fault", 1)]);
}

#[test]
fn a_nested_table_left_alone_for_a_scan_interval_goes_back_to_shadow() {
    let mut sys = agile();
    for page in 0..3 {
        sys.access(va(page), true).unwrap();
    }
    assert_eq!(stats(&sys), (1, 0, 1));
    // The first scan finds the table written (the write that moved it); the second finds
    // it quiet and moves it back.
    for _ in 0..AgileConfig::default().revert_ticks {
        sys.timer_tick().unwrap();
    }
    assert_eq!(stats(&sys), (1, 0, 1));
    for _ in 0..AgileConfig::default().revert_ticks {
        sys.timer_tick().unwrap();
    }
    assert_eq!(stats(&sys), (1, 1, 0));
    // The next access re-shadows the table: a shadow fault, then 1D walks of 4 references.
    let refault = exits_of(&mut sys, |s| {
        s.access(va(2), false).unwrap();
    });
    assert!(refault.contains(&("shadow_fault", 1)), "{refault:?}");
    let before = sys.mmu().counters();
    sys.access(va(2), false).unwrap();
    let d = sys.mmu().counters().since(&before);
    assert_eq!((d.guest_refs, d.ept_refs), (4, 0));
}

#[test]
fn a_nested_table_written_during_the_interval_stays_nested() {
    let mut sys = agile();
    for page in 0..3 {
        sys.access(va(page), true).unwrap();
    }
    for round in 0..3 {
        // A new entry in the nested leaf table each interval: a plain store.
        sys.access(va(10 + round), true).unwrap();
        for _ in 0..AgileConfig::default().revert_ticks {
            sys.timer_tick().unwrap();
        }
        assert_eq!(stats(&sys), (1, 0, 1), "round {round}");
    }
}

#[test]
fn the_profile_sets_the_policy_and_the_revert_interval_is_in_timer_ticks() {
    use vmlab_core::cost::Profile;
    use vmlab_core::engine::system_config;
    let skylake = Profile::builtin("skylake").unwrap();
    assert_eq!(
        system_config(Paging::Agile, &skylake).agile,
        AgileConfig::default()
    );
    // 50 ms at HZ = 250: 12.5 ticks, rounded.
    let fast = skylake
        .with_overrides(&[
            ("virt.agile_revert_s", "0.05"),
            ("virt.agile_writes_to_nested", "3"),
        ])
        .unwrap();
    assert_eq!(
        system_config(Paging::Agile, &fast).agile,
        AgileConfig {
            writes_to_nested: 3,
            revert_ticks: 13,
        }
    );
    assert!(skylake
        .with_overrides(&[("virt.agile_writes_to_nested", "0")])
        .is_err());
}
