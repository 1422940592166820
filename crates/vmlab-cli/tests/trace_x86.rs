//! `vmlab trace info` on x86 traces written here: finished, unfinished and damaged.

mod common;

use common::{expect_usage_error, vmlab_ok};
use std::path::{Path, PathBuf};
use vmlab_core::trace::x86::{Event, Header, Writer};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmlab-trace-x86-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A program that maps, reads a file, touches a few pages, forks a child that execs and exits.
fn events() -> Vec<Event> {
    let mut v = vec![
        Event::Switch { pid: 0, tid: 0 },
        Event::Map {
            start: 0x40_0000,
            end: 0x40_2000,
            prot: 5,
        },
        Event::CodePage { page: 0x400 },
        Event::Syscall {
            nr: 9,
            args: [0, 8192, 3, 0x22, u64::MAX, 0],
            ret: Some(0x7f00_0000_0000),
        },
        Event::Syscall {
            nr: 0,
            args: [3, 0x7f00_0000_0000, 100, 0, 0, 0],
            ret: Some(100),
        },
        Event::KernelWrite {
            addr: 0x7f00_0000_0000,
            len: 100,
        },
    ];
    for i in 0..1000u64 {
        v.push(Event::Ref {
            addr: 0x7f00_0000_0000 + 8 * i,
            size: 8,
            write: i % 4 == 0,
            insns: 2,
        });
    }
    v.extend([
        Event::Fork { child: 1 },
        Event::Switch { pid: 1, tid: 1 },
        Event::Exec {
            path: "/bin/echo".into(),
        },
        Event::Syscall {
            nr: 231,
            args: [0; 6],
            ret: None,
        },
        Event::Exit { code: 0 },
        Event::Switch { pid: 0, tid: 0 },
        Event::Syscall {
            nr: 231,
            args: [0; 6],
            ret: None,
        },
        Event::Exit { code: 0 },
    ]);
    v
}

fn header() -> Header {
    Header {
        program: "/usr/bin/demo".into(),
        args: vec!["-v".into()],
        cwd: "/tmp".into(),
        recorder: "test".into(),
        interleaving: "by system call".into(),
        ..Header::default()
    }
}

fn write(path: &Path, finish: bool) {
    let mut w = Writer::create(path, &header()).unwrap();
    for e in events() {
        w.push(&e).unwrap();
    }
    if finish {
        w.finish(true, "exited with status 0".into()).unwrap();
    }
}

#[test]
fn info_summarises_an_x86_trace_as_text_and_json() {
    let dir = scratch("info");
    let path = dir.join("demo.x86t");
    write(&path, true);
    let p = path.to_str().unwrap();
    let out = vmlab_ok(&["trace", "info", p]);
    for expected in [
        "x86 trace of /usr/bin/demo -v",
        "ended: exited with status 0 (complete)",
        "2 processes, 2 threads",
        "exit_group",
        "mmap",
        "/bin/echo",
    ] {
        assert!(out.contains(expected), "no {expected:?} in:\n{out}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&vmlab_ok(&["trace", "info", "--json", p])).unwrap();
    let s = &json["summary"];
    assert_eq!(json["format"], "x86");
    assert_eq!(s["totals"]["events"]["refs"], 1000);
    assert_eq!(s["totals"]["stores"], 250);
    assert_eq!(s["syscalls"]["read"], 1);
    assert_eq!(s["syscalls"]["exit_group"], 2);
    assert_eq!(s["data_pages"], 2);
    assert_eq!(s["kernel_written_bytes"], 100);
    assert_eq!(s["trailer"]["totals"], s["totals"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unfinished_x86_trace_is_summarised_and_says_so() {
    let dir = scratch("unfinished");
    let path = dir.join("demo.x86t");
    write(&path, false);
    let out = vmlab_ok(&["trace", "info", path.to_str().unwrap()]);
    assert!(out.contains("UNFINISHED: no trailer"), "{out}");
    assert!(out.contains("1000"), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn damaged_x86_traces_are_one_line_errors() {
    let dir = scratch("damaged");
    let path = dir.join("demo.x86t");
    write(&path, true);
    let bytes = std::fs::read(&path).unwrap();
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let first_chunk = 20 + json_len;
    let flipped = dir.join("flipped.x86t");
    let mut b = bytes.clone();
    b[first_chunk + 40] ^= 0x10;
    std::fs::write(&flipped, &b).unwrap();
    let version = dir.join("version.x86t");
    let mut b = bytes.clone();
    b[8] = 9;
    std::fs::write(&version, &b).unwrap();
    for (path, mention) in [
        (flipped, "chunk 0"),
        (version, "version 9 is not supported"),
    ] {
        expect_usage_error(&["trace", "info", path.to_str().unwrap()], &[mention]);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
