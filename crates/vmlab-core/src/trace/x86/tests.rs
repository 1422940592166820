//! Round trips, damaged files and the compression measurement of the x86 trace format.

use super::format::*;
use super::*;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

/// A file in a fresh directory of the system's temp dir, removed with the directory.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        use std::sync::atomic::{AtomicU64, Ordering};
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "vmlab-x86trace-{}-{}-{name}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn header() -> Header {
    Header {
        program: "/bin/true".into(),
        args: vec!["--version".into()],
        cwd: "/tmp".into(),
        host: Host {
            hostname: "h".into(),
            kernel: "Linux 6.1".into(),
            cpu: "x".into(),
        },
        recorder: "test".into(),
        qemu: "none".into(),
        date: "2025-01-01T00:00:00Z".into(),
        interleaving: "round robin".into(),
        sample: None,
    }
}

fn write(path: &Path, events: &[Event], chunk_target: usize) -> Trailer {
    let mut w = Writer::create(path, &header()).unwrap();
    w.set_chunk_target(chunk_target);
    for e in events {
        w.push(e).unwrap();
    }
    w.finish(true, "exited with status 0".into()).unwrap()
}

/// Every event of a reader, or the first error.
fn read_all(mut r: Reader) -> Result<Vec<Event>, TraceError> {
    let mut v = Vec::new();
    while let Some(e) = r.next_event()? {
        v.push(e);
    }
    Ok(v)
}

/// Events and the error that ended them, if any.
fn read_until_error(mut r: Reader) -> (Vec<Event>, Option<TraceError>) {
    let mut v = Vec::new();
    loop {
        match r.next_event() {
            Ok(Some(e)) => v.push(e),
            Ok(None) => return (v, None),
            Err(e) => return (v, Some(e)),
        }
    }
}

fn every_kind() -> Vec<Event> {
    vec![
        Event::Switch { pid: 0, tid: 0 },
        Event::Map {
            start: 0x40_0000,
            end: 0x40_1000,
            prot: PROT_READ | PROT_EXEC,
        },
        Event::Map {
            start: 0x7fff_0000_0000,
            end: 0x7fff_0001_0000,
            prot: 0,
        },
        Event::CodePage { page: 0x400 },
        Event::Ref {
            addr: 0x7ffc_1234_5678,
            size: 8,
            write: true,
            insns: 3,
        },
        Event::Ref {
            addr: 0x7ffc_1234_5670,
            size: 8,
            write: false,
            insns: 0,
        },
        Event::Ref {
            addr: u64::MAX,
            size: 1,
            write: false,
            insns: u32::MAX,
        },
        Event::Ref {
            addr: 0,
            size: 2,
            write: true,
            insns: 6,
        },
        Event::Ref {
            addr: 0x1000,
            size: 4,
            write: false,
            insns: 5,
        },
        Event::CodePage { page: 0x3ff },
        Event::CodePage {
            page: u64::MAX >> 12,
        },
        Event::Syscall {
            nr: 0,
            args: [3, 0x7ffc_0000_1000, 4096, 0, 0, u64::MAX],
            ret: Some(17),
        },
        Event::KernelWrite {
            addr: 0x7ffc_0000_1000,
            len: 17,
        },
        Event::Syscall {
            nr: 9,
            args: [0; 6],
            ret: Some(-12),
        },
        Event::Syscall {
            nr: u32::MAX,
            args: [1, 2, 3, 4, 5, 6],
            ret: Some(i64::MIN),
        },
        Event::Fork { child: 1 },
        Event::Switch { pid: 1, tid: 1 },
        Event::Exec {
            path: "/usr/bin/éch\u{f8}".into(),
        },
        Event::Exec {
            path: String::new(),
        },
        Event::Map {
            start: u64::MAX,
            end: 3,
            prot: 7,
        },
        Event::Syscall {
            nr: 231,
            args: [0; 6],
            ret: None,
        },
        Event::Exit { code: 0 },
        Event::Switch { pid: 0, tid: 0 },
        Event::Ref {
            addr: 0x7ffc_1234_5668,
            size: 8,
            write: false,
            insns: 2,
        },
        Event::Exit { code: i32::MIN },
        Event::Exit { code: 139 },
        Event::Window {
            open: true,
            skipped: 1 << 40,
            insns: 0,
        },
        Event::Warm { addr: 0x40 },
        Event::Warm {
            addr: u64::MAX - 63,
        },
        Event::Warm { addr: 0 },
        Event::Window {
            open: false,
            skipped: 3,
            insns: 1 << 33,
        },
    ]
}

#[test]
fn every_event_kind_round_trips_with_its_totals() {
    let dir = Scratch::new("kinds");
    let path = dir.path("t.x86t");
    let events = every_kind();
    for target in [CHUNK_TARGET, 1, 7] {
        let trailer = write(&path, &events, target);
        assert!(trailer.complete);
        assert_eq!(trailer.end, "exited with status 0");
        let t = trailer.totals;
        assert_eq!(t.events.total(), events.len() as u64);
        assert_eq!((t.events.refs, t.loads, t.stores), (6, 4, 2));
        assert_eq!(
            t.instructions,
            3 + u64::from(u32::MAX) + 6 + 5 + 2 + (1 << 33)
        );
        assert_eq!((t.events.syscalls, t.events.switches), (4, 3));
        assert_eq!((t.events.windows, t.events.warms), (2, 3));
        assert_eq!(t.unrecorded_refs, (1 << 40) + 3);
        assert_eq!(t.program_refs(), 6 + (1 << 40) + 3);
        assert_eq!((t.processes, t.threads), (2, 2));
        let reader = open(&path).unwrap();
        assert_eq!(reader.header(), &header());
        assert_eq!(reader.trailer(), Some(&trailer));
        assert_eq!(read_all(reader).unwrap(), events);
        assert_eq!(read_trailer(&path).unwrap(), trailer);
    }
}

#[test]
fn events_the_format_cannot_hold_are_refused_and_not_written() {
    let dir = Scratch::new("refused");
    let path = dir.path("t.x86t");
    let mut w = Writer::create(&path, &header()).unwrap();
    let bad = Event::Ref {
        addr: 0,
        size: 16,
        write: false,
        insns: 1,
    };
    assert!(matches!(w.push(&bad), Err(TraceError::InvalidEvent(_))));
    let long = Event::Exec {
        path: "x".repeat(MAX_PATH + 1),
    };
    assert!(matches!(w.push(&long), Err(TraceError::InvalidEvent(_))));
    w.push(&Event::Fork { child: 1 }).unwrap();
    let trailer = w.finish(false, "interrupted (SIGINT)".into()).unwrap();
    assert_eq!(trailer.totals.events.total(), 1);
    assert_eq!(
        read_all(open(&path).unwrap()).unwrap(),
        [Event::Fork { child: 1 }]
    );
}

#[test]
fn a_dropped_writer_leaves_whole_chunks_and_no_trailer() {
    let dir = Scratch::new("dropped");
    let path = dir.path("t.x86t");
    let events = every_kind();
    {
        let mut w = Writer::create(&path, &header()).unwrap();
        w.set_chunk_target(20);
        for e in &events {
            w.push(e).unwrap();
        }
    }
    assert!(matches!(open(&path), Err(TraceError::Truncated(_))));
    let r = open_unfinished(&path).unwrap();
    assert!(r.trailer().is_none());
    let mut r = r;
    let mut got = Vec::new();
    while let Some(e) = r.next_event().unwrap() {
        got.push(e);
    }
    assert_eq!(got, events);
    assert!(r.unfinished().unwrap().contains("no trailer"));
}

/// Offsets where each chunk ends, and the events before each, by walking the chunk headers.
fn chunk_ends(bytes: &[u8]) -> Vec<(usize, usize)> {
    let json = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut at = PREFIX_LEN as usize + json;
    let mut events = 0;
    let mut ends = Vec::new();
    while bytes[at] == 0x01 {
        let field = |i: usize| u32::from_le_bytes(bytes[at + i..at + i + 4].try_into().unwrap());
        events += field(9) as usize;
        at += CHUNK_HEADER_LEN + field(5) as usize;
        ends.push((at, events));
    }
    ends
}

#[test]
fn a_truncated_file_is_an_error_and_yields_its_whole_chunks_first() {
    let dir = Scratch::new("cut");
    let path = dir.path("t.x86t");
    let cut = dir.path("cut.x86t");
    let events: Vec<Event> = every_kind().into_iter().cycle().take(200).collect();
    write(&path, &events, 30);
    let bytes = std::fs::read(&path).unwrap();
    let ends = chunk_ends(&bytes);
    assert!(ends.len() > 10, "{} chunks", ends.len());
    for len in 0..bytes.len() {
        std::fs::write(&cut, &bytes[..len]).unwrap();
        // Without its footer, a finished-file open refuses at once.
        match open(&cut) {
            Err(TraceError::Truncated(at)) => assert_eq!(at, len as u64),
            other => panic!("cut at {len}: {:?}", other.map(|_| ())),
        }
        let data_start =
            PREFIX_LEN as usize + u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let r = match open_unfinished(&cut) {
            Ok(r) => r,
            Err(TraceError::Truncated(_)) if len < data_start => continue,
            Err(e) => panic!("cut at {len}: {e}"),
        };
        let whole = ends.iter().take_while(|(end, _)| *end <= len).last();
        let expected = whole.map_or(0, |(_, n)| *n);
        let got = read_all(r).unwrap_or_else(|e| panic!("cut at {len}: {e}"));
        assert_eq!(got, events[..expected], "cut at {len}");
    }
    std::fs::write(&cut, b"").unwrap();
    assert!(matches!(open(&cut), Err(TraceError::Truncated(0))));
}

#[test]
fn flipped_bytes_are_errors_or_change_nothing() {
    let dir = Scratch::new("flip");
    let path = dir.path("t.x86t");
    let bad = dir.path("bad.x86t");
    let events: Vec<Event> = every_kind().into_iter().cycle().take(100).collect();
    write(&path, &events, 50);
    let bytes = std::fs::read(&path).unwrap();
    // Our CRCs cover everything but the zstd frames' own redundancy: the window descriptor
    // (any window above a chunk's size decodes the same) and the content checksum (which
    // ruzstd does not check; the chunk CRC covers the same bytes).
    let json = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let mut starts = vec![PREFIX_LEN as usize + json];
    starts.extend(chunk_ends(&bytes).iter().map(|(end, _)| *end));
    let ends = chunk_ends(&bytes);
    let redundant = |i: usize| {
        starts.iter().zip(&ends).any(|(start, (end, _))| {
            let frame = start + CHUNK_HEADER_LEN;
            (frame + 4..frame + 6).contains(&i) || (end - 4..*end).contains(&i)
        })
    };
    for i in 0..bytes.len() {
        for bit in [0x01u8, 0x80] {
            let mut b = bytes.clone();
            b[i] ^= bit;
            std::fs::write(&bad, &b).unwrap();
            let Ok(r) = open(&bad) else { continue };
            if let Ok(got) = read_all(r) {
                assert_eq!(got, events, "flip {bit:#x} at {i} changed the events");
                assert!(redundant(i), "flip {bit:#x} at {i} went unnoticed");
            }
        }
    }
}

#[test]
fn foreign_files_and_other_versions_are_named() {
    let dir = Scratch::new("foreign");
    let path = dir.path("t.x86t");
    write(&path, &every_kind(), CHUNK_TARGET);
    let mut bytes = std::fs::read(&path).unwrap();
    let other = dir.path("other");
    bytes[8] = 3;
    std::fs::write(&other, &bytes).unwrap();
    assert!(matches!(open(&other), Err(TraceError::Version(3))));
    bytes[8] = 0;
    std::fs::write(&other, &bytes).unwrap();
    assert!(matches!(open(&other), Err(TraceError::Version(0))));
    // Version 1 had no sampling events; its files read as they did.
    bytes[8] = 1;
    std::fs::write(&other, &bytes).unwrap();
    assert_eq!(read_all(open(&other).unwrap()).unwrap(), every_kind());
    std::fs::write(&other, b"hello, world").unwrap();
    assert!(matches!(open(&other), Err(TraceError::NotX86)));
    std::fs::write(&other, [0x28, 0xB5, 0x2F, 0xFD, 0, 0, 0, 0, 0, 0]).unwrap();
    let e = open(&other).err().unwrap();
    assert!(matches!(e, TraceError::E500));
    assert!(e.to_string().contains("e500 trace"), "{e}");
    let missing = open(&dir.path("missing")).err().unwrap();
    assert!(missing.to_string().starts_with("cannot open"), "{missing}");
}

#[test]
fn a_trailer_that_disagrees_with_the_events_is_a_totals_mismatch() {
    let dir = Scratch::new("totals");
    let path = dir.path("t.x86t");
    write(&path, &every_kind(), CHUNK_TARGET);
    let bytes = std::fs::read(&path).unwrap();
    // Rewrite the trailer's load count keeping its length, with a matching CRC.
    let needle = b"\"loads\":4";
    let at = bytes
        .windows(needle.len())
        .rposition(|w| w == needle)
        .unwrap();
    let mut b = bytes.clone();
    b[at + 8] = b'5';
    let offset = u64::from_le_bytes(b[b.len() - 16..b.len() - 8].try_into().unwrap()) as usize;
    let json_end = b.len() - FOOTER_LEN;
    let crc = crc32fast::hash(&b[offset + TRAILER_HEADER_LEN..json_end]);
    b[offset + 5..offset + 9].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &b).unwrap();
    let e = read_all(open(&path).unwrap()).unwrap_err();
    assert!(matches!(e, TraceError::TotalsMismatch(_)), "{e}");
    assert!(e.to_string().contains("loads 5/4"), "{e}");
}

fn event_strategy() -> impl Strategy<Value = Event> {
    let addr = prop_oneof![
        any::<u64>(),
        0x7ffc_0000_0000u64..0x7ffc_0000_2000,
        0x5555_0000_0000u64..0x5555_0010_0000,
    ];
    prop_oneof![
        8 => (addr, 0..4u8, any::<bool>(), prop_oneof![0..8u32, any::<u32>()]).prop_map(
            |(addr, s, write, insns)| Event::Ref { addr, size: 1 << s, write, insns }
        ),
        1 => any::<u64>().prop_map(|page| Event::CodePage { page }),
        1 => (0..4u32, 0..3u32).prop_map(|(pid, tid)| Event::Switch { pid, tid }),
        1 => (any::<u64>(), any::<u64>(), any::<u8>())
            .prop_map(|(start, end, prot)| Event::Map { start, end, prot }),
        1 => (any::<u32>(), any::<[u64; 6]>(), any::<Option<i64>>())
            .prop_map(|(nr, args, ret)| Event::Syscall { nr, args, ret }),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(addr, len)| Event::KernelWrite { addr, len }),
        1 => any::<u32>().prop_map(|child| Event::Fork { child }),
        1 => ".{0,20}".prop_map(|path| Event::Exec { path }),
        1 => any::<i32>().prop_map(|code| Event::Exit { code }),
        1 => (any::<bool>(), any::<u64>(), any::<u64>())
            .prop_map(|(open, skipped, insns)| Event::Window { open, skipped, insns }),
        1 => any::<u64>().prop_map(|addr| Event::Warm { addr }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_event_sequences_round_trip(
        events in prop::collection::vec(event_strategy(), 0..300),
        target in prop_oneof![1..64usize, Just(CHUNK_TARGET)],
    ) {
        let dir = Scratch::new("prop");
        let path = dir.path("t.x86t");
        let trailer = write(&path, &events, target);
        let mut r = open(&path).unwrap();
        let mut got = Vec::new();
        while let Some(e) = r.next_event().unwrap() {
            got.push(e);
        }
        prop_assert_eq!(&got, &events);
        prop_assert_eq!(r.totals(), trailer.totals);
        prop_assert_eq!(trailer.totals.events.total(), events.len() as u64);
    }

    #[test]
    fn random_bytes_are_an_error_not_a_panic(
        bytes in prop::collection::vec(any::<u8>(), 0..400),
        with_magic in any::<bool>(),
    ) {
        let dir = Scratch::new("noise");
        let path = dir.path("t.x86t");
        let mut b = bytes;
        if with_magic {
            let mut prefixed = MAGIC.to_vec();
            prefixed.extend_from_slice(&VERSION.to_le_bytes());
            prefixed.extend_from_slice(&b);
            b = prefixed;
        }
        std::fs::write(&path, &b).unwrap();
        if let Ok(r) = open_unfinished(&path) {
            let _ = read_until_error(r);
        }
        if let Ok(r) = open(&path) {
            let _ = read_until_error(r);
        }
    }

    #[test]
    fn mutated_files_are_errors_or_read_the_same(
        events in prop::collection::vec(event_strategy(), 1..100),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..6),
    ) {
        let dir = Scratch::new("mutate");
        let path = dir.path("t.x86t");
        write(&path, &events, 40);
        let mut b = std::fs::read(&path).unwrap();
        for (at, value, how) in edits {
            let i = at.index(b.len());
            match how {
                0 => b[i] = value,
                1 => b.truncate(i),
                _ => b.insert(i, value),
            }
            if b.is_empty() {
                break;
            }
        }
        std::fs::write(&path, &b).unwrap();
        if let Ok(r) = open(&path) {
            if let (got, None) = read_until_error(r) {
                prop_assert_eq!(got, events.clone());
            }
        }
        if let Ok(r) = open_unfinished(&path) {
            let (got, _) = read_until_error(r);
            // Whole chunks are checked by their CRC, so whatever is read is a prefix.
            prop_assert!(events.starts_with(&got));
        }
    }
}

#[test]
fn the_summary_counts_what_the_trace_holds() {
    let dir = Scratch::new("summary");
    let path = dir.path("t.x86t");
    write(&path, &every_kind(), 16);
    let s = Summary::read(open(&path).unwrap()).unwrap();
    assert_eq!((s.totals.processes, s.totals.threads), (2, 2));
    assert_eq!(s.loads_by_size.get(&8), Some(&2));
    assert_eq!(s.stores_by_size.get(&2), Some(&1));
    assert_eq!(s.syscalls.get("read"), Some(&1));
    assert_eq!(s.syscalls.get("exit_group"), Some(&1));
    assert_eq!(s.syscalls.get(&format!("syscall_{}", u32::MAX)), Some(&1));
    assert_eq!(s.mapping.syscalls.get("mmap"), Some(&1));
    assert_eq!(s.mapping.map_events, 3);
    assert_eq!(s.kernel_written_bytes, 17);
    assert_eq!(s.syscalls_not_returned, 1);
    // 0x7ffc12345678 and ..670 share a page, ..668 too; u64::MAX, 0 and 0x1000: three more.
    assert_eq!(s.data_pages, 4);
    assert_eq!(s.code_pages, 3);
    assert_eq!(s.footprint.last().unwrap().refs, 6);
    assert_eq!(s.programs.len(), 2);
    assert_eq!(s.exit_codes.get(&139), Some(&1));
    serde_json::to_string(&s).unwrap();
}

/// Synthetic reference streams for the compression measurement.
mod synthetic {
    use super::Event;
    use rand::{Rng, SeedableRng};
    use rand_xoshiro::Xoshiro256PlusPlus;

    fn r(addr: u64, size: u8, write: bool, insns: u32) -> Event {
        Event::Ref {
            addr,
            size,
            write,
            insns,
        }
    }

    /// A summing loop: 8-byte loads walking an array, two or three instructions apart.
    pub fn sequential(n: usize) -> Vec<Event> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(1);
        (0..n)
            .map(|i| {
                r(
                    0x5555_5600_0000 + 8 * i as u64,
                    8,
                    false,
                    rng.random_range(2..4),
                )
            })
            .collect()
    }

    /// A linked-list walk over 64-byte nodes in random order in a 64 MiB heap, each step
    /// loading next and value, spilling to and reloading from the stack frame.
    pub fn pointer_chase(n: usize) -> Vec<Event> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(2);
        let heap = 0x7f12_3400_0000u64;
        let rsp = 0x7ffd_5e6f_7000u64;
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let node = heap + 64 * rng.random_range(0..1u64 << 20);
            out.push(r(node, 8, false, 2));
            out.push(r(node + 8, 4, false, 1));
            out.push(r(rsp - 0x28, 8, true, 2));
            out.push(r(rsp - 0x30, 4, false, 3));
        }
        out
    }

    /// Calls and returns over a call stack (pushes, pops, locals), globals and a hot heap
    /// object set, with code-page changes and a second thread switched in every ~5000 refs.
    pub fn mixed(n: usize) -> Vec<Event> {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        let mut out = vec![Event::Switch { pid: 0, tid: 0 }];
        let mut rsp = [0x7ffd_5e6f_7000u64, 0x7f00_1234_5000];
        let mut tid = 0usize;
        let globals = 0x5555_5575_8000u64;
        let objects: Vec<u64> = (0..256)
            .map(|_| 0x5555_5600_0000 + 16 * rng.random_range(0..1u64 << 16))
            .collect();
        while out.len() < n {
            let insns = rng.random_range(1..5);
            match rng.random_range(0..100) {
                0..=19 => {
                    rsp[tid] -= 8;
                    out.push(r(rsp[tid], 8, true, insns));
                }
                20..=39 => {
                    out.push(r(rsp[tid], 8, false, insns));
                    rsp[tid] += 8;
                }
                40..=59 => out.push(r(
                    rsp[tid] + 8 * rng.random_range(0..8),
                    8,
                    rng.random_bool(0.3),
                    insns,
                )),
                60..=69 => out.push(r(
                    globals + 8 * rng.random_range(0..64),
                    4,
                    rng.random_bool(0.2),
                    insns,
                )),
                70..=97 => {
                    let o = objects[rng.random_range(0..objects.len())];
                    out.push(r(o, 8, false, insns));
                    out.push(r(o + 8, 8, rng.random_bool(0.3), 1));
                }
                _ => out.push(Event::CodePage {
                    page: 0x55555555 + rng.random_range(0..16),
                }),
            }
            if rng.random_range(0..5000) == 0 {
                tid ^= 1;
                out.push(Event::Switch {
                    pid: 0,
                    tid: tid as u32,
                });
            }
        }
        out
    }
}

/// CPU seconds this thread has run (the machine is shared: wall time would count the others).
#[cfg(target_os = "linux")]
fn thread_cpu_secs() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Bytes per reference and decode speed on synthetic streams (`cargo test --release -p
/// vmlab-core --lib trace::x86::tests::compression -- --ignored --nocapture`).
#[test]
#[ignore]
#[cfg(target_os = "linux")]
fn compression_and_decode_speed_on_synthetic_streams() {
    let dir = Scratch::new("measure");
    let path = dir.path("t.x86t");
    let n = 20_000_000;
    println!(
        "{:<16}{:>12}{:>12}{:>14}{:>12}{:>14}",
        "pattern", "refs", "raw B/ref", "file B/ref", "write M/s", "decode M/s"
    );
    for (name, events) in [
        ("sequential", synthetic::sequential(n)),
        ("pointer chase", synthetic::pointer_chase(n)),
        ("mixed", synthetic::mixed(n)),
    ] {
        let start = thread_cpu_secs();
        let mut w = Writer::create(&path, &header()).unwrap();
        let mut raw = super::codec::Encoded::default();
        let mut threads = super::codec::Threads::default();
        for e in &events {
            w.push(e).unwrap();
        }
        let trailer = w.finish(true, String::new()).unwrap();
        let write_secs = thread_cpu_secs() - start;
        for e in &events {
            super::codec::encode(&mut raw, e, &mut threads).unwrap();
        }
        let size = std::fs::metadata(&path).unwrap().len();
        let events = events.len() as f64;
        // The best of three reads: the machine is shared.
        let mut read_secs = f64::MAX;
        let mut count = 0;
        for _ in 0..3 {
            let start = thread_cpu_secs();
            let mut r = open(&path).unwrap();
            count = 0u64;
            while let Some(e) = r.next_event().unwrap() {
                count += u64::from(matches!(e, Event::Ref { .. }));
            }
            read_secs = read_secs.min(thread_cpu_secs() - start);
        }
        let refs = trailer.totals.events.refs;
        assert_eq!(count, refs);
        println!(
            "{name:<16}{refs:>12}{:>12.3}{:>14.3}{:>12.1}{:>14.1}",
            raw.len() as f64 / refs as f64,
            size as f64 / refs as f64,
            events / write_secs / 1e6,
            events / read_secs / 1e6
        );
    }
}
