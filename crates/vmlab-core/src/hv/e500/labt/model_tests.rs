//! The `labt` models on hand-built event streams: tracing faults through the replay
//! interface, and resized pieces in the host TLB.

use super::model::{Labt, Variant};
use crate::cost::e500::E500Costs;
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::model::{GuestEvent, GuestState, HvModel, TlbEffect};
use crate::hw::e500::{Access, PageSize, Perms, TlbEntry, TlbSel, TlbSlot};
use crate::trace::e500::insn::classify;

const MFMSR: u32 = 0x7C60_00A6;

fn guest() -> GuestState {
    let mut g = GuestState::default();
    let kernel = TlbEntry::new(0xC000_0000, 0, PageSize::M256, 0, Perms::from_bits(0x15));
    g.tlb
        .write(
            TlbSlot {
                tlb: TlbSel::Tlb1,
                index: 0,
            },
            kernel,
        )
        .unwrap();
    g
}

fn mfmsr(pc: u32) -> GuestEvent<'static> {
    GuestEvent::Priv {
        pc,
        word: MFMSR,
        class: classify(MFMSR).unwrap(),
        values: &[],
        gprs_unknown: false,
        tlb: TlbEffect::None,
    }
}

fn load(pc: u32, vaddr: u32, count: u32) -> GuestEvent<'static> {
    GuestEvent::Mem {
        pc,
        vaddr,
        paddr: (vaddr - 0xC000_0000) as u64,
        store: false,
        size_log2: 2,
        count,
    }
}

fn run(variant: Variant) -> Labt {
    let mut m = Labt::new(&E500Costs::builtin().host().unwrap(), variant);
    let g = guest();
    for _ in 0..5 {
        m.on_event(&g, &mfmsr(0xC000_1000));
    }
    // 10 loads of 3 accesses each, spread over the kernel's data in the site's 4 MiB host
    // page, and 4 loads of 5 beyond it (KVM shadows the 256 MiB entry in 4 MiB pieces: only
    // the site's piece is execute-only).
    for i in 0..10 {
        m.on_event(&g, &load(0xC000_2000, 0xC010_0000 + i * 0x3_0000, 3));
    }
    for i in 0..4 {
        m.on_event(&g, &load(0xC000_2008, 0xC040_0000 + i * 0x10_0000, 5));
    }
    m.on_event(&g, &load(0xC000_2004, 0xC000_1100, 2)); // near the site
    m
}

#[test]
fn tracing_faults_every_access_to_the_sites_huge_page_without_resizing_and_few_with_it() {
    let plain = run(Variant::Tracing);
    let c = plain.counters();
    assert_eq!(c.exits.get(E500Exit::Mfmsr), 1);
    assert_eq!(c.tracing_faults, 32);
    assert_eq!(c.exits.get(E500Exit::Tracing), 32);
    let resized = run(Variant::Resize);
    let c = resized.counters();
    assert_eq!(c.tracing_faults, 2);
    assert_eq!((c.splits, c.merges), (1, 0));
}

#[test]
fn split_pieces_live_in_the_host_tlb_and_translate_like_the_guest() {
    let m = run(Variant::Resize);
    let g = guest();
    let ctx = g.kernel_data(Access::Read);
    for ea in [0xC000_1100, 0xC010_0010, 0xC050_0000] {
        let t = m.shadow_translate(&g, ea, ctx).expect("shadowed");
        assert_eq!(t, g.translate(ea, ctx).unwrap(), "{ea:#x}");
    }
    // The execute-only piece is 256 KiB; the kernel's shadow is no longer one entry.
    assert!(m.counters().exits.get(E500Exit::HostTlbMiss) > 1);
}
