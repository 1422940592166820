//! The committed e500 guest trace (guests/e500/traces/): read whole and checked, with its
//! counts pinned, so a change to the reader, the classifier or the trace shows here.

use std::path::{Path, PathBuf};
use vmlab_core::trace::e500::open;
use vmlab_core::trace::e500::summary::Summary;

/// The trace at `path` read whole, every record checked.
fn summary(path: &Path) -> Summary {
    let reader = open(path).unwrap_or_else(|e| panic!("{} opens: {e}", path.display()));
    Summary::read(reader).unwrap_or_else(|e| panic!("{} reads and checks: {e}", path.display()))
}

/// The minimal guest's trace: these counts are pinned on it.
fn minimal() -> PathBuf {
    vmlab_core::lab::e500::minimal_trace().expect("the repository has the minimal trace")
}

#[test]
fn committed_trace_counts_are_pinned() {
    let s = summary(&minimal());
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

/// The busybox system's trace, `labt`'s default.
fn busybox() -> PathBuf {
    vmlab_core::lab::e500::committed_trace().expect("the repository has the busybox trace")
}

#[test]
fn busybox_trace_counts_are_pinned() {
    let s = summary(&busybox());
    assert_eq!(s.records, 159_712_929);
    assert_eq!(s.header.phases().len(), 20);
    let rows = s.reports();
    let row = |name: &str| rows.iter().find(|r| r.phase == name).unwrap();

    let total = row("total");
    assert_eq!(
        (total.user_insns, total.kernel_insns),
        (1_503_793_205, 743_044_452)
    );
    // The boot is a system's: init, the rc scripts and their programs run in user mode (the
    // checksums of the data file system most), and it ends at the login shell's marker.
    let boot = row("boot");
    assert_eq!(
        (boot.user_insns, boot.kernel_insns),
        (1_457_284_630, 565_318_436)
    );
    assert_eq!(boot.privileged, 3_085_632);
    assert_eq!((boot.tlb0_writes, boot.tlb1_writes), (50_539, 23));
    assert_eq!(boot.hardware_exceptions, 136_700);
    assert_eq!(boot.user_syscalls, 73_769);

    // The benchmarks keep their operations: a null system call is one sc and one rfi (seven
    // more rfi return from TLB misses over the 2000), echo_spawn 50 dynamically linked spawns.
    let null = row("null_syscall");
    assert_eq!((null.ops, null.user_syscalls), (2000, 2000));
    assert_eq!(null.privileged_by_class["rfi"], 2007);
    let echo = row("echo_spawn");
    assert_eq!(echo.ops, 50);
    assert_eq!(echo.kernel_insns, 63_511_781);
}

/// The replay driver's guest TLB translates every recorded kernel access of the busybox trace
/// to its recorded guest-physical address (`bare` alone: the driver is the same for every
/// model).
#[test]
fn busybox_trace_replays_with_every_access_mapped() {
    use vmlab_core::cost::e500::E500Costs;
    use vmlab_core::hv::e500::registry;
    use vmlab_core::hv::e500::replay::replay;
    let host = E500Costs::builtin().host().unwrap();
    let mut models = vec![(registry::find("bare").unwrap().build)(&host)];
    let r = replay(open(&busybox()).unwrap(), &mut models, |_, _, _| {}).unwrap();
    let d = &r.driver;
    assert_eq!(
        (d.accesses_unmapped, d.accesses_mismatched),
        (0, 0),
        "{d:?}"
    );
    assert_eq!(d.tlbwe_rejected, 0, "{d:?}");
    assert_eq!(d.accesses_checked, 153_311_765, "{d:?}");
}
