//! `vmlab reproduce labt` on a small e500 trace built here: the files it writes, the JSON
//! rows' fields and counts, pricing a saved report again, and its errors.

mod common;

use common::{vmlab, vmlab_ok};
use std::path::PathBuf;

/// Phases of the small trace: (id, name, operations).
const PHASES: [(u16, &str, u32); 2] = [(1, "null_syscall", 40), (2, "devices", 1)];

/// The small e500 trace of these tests and the Python package's, committed as
/// tests/data/labt-small.trace (the recorded guest takes minutes to replay, and its counts
/// are pinned by vmlab-core's tests).
fn small_trace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/labt-small.trace")
}

/// What tests/data/labt-small.trace holds, written here: a boot that maps the kernel with a
/// TLB1 `tlbwe`, the serial port's page with a TLB0 one (cache-inhibited, as ioremap maps
/// it) and touches RAM, then `null_syscall` (40 system calls, each `sc`, the exception and
/// an `rfi`) and `devices` (300 reads of a serial port's register).
fn small_trace_bytes() -> Vec<u8> {
    use vmlab_core::trace::e500::{Event, ExceptionKind, Header, Record, Writer};
    let phases: String = PHASES
        .iter()
        .map(|(id, name, ops)| format!("{id}\t{name}\t{ops}\n"))
        .collect();
    let header = Header {
        meta: "format=vmlab e500 trace v1\nsource=vmlab-cli tests\n".into(),
        system_map: "c0000000 T _stext\nc0400000 T _etext\n".into(),
        phases_text: phases,
    };
    let ev = |user, kernel, record| Event {
        user_insns: user,
        kernel_insns: kernel,
        record,
    };
    let mem = |pc, vaddr, paddr, count| Record::Mem {
        pc,
        vaddr,
        paddr,
        store: false,
        size_log2: 2,
        count,
    };
    let rfi = |srr1| Record::Priv {
        pc: 0xC000_3000,
        word: 0x4C00_0064,
        values: vec![0x1000_0208, srr1].into(),
        gprs_unknown: false,
    };
    let mut events = vec![
        // tlbwe: TLB1 entry 1, 256 MiB at 0xC0000000 -> 0, supervisor RWX.
        ev(
            0,
            120,
            Record::Priv {
                pc: 0xC000_0010,
                word: 0x7C00_07A4,
                values: vec![0x1001_0000, 0xC000_0900, 0xC000_0000, 0x15, 0].into(),
                gprs_unknown: false,
            },
        ),
        // tlbwe: TLB0, 4 KiB at 0xD1000000 -> 0xF_E000_4000 (I|G), supervisor RW.
        ev(
            0,
            40,
            Record::Priv {
                pc: 0xC000_0018,
                word: 0x7C00_07A4,
                values: vec![0, 0x8000_0100, 0xD100_000A, 0xE000_4005, 0xF].into(),
                gprs_unknown: false,
            },
        ),
        ev(0, 5_000, mem(0xC000_0014, 0xC010_0000, 0x10_0000, 64)),
        ev(0, 1, Record::BootEnd { pc: 0x1000_0100 }),
        ev(10, 0, Record::Marker { id: 1 }),
    ];
    for _ in 0..40 {
        events.push(ev(
            5,
            0,
            Record::UserSyscall {
                pc: 0x1000_0200,
                number: 20,
            },
        ));
        events.push(ev(
            0,
            1,
            Record::Exception {
                kind: ExceptionKind::SYSCALL,
                by_branch: false,
                vector: 0xC000_2100,
                srr0: 0x1000_0204,
                srr1: 0x2_D000,
                dear: 0,
                esr: 0,
            },
        ));
        events.push(ev(0, 150, rfi(0x2_D000)));
    }
    events.push(ev(3, 0, Record::Marker { id: 0x8001 }));
    events.push(ev(0, 10, Record::Marker { id: 2 }));
    // The serial port's status register, 300 reads (QEMU emulates it).
    events.push(ev(
        0,
        900,
        mem(0xC000_0020, 0xD100_0505, 0xF_E000_4505, 300),
    ));
    events.push(ev(0, 10, Record::Marker { id: 0x8002 }));
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    for e in &events {
        w.write(e).unwrap();
    }
    w.finish().unwrap()
}

/// The committed small trace is what [`small_trace_bytes`] writes (VMLAB_UPDATE_GOLDEN=1
/// rewrites it after a deliberate change).
#[test]
fn the_small_trace_is_what_its_generator_writes() {
    let want = small_trace_bytes();
    if std::env::var_os("VMLAB_UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(small_trace().parent().unwrap()).unwrap();
        std::fs::write(small_trace(), &want).unwrap();
    }
    let got = std::fs::read(small_trace()).expect("tests/data/labt-small.trace exists");
    assert!(
        got == want,
        "tests/data/labt-small.trace differs from its generator"
    );
}

fn reproduce_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["reproduce", "labt", "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&vmlab_ok(&all)).expect("--json prints one value")
}

#[test]
fn reproduce_labt_writes_rows_per_benchmark_and_config() {
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("labt-test");
    let trace = small_trace();
    let json = vmlab_ok(&[
        "reproduce",
        "labt",
        "--json",
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).expect("--json prints one value");
    let rows = v["rows"].as_array().unwrap();
    let configs = v["configs"].as_array().unwrap();
    assert!(configs.iter().any(|c| c == "bare") && configs.iter().any(|c| c == "kvm"));
    // boot and the trace's 2 benchmarks, under every configuration.
    assert_eq!(rows.len(), 3 * configs.len());
    let row = |b: &str, c: &str| {
        rows.iter()
            .find(|r| r["benchmark"] == b && r["config"] == c)
            .unwrap_or_else(|| panic!("no row {b}/{c}"))
    };
    for field in [
        "benchmark",
        "config",
        "seconds",
        "ms_per_op",
        "exits",
        "exits_by_reason",
        "work",
        "added_insns",
        "added_cycles",
        "tracing_faults",
        "slowdown",
        "splits",
        "merges",
    ] {
        assert!(rows[0].get(field).is_some(), "rows lack {field}");
    }
    // bare is the baseline: no exits, slowdown 1.
    let bare = row("null_syscall", "bare");
    assert_eq!(bare["exits"], 0);
    assert_eq!(bare["slowdown"], 1.0);
    // kvm: each of the 40 system calls exits once as a system call, each rfi once.
    let kvm = row("null_syscall", "kvm");
    assert_eq!(kvm["exits_by_reason"]["syscall"], 40);
    assert_eq!(kvm["exits_by_reason"]["rfi"], 40);
    assert_eq!(kvm["ops"], 40);
    assert!(kvm["slowdown"].as_f64().unwrap() > 1.0);
    // Every device read exits and goes to QEMU, under every hypervisor.
    for c in configs.iter().filter(|c| *c != "bare") {
        let d = row("devices", c.as_str().unwrap());
        assert_eq!(d["exits_by_reason"]["mmio"], 300, "{c}");
        assert_eq!(d["work"]["mmio.user"], 300, "{c}");
    }
    // The PC distributions (boot, whole run) account for every exit.
    let dists = v["pc_distribution"].as_array().unwrap();
    assert_eq!(dists.len(), 2 * configs.len());
    for d in dists {
        let bands = d["bands"].as_array().unwrap();
        assert_eq!(bands.len(), 6);
        let sum: u64 = bands.iter().map(|b| b["exits"].as_u64().unwrap()).sum();
        assert_eq!(sum, d["exits"].as_u64().unwrap(), "{}", d["config"]);
    }
    // The files: CSV with a line per row, JSON equal to stdout, a well-formed SVG.
    let csv = std::fs::read_to_string(out.join("labt.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + rows.len());
    assert!(csv.starts_with("benchmark,config,ops,"));
    assert_eq!(
        std::fs::read_to_string(out.join("labt.json")).unwrap(),
        json
    );
    let svg = std::fs::read_to_string(out.join("labt.svg")).unwrap();
    roxmltree::Document::parse(&svg).expect("the SVG is well-formed XML");
    assert!(svg.contains("data-series=\"kvm\""));
    // The replay check: every kernel access record translated as recorded.
    let check = &v["replay_check"];
    assert_eq!(check["accesses_checked"], 2);
    for field in ["accesses_unmapped", "accesses_mismatched", "tlbwe_rejected"] {
        assert_eq!(check[field], 0, "{field}");
    }
    let text = vmlab_ok(&[
        "reproduce",
        "labt",
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        text.contains("replay check: 2 of 2 kernel access records translated to their recorded address (0 unmapped, 0 elsewhere), 0 tlbwe rejected; 0 PID writes inferred"),
        "{text}"
    );
}

/// `--reprice` prices a saved report's counts under --set exactly as a replay with --set
/// does, and says what the overrides were.
#[test]
fn repricing_a_saved_report_equals_replaying_with_the_same_costs() {
    let trace = small_trace();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("labt-reprice");
    let saved = dir.join("labt.json");
    let base = reproduce_json(&[
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let set = ["--set", "exits.syscall=1800", "--set", "mmio.user=5000"];
    let (fresh_dir, again_dir) = (dir.join("fresh"), dir.join("again"));
    let mut fresh_args = vec![
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        fresh_dir.to_str().unwrap(),
    ];
    fresh_args.extend_from_slice(&set);
    let fresh = reproduce_json(&fresh_args);
    let mut again_args = vec![
        "--reprice",
        saved.to_str().unwrap(),
        "--out",
        again_dir.to_str().unwrap(),
    ];
    again_args.extend_from_slice(&set);
    let again = reproduce_json(&again_args);
    assert_eq!(fresh["rows"], again["rows"]);
    assert_eq!(fresh["pc_distribution"], again["pc_distribution"]);
    assert_eq!(again["provenance"]["overrides"]["exits.syscall"], "1800");
    assert_eq!(again["provenance"]["profile"]["exits"]["syscall"], 1800);
    // 40 system calls, each at 1800 cycles of its own instead of the profile's.
    let was = base["provenance"]["profile"]["exits"]["syscall"]
        .as_f64()
        .unwrap();
    let cycles = |v: &serde_json::Value| {
        v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["benchmark"] == "null_syscall" && r["config"] == "kvm")
            .unwrap()["added_cycles"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(cycles(&again) - cycles(&base), 40.0 * (1800.0 - was));
}

#[test]
fn reprice_and_set_errors_are_one_line() {
    let trace = small_trace();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("labt-reprice-errors");
    reproduce_json(&[
        "--trace",
        trace.to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    let saved = dir.join("labt.json");
    let not_labt = dir.join("labt.csv");
    for (args, want) in [
        (
            vec![
                "--reprice",
                saved.to_str().unwrap(),
                "--set",
                "hv.host_tlb1_reserved=3",
            ],
            "replay",
        ),
        (
            vec![
                "--reprice",
                saved.to_str().unwrap(),
                "--set",
                "hv.host_huge_page_kib=16384",
            ],
            "replay",
        ),
        (
            vec![
                "--trace",
                trace.to_str().unwrap(),
                "--set",
                "hv.host_huge_page_kib=5000",
            ],
            "not an e500 page size",
        ),
        (
            vec!["--set", "exits.nosuch=3"],
            "unknown key 'exits.nosuch'",
        ),
        (vec!["--set", "exits.mfmsr=fast"], "whole number"),
        (
            vec!["--reprice", not_labt.to_str().unwrap()],
            "not a labt report",
        ),
        (
            vec!["--reprice", "/no/such/labt.json"],
            "/no/such/labt.json",
        ),
    ] {
        let mut all = vec!["reproduce", "labt"];
        all.extend_from_slice(&args);
        let out = vmlab(&all);
        assert_eq!(out.code, Some(2), "{args:?}: {}", out.stderr);
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains(want), "{args:?}: {}", out.stderr);
    }
    let out = vmlab(&["reproduce", "tpt", "--reprice", saved.to_str().unwrap()]);
    assert_eq!(out.code, Some(2));
    assert!(out.stderr.contains("--reprice are for"), "{}", out.stderr);
}

#[test]
fn reproduce_labt_names_a_missing_trace_in_one_line() {
    let out = vmlab(&["reproduce", "labt", "--trace", "/no/such/trace.zst"]);
    assert_eq!(out.code, Some(2));
    let err = &out.stderr;
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/no/such/trace.zst"), "{err}");
}

#[test]
fn reproduce_lists_labt() {
    let one = vmlab_ok(&["reproduce", "labt", "--list"]);
    assert_eq!(one.lines().count(), 2, "{one}");
    assert!(one.contains("\n  labt ") && one.contains("e500"), "{one}");
    let help = vmlab_ok(&["reproduce", "--help"]);
    assert!(help.contains("labt") && help.contains("--trace"), "{help}");
}

#[test]
fn trace_is_refused_outside_labt() {
    let out = vmlab(&["reproduce", "tpt", "--quick", "--trace", "x.zst"]);
    assert_eq!(out.code, Some(2));
    assert!(
        out.stderr.contains("--trace and --reprice are for"),
        "{}",
        out.stderr
    );
}
