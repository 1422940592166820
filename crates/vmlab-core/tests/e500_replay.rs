//! Replaying the committed e500 guest trace through every registered hypervisor model, once
//! for the whole file (it reads 25.5 M records): the replayed guest TLB reproduces every
//! recorded translation, the exits follow the recorded privileged instructions, the
//! translation invariant holds for every model, Linux's paravirtual patching and LABT give
//! exact exit counts, and pricing the counts again equals pricing a replay.

use std::path::PathBuf;
use std::sync::OnceLock;
use vmlab_core::cost::e500::E500Costs;
use vmlab_core::hv::e500::registry::MODELS;
use vmlab_core::hv::e500::replay::{replay, ReplayReport};
use vmlab_core::hv::e500::{E500Exit, E500Work, GuestEvent, GuestState, HvModel};
use vmlab_core::hw::e500::Access;
use vmlab_core::lab::e500::{report, LabtReport};
use vmlab_core::trace::e500::open;

/// The minimal guest's trace: these counts are pinned on it.
fn minimal() -> PathBuf {
    vmlab_core::lab::e500::minimal_trace().expect("the repository has the minimal trace")
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

/// The one replay of the committed trace every test here reads.
fn replayed() -> &'static (ReplayReport, Invariant) {
    static REPLAY: OnceLock<(ReplayReport, Invariant)> = OnceLock::new();
    REPLAY.get_or_init(|| {
        let host = E500Costs::builtin().host().unwrap();
        let mut models: Vec<_> = MODELS.iter().map(|m| (m.build)(&host)).collect();
        let mut inv = Invariant::default();
        let r = replay(open(&minimal()).unwrap(), &mut models, |g, ev, ms| {
            check(&mut inv, g, ev, ms)
        })
        .unwrap();
        (r, inv)
    })
}

#[test]
fn committed_trace_replays_exactly_and_every_model_keeps_the_translation_invariant() {
    let (r, inv) = replayed();

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
    // Huge-page backing shadows the kernel's 256 MiB entry in 4 MiB host TLB1 entries (the
    // host's huge page) in the 12 free slots; 4 KiB backing needs a host TLB0 entry per
    // kernel page touched, and misses far more.
    let small = by_name("kvm").exits.get(E500Exit::HostTlbMiss);
    let huge = by_name("kvm-huge").exits.get(E500Exit::HostTlbMiss);
    assert_eq!((small, huge), (118_763, 3_313));
    for (name, tlbil_all) in [("kvm", 5), ("kvm-huge", 1)] {
        let w = &by_name(name).work;
        // A tlbwe over a guest TLB1 entry shadowed in 4 KiB pages drops every shadow.
        assert_eq!(w.get(E500Work::TlbilAll), tlbil_all, "{name}");
        // The host CPU's 255 shadow IDs run out 10 times (a flush forgets the vcpu's
        // mappings but does not give their IDs back).
        assert_eq!(w.get(E500Work::SidRollover), 10, "{name}");
        // The guest's decrementer: 45 DEC writes restart the hrtimer, 43 expiries.
        assert_eq!(w.get(E500Work::DecHrtimer), 45, "{name}");
        assert_eq!(w.get(E500Work::DecTimerFire), 43, "{name}");
    }
    assert_eq!(by_name("kvm").extra.get("shadow_ids"), Some(&2_758));

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

/// Linux's paravirtual patching and LABT: exact exits by reason, tracing faults, resizing.
#[test]
fn pv_and_labt_over_the_committed_trace() {
    let (r, _) = replayed();
    let get = |n: &str| &r.total[r.model_names.iter().position(|m| m == n).unwrap()];
    let show = |n: &str| {
        format!(
            "{n}: {:?} {:?}",
            get(n).exits.nonzero().collect::<Vec<_>>(),
            get(n).extra
        )
    };

    // pv: what Linux's rules leave exiting. rfi, the TLB instructions and the exceptions
    // are kvm's counts; mtspr keeps BUCSR, PID, MMUCSR0 and the timer registers; mfmsr,
    // mfspr and wrtee exit only before kvm_guest_init and outside the patched text.
    let pv = &get("pv").exits;
    let expect = [
        (E500Exit::Mfmsr, 2_700),
        (E500Exit::Mtmsr, 0),
        (E500Exit::Mfspr, 759),
        (E500Exit::Mtspr, 47_226),
        (E500Exit::Wrtee, 5_287),
        (E500Exit::Rfi, 43_720),
        (E500Exit::Tlbwe, 24_151),
        (E500Exit::Syscall, 14_333),
    ];
    for (reason, n) in expect {
        assert_eq!(pv.get(reason), n, "{reason:?}: {}", show("pv"));
    }
    assert_eq!(
        get("pv").extra.get("pending_interrupt_exits"),
        Some(&14),
        "{}",
        show("pv")
    );

    // LABT: each translatable privileged instruction exits once per rewrite; the rest
    // (rfi, TLB instructions, PID/MMUCSR0/timer writes) exits every time.
    let labt = get("labt");
    assert_eq!(labt.extra.get("rewrites"), Some(&868), "{}", show("labt"));
    assert_eq!(labt.exits.get(E500Exit::Rfi), 43_720);
    assert_eq!(labt.exits.get(E500Exit::Mfmsr), 189, "{}", show("labt"));
    // Without resizing the execute-only unit is KVM's shadow: the 4 MiB host page of the
    // kernel's 256 MiB entry that holds a site. From the first rewrite on, every later
    // kernel data access to such a page traps.
    assert_eq!(labt.tracing_faults, 7_380_204, "{}", show("labt"));
    assert_eq!(labt.exits.get(E500Exit::Tracing), labt.tracing_faults);
    // Resizing leaves the 256 KiB pieces around sites execute-only.
    let resize = get("labt-resize");
    assert_eq!(resize.tracing_faults, 1_471_764, "{}", show("labt-resize"));
    assert_eq!(
        (resize.splits, resize.merges),
        (5, 2),
        "{}",
        show("labt-resize")
    );
    let avoid = get("labt-avoid");
    assert_eq!(avoid.tracing_faults, 1_849_140, "{}", show("labt-avoid"));
    let all = get("labt-all");
    assert_eq!(all.tracing_faults, 137_451, "{}", show("labt-all"));
    // Resizing costs host TLB misses: the pieces share the free TLB1 slots. (Every guest
    // tlbivax and MMUCSR0 write flushes the shadows, as kvmppc_core_flush_tlb does, even
    // when no guest entry goes.)
    assert_eq!(labt.exits.get(E500Exit::HostTlbMiss), 3_313);
    assert_eq!(
        resize.exits.get(E500Exit::HostTlbMiss),
        28_717,
        "{}",
        show("labt-resize")
    );
    // The memset poisoning freed init memory undoes the sites in init text.
    assert_eq!(
        labt.extra.get("undone_by_write"),
        Some(&27),
        "{}",
        show("labt")
    );
    // The translation cache window stays unused by the guest.
    for n in ["labt", "labt-resize", "labt-avoid", "labt-all"] {
        assert_eq!(get(n).extra.get("tc_window_accesses"), None, "{n}");
    }
}

/// The labt experiment's rows priced again under changed costs, from the saved JSON, equal
/// the rows of the replay priced under those costs: the models count, and only the profile
/// prices (they are built from the host's sizes alone).
#[test]
fn pricing_a_saved_report_again_equals_pricing_the_replay() {
    let (r, _) = replayed();
    let base = E500Costs::builtin();
    let saved = report(r, &base, "test", "t".into(), String::new()).unwrap();
    let saved = LabtReport::from_json(&saved.to_json()).unwrap();
    let set = |pairs: &[(&str, &str)]| {
        let o: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        base.with_overrides(&o).unwrap()
    };
    for costs in [
        set(&[("exits.mfmsr", "1400"), ("exits.tracing", "3000")]),
        set(&[
            ("hv.page_lookup", "2000"),
            ("mmio.user", "12000"),
            ("core.cpi", "2.5"),
        ]),
        set(&[("labt.translate", "5000"), ("machine.frequency_mhz", "800")]),
    ] {
        let fresh = report(r, &costs, "test", "t".into(), String::new()).unwrap();
        let again = saved.repriced(&costs, "test").unwrap();
        assert_eq!(fresh.rows, again.rows, "{:?}", costs.overrides);
        assert_ne!(
            fresh.rows, saved.rows,
            "{:?} moved nothing",
            costs.overrides
        );
    }
    // A size the models act on needs a replay.
    let err = saved
        .repriced(&set(&[("hv.host_tlb1_reserved", "3")]), "test")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("hv.host_tlb1_reserved") && err.contains("replay"),
        "{err}"
    );
}
