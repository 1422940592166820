//! Exact memory references of one page walk, with every TLB and walk cache disabled, for
//! every combination of paging depth, scheme, guest page size and host page size; the
//! hardware A/D bit updates those walks make; and TLB hits once the caches are on.
//!
//! The counts are the textbook ones: a 1D walk reads one entry per level, and a 2D walk
//! reads each of the G guest entries after translating its guest-physical address with an
//! H-reference EPT walk, then translates the final guest-physical address:
//! G * (H + 1) + H references (24 for 4K on 4K with 4 levels, 35 with 5).

mod common;

use common::{
    ept_leaf, guest_table_gpas, guest_walk, p2m, Setup, MIB, REGION_4LEVEL, REGION_5LEVEL,
};
use vmlab_core::addr::{Gva, PageSize};
use vmlab_core::hw::x86::mmu::MmuCounters;
use vmlab_core::hw::x86::paging::PagingMode;
use vmlab_core::hw::x86::pte::{Ept, X86};
use vmlab_core::scheme::{Paging, System};

const G1: PageSize = PageSize::Size1G;
const M2: PageSize = PageSize::Size2M;
const K4: PageSize = PageSize::Size4K;

/// One row of the reference-count table.
struct WalkCase {
    paging: Paging,
    levels: u8,
    guest_pages: PageSize,
    /// Ignored for native paging.
    host_pages: PageSize,
    guest_refs: u64,
    ept_refs: u64,
}

const fn native(levels: u8, guest_pages: PageSize, refs: u64) -> WalkCase {
    WalkCase {
        paging: Paging::Native,
        levels,
        guest_pages,
        host_pages: K4,
        guest_refs: refs,
        ept_refs: 0,
    }
}

const fn nested(
    levels: u8,
    guest_pages: PageSize,
    host_pages: PageSize,
    guest_refs: u64,
    ept_refs: u64,
) -> WalkCase {
    WalkCase {
        paging: Paging::Nested,
        levels,
        guest_pages,
        host_pages,
        guest_refs,
        ept_refs,
    }
}

/// The expected counts, written out (not computed) so a wrong formula cannot hide a wrong walk.
const CASES: &[WalkCase] = &[
    // 4-level paging.
    native(4, K4, 4),
    native(4, M2, 3),
    nested(4, K4, K4, 4, 20), // 24
    nested(4, M2, K4, 3, 16), // 19
    nested(4, K4, M2, 4, 15), // 19
    nested(4, M2, M2, 3, 12), // 15
    nested(4, K4, G1, 4, 10), // 14
    nested(4, M2, G1, 3, 8),  // 11
    // 5-level paging: one more level in each dimension.
    native(5, K4, 5),
    native(5, M2, 4),
    nested(5, K4, K4, 5, 30), // 35
    nested(5, M2, K4, 4, 25), // 29
    nested(5, K4, M2, 5, 24), // 29
    nested(5, M2, M2, 4, 20), // 24
    nested(5, K4, G1, 5, 18), // 23
    nested(5, M2, G1, 4, 15), // 19
];

impl WalkCase {
    fn name(&self) -> String {
        match self.paging {
            Paging::Native => format!("native {}-level {}", self.levels, self.guest_pages),
            _ => format!(
                "nested {}-level {} guest on {} host",
                self.levels, self.guest_pages, self.host_pages
            ),
        }
    }

    fn setup(&self) -> Setup {
        Setup {
            levels: self.levels,
            guest_pages: self.guest_pages,
            host_pages: self.host_pages,
            ..Setup::new(self.paging)
        }
    }

    fn region(&self) -> u64 {
        if self.levels == 5 {
            REGION_5LEVEL
        } else {
            REGION_4LEVEL
        }
    }

    /// Entries read per level of each dimension (a leaf of size S sits at the paging mode's
    /// `leaf_level(S)`).
    fn depths(&self) -> (u64, u64) {
        let mode = PagingMode::x86_64(self.levels).unwrap();
        let leaf_level = |size| mode.leaf_level(size).unwrap();
        let g = (self.levels - leaf_level(self.guest_pages) + 1) as u64;
        let h = match self.paging {
            Paging::Native => 0,
            _ => (self.levels - leaf_level(self.host_pages) + 1) as u64,
        };
        (g, h)
    }
}

/// Counters of exactly one access to `va`.
fn measure(system: &mut System, va: u64, write: bool) -> (MmuCounters, u64) {
    let before = system.mmu().counters();
    let hpa = system
        .access(Gva::new(va), write)
        .expect("access to a mapped page");
    (system.mmu().counters().since(&before), hpa.raw())
}

/// Offsets in the 4 MiB test mapping: first page, inside the second 2 MiB half, last word.
const OFFSETS: [u64; 3] = [0x123, 2 * MIB + 0x5_4321, 4 * MIB - 8];

#[test]
fn written_out_counts_match_the_two_dimensional_formula() {
    // Guards the table itself: G guest reads, each preceded by an H-read EPT walk, plus one
    // EPT walk for the final guest-physical address.
    for case in CASES {
        let (g, h) = case.depths();
        assert_eq!(
            (case.guest_refs, case.ept_refs),
            (g, g * h + h),
            "{}",
            case.name()
        );
    }
}

#[test]
fn every_tlb_miss_walk_reads_exactly_the_expected_entries() {
    for case in CASES {
        let mut system = case.setup().build();
        let region = case.region();
        system.mmap(Gva::new(region), 4 * MIB, true).unwrap();
        for offset in OFFSETS {
            let va = region + offset;
            // The first touch faults (guest page fault, EPT backing) and fills A/D bits;
            // with a write touch, later reads and writes need no A/D update.
            let first = system
                .access(Gva::new(va), true)
                .unwrap_or_else(|e| panic!("{}: touch {va:#x}: {e}", case.name()));
            for write in [false, true] {
                let (delta, hpa) = measure(&mut system, va, write);
                let what = format!("{}, va {va:#x}, write {write}", case.name());
                assert_eq!(hpa, first.raw(), "{what}: translation changed");
                assert_eq!(delta.accesses, 1, "{what}");
                assert_eq!(delta.tlb_misses, 1, "{what}: every TLB is disabled");
                assert_eq!(delta.walks, 1, "{what}");
                assert_eq!(delta.faults, 0, "{what}");
                assert_eq!(delta.guest_refs, case.guest_refs, "{what}: guest refs");
                assert_eq!(delta.ept_refs, case.ept_refs, "{what}: EPT refs");
                assert_eq!(
                    delta.walk_refs(),
                    case.guest_refs + case.ept_refs,
                    "{what}: total refs"
                );
                // With the nested TLB off, every guest-physical address needs an EPT walk:
                // one per guest table read, plus the final data address.
                let nested_walks = if case.paging == Paging::Nested {
                    case.guest_refs + 1
                } else {
                    0
                };
                assert_eq!(
                    (delta.nested_tlb_hits, delta.nested_tlb_misses),
                    (0, nested_walks),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn walk_counts_do_not_depend_on_the_data_caches() {
    // The cache hierarchy changes where a reference is served, never how many there are.
    for memory in [common::memory_small(), common::skylake().memory] {
        for case in CASES.iter().filter(|c| c.levels == 4) {
            let mut system = Setup {
                memory: memory.clone(),
                ..case.setup()
            }
            .build();
            system.mmap(Gva::new(case.region()), 4 * MIB, true).unwrap();
            let va = case.region() + 0x1000;
            system.access(Gva::new(va), false).unwrap();
            let (delta, _) = measure(&mut system, va, false);
            assert_eq!(
                (delta.walks, delta.guest_refs, delta.ept_refs),
                (1, case.guest_refs, case.ept_refs),
                "{}",
                case.name()
            );
        }
    }
}

/// The guest entry bits and the EPT leaf bits of the page holding `va`.
fn ad_bits(system: &System, va: u64) -> (u64, Option<u64>) {
    let leaf = guest_walk(system, Gva::new(va)).expect("mapped in the guest");
    let guest = leaf.entry & (X86::ACCESSED_BIT | X86::DIRTY_BIT);
    let ept = ept_leaf(system, leaf.gpa)
        .map(|(_, entry, _)| entry & (Ept::ACCESSED_BIT | Ept::DIRTY_BIT));
    (guest, ept)
}

#[test]
fn walks_set_accessed_on_read_and_dirty_on_write_in_both_dimensions() {
    const A: u64 = X86::ACCESSED_BIT;
    const AD: u64 = X86::ACCESSED_BIT | X86::DIRTY_BIT;
    const EA: u64 = Ept::ACCESSED_BIT;
    const EAD: u64 = Ept::ACCESSED_BIT | Ept::DIRTY_BIT;
    // Host pages are 4K so the data page's EPT leaf is its own, not shared with the guest's
    // table pages (whose EPT leaves are dirtied by every walk: table reads are EPT writes).
    // Both TLB settings: with TLBs on, the write must not be satisfied by the clean TLB entry
    // the read filled; it has to re-walk to set D.
    for tlb_on in [false, true] {
        // Hardware A/D semantics; shadow paging emulates dirty bits (tests/shadow.rs).
        for paging in [Paging::Native, Paging::Nested] {
            for guest_pages in [K4, M2] {
                let mut setup = Setup {
                    guest_pages,
                    ..Setup::new(paging)
                };
                if tlb_on {
                    setup.tlb = common::skylake().tlb;
                }
                let what = format!("{} {guest_pages} guest, TLBs on: {tlb_on}", paging.name());
                let mut system = setup.build();
                system.mmap(Gva::new(REGION_4LEVEL), 4 * MIB, true).unwrap();
                let va = REGION_4LEVEL + 0x3_0040;

                // A read fault: the kernel maps the page with A (as Linux does) but not D.
                let read = system.access(Gva::new(va), false).unwrap();
                let (guest, ept) = ad_bits(&system, va);
                assert_eq!(guest, A, "{what}: guest leaf after a read");
                if paging == Paging::Nested {
                    // Only the hardware sets EPT A/D: the hypervisor maps frames without them.
                    assert_eq!(
                        ept,
                        Some(EA),
                        "{what}: EPT leaf of the data page after a read"
                    );
                }

                let before = system.mmu().counters();
                let write = system.access(Gva::new(va), true).unwrap();
                let delta = system.mmu().counters().since(&before);
                assert_eq!(write, read, "{what}: a write goes to the same place");
                assert_eq!(
                    delta.walks, 1,
                    "{what}: a write to a clean page walks once to set D"
                );
                assert_eq!(delta.faults, 0, "{what}: no fault needed to set D");
                let (guest, ept) = ad_bits(&system, va);
                assert_eq!(guest, AD, "{what}: the hardware walk set the guest D bit");
                if paging == Paging::Nested {
                    assert_eq!(
                        ept,
                        Some(EAD),
                        "{what}: the hardware walk set the EPT D bit"
                    );
                }

                // Once dirty, a write with TLBs on is a hit; with them off it walks without
                // writing anything.
                let before = system.mmu().counters();
                system.access(Gva::new(va), true).unwrap();
                let walks = system.mmu().counters().since(&before).walks;
                assert_eq!(walks, if tlb_on { 0 } else { 1 }, "{what}: second write");
            }
        }
    }
}

#[test]
fn guest_table_walks_set_ept_accessed_and_dirty_on_the_table_pages() {
    // With EPT A/D flags on, every guest paging-structure access is an EPT write
    // (Intel SDM vol. 3, 29.3.5), even when the data access is a read. The hypervisor maps
    // frames without A/D, so these bits can only come from the hardware walk.
    let mut system = Setup::new(Paging::Nested).build();
    system.mmap(Gva::new(REGION_4LEVEL), 4 * MIB, true).unwrap();
    let va = REGION_4LEVEL + 0x5000;
    system.access(Gva::new(va), false).unwrap();
    let tables = guest_table_gpas(&system, Gva::new(va));
    assert_eq!(tables.len(), 4, "PGD, PUD, PMD and PT");
    for gpa in tables {
        let (_, entry, size) = ept_leaf(&system, gpa).expect("guest table pages are backed");
        assert_eq!(size, K4);
        let ad = entry & (Ept::ACCESSED_BIT | Ept::DIRTY_BIT);
        assert_eq!(
            ad,
            Ept::ACCESSED_BIT | Ept::DIRTY_BIT,
            "EPT leaf of the guest table page at GPA {gpa:#x}"
        );
    }
}

#[test]
fn second_access_hits_the_tlb_and_translates_the_same() {
    let tlb = common::skylake().tlb;
    let mut cases: Vec<Setup> = Vec::new();
    for guest_pages in [K4, M2] {
        cases.push(Setup {
            guest_pages,
            tlb: tlb.clone(),
            ..Setup::new(Paging::Native)
        });
        for host_pages in [K4, M2, G1] {
            cases.push(Setup {
                guest_pages,
                host_pages,
                tlb: tlb.clone(),
                ..Setup::new(Paging::Nested)
            });
        }
    }
    for setup in cases {
        let what = format!(
            "{} {} guest on {} host",
            setup.paging.name(),
            setup.guest_pages,
            setup.host_pages
        );
        let mut system = setup.build();
        system.mmap(Gva::new(REGION_4LEVEL), 4 * MIB, true).unwrap();
        for write in [false, true] {
            let va = REGION_4LEVEL + 0x7_0100 + if write { 0x1000 } else { 0 };
            let first = system.access(Gva::new(va), write).unwrap();
            let (delta, second) = measure(&mut system, va, write);
            assert_eq!(second, first.raw(), "{what}, write {write}: same HPA");
            assert_eq!(
                (delta.walks, delta.tlb_misses, delta.l1_tlb_misses),
                (0, 0, 0),
                "{what}, write {write}: L1 TLB hit"
            );
            assert_eq!(delta.walk_refs(), 0, "{what}, write {write}");
            // Another byte of the same 4K page hits too and keeps its page offset.
            let (delta, other) = measure(&mut system, va + 0x18, write);
            assert_eq!(
                other,
                first.raw() + 0x18,
                "{what}, write {write}: same page"
            );
            assert_eq!(delta.walks, 0, "{what}, write {write}");
        }
    }
}

#[test]
fn one_dimensional_schemes_walk_like_native_and_tpt_checks_every_frame() {
    // (scheme, levels, guest page = host page, entries read). Shadow tables, PV's
    // machine-frame tables and TPT's devirt copies are all walked in one dimension: one
    // entry per level, no EPT reference, no GPA->HPA lookup.
    let cases = [
        (Paging::Shadow, 4, K4, 4),
        (Paging::Shadow, 5, K4, 5),
        (Paging::Pv, 4, K4, 4),
        (Paging::Pv, 4, M2, 3),
        (Paging::Pv, 5, K4, 5),
        (Paging::Tpt, 4, K4, 4),
        (Paging::Tpt, 4, M2, 3),
        (Paging::Tpt, 5, K4, 5),
        (Paging::TptPrototype, 4, K4, 4),
        (Paging::TptPrototype, 5, M2, 4),
    ];
    for (paging, levels, pages, refs) in cases {
        let mut system = Setup {
            levels,
            guest_pages: pages,
            host_pages: pages,
            ..Setup::new(paging)
        }
        .build();
        let region = if levels == 5 {
            REGION_5LEVEL
        } else {
            REGION_4LEVEL
        };
        system.mmap(Gva::new(region), 4 * MIB, true).unwrap();
        for offset in OFFSETS {
            let va = region + offset;
            system.access(Gva::new(va), true).unwrap();
            let (d, _) = measure(&mut system, va, false);
            let what = format!("{paging:?} {levels}-level {pages}, va {va:#x}");
            assert_eq!((d.walks, d.guest_refs, d.ept_refs), (1, refs, 0), "{what}");
            assert_eq!(d.nested_tlb_hits + d.nested_tlb_misses, 0, "{what}");
            // TPT checks the tag of every table frame it reads and of the data frame.
            let checks = if paging == Paging::Tpt { refs + 1 } else { 0 };
            assert_eq!(
                (d.tag_fills, d.tag_checks, d.tag_violations),
                (u64::from(paging == Paging::Tpt), checks, 0),
                "{what}"
            );
        }
    }
}

/// Agile paging with the guest's table at `level` moved to nested mode: each guest table at
/// that level gets its entries written by the guest while shadowed (every write traps with
/// unsync off), so after two trapped writes it walks nested. Returns the system and an
/// address mapped below such a table.
fn agile_switched_at(level: u8) -> (System, u64) {
    let mut system = Setup {
        shadow: Some(vmlab_core::hv::x86::shadow::ShadowConfig {
            unsync: false,
            ..vmlab_core::hv::x86::shadow::ShadowConfig::kvm_default(1 << 20)
        }),
        ..Setup::new(Paging::Agile)
    }
    .build();
    // Three pages, each in a new table of the level below `level` (so each writes one new
    // entry into the same table at `level`): 4 KiB apart for the leaf table, 2 MiB apart
    // for the level-2 table, 1 GiB apart for the level-3 table.
    let stride = 1u64 << (12 + 9 * (u32::from(level) - 1));
    let region = REGION_4LEVEL;
    system.mmap(Gva::new(region), 3 * stride, true).unwrap();
    for page in 0..3 {
        system
            .access(Gva::new(region + page * stride), true)
            .unwrap();
    }
    let va = region + 2 * stride;
    (system, va)
}

#[test]
fn agile_walks_shadow_above_the_switch_and_nested_below_it() {
    // A switch to the guest's table at level s (4 levels): 4 - s shadow entries, the guest's
    // table read at its host address, s - 1 guest entries each after a 4-reference EPT walk,
    // and the data's EPT walk: 4 + 4s references, none cached (every TLB and cache is off).
    // (level, guest-dimension refs, EPT refs)
    let cases = [(1u8, 4u64, 4u64), (2, 4, 8), (3, 4, 12)];
    for (level, guest_refs, ept_refs) in cases {
        assert_eq!(guest_refs + ept_refs, 4 + 4 * u64::from(level));
        let (mut system, va) = agile_switched_at(level);
        let nested = system.shadow().unwrap().nested_tables();
        assert!(nested >= 1, "level {level}: no table went nested");
        for write in [false, true] {
            let (d, hpa) = measure(&mut system, va, write);
            let what = format!("agile switch to level {level}, write {write}");
            assert_eq!(
                Some(hpa),
                p2m(&system, guest_walk(&system, Gva::new(va)).unwrap().gpa),
                "{what}"
            );
            assert_eq!((d.walks, d.faults), (1, 0), "{what}");
            assert_eq!((d.guest_refs, d.ept_refs), (guest_refs, ept_refs), "{what}");
            // One GPA->HPA translation per guest table read below the switched one, and
            // one for the data.
            assert_eq!(d.nested_tlb_misses, u64::from(level), "{what}");
        }
    }
}

#[test]
fn agile_without_a_switch_walks_like_shadow() {
    // Pages touched once each, in separate leaf tables: no table is written twice while
    // shadowed, so every walk stays in the shadow tables (4 references, no EPT).
    let mut system = Setup::new(Paging::Agile).build();
    system.mmap(Gva::new(REGION_4LEVEL), 4 * MIB, true).unwrap();
    for offset in OFFSETS {
        let va = REGION_4LEVEL + offset;
        system.access(Gva::new(va), true).unwrap();
        let (d, _) = measure(&mut system, va, false);
        assert_eq!((d.walks, d.guest_refs, d.ept_refs), (1, 4, 0), "va {va:#x}");
    }
    assert_eq!(system.shadow().unwrap().nested_tables(), 0);
}
