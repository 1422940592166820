//! `vmlab record` and the replay of what it records, on real programs: a C program written for
//! the purpose (tests/programs/touch_fork.c) whose references to its own region are known
//! exactly, a shell pipeline that forks and execs, and the bad inputs. Needs qemu-user and a C
//! compiler (`.ci/run` installs them; README, "Two commands").

mod common;

use common::{expect_usage_error, expect_usage_error_env, vmlab};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use vmlab_core::trace::x86::{open, read_trailer, Event};

/// touch_fork's region: 64 pages at this address.
const REGION: u64 = 0x2000_0000_0000;
const PAGE: u64 = 4096;

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vmlab-record-tests");
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir.join(name)
}

fn require_tools() {
    for tool in ["qemu-x86_64", "cc"] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "{tool} is needed by the recorder tests: apt-get install qemu-user gcc"
        );
    }
}

/// tests/programs/NAME.c, compiled.
fn program(name: &str) -> PathBuf {
    require_tools();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/programs/{name}.c"));
    let bin = scratch(name);
    let status = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed on {}", src.display());
    bin
}

/// Records `args` into `name`, expecting success; returns the trace's path.
fn record(name: &str, args: &[&str]) -> PathBuf {
    let out = scratch(name);
    let mut all = vec!["record", "-o", out.to_str().unwrap(), "--"];
    all.extend_from_slice(args);
    let result = vmlab(&all);
    assert_eq!(
        result.code,
        Some(0),
        "vmlab {all:?} failed:\n{}",
        result.stderr
    );
    assert!(
        result.stderr.contains("exited with status 0 (complete)"),
        "{}",
        result.stderr
    );
    out
}

/// Per recorded pid: (loads, stores) of touch_fork's region.
fn region_refs(trace: &Path) -> Vec<(u64, u64)> {
    let mut reader = open(trace).unwrap();
    let mut per_pid: Vec<(u64, u64)> = Vec::new();
    let mut pid = 0usize;
    while let Some(e) = reader.next_event().unwrap() {
        match e {
            Event::Switch { pid: p, .. } => pid = p as usize,
            Event::Ref { addr, write, .. } if (REGION..REGION + 64 * PAGE).contains(&addr) => {
                if per_pid.len() <= pid {
                    per_pid.resize(pid + 1, (0, 0));
                }
                if write {
                    per_pid[pid].1 += 1;
                } else {
                    per_pid[pid].0 += 1;
                }
            }
            _ => {}
        }
    }
    per_pid
}

fn replay_json(trace: &Path, paging: &str) -> Value {
    let file = format!("trace:file={}", trace.display());
    let out = vmlab(&["run", "--json", "-w", &file, "-p", paging]);
    assert_eq!(out.code, Some(0), "replay failed:\n{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn u(run: &Value, key: &str) -> u64 {
    run[key]
        .as_u64()
        .unwrap_or_else(|| panic!("{key} in {run}"))
}

#[test]
fn a_known_program_records_exactly_and_replays_with_its_own_faults() {
    let bin = program("touch_fork");
    let bin = bin.to_str().unwrap();
    let idle = record("touch_fork_00.vmtrace", &[bin, "00", "00"]);
    let busy = record("touch_fork_16.vmtrace", &[bin, "16", "04"]);
    // The recording: the parent stores to 16 pages and loads from 32, the child stores to 4.
    assert_eq!(region_refs(&busy), vec![(32, 16), (0, 4)]);
    assert_eq!(region_refs(&idle), vec![(32, 0)]);
    let trailer = read_trailer(&busy).unwrap();
    assert!(trailer.complete);
    assert_eq!(trailer.totals.processes, 2);
    assert_eq!(trailer.totals.events.forks, 1);
    assert_eq!(trailer.totals.events.exits, 2);

    let schemes = "native,nested,shadow,pv,tpt,tpt-prototype";
    let (busy_report, idle_report) = (replay_json(&busy, schemes), replay_json(&idle, schemes));
    let mut faults = Vec::new();
    for (b, i) in busy_report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(idle_report["runs"].as_array().unwrap())
    {
        // Every reference of the recording is replayed, with its instructions.
        assert_eq!(u(b, "accesses_total"), trailer.totals.events.refs);
        assert_eq!(u(b, "accesses_simulated"), trailer.totals.events.refs);
        assert_eq!(u(b, "forks"), 1);
        // The region's faults, differentially: the idle run read-faults all 32 lower pages;
        // the busy one write-faults 16, read-faults the other 16, and the child's 4 writes to
        // shared pages are copy-on-write faults.
        assert_eq!(
            u(b, "page_faults") - u(i, "page_faults"),
            4,
            "{}",
            b["paging"]
        );
        assert_eq!(
            u(b, "cow_faults") - u(i, "cow_faults"),
            4,
            "{}",
            b["paging"]
        );
        faults.push((u(b, "page_faults"), u(b, "cow_faults")));
    }
    // The guest is the same under every scheme.
    assert!(faults.windows(2).all(|w| w[0] == w[1]), "{faults:?}");
}

#[test]
fn a_shell_pipeline_records_every_process_and_replays_under_every_scheme() {
    require_tools();
    let input = scratch("numbers.txt");
    let text: String = (0..3000).map(|i| format!("{}\n", i % 37)).collect();
    std::fs::write(&input, text).unwrap();
    let script = format!("sort {} | uniq -c | head -3", input.display());
    let trace = record("pipeline.vmtrace", &["sh", "-c", &script]);
    let trailer = read_trailer(&trace).unwrap();
    // sh, the subshell forks for sort, uniq and head, each exec'd.
    assert!(trailer.totals.processes >= 4, "{:?}", trailer.totals);
    assert!(trailer.totals.events.execs >= 3, "{:?}", trailer.totals);
    let info = vmlab(&["trace", "info", trace.to_str().unwrap(), "--json"]);
    assert_eq!(info.code, Some(0), "{}", info.stderr);
    let report = replay_json(&trace, "native,nested,shadow,pv,tpt,tpt-prototype");
    // The provenance names the recording by its contents and carries its header.
    let input = &report["provenance"]["inputs"][0];
    assert_eq!(input["bytes"], std::fs::metadata(&trace).unwrap().len());
    assert!(input["fingerprint"]
        .as_str()
        .unwrap()
        .starts_with("fnv1a64:"));
    assert!(
        input["header"]["program"].as_str().unwrap().ends_with("sh"),
        "{input}"
    );
    assert_eq!(input["header"]["args"][0], "-c");
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(u(run, "accesses_total"), trailer.totals.events.refs);
        assert_eq!(u(run, "forks"), trailer.totals.events.forks);
    }
}

#[test]
fn a_posix_spawn_child_is_a_process_of_its_own_and_its_program_is_recorded() {
    let bin = program("spawn");
    let trace = record("spawn.vmtrace", &[bin.to_str().unwrap()]);
    let trailer = read_trailer(&trace).unwrap();
    let t = trailer.totals;
    // The spawning program and echo, exec'd in the child; both exit.
    assert_eq!(
        (t.processes, t.events.forks, t.events.execs),
        (2, 1, 1),
        "{t:?}"
    );
    assert_eq!(t.events.exits, 2, "{t:?}");
    let mut reader = open(&trace).unwrap();
    let mut execs = Vec::new();
    while let Some(e) = reader.next_event().unwrap() {
        if let Event::Exec { path } = e {
            execs.push(path);
        }
    }
    assert_eq!(execs.len(), 1);
    assert!(execs[0].ends_with("/echo"), "{execs:?}");
    let report = replay_json(&trace, "native,shadow");
    for run in report["runs"].as_array().unwrap() {
        assert_eq!(u(run, "forks"), 1);
        assert_eq!(u(&run["os"], "execs"), 1);
    }
}

#[test]
fn a_script_records_under_its_interpreter() {
    require_tools();
    let script = scratch("count.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\ni=0\nwhile [ $i -lt \"$1\" ]; do i=$((i + 1)); done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let trace = record("script.vmtrace", &[script.to_str().unwrap(), "200"]);
    let trailer = read_trailer(&trace).unwrap();
    assert_eq!(trailer.totals.processes, 1, "{:?}", trailer.totals);
    assert!(trailer.totals.events.refs > 10_000, "{:?}", trailer.totals);
}

#[test]
fn bad_input_is_one_line_and_status_2() {
    let out = scratch("never.vmtrace");
    let out = out.to_str().unwrap();
    expect_usage_error_env(
        &["record", "-o", out, "--", "true"],
        &[("VMLAB_QEMU", "/nonexistent/qemu-x86_64")],
        &["not found", "apt-get install qemu-user"],
    );
    expect_usage_error_env(
        &["record", "-o", out, "--", "/nonexistent/program"],
        &[],
        &["/nonexistent/program", "no such executable"],
    );
    expect_usage_error_env(
        &["record", "-o", "/nonexistent/dir/x.vmtrace", "--", "true"],
        &[],
        &["cannot write /nonexistent/dir/x.vmtrace"],
    );
    assert!(
        !Path::new(out).exists(),
        "nothing is left under the output's name"
    );

    // Traces that are not whole: truncated, corrupted, of another version, empty, not a trace.
    require_tools();
    let good = record("good.vmtrace", &["true"]);
    let bytes = std::fs::read(&good).unwrap();
    let variants: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "trace"),
        ("empty", Vec::new(), "trace"),
        ("text", b"hello, world\n".to_vec(), "trace"),
        (
            "version",
            {
                let mut b = bytes.clone();
                b[8] ^= 0x7f;
                b
            },
            "version",
        ),
        (
            "corrupt",
            {
                let mut b = bytes.clone();
                let mid = b.len() / 2;
                b[mid] ^= 0xff;
                b
            },
            "trace",
        ),
    ];
    for (name, content, mention) in variants {
        let path = scratch(&format!("{name}.vmtrace"));
        std::fs::write(&path, content).unwrap();
        let file = format!("trace:file={}", path.display());
        expect_usage_error(&["run", "-w", &file, "-p", "native"], &[mention]);
    }
}

#[test]
fn a_crashing_program_leaves_a_valid_trace_that_says_so() {
    require_tools();
    let src = scratch("crash.c");
    std::fs::write(&src, "int main(void) { volatile int *p = 0; return *p; }\n").unwrap();
    let bin = scratch("crash");
    assert!(Command::new("cc")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap()
        .success());
    let out = scratch("crash.vmtrace");
    let result = vmlab(&["record", "-o", out.to_str().unwrap(), bin.to_str().unwrap()]);
    assert_eq!(result.code, Some(0), "{}", result.stderr);
    assert!(
        result.stderr.contains("killed by signal 11"),
        "{}",
        result.stderr
    );
    let trailer = read_trailer(&out).unwrap();
    assert!(!trailer.complete);
    assert!(trailer.end.contains("signal 11"), "{}", trailer.end);
    assert!(trailer.totals.events.refs > 0);
    // It replays up to the crash.
    let report = replay_json(&out, "native");
    assert_eq!(
        u(&report["runs"][0], "accesses_total"),
        trailer.totals.events.refs
    );
}

/// A sampled recording of a program that changes its page tables in every way the model
/// follows (faults, copy-on-write after fork, MADV_DONTNEED, munmap and mmap again, mprotect,
/// brk, a thread) replays with exactly the full recording's faults and table pages under each
/// scheme, measuring only its windows; the references it did not write still count.
#[test]
fn a_sampled_recording_keeps_the_page_tables_of_the_full_one() {
    let bin = program("churn");
    let bin = bin.to_str().unwrap();
    let full = record("churn-full.vmtrace", &[bin, "6"]);
    let sampled = scratch("churn-sampled.vmtrace");
    let out = vmlab(&[
        "record",
        "--sample",
        "20K:2K:5K",
        "-o",
        sampled.to_str().unwrap(),
        "--",
        bin,
        "6",
    ]);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        out.stderr.contains("sampled: the last 2000 of every 20000"),
        "{}",
        out.stderr
    );
    let (f, s) = (
        read_trailer(&full).unwrap().totals,
        read_trailer(&sampled).unwrap().totals,
    );
    assert!(s.events.refs * 4 < f.events.refs, "{s:?} vs {f:?}");
    assert!(s.events.windows > 0 && s.events.warms > 0, "{s:?}");
    let info = vmlab(&["trace", "info", sampled.to_str().unwrap()]);
    assert!(
        info.stdout.contains(&format!(
            "sampled: the last 2000 of every 20000 references of each thread in full, after a summary of the 5000 before; {} window events",
            s.events.windows
        )),
        "{}",
        info.stdout
    );
    // The same run: the thread's spinning may add a few references, no more.
    let (a, b) = (f.program_refs() as f64, s.program_refs() as f64);
    assert!((a - b).abs() < a * 0.01, "program references {a} and {b}");
    for paging in ["native", "nested", "shadow"] {
        let (f, s) = (replay_json(&full, paging), replay_json(&sampled, paging));
        let (f, s) = (&f["runs"][0], &s["runs"][0]);
        for key in ["cow_faults", "page_table_pages", "forks"] {
            assert_eq!(u(f, key), u(s, key), "{paging}: {key}");
        }
        // The two recordings are two executions of a threaded program: under heavy load
        // they have been seen to differ by one first touch (1156 and 1155 faults of about
        // 1150), the threads' timing, not the sampling. More than one is the sampling's.
        let (pf, ps) = (u(f, "page_faults"), u(s, "page_faults"));
        assert!(pf.abs_diff(ps) <= 1, "{paging}: page_faults {pf} and {ps}");
        for key in ["munmaps", "madvises", "mprotects", "execs"] {
            assert_eq!(u(&f["os"], key), u(&s["os"], key), "{paging}: {key}");
        }
        assert!(u(f, "cow_faults") > 0 && u(&f["os"], "madvises") > 0, "{f}");
        assert_eq!(u(s, "accesses_total"), s_total(&sampled), "{paging}");
        assert!(
            u(s, "accesses_simulated") * 4 < u(s, "accesses_total"),
            "{s}"
        );
        assert_eq!(s["sample"]["warmup_end"], "recorded", "{s}");
    }
}

fn s_total(trace: &Path) -> u64 {
    read_trailer(trace).unwrap().totals.program_refs()
}

#[test]
fn a_bad_sample_is_one_line_and_status_2() {
    for (sample, says) in [
        ("1M", "PERIOD:WINDOW"),
        ("1M:2M", "at most the period"),
        ("1M:0", "at least 1"),
        ("1M:1K:0", "at least 1 reference"),
        ("1X:1", "K, M or G"),
    ] {
        expect_usage_error(&["record", "--sample", sample, "--", "true"], &[says]);
    }
}
