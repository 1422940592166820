//! The `kvm` model on hand-built event streams: what each mechanism KVM adds is counted
//! exactly.

use super::Kvm;
use crate::cost::e500::E500Costs;
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::model::{GuestEvent, GuestState, HvModel, TlbEffect};
use crate::hv::e500::work::E500Work;
use crate::hw::e500::mmu::TLB0_WAYS;
use crate::hw::e500::{Access, PageSize, Perms, Tlb0, TlbEntry, TlbSel, TlbSlot};
use crate::trace::e500::insn::classify;

/// Supervisor read/write/execute.
const SRWX: u32 = 0x15;

fn tlb1(index: usize) -> TlbSlot {
    TlbSlot {
        tlb: TlbSel::Tlb1,
        index,
    }
}

fn tlb0(ea: u32, way: usize) -> TlbSlot {
    TlbSlot {
        tlb: TlbSel::Tlb0,
        index: Tlb0::set_of(ea) * TLB0_WAYS + way,
    }
}

/// The kernel's 256 MiB linear map in TLB1, and two device pages in TLB0 (ioremap): the
/// serial port's page and the MPIC's per-CPU page.
fn guest() -> GuestState {
    let mut g = GuestState::default();
    let perms = Perms::from_bits(SRWX);
    let kernel = TlbEntry::new(0xC000_0000, 0, PageSize::M256, 0, perms);
    g.tlb.write(tlb1(0), kernel).unwrap();
    let serial = TlbEntry::new(0xD100_0000, 0xF_E000_4000, PageSize::K4, 0, perms);
    g.tlb.write(tlb0(0xD100_0000, 0), serial).unwrap();
    let mpic = TlbEntry::new(0xD100_1000, 0xF_E006_0000, PageSize::K4, 0, perms);
    g.tlb.write(tlb0(0xD100_1000, 0), mpic).unwrap();
    g
}

fn mem(pc: u32, vaddr: u32, paddr: u64, store: bool, count: u32) -> GuestEvent<'static> {
    GuestEvent::Mem {
        pc,
        vaddr,
        paddr,
        store,
        size_log2: 0,
        count,
    }
}

/// What the profile prices a model's counts at (whole cycles: no instructions added here).
fn cycles(costs: &E500Costs, c: &crate::hv::e500::ModelCounters) -> u64 {
    costs.added_cycles(c) as u64
}

fn kvm() -> Kvm {
    Kvm::new(&E500Costs::builtin().host().unwrap(), false)
}

#[test]
fn every_device_access_exits_and_goes_where_its_device_lives() {
    let costs = E500Costs::builtin();
    let mut k = kvm();
    let g = guest();
    // The serial port: 5 polls of its status register, 3 characters written, all to QEMU.
    k.on_event(&g, &mem(0xC000_1000, 0xD100_0005, 0xF_E000_4505, false, 5));
    k.on_event(&g, &mem(0xC000_1004, 0xD100_0000, 0xF_E000_4500, true, 3));
    // The MPIC's per-CPU page: 2 end-of-interrupt writes, in the kernel.
    k.on_event(&g, &mem(0xC000_1008, 0xD100_10B0, 0xF_E006_00B0, true, 2));
    // RAM: shadowed once, then no exit.
    k.on_event(&g, &mem(0xC000_100C, 0xC010_0000, 0x10_0000, false, 4));
    k.on_event(&g, &mem(0xC000_100C, 0xC010_0004, 0x10_0004, false, 4));
    let c = k.counters();
    assert_eq!(c.exits.get(E500Exit::Mmio), 10);
    assert_eq!(c.work.get(E500Work::MmioUser), 8);
    assert_eq!(c.work.get(E500Work::MmioInKernel), 2);
    // The code page and the RAM page: two host TLB misses; the device pages none.
    assert_eq!(c.exits.get(E500Exit::HostTlbMiss), 2);
    assert_eq!(c.extra.get("shadow_fills"), Some(&2));
    let exits = costs.exit(E500Exit::Mmio) * 10 + costs.exit(E500Exit::HostTlbMiss) * 2;
    let devices = costs.cost("mmio.user").unwrap() * 8 + costs.cost("mmio.in_kernel").unwrap() * 2;
    let shadows = costs.cost("hv.shadow_write").unwrap() * 2;
    // Both pages are in the kernel's TLB1 entry: a full page lookup each.
    let lookups =
        (costs.cost("hv.page_lookup").unwrap() + costs.cost("hv.vma_lookup").unwrap()) * 2;
    assert_eq!(cycles(&costs, c), exits + devices + shadows + lookups);
    // No shadow for a device page, yet the guest observes its own translation.
    let ctx = g.kernel_data(Access::Read);
    assert!(k.host().lookup(0xD100_0005, ctx).is_none());
    assert_eq!(
        k.shadow_translate(&g, 0xD100_0005, ctx),
        g.translate(0xD100_0005, ctx)
    );
}

const MTSPR_MMUCSR0: u32 = 0x7C74_FBA6; // mtspr 1012, r3
const TLBIVAX: u32 = 0x7C00_1E24; // tlbivax 0, r3

fn priv_event(pc: u32, word: u32, values: &'static [u32], tlb: TlbEffect) -> GuestEvent<'static> {
    GuestEvent::Priv {
        pc,
        word,
        class: classify(word).unwrap(),
        values,
        gprs_unknown: false,
        tlb,
    }
}

#[test]
fn flash_invalidation_walks_the_guest_tlb_and_tlbivax_always_flushes() {
    let costs = E500Costs::builtin();
    let mut k = kvm();
    let g = guest();
    k.on_event(&g, &mem(0xC000_1000, 0xC010_0000, 0x10_0000, false, 1));
    assert!(k
        .host()
        .lookup(0xC010_0000, g.kernel_data(Access::Read))
        .is_some());
    let before = cycles(&costs, k.counters());
    // MMUCSR0 = TLB0_FI | TLB1_FI: 512 + 16 entries walked, one flush.
    k.on_event(
        &g,
        &priv_event(0xC000_2000, MTSPR_MMUCSR0, &[0x6], TlbEffect::None),
    );
    // MMUCSR0 = TLB1_FI only: 16 entries walked.
    k.on_event(
        &g,
        &priv_event(0xC000_2000, MTSPR_MMUCSR0, &[0x2], TlbEffect::None),
    );
    // tlbivax of one address that matches nothing: no walk, still a flush.
    k.on_event(
        &g,
        &priv_event(0xC000_2004, TLBIVAX, &[0xC080_0000], TlbEffect::None),
    );
    // tlbivax invalidate-all of TLB0 (EA bit 61): 512 walked, a flush.
    k.on_event(
        &g,
        &priv_event(0xC000_2004, TLBIVAX, &[0x4], TlbEffect::None),
    );
    let c = k.counters();
    assert_eq!(c.extra.get("mmucsr0_flushes"), Some(&2));
    assert_eq!(c.work.get(E500Work::FlushTlb), 4);
    assert_eq!(c.work.get(E500Work::GtlbeInvalidate), 528 + 16 + 512);
    assert!(k
        .host()
        .lookup(0xC010_0000, g.kernel_data(Access::Read))
        .is_none());
    let walk = costs.cost("hv.gtlbe_invalidate").unwrap() * (528 + 16 + 512);
    let flush = costs.cost("hv.flush_tlb").unwrap() * 4;
    let exits = costs.exit(E500Exit::Mtspr) * 2 + costs.exit(E500Exit::Tlbivax) * 2;
    // Each of the four instructions' code page misses: the first not yet shadowed, the
    // others flushed by the instruction before.
    let fetches = c.exits.get(E500Exit::HostTlbMiss) - 2;
    assert_eq!(fetches, 4);
    let refill = (costs.exit(E500Exit::HostTlbMiss)
        + costs.cost("hv.shadow_write").unwrap()
        + costs.cost("hv.page_lookup").unwrap()
        + costs.cost("hv.vma_lookup").unwrap())
        * fetches;
    assert_eq!(cycles(&costs, c) - before, walk + flush + exits + refill);
}

const TLBWE: u32 = 0x7C00_07A4;

#[test]
fn a_miss_looks_the_page_up_unless_a_guest_tlb0_entry_holds_it() {
    let costs = E500Costs::builtin();
    let mut k = kvm();
    let mut g = guest();
    // A guest TLB0 entry for a user page mapped by the kernel at 0xD200_0000 (RAM).
    let user = TlbEntry::new(
        0xD200_0000,
        0x20_0000,
        PageSize::K4,
        0,
        Perms::from_bits(SRWX),
    );
    let (slot, _) = g.tlb.write(tlb0(0xD200_0000, 1), user).unwrap();
    // Its tlbwe premaps it: a full lookup, and KVM holds the page from now on.
    let mut old = user;
    old.valid = false;
    let write = TlbEffect::Write {
        slot,
        old,
        new: user,
    };
    k.on_event(&g, &priv_event(0xC000_1000, TLBWE, &[], write));
    // Three pages of the kernel's TLB1 entry: a lookup each, with the VMA (4 KiB backing).
    for i in 0..3 {
        k.on_event(
            &g,
            &mem(
                0xC000_1004,
                0xC010_0000 + i * 0x1000,
                0x10_0000 + i as u64 * 0x1000,
                false,
                1,
            ),
        );
    }
    let c = k.counters();
    // The code page's miss and the three data pages: TLB1, a lookup each with the VMA; the
    // premap: TLB0, a lookup.
    assert_eq!(c.work.get(E500Work::PageLookup), 5);
    assert_eq!(c.extra.get("page_lookups_cached"), None);
    let page = costs.cost("hv.page_lookup").unwrap();
    let vma = costs.cost("hv.vma_lookup").unwrap();
    let exits = costs.exit(E500Exit::Tlbwe) + costs.exit(E500Exit::HostTlbMiss) * 4;
    let shadows = costs.cost("hv.shadow_write").unwrap() * 5;
    assert_eq!(cycles(&costs, c), exits + shadows + 5 * page + 4 * vma);
    let before = cycles(&costs, c);
    // The kernel's shadow of the TLB0 page is pushed out by a flush-free eviction: the
    // guest's TID-0 user page is shadowed again from the held page (no lookup).
    let ctx = g.kernel_data(Access::Read);
    let (gslot, _) = g.tlb.lookup(0xD200_0000, ctx.pid, ctx.ts).unwrap();
    k.host_mut().invalidate_gslot(gslot);
    k.on_event(&g, &mem(0xC000_1008, 0xD200_0010, 0x20_0010, false, 1));
    let c = k.counters();
    assert_eq!(c.extra.get("page_lookups_cached"), Some(&1));
    assert_eq!(
        cycles(&costs, c) - before,
        costs.exit(E500Exit::HostTlbMiss) + costs.cost("hv.shadow_write").unwrap()
    );
    // After a flush the held pages are released: the next miss looks the page up again.
    g.msr = 0;
    k.on_event(
        &g,
        &priv_event(0xC000_2000, MTSPR_MMUCSR0, &[0x6], TlbEffect::None),
    );
    let lookups = k.counters().work.get(E500Work::PageLookup);
    k.on_event(&g, &mem(0xC000_1008, 0xD200_0010, 0x20_0010, false, 1));
    // The code page (TLB1) and the data page (TLB0, released): two lookups.
    assert_eq!(k.counters().work.get(E500Work::PageLookup), lookups + 2);
}

fn kvm_huge() -> Kvm {
    Kvm::new(&E500Costs::builtin().host().unwrap(), true)
}

/// `mtspr spr, r3`.
fn mtspr(spr: u16) -> u32 {
    0x7C60_03A6 | ((spr as u32 & 0x1F) << 16) | ((spr as u32 & 0x3E0) << 6)
}

/// A tlbwe rewriting the kernel's TLB1 entry 0 with the same mapping.
fn rewrite_kernel_tlb1(g: &GuestState) -> GuestEvent<'static> {
    let e = *g.tlb.entry(tlb1(0));
    priv_event(
        0xC000_3000,
        TLBWE,
        &[],
        TlbEffect::Write {
            slot: tlb1(0),
            old: e,
            new: e,
        },
    )
}

#[test]
fn rewriting_a_tlb1_entry_backed_by_4k_pages_drops_every_shadow() {
    let g = guest();
    let user = TlbEntry::new(
        0xD200_0000,
        0x20_0000,
        PageSize::K4,
        0,
        Perms::from_bits(SRWX),
    );
    let mut g2 = g.clone();
    g2.tlb.write(tlb0(0xD200_0000, 1), user).unwrap();
    let ctx = g2.kernel_data(Access::Read);
    for huge in [false, true] {
        let mut k = if huge { kvm_huge() } else { kvm() };
        // A kernel page (TLB1 entry) and a page of a guest TLB0 entry, both shadowed.
        k.on_event(&g2, &mem(0xC000_1000, 0xC010_0000, 0x10_0000, false, 1));
        k.on_event(&g2, &mem(0xC000_1000, 0xD200_0000, 0x20_0000, false, 1));
        assert!(k.host().lookup(0xD200_0000, ctx).is_some());
        k.on_event(&g2, &rewrite_kernel_tlb1(&g2));
        let c = k.counters();
        if huge {
            // A TLB1 shadow: only that entry's host TLB1 entries go.
            assert_eq!(c.work.get(E500Work::TlbilAll), 0);
            assert!(k.host().lookup(0xD200_0000, ctx).is_some());
        } else {
            // kvmppc_e500_tlbil_all: the TLB0 entry's shadow goes too.
            assert_eq!(c.work.get(E500Work::TlbilAll), 1);
            assert!(k.host().lookup(0xD200_0000, ctx).is_none());
        }
        // The tlbwe premapped the new entry's first page, in 4 KiB again: the next rewrite
        // drops everything again.
        k.on_event(&g2, &rewrite_kernel_tlb1(&g2));
        assert_eq!(k.counters().work.get(E500Work::TlbilAll), 2 * !huge as u64);
    }
}

#[test]
fn the_huge_models_shadow_a_large_entry_in_host_huge_pages_round_robin() {
    let host = E500Costs::builtin().host().unwrap();
    assert_eq!(host.huge_page, PageSize::M4);
    assert_eq!(host.tlb1_reserved, 4);
    let mut k = kvm_huge();
    let g = guest();
    let ctx = g.kernel_data(Access::Read);
    // The code page's 4 MiB piece, then 12 more pieces of the 256 MiB entry: 13 shadows in
    // the 12 free host TLB1 slots, so the code's piece went first.
    k.on_event(&g, &mem(0xC000_1000, 0xC000_2000, 0x2000, false, 1));
    let s = *k.host().lookup(0xC000_2000, ctx).unwrap();
    assert_eq!((s.epn, s.size), (0xC000_0000, PageSize::M4));
    for i in 1..=12u32 {
        let ea = 0xC000_0000 + i * (4 << 20);
        k.on_event(
            &g,
            &mem(0xC000_1000, ea, (ea - 0xC000_0000) as u64, false, 1),
        );
    }
    let c = k.counters();
    // The first access: code and data in one piece (one miss); then per piece one data
    // miss, and the twelfth piece evicted the code's piece, so its fetch missed once more.
    assert_eq!(c.exits.get(E500Exit::HostTlbMiss), 1 + 12 + 1);
    assert!(k.host().lookup(0xC000_2000, ctx).is_some());
    assert!(k.host().lookup(0xC000_0000 + (4 << 20), ctx).is_none());
    // Every miss on the TLB1 entry is a full page lookup with the VMA.
    assert_eq!(c.work.get(E500Work::VmaLookup), 14);
}

#[test]
fn the_decrementer_is_a_host_hrtimer() {
    let mut k = kvm();
    let g = guest();
    k.on_event(
        &g,
        &priv_event(0xC000_4000, mtspr(22), &[100_000], TlbEffect::None),
    );
    k.on_event(
        &g,
        &GuestEvent::Exception {
            kind: crate::trace::e500::ExceptionKind::DECREMENTER,
            by_branch: false,
            srr0: 0xC000_5000,
            srr1: 0,
            dear: 0,
        },
    );
    let c = k.counters();
    assert_eq!(c.exits.get(E500Exit::Mtspr), 1);
    assert_eq!(c.exits.get(E500Exit::OtherException), 1);
    assert_eq!(c.work.get(E500Work::DecHrtimer), 1);
    assert_eq!(c.work.get(E500Work::DecTimerFire), 1);
    // Another SPR's write and another exception start and fire no timer.
    k.on_event(
        &g,
        &priv_event(0xC000_4000, mtspr(26), &[0], TlbEffect::None),
    );
    assert_eq!(k.counters().work.get(E500Work::DecHrtimer), 1);
}

#[test]
fn running_out_of_shadow_ids_flushes_the_host_tlb() {
    let mut k = kvm();
    let mut g = guest();
    let ctx = g.kernel_data(Access::Read);
    k.on_event(&g, &mem(0xC000_1000, 0xC010_0000, 0x10_0000, false, 1));
    assert!(k.host().lookup(0xC010_0000, ctx).is_some());
    // Kernel mode, AS 0: the first PID write maps (0, 1, 0) and (0, 0, 0); each later one
    // only its own PID. 255 IDs: the 255th PID write takes the last, the 256th rolls over.
    let mut rollover_at = None;
    for pid in 1..=255u8 {
        g.pid = pid;
        k.on_event(
            &g,
            &priv_event(0xC000_1000, mtspr(48), &[], TlbEffect::None),
        );
        if rollover_at.is_none() && k.counters().work.get(E500Work::SidRollover) == 1 {
            rollover_at = Some(pid);
        }
    }
    assert_eq!(rollover_at, Some(255));
    assert_eq!(k.counters().work.get(E500Work::SidRollover), 1);
    assert_eq!(k.counters().extra.get("shadow_ids"), Some(&(255 + 2)));
    // The whole host TLB went: the kernel's data page misses again.
    assert!(k.host().lookup(0xC010_0000, ctx).is_none());
    // A guest flush forgets the mappings, it does not give IDs back.
    k.on_event(
        &g,
        &priv_event(0xC000_2000, MTSPR_MMUCSR0, &[0x6], TlbEffect::None),
    );
    assert_eq!(k.counters().extra.get("shadow_ids"), Some(&(255 + 2 + 2)));
}
