//! Linux's paravirtual patching and LABT replayed over the committed e500 guest trace:
//! exact exit counts by reason, and what tracing costs with and without adaptive resizing.

use std::path::PathBuf;
use vmlab_core::cost::e500::E500Costs;
use vmlab_core::hv::e500::registry;
use vmlab_core::hv::e500::replay::{replay, ReplayReport};
use vmlab_core::hv::e500::{E500Exit, HvModel};
use vmlab_core::trace::e500::open;

/// The minimal guest's trace: these counts are pinned on it.
fn minimal() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(vmlab_core::lab::e500::MINIMAL_TRACE)
}

fn run(mut models: Vec<Box<dyn HvModel>>) -> ReplayReport {
    replay(open(&minimal()).unwrap(), &mut models, |_, _, _| {}).unwrap()
}

fn by_name(names: &[&str]) -> ReplayReport {
    let costs = E500Costs::builtin();
    run(names
        .iter()
        .map(|n| (registry::find(n).unwrap().build)(&costs).unwrap())
        .collect())
}

/// One replay of pv and the LABT variants serves every assertion.
#[test]
fn pv_and_labt_over_the_committed_trace() {
    let r = by_name(&["pv", "labt", "labt-resize", "labt-avoid", "labt-all"]);
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
    // Without resizing the kernel's one 256 MiB entry is execute-only from the first
    // rewrite on: every later kernel data access traps.
    assert_eq!(labt.tracing_faults, 56_829_677, "{}", show("labt"));
    assert_eq!(labt.exits.get(E500Exit::Tracing), labt.tracing_faults);
    // Resizing leaves the 256 KiB pieces around sites execute-only.
    let resize = get("labt-resize");
    assert_eq!(resize.tracing_faults, 1_471_764, "{}", show("labt-resize"));
    assert_eq!(
        (resize.splits, resize.merges),
        (6, 2),
        "{}",
        show("labt-resize")
    );
    let avoid = get("labt-avoid");
    assert_eq!(avoid.tracing_faults, 25_150_900, "{}", show("labt-avoid"));
    let all = get("labt-all");
    assert_eq!(all.tracing_faults, 137_451, "{}", show("labt-all"));
    // Resizing costs host TLB misses: the pieces share the free TLB1 slots. (Every guest
    // tlbivax and MMUCSR0 write flushes the shadows, as kvmppc_core_flush_tlb does, even
    // when no guest entry goes.)
    assert_eq!(labt.exits.get(E500Exit::HostTlbMiss), 1_120);
    assert_eq!(
        resize.exits.get(E500Exit::HostTlbMiss),
        9_393,
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
