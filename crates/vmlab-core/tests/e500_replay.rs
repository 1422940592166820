//! Replaying the committed e500 guest trace through every registered hypervisor model: the
//! replayed guest TLB reproduces every recorded translation, the exits follow the recorded
//! privileged instructions, and the translation invariant holds for every model.

use std::path::PathBuf;
use vmlab_core::cost::e500::E500Costs;
use vmlab_core::hv::e500::registry::MODELS;
use vmlab_core::hv::e500::replay::{replay, ReplayReport};
use vmlab_core::hv::e500::{E500Exit, GuestEvent, GuestState, HvModel};
use vmlab_core::hw::e500::Access;
use vmlab_core::trace::e500::open;

/// The minimal guest's trace: these counts are pinned on it.
fn minimal() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(vmlab_core::lab::e500::MINIMAL_TRACE)
}

/// What the invariant check saw.
#[derive(Default, Debug)]
struct Invariant {
    data_checked: u64,
    fetch_checked: u64,
    fetch_unmapped_by_guest: u64,
    violations: Vec<String>,
}

fn check(
    inv: &mut Invariant,
    guest: &GuestState,
    ev: &GuestEvent<'_>,
    models: &[Box<dyn HvModel>],
) {
    let GuestEvent::Mem {
        pc,
        vaddr,
        paddr,
        store,
        ..
    } = ev
    else {
        return;
    };
    let a = if *store { Access::Write } else { Access::Read };
    let ctx = guest.kernel_data(a);
    let want = guest.translate(*vaddr, ctx);
    inv.data_checked += 1;
    if want.map(|t| t.gpa) != Some(*paddr) && inv.violations.len() < 10 {
        inv.violations.push(format!(
            "guest TLB: {vaddr:#x} -> {want:x?}, recorded {paddr:#x}"
        ));
    }
    let fctx = guest.kernel_fetch();
    let fwant = guest.translate(*pc, fctx);
    if fwant.is_some() {
        inv.fetch_checked += 1;
    } else {
        inv.fetch_unmapped_by_guest += 1;
    }
    for m in models {
        let got = m.shadow_translate(guest, *vaddr, ctx);
        if got != want && inv.violations.len() < 10 {
            inv.violations.push(format!(
                "{}: data {vaddr:#x} at pc {pc:#x}: shadow {got:x?}, guest {want:x?}",
                m.name()
            ));
        }
        if fwant.is_some() {
            let got = m.shadow_translate(guest, *pc, fctx);
            if got != fwant && inv.violations.len() < 10 {
                inv.violations.push(format!(
                    "{}: fetch {pc:#x}: shadow {got:x?}, guest {fwant:x?} data {vaddr:#x} {ctx:?} {fctx:?}",
                    m.name()
                ));
            }
        }
    }
}

fn replay_all() -> (ReplayReport, Invariant) {
    let costs = E500Costs::builtin();
    let mut models: Vec<_> = MODELS.iter().map(|m| (m.build)(&costs).unwrap()).collect();
    let mut inv = Invariant::default();
    let r = replay(open(&minimal()).unwrap(), &mut models, |g, ev, ms| {
        check(&mut inv, g, ev, ms)
    })
    .unwrap();
    (r, inv)
}

/// One replay serves every assertion (it reads 25.5 M records).
#[test]
fn committed_trace_replays_exactly_and_every_model_keeps_the_translation_invariant() {
    let (r, inv) = replay_all();

    // The replayed guest TLB gives every recorded kernel access its recorded address.
    let d = &r.driver;
    assert_eq!(d.accesses_checked, 24_506_821);
    assert_eq!((d.accesses_unmapped, d.accesses_mismatched), (0, 0));
    assert_eq!(d.tlbwe_rejected, 0);
    assert_eq!(d.pid_inferred, 261);
    assert_eq!(r.insns, (5_620_868, 203_276_920));

    // The translation invariant, under every registered model.
    assert!(inv.violations.is_empty(), "{:#?}", inv.violations);
    assert_eq!(inv.data_checked, 24_506_821);
    assert!(inv.fetch_checked > 24_000_000, "{inv:?}");

    let by_name = |n: &str| &r.total[r.model_names.iter().position(|m| m == n).unwrap()];
    // bare: nothing exits.
    assert_eq!(by_name("bare").exits.total(), 0);
    // kvm: one exit per recorded privileged instruction, by class (trace info's totals;
    // wrtee counts wrtee and wrteei, rfi counts rfi and rfci/rfmci/rfdi).
    for name in ["kvm", "kvm-huge"] {
        let k = &by_name(name).exits;
        assert_eq!(k.get(E500Exit::Mfmsr), 104_879);
        assert_eq!(k.get(E500Exit::Mtmsr), 6_476);
        assert_eq!(k.get(E500Exit::Wrtee), 100_795 + 211_456);
        assert_eq!(k.get(E500Exit::Rfi), 43_720);
        assert_eq!(k.get(E500Exit::Mfspr), 292_216);
        assert_eq!(k.get(E500Exit::Mtspr), 197_856);
        assert_eq!(k.get(E500Exit::Tlbwe), 24_151);
        assert_eq!(k.get(E500Exit::Tlbsx), 2_616);
        assert_eq!(k.get(E500Exit::Syscall), 14_333);
        // Guest TLB misses: the hardware-raised DTLB and ITLB exceptions.
        assert_eq!(k.get(E500Exit::GuestTlbMiss), 16_920 + 9_456);
    }
    // Huge-page backing shadows the kernel's 256 MiB entry with one host TLB1 entry; 4 KiB
    // backing needs a host TLB0 entry per kernel page touched, and misses far more.
    let small = by_name("kvm").exits.get(E500Exit::HostTlbMiss);
    let huge = by_name("kvm-huge").exits.get(E500Exit::HostTlbMiss);
    assert!(small > 50 * huge, "kvm {small} vs kvm-huge {huge}");

    // Segments: boot, the 20 phases, between; their instructions add up to the run's.
    assert_eq!(r.segments.len(), 22);
    assert_eq!(r.segments[0].name, "boot");
    assert_eq!(r.segments[0].kernel_insns, 147_084_606);
    let sum: u64 = r.segments.iter().map(|s| s.kernel_insns).sum();
    assert_eq!(sum, 203_276_920);
    for (i, name) in r.model_names.iter().enumerate() {
        let exits: u64 = r.segments.iter().map(|s| s.models[i].exits.total()).sum();
        assert_eq!(exits, r.total[i].exits.total(), "{name}");
    }
    let null = r
        .segments
        .iter()
        .find(|s| s.name == "null_syscall")
        .unwrap();
    assert_eq!(null.ops, 2000);
    let kvm = r.model_names.iter().position(|m| m == "kvm").unwrap();
    assert_eq!(null.models[kvm].exits.get(E500Exit::Syscall), 2000);
}
