//! The `pv` model on hand-built event streams.

use super::model::Pv;
use crate::cost::e500::E500Costs;
use crate::hv::e500::exits::E500Exit;
use crate::hv::e500::model::{GuestEvent, GuestState, HvModel, TlbEffect, MSR_EE};
use crate::hw::e500::{PageSize, Perms, TlbEntry, TlbSel, TlbSlot};
use crate::trace::e500::insn::{classify, PrivClass};
use crate::trace::e500::{ExceptionKind, Header};

const MFMSR: u32 = 0x7C60_00A6;
const WRTEEI_1: u32 = 0x7C00_8146;
const RFI: u32 = 0x4C00_0064;

fn guest() -> GuestState {
    let mut g = GuestState {
        kernel_text: Some((0xC000_0000, 0xC040_0000)),
        ..Default::default()
    };
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

fn priv_event(pc: u32, word: u32) -> GuestEvent<'static> {
    GuestEvent::Priv {
        pc,
        word,
        class: classify(word).unwrap(),
        values: &[],
        gprs_unknown: false,
        tlb: TlbEffect::None,
    }
}

#[test]
fn patched_instructions_stop_exiting_and_the_rest_exits() {
    let mut pv = Pv::new(&E500Costs::builtin().host().unwrap(), false);
    let g = guest();
    for _ in 0..3 {
        pv.on_event(&g, &priv_event(0xC000_1000, MFMSR));
    }
    pv.on_event(&g, &priv_event(0xC000_1004, RFI));
    // Outside the kernel text nothing is patched.
    pv.on_event(&g, &priv_event(0x0000_2C00, MFMSR));
    let c = pv.counters();
    assert_eq!(c.exits.get(E500Exit::Mfmsr), 1);
    assert_eq!(c.exits.get(E500Exit::Rfi), 1);
    assert_eq!(c.exits.total(), 2 + c.exits.get(E500Exit::HostTlbMiss));
    assert_eq!(c.extra.get("in_place"), Some(&3));
}

#[test]
fn an_interrupt_right_after_enabling_ee_means_the_template_trapped() {
    let mut pv = Pv::new(&E500Costs::builtin().host().unwrap(), false);
    let mut g = guest();
    pv.on_event(&g, &priv_event(0xC000_1000, MFMSR)); // warm the shadow
    g.msr = MSR_EE;
    let pc = 0xC000_2000;
    pv.on_event(&g, &priv_event(pc, WRTEEI_1));
    assert_eq!(pv.counters().exits.get(E500Exit::Wrtee), 0);
    assert_eq!(pv.counters().added_insns, 20);
    pv.on_event(
        &g,
        &GuestEvent::Exception {
            kind: ExceptionKind(10),
            by_branch: false,
            srr0: pc + 4,
            srr1: MSR_EE,
            dear: 0,
        },
    );
    let c = pv.counters();
    assert_eq!(c.exits.get(E500Exit::Wrtee), 1);
    assert_eq!(c.exits.get(E500Exit::OtherException), 1);
    assert_eq!(c.extra.get("pending_interrupt_exits"), Some(&1));
    assert_eq!(c.added_insns, 22);
    assert_eq!(PrivClass::Wrteei, classify(WRTEEI_1).unwrap());
}

#[test]
fn the_kernel_runs_unpatched_until_kvm_guest_init() {
    let mut pv = Pv::new(&E500Costs::builtin().host().unwrap(), false);
    pv.on_start(&Header {
        system_map: "c0000000 T _stext\nc0400000 T _etext\nc0500000 T kvm_guest_init\n\
                     c0500100 t next_fn\n"
            .into(),
        ..Default::default()
    });
    let g = guest();
    pv.on_event(&g, &priv_event(0xC000_1000, MFMSR));
    assert_eq!(pv.counters().exits.get(E500Exit::Mfmsr), 1);
    pv.on_event(
        &g,
        &GuestEvent::Mem {
            pc: 0xC050_0010,
            vaddr: 0xC080_0000,
            paddr: 0x80_0000,
            store: false,
            size_log2: 2,
            count: 1,
        },
    );
    pv.on_event(&g, &priv_event(0xC000_1000, MFMSR));
    assert_eq!(pv.counters().exits.get(E500Exit::Mfmsr), 1);
}

/// A template whose slow path runs the original instruction exits, and KVM emulates it
/// with everything emulation does: an `mtmsr` into user mode recomputes the shadow IDs
/// (kvmppc_set_msr -> kvmppc_mmu_msr_notify), as an unpatched one would.
#[test]
fn a_template_that_exits_is_emulated_with_its_shadow_id_work() {
    const MTMSR: u32 = 0x7C00_0124; // mtmsr r0
    let host = E500Costs::builtin().host().unwrap();
    let mut g = guest();
    g.msr = crate::hv::e500::model::MSR_PR;
    let mut pv = Pv::new(&host, false);
    pv.on_event(&g, &priv_event(0xC000_1000, MTMSR));
    let c = pv.counters();
    assert_eq!(c.extra.get("template_runs"), Some(&1));
    assert_eq!(c.exits.get(E500Exit::Mtmsr), 1);
    // The code page's shadow took (AS 0, TID 0, kernel); the emulated mtmsr the user-mode
    // context's (AS 0, PID 0, user).
    assert_eq!(c.extra.get("shadow_ids"), Some(&2));
}
