//! The committed e500 guest trace (guests/e500/traces/): read whole and checked, with its
//! counts pinned, so a change to the reader, the classifier or the trace shows here.

use std::path::PathBuf;
use vmlab_core::trace::e500::open;
use vmlab_core::trace::e500::summary::Summary;

fn committed() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../guests/e500/traces/e500-linux-6.1.trace.zst")
}

#[test]
fn committed_trace_counts_are_pinned() {
    let reader = open(&committed()).expect("the committed trace opens");
    let s = Summary::read(reader).expect("the committed trace reads and checks");
    assert_eq!(s.records, 25_552_570);
    assert_eq!(s.header.kernel_text(), Some((0xC000_0000, 0xC02A_6000)));
    assert_eq!(s.header.phases().len(), 20);
    let rows = s.reports();
    let row = |name: &str| rows.iter().find(|r| r.phase == name).unwrap();

    let total = row("total");
    assert_eq!(
        (total.user_insns, total.kernel_insns),
        (5_620_868, 203_276_920)
    );
    assert_eq!(total.privileged, 984_190);
    assert_eq!(
        (total.distinct_pcs, total.pcs_90, total.pcs_99),
        (914, 131, 335)
    );
    assert_eq!(total.hardware_exceptions, 43_715);
    assert_eq!((total.tlb0_writes, total.tlb1_writes), (24_128, 23));
    assert_eq!(
        (total.kernel_loads, total.kernel_stores),
        (35_288_574, 21_731_710)
    );
    assert_eq!(total.user_syscalls, 14_333);
    assert_eq!(total.exceptions["data_tlb_miss"], 16_920);
    assert_eq!(total.exceptions["instruction_tlb_miss"], 9_456);
    assert_eq!(total.exceptions["data_storage (branch)"], 2_407);

    // The boot: the kernel alone, mapped by TLB1 entries it writes itself (23 tlbwe to TLB1).
    let boot = row("boot");
    assert_eq!((boot.user_insns, boot.kernel_insns), (0, 147_084_606));
    assert_eq!(boot.privileged, 95_704);
    assert_eq!((boot.tlb0_writes, boot.tlb1_writes), (20, 23));
    assert_eq!(boot.hardware_exceptions, 49);

    // null syscall: per write(2) one sc, one system-call exception and ten privileged
    // instructions (wrteei, mfspr, mtspr three each, one rfi), plus one timer tick.
    let null = row("null_syscall");
    assert_eq!(null.ops, 2000);
    assert_eq!(null.user_syscalls, 2000);
    assert_eq!(null.exceptions["system_call"], 2000);
    assert_eq!(null.exceptions["decrementer"], 1);
    assert_eq!(null.hardware_exceptions, 2001);
    assert_eq!(null.privileged, 20_282);
    assert_eq!(null.privileged_by_class["rfi"], 2001);
    assert_eq!(null.privileged_by_class["wrteei"], 6100);
    assert_eq!((null.distinct_pcs, null.pcs_90, null.pcs_99), (72, 10, 12));

    // Each phase's counters add up to the whole run's.
    let parts: u64 = rows[1..].iter().map(|r| r.privileged).sum();
    assert_eq!(parts, total.privileged);
    let parts: u64 = rows[1..].iter().map(|r| r.kernel_loads).sum();
    assert_eq!(parts, total.kernel_loads);
}
