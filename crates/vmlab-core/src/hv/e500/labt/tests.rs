//! LABT's pinned behaviours on small hand-built instruction streams.

use super::translator::SiteKind;
use super::*;
use crate::hv::e500::pv::{Template, TemplateInput, TemplateRun};

const KERNEL: Block = Block {
    base: 0xC000_0000,
    size: 256 << 20,
};
const MFMSR_R3: u32 = 0x7C60_00A6;
const WRTEEI_0: u32 = 0x7C00_0146;
const WRTEEI_1: u32 = 0x7C00_8146;
const NOP: u32 = 0x6000_0000;

fn cfg(resize_unit: Option<u64>, threshold: Option<u32>) -> LabtConfig {
    LabtConfig {
        resize_unit,
        read_fault_threshold: threshold,
        // A cache within 32 MiB of the kernel text, as the replay places it.
        tc_base: 0xC100_0000,
        tc_bytes: 64 << 10,
    }
}

fn input() -> TemplateInput {
    TemplateInput {
        old_msr: 0x0002_9000,
        value: 0,
        int_pending: false,
    }
}

#[test]
fn a_privileged_instruction_exits_once_and_never_again() {
    let mut t = Translator::new(cfg(Some(256 << 10), None));
    let pc = 0xC000_2000;
    assert_eq!(
        t.on_priv(pc, MFMSR_R3, KERNEL, input()),
        PrivOutcome::Exit { translated: true }
    );
    for _ in 0..1000 {
        assert_eq!(
            t.on_priv(pc, MFMSR_R3, KERNEL, input()),
            PrivOutcome::InPlace
        );
    }
    // A routine rewrite: wrteei 0 runs kvm_emul.S's 14-instruction path in the guest.
    let pc2 = 0xC000_2010;
    assert_eq!(
        t.on_priv(pc2, WRTEEI_0, KERNEL, input()),
        PrivOutcome::Exit { translated: true }
    );
    assert_eq!(
        t.on_priv(pc2, WRTEEI_0, KERNEL, input()),
        PrivOutcome::Routine(TemplateRun {
            insns: 14,
            exits: false
        })
    );
    assert_eq!(t.stats().rewrites_in_place, 1);
    assert_eq!(t.stats().rewrites_routine, 1);
    // rfi is never rewritten: it exits every time, and is only looked at once.
    for _ in 0..3 {
        assert_eq!(
            t.on_priv(0xC000_3000, 0x4C00_0064, KERNEL, input()),
            PrivOutcome::Exit { translated: false }
        );
    }
    assert_eq!(t.stats().untranslatable, 1);
}

/// Guest memory of the test: patched sites hold their rewrite, everything else a nop.
fn memory(t: &Translator) -> impl Fn(u32) -> u32 + '_ {
    move |a| match t.site(a) {
        Some(s) => match s.kind {
            SiteKind::Priv(rw) => rw.in_place_word(s.original).unwrap_or(0x4800_0000),
            SiteKind::HotLoad => 0x4800_0000,
        },
        None => NOP,
    }
}

#[test]
fn a_read_of_a_patched_page_traps_and_returns_the_original_bytes() {
    let mut t = Translator::new(cfg(Some(256 << 10), None));
    let pc = 0xC000_2000;
    t.on_priv(pc, MFMSR_R3, KERNEL, input());
    // In memory the site is `lwz r3, 92(magic)` now.
    assert_eq!(memory(&t)(pc), 0x8060_F05C);
    let snapshot = t.clone();
    let (word, trapped) = t.read_word(pc, memory(&snapshot));
    assert_eq!((word, trapped), (MFMSR_R3, true));
    // Another word of the execute-only piece traps too, and reads what memory holds.
    assert_eq!(t.read_word(pc + 0x100, memory(&snapshot)), (NOP, true));
    // Outside the 256 KiB execute-only piece nothing traps.
    assert_eq!(t.read_word(0xC010_0000, memory(&snapshot)), (NOP, false));
    assert_eq!(t.stats().read_faults, 2);
}

#[test]
fn a_write_to_a_patch_site_undoes_the_patch() {
    let unit = 256 << 10;
    let mut t = Translator::new(cfg(Some(unit), None));
    let pc = 0xC000_2000;
    t.on_priv(pc, MFMSR_R3, KERNEL, input());
    assert_eq!(t.pieces(KERNEL).unwrap().len(), 16);
    assert!(t.exec_only(pc));
    // A store elsewhere in the piece traps and is emulated; the site stays.
    let out = t.on_data(0xC000_0100, 0xC000_2100, true, 2, 3, KERNEL);
    assert_eq!((out.faults, out.undid_site), (3, false));
    assert!(t.site(pc).is_some());
    // A store to the site's word traps and undoes the rewrite; the shadow merges back.
    let out = t.on_data(0xC000_0100, pc, true, 2, 1, KERNEL);
    assert_eq!((out.faults, out.undid_site), (1, true));
    assert!(t.site(pc).is_none());
    assert!(!t.exec_only(pc));
    assert_eq!(t.pieces(KERNEL).unwrap().len(), 1);
    assert_eq!((t.stats().splits, t.stats().merges), (1, 1));
    // A sequential store group (a memset) over a page undoes every site it covers.
    t.on_priv(pc, MFMSR_R3, KERNEL, input());
    t.on_priv(pc + 0x800, MFMSR_R3, KERNEL, input());
    t.on_priv(pc + 0x1000, MFMSR_R3, KERNEL, input());
    t.on_priv(pc + 0x7FC, MFMSR_R3, KERNEL, input());
    let out = t.on_data(0xC000_0100, pc, true, 2, 0x200, KERNEL);
    assert!(out.undid_site);
    assert!(t.site(pc).is_none() && t.site(pc + 0x7FC).is_none());
    assert!(t.site(pc + 0x800).is_some(), "past the group's range");
    assert!(t.site(pc + 0x1000).is_some(), "another page");
    assert_eq!(t.stats().undone_by_write, 3);
    // The next execution exits and is rewritten again.
    assert_eq!(
        t.on_priv(pc, MFMSR_R3, KERNEL, input()),
        PrivOutcome::Exit { translated: true }
    );
}

#[test]
fn without_resizing_every_data_access_to_the_huge_entry_faults() {
    let site = 0xC000_2000;
    let accesses: Vec<u32> = (0..64).map(|i| 0xC000_0000 + i * 0x0040_0000).collect();
    let faults = |unit: Option<u64>| {
        let mut t = Translator::new(cfg(unit, None));
        t.on_priv(site, MFMSR_R3, KERNEL, input());
        accesses
            .iter()
            .map(|&a| t.on_data(0xC000_0500, a, false, 2, 1, KERNEL).faults)
            .sum::<u64>()
    };
    assert_eq!(faults(None), 64);
    // With 256 KiB pieces only the access in the site's piece (0xC0000000) faults.
    assert_eq!(faults(Some(256 << 10)), 1);
}

#[test]
fn avoid_read_faults_stops_a_hot_loads_faults_after_its_threshold() {
    let mut t = Translator::new(cfg(None, Some(3)));
    t.on_priv(0xC000_2000, MFMSR_R3, KERNEL, input());
    let load = 0xC000_4000;
    let faults: Vec<u64> = (0..10)
        .map(|_| t.on_data(load, 0xC050_0010, false, 2, 1, KERNEL).faults)
        .collect();
    // Faults 1..4 trap; the 4th exceeds the threshold and the load is redirected.
    assert_eq!(faults, vec![1, 1, 1, 1, 0, 0, 0, 0, 0, 0]);
    assert_eq!(t.stats().hot_loads, 1);
    // A group of 5 reads of another page: the first misses the copy and faults.
    let out = t.on_data(load, 0xC060_0000, false, 2, 5, KERNEL);
    assert_eq!(
        (out.faults, out.cached_reads, out.routine_insns),
        (1, 4, 50)
    );
    // Writes still go to the original location and trap.
    assert_eq!(t.on_data(load, 0xC060_0000, true, 2, 2, KERNEL).faults, 2);
    // Without the optimization the same load keeps faulting.
    let mut plain = Translator::new(cfg(None, None));
    plain.on_priv(0xC000_2000, MFMSR_R3, KERNEL, input());
    let n: u64 = (0..10)
        .map(|_| plain.on_data(load, 0xC050_0010, false, 2, 1, KERNEL).faults)
        .sum();
    assert_eq!(n, 10);
}

#[test]
fn routines_out_of_branch_reach_keep_exiting() {
    // A cache in the top 32 MiB: the site reaches it with `ba`, but no single branch gets
    // back to the kernel at 0xC0000000.
    let mut t = Translator::new(LabtConfig {
        tc_base: 0xFE00_0000,
        ..cfg(None, None)
    });
    let pc = 0xC000_2000;
    for _ in 0..2 {
        assert_eq!(
            t.on_priv(pc, WRTEEI_1, KERNEL, input()),
            PrivOutcome::Exit { translated: false }
        );
    }
    assert_eq!(t.stats().out_of_reach, 1);
    // In-place rewrites need no branch.
    t.on_priv(pc + 4, MFMSR_R3, KERNEL, input());
    assert_eq!(
        t.on_priv(pc + 4, MFMSR_R3, KERNEL, input()),
        PrivOutcome::InPlace
    );
}

#[test]
fn an_evicted_routine_reverts_its_site() {
    // Room for one wrtee routine (27 words) only.
    let mut t = Translator::new(LabtConfig {
        tc_bytes: Template::Wrtee.words() * 4,
        ..cfg(Some(4096), None)
    });
    let (a, b) = (0xC000_2000, 0xC000_8000);
    t.on_priv(a, WRTEEI_1, KERNEL, input());
    assert!(matches!(
        t.on_priv(a, WRTEEI_1, KERNEL, input()),
        PrivOutcome::Routine(_)
    ));
    t.on_priv(b, WRTEEI_1, KERNEL, input());
    assert_eq!(t.stats().evictions, 1);
    assert!(!t.exec_only(a) && t.exec_only(b));
    assert_eq!(
        t.on_priv(a, WRTEEI_1, KERNEL, input()),
        PrivOutcome::Exit { translated: true }
    );
}
