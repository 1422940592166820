//! Replaying ChampSim traces (`champsim:file=PATH`): exact counts on a hand-built trace
//! through the engine, natively and nested, with 4 KiB and 2 MiB guest pages, and with the
//! run capped by `accesses`.

mod common;

use std::io::Write;
use std::path::PathBuf;
use vmlab_core::addr::PageSize;
use vmlab_core::cost::Profile;
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::scheme::Paging;
use vmlab_core::stats::RunReport;

const PAGE: u64 = 4096;
const REGION: u64 = 2 << 20;
/// Where the trace's data lies: 2 MiB region 0x80 and the next one.
const BASE: u64 = 0x80 * REGION;

/// A ChampSim record (ip, then 2 destination and 4 source memory operands; 0 = none).
fn record(ip: u64, loads: [u64; 4], stores: [u64; 2]) -> Vec<u8> {
    let mut r = vec![0u8; 64];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    r[8] = 0; // is_branch
    for (i, a) in stores.iter().enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().enumerate() {
        r[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    r
}

/// Ten instructions: pages 0-2 of the first region and page 0 of the second are touched,
/// pages 0 and 1 twice or more; an operand in the kernel half is dropped.
fn trace() -> Vec<u8> {
    let p = |region: u64, page: u64, byte: u64| BASE + region * REGION + page * PAGE + byte;
    [
        record(0x400000, [0; 4], [0; 2]),
        record(0x400004, [p(0, 0, 8), 0, 0, 0], [p(0, 0, 16), 0]),
        record(0x400008, [0; 4], [0; 2]),
        record(0x40000c, [p(0, 1, 0), p(0, 2, 64), 0, 0], [0; 2]),
        record(0x400010, [0; 4], [0; 2]),
        record(0x400014, [0; 4], [0; 2]),
        record(0x400018, [0, 0, 0, 0xffff_ffff_ff60_0000], [0, p(1, 0, 0)]),
        record(0x40001c, [p(0, 1, 8), 0, 0, 0], [p(0, 0, 24), 0]),
        record(0x400020, [0; 4], [0; 2]),
        record(0x400024, [0; 4], [0; 2]),
    ]
    .concat()
}

const ACCESSES: u64 = 7;
const INSTRUCTIONS: u64 = 10;
const PAGES_TOUCHED: u64 = 4;

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("vmlab-champsim-{name}-{}", std::process::id()));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut w =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6)).unwrap();
    w.write_all(bytes).unwrap();
    w.finish().unwrap()
}

fn run(spec: &str, paging: Paging, guest_pages: PageSize, accesses: u64) -> RunReport {
    let config = RunConfig {
        guest_pages,
        accesses,
        ..common::whole_run(spec, paging)
    };
    engine::run(&config, &mut |_| std::ops::ControlFlow::Continue(())).unwrap()
}

#[test]
fn a_hand_built_champsim_trace_replays_with_exact_counts_native_and_nested() {
    let raw = write("raw", &trace());
    let compressed = write("xz", &xz(&trace()));
    let ipc = Profile::builtin("skylake").unwrap().core.ipc;
    let mut reports = Vec::new();
    for path in [&raw, &compressed] {
        let spec = format!("champsim:file={}", path.display());
        for paging in [Paging::Native, Paging::Nested] {
            let report = run(&spec, paging, PageSize::Size4K, 0);
            assert_eq!(report.accesses_total, ACCESSES, "{paging:?}");
            assert_eq!(report.accesses_simulated, ACCESSES, "{paging:?}");
            // Each page demand-faults once, on its first touch; nothing is shared.
            assert_eq!(report.page_faults, PAGES_TOUCHED, "{paging:?}");
            assert_eq!(report.os.page_faults, PAGES_TOUCHED, "{paging:?}");
            assert_eq!(report.os.huge_page_faults, 0, "{paging:?}");
            assert_eq!(report.cow_faults, 0, "{paging:?}");
            assert_eq!(report.os.forks + report.os.exits + report.os.munmaps, 0);
            // Compute is one instruction per record, through the profile's IPC.
            let compute = report.cycles_breakdown.compute;
            assert!(
                (compute * ipc - INSTRUCTIONS as f64).abs() < 1e-6,
                "{paging:?}: {compute} cycles of compute for {INSTRUCTIONS} instructions"
            );
            reports.push((paging, report.page_faults, report.os.kernel_entries));
        }
    }
    // The compressed and the raw trace are the same run.
    assert_eq!(reports[0], reports[2]);
    assert_eq!(reports[1], reports[3]);
    std::fs::remove_file(raw).unwrap();
    std::fs::remove_file(compressed).unwrap();
}

#[test]
fn with_2m_guest_pages_each_touched_region_faults_once() {
    let path = write("thp", &trace());
    let spec = format!("champsim:file={}", path.display());
    for paging in [Paging::Native, Paging::Nested] {
        let report = run(&spec, paging, PageSize::Size2M, 0);
        assert_eq!(report.accesses_simulated, ACCESSES, "{paging:?}");
        // Two regions, each mapped whole on first touch: one 2 MiB fault each.
        assert_eq!(report.os.huge_page_faults, 2, "{paging:?}");
        assert_eq!(report.page_faults, 2, "{paging:?}");
    }
    std::fs::remove_file(path).unwrap();
}

#[test]
fn accesses_caps_the_replay() {
    let path = write("cap", &trace());
    let spec = format!("champsim:file={}", path.display());
    let report = run(&spec, Paging::Native, PageSize::Size4K, 3);
    assert_eq!(report.accesses_total, ACCESSES);
    assert_eq!(report.accesses_simulated, 3);
    // The first three accesses touch pages 0, 0 and 1.
    assert_eq!(report.page_faults, 2);
    std::fs::remove_file(path).unwrap();
}
