//! Replaying recordings (`trace:file=PATH`): exact counts on a hand-built recording through
//! the engine under every scheme, and the translation invariant after every operation of
//! random recordings under every scheme.

mod common;

use common::invariant::{check_same, system_with, va, PAGE, PAGES, REGION};
use proptest::prelude::*;
use std::path::{Path, PathBuf};
use vmlab_core::addr::{PageSize, PAGE_SIZE};
use vmlab_core::cost::Profile;
use vmlab_core::engine::{self, RunConfig};
use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::scheme::{Paging, System};
use vmlab_core::trace::x86::{open, Event, Header, Sampling, Writer};
use vmlab_core::workload::{Op, TraceReplay, WorkloadSpec};

use vmlab_core::trace::x86::syscalls::{CLOCK_GETTIME, MADVISE, MMAP, MPROTECT, MUNMAP};

const READ: u32 = 0;

fn write_trace(name: &str, events: &[Event]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("vmlab-{name}-{}.vmtrace", std::process::id()));
    let mut w = Writer::create(&path, &Header::default()).unwrap();
    for e in events {
        w.push(e).unwrap();
    }
    w.finish(true, "exited with status 0".to_owned()).unwrap();
    path
}

fn r(page: u64, write: bool, insns: u32) -> Event {
    Event::Ref {
        addr: REGION + page * PAGE + 8,
        size: 8,
        write,
        insns,
    }
}

fn syscall(nr: u32, args: [u64; 6], ret: i64) -> Event {
    Event::Syscall {
        nr,
        args,
        ret: Some(ret),
    }
}

fn run(path: &Path, paging: Paging) -> vmlab_core::stats::RunReport {
    let config = RunConfig {
        workload: WorkloadSpec::parse(&format!("trace:file={}", path.display())).unwrap(),
        ..engine_config(paging)
    };
    engine::run(&config, &mut |_| std::ops::ControlFlow::Continue(())).unwrap()
}

/// How the hand-built recordings start: one process with a page of code (not the region), as a
/// program starts with, that maps the 16-page region.
fn program_start() -> Vec<Event> {
    vec![
        Event::Switch { pid: 0, tid: 0 },
        Event::Map {
            start: 0x1000,
            end: 0x2000,
            prot: 5,
        },
        Event::CodePage { page: 1 },
        syscall(MMAP, [0, 16 * PAGE, 3, 0x22, u64::MAX, 0], REGION as i64),
    ]
}

/// A program maps 16 pages, writes 3 and reads 1 of them, reads 64 bytes into another (the
/// kernel's write), forks; the child writes one shared page (copy-on-write) and a fresh one,
/// and exits; the parent unmaps the upper 8 pages, makes page 1 read-only, drops page 2,
/// reads pages 1 and 2 again and exits. Every count follows from that alone.
#[test]
fn a_hand_built_recording_replays_with_exact_counts_under_every_scheme() {
    let base = REGION;
    let events = [
        program_start(),
        vec![
            r(0, true, 10),
            r(1, true, 3),
            r(2, true, 3),
            r(3, false, 3),
            r(3, false, 0),
            syscall(READ, [0, base + 4 * PAGE, 64, 0, 0, 0], 64),
            Event::KernelWrite {
                addr: base + 4 * PAGE,
                len: 64,
            },
            syscall(CLOCK_GETTIME, [1, base, 0, 0, 0, 0], 0),
            Event::Fork { child: 1 },
            syscall(56, [0x1200011, 0, 0, 0, 0, 0], 1000),
            Event::Switch { pid: 1, tid: 1 },
            syscall(56, [0x1200011, 0, 0, 0, 0, 0], 0),
            r(0, true, 7),
            r(5, true, 7),
            Event::Exit { code: 0 },
            Event::Switch { pid: 0, tid: 0 },
            syscall(MUNMAP, [base + 8 * PAGE, 8 * PAGE, 0, 0, 0, 0], 0),
            syscall(MPROTECT, [base + PAGE, PAGE, 1, 0, 0, 0], 0),
            syscall(MADVISE, [base + 2 * PAGE, PAGE, 4, 0, 0, 0], 0),
            r(1, false, 2),
            r(2, false, 2),
            Event::Exit { code: 0 },
        ],
    ]
    .concat();
    let path = write_trace("exact", &events);
    let refs = 9;
    let instructions = 10 + 3 + 3 + 3 + 7 + 7 + 2 + 2;
    let mut counts = Vec::new();
    for &paging in Paging::ALL.iter() {
        let report = run(&path, paging);
        assert_eq!(report.accesses_total, refs, "{paging:?}");
        assert_eq!(report.accesses_simulated, refs, "{paging:?}");
        let os = &report.os;
        // First touches: the code page, pages 0-3, the kernel's write into page 4, the child's
        // page 5, and page 2 again after MADV_DONTNEED: 8. Copy-on-write: the child's write
        // to page 0. The parent's later writes hit pages it never shared again.
        assert_eq!(report.cow_faults, 1, "{paging:?}");
        assert_eq!(report.page_faults, 8 + 1, "{paging:?}");
        assert_eq!(os.forks, 1, "{paging:?}");
        assert_eq!(os.munmaps, 1, "{paging:?}");
        assert_eq!(os.mprotects, 1, "{paging:?}");
        assert_eq!(os.madvises, 1, "{paging:?}");
        // The child's exit; the parent's, the last process, is not replayed.
        assert_eq!(os.exits, 1, "{paging:?}");
        // Compute is the recorded instructions, through the profile's IPC.
        let ipc = Profile::builtin("skylake").unwrap().core.ipc;
        let compute = report.cycles_breakdown.compute;
        assert!(
            (compute * ipc - instructions as f64).abs() < 1e-6,
            "{paging:?}: {compute} cycles of compute for {instructions} instructions"
        );
        counts.push((report.page_faults, report.cow_faults, os.kernel_entries));
    }
    // Every scheme sees the same guest: the same faults and kernel entries.
    assert!(counts.windows(2).all(|w| w[0] == w[1]), "{counts:?}");
    std::fs::remove_file(path).unwrap();
}

/// A sampled recording: references outside windows run but are not the sample, warm-up lines
/// run as loads (one outside every mapping is dropped), a window's first touch faults inside
/// it, and the references and instructions the recorder did not write count in the totals.
#[test]
fn a_sampled_recording_measures_its_windows_and_counts_what_it_skipped() {
    let base = REGION;
    let window = |open, skipped, insns| Event::Window {
        open,
        skipped,
        insns,
    };
    let events = [
        program_start(),
        vec![
            r(0, true, 10),
            Event::Warm { addr: base },
            Event::Warm {
                addr: base + 20 * PAGE,
            },
            window(true, 100, 400),
            r(0, false, 2),
            r(0, true, 1),
            r(1, true, 3),
            window(false, 0, 0),
            r(2, true, 5),
            window(false, 50, 200),
            Event::Exit { code: 0 },
        ],
    ]
    .concat();
    let path = std::env::temp_dir().join(format!("vmlab-sampled-{}.vmtrace", std::process::id()));
    let header = Header {
        sample: Some(Sampling {
            period: 100,
            window: 3,
            warm: 10,
        }),
        ..Header::default()
    };
    let mut w = Writer::create(&path, &header).unwrap();
    for e in &events {
        w.push(e).unwrap();
    }
    w.finish(true, "exited with status 0".to_owned()).unwrap();
    let instructions = 10 + 400 + 2 + 1 + 3 + 5 + 200;
    let ipc = Profile::builtin("skylake").unwrap().core.ipc;
    for &paging in Paging::ALL.iter() {
        let report = run(&path, paging);
        assert_eq!(report.accesses_total, 5 + 150, "{paging:?}");
        assert_eq!(report.accesses_simulated, 3, "{paging:?}");
        assert!(report.extrapolated, "{paging:?}");
        assert_eq!(report.sample.windows, 1, "{paging:?}");
        assert_eq!(report.sample.warmup_end, "recorded", "{paging:?}");
        // The code page and pages 0, 1 (inside the window) and 2.
        assert_eq!(report.page_faults, 4, "{paging:?}");
        let compute = report.cycles_breakdown.compute;
        assert!(
            (compute * ipc - instructions as f64).abs() < 1e-6,
            "{paging:?}: {compute} cycles of compute for {instructions} instructions"
        );
    }
    // --accesses would cut the windows the recording chose: refused.
    let config = RunConfig {
        workload: WorkloadSpec::parse(&format!("trace:file={}", path.display())).unwrap(),
        accesses: 2,
        ..engine_config(Paging::Native)
    };
    let refused = engine::run(&config, &mut |_| std::ops::ControlFlow::Continue(()));
    assert!(
        matches!(&refused, Err(engine::EngineError::Config(m)) if m.contains("--accesses")),
        "{:?}",
        refused.err()
    );
    std::fs::remove_file(path).unwrap();
}

/// A reference outside every recorded mapping is a clear error naming where it happened.
#[test]
fn a_reference_outside_the_recorded_map_names_the_address_and_the_event() {
    let events = vec![
        Event::Switch { pid: 0, tid: 0 },
        Event::Map {
            start: REGION,
            end: REGION + PAGE,
            prot: 3,
        },
        r(0, true, 1),
        r(7, false, 1),
    ];
    let path = write_trace("outside", &events);
    let config = RunConfig {
        workload: WorkloadSpec::parse(&format!("trace:file={}", path.display())).unwrap(),
        ..engine_config(Paging::Nested)
    };
    let err = engine::run(&config, &mut |_| std::ops::ControlFlow::Continue(()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("segmentation fault"), "{err}");
    assert!(
        err.contains(&format!("{:#x}", REGION + 7 * PAGE + 8)),
        "{err}"
    );
    assert!(
        err.contains("at reference 2 of the trace (process 0)"),
        "{err}"
    );
    std::fs::remove_file(path).unwrap();
}

fn engine_config(paging: Paging) -> RunConfig {
    common::whole_run("gups:table=4K,updates=1", paging)
}

/// One step of a random recording, over the region's pages.
#[derive(Clone, Debug)]
enum Step {
    Ref { page: u64, write: bool },
    Mmap { page: u64, pages: u64, prot: u8 },
    Munmap { page: u64, pages: u64 },
    Mprotect { page: u64, pages: u64, prot: u8 },
    DontNeed { page: u64, pages: u64 },
    KernelWrite { page: u64, bytes: u64 },
    Fork,
    Switch(usize),
    Exit(usize),
}

fn step() -> impl Strategy<Value = Step> {
    let range = (0..PAGES, 1..16u64);
    prop_oneof![
        8 => (0..PAGES, any::<bool>()).prop_map(|(page, write)| Step::Ref { page, write }),
        1 => (range.clone(), 0..4u8).prop_map(|((page, pages), prot)| Step::Mmap { page, pages, prot }),
        1 => range.clone().prop_map(|(page, pages)| Step::Munmap { page, pages }),
        1 => (range.clone(), 0..4u8).prop_map(|((page, pages), prot)| Step::Mprotect { page, pages, prot }),
        1 => range.prop_map(|(page, pages)| Step::DontNeed { page, pages }),
        1 => (0..PAGES, 1..3 * PAGE).prop_map(|(page, bytes)| Step::KernelWrite { page, bytes }),
        1 => Just(Step::Fork),
        1 => (0..8usize).prop_map(Step::Switch),
        1 => (0..8usize).prop_map(Step::Exit),
    ]
}

/// The recording of `steps`, as the merge writes one: a process switch before any event of
/// another process, each exit followed by a switch to a live process.
fn recording(steps: &[Step]) -> Vec<Event> {
    let clamp = |page: u64, pages: u64| pages.min(PAGES - page) * PAGE;
    let mut live = vec![0u32];
    let mut current = 0u32;
    let mut next_pid = 1;
    let mut events = vec![
        Event::Switch { pid: 0, tid: 0 },
        Event::Map {
            start: REGION,
            end: REGION + PAGES * PAGE,
            prot: 3,
        },
    ];
    for s in steps {
        match *s {
            Step::Ref { page, write } => events.push(r(page, write, 1)),
            Step::Mmap { page, pages, prot } => {
                let addr = REGION + page * PAGE;
                events.push(syscall(
                    MMAP,
                    [addr, clamp(page, pages), u64::from(prot), 0x32, 0, 0],
                    addr as i64,
                ));
            }
            Step::Munmap { page, pages } => events.push(syscall(
                MUNMAP,
                [REGION + page * PAGE, clamp(page, pages), 0, 0, 0, 0],
                0,
            )),
            Step::Mprotect { page, pages, prot } => events.push(syscall(
                MPROTECT,
                [
                    REGION + page * PAGE,
                    clamp(page, pages),
                    u64::from(prot),
                    0,
                    0,
                    0,
                ],
                0,
            )),
            Step::DontNeed { page, pages } => events.push(syscall(
                MADVISE,
                [REGION + page * PAGE, clamp(page, pages), 4, 0, 0, 0],
                0,
            )),
            Step::KernelWrite { page, bytes } => events.push(Event::KernelWrite {
                addr: REGION + page * PAGE + 100,
                len: bytes.min((PAGES - page) * PAGE - 100),
            }),
            Step::Fork => {
                events.push(Event::Fork { child: next_pid });
                live.push(next_pid);
                next_pid += 1;
            }
            Step::Switch(i) => {
                current = live[i % live.len()];
                events.push(Event::Switch {
                    pid: current,
                    tid: current,
                });
            }
            Step::Exit(i) => {
                if live.len() > 1 {
                    events.push(Event::Exit { code: 0 });
                    live.retain(|&p| p != current);
                    current = live[i % live.len()];
                    events.push(Event::Switch {
                        pid: current,
                        tid: current,
                    });
                }
            }
        }
    }
    events
}

/// What the engine does with an operation, for the systems under test.
fn apply(sys: &mut System, op: Op) -> String {
    let result = match op {
        Op::Map { start, len } => sys.mmap(start, len, true),
        Op::MapReadOnly { start, len } => sys.mmap(start, len, false),
        Op::Unmap { start, len } => sys.munmap(start, len),
        Op::Protect {
            start,
            len,
            writable,
        } => sys.mprotect(start, len, writable),
        Op::DontNeed { start, len } => sys.madvise_dontneed(start, len),
        Op::Fork => sys.fork().map(|_| ()),
        Op::Switch { pid } => sys.switch_to(pid),
        Op::Exit { next } => sys.exit(next),
        Op::Exec { program } => sys.exec(program),
        Op::Syscall => sys.plain_syscall(),
        Op::TouchPages { start, len, write } => (0..len / PAGE_SIZE).try_for_each(|p| {
            sys.access(
                vmlab_core::addr::Gva::new(start.raw() + p * PAGE_SIZE),
                write,
            )
            .map(|_| ())
        }),
        Op::Access { va, write } => sys.access(va, write).map(|_| ()),
        Op::StartMeasurement => Ok(()),
        other => panic!("a replay makes no {other:?}"),
    };
    format!("{:?}", result.err().map(|e| e.to_string()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every operation of a random recording's replay translates every page of every process
    /// the same way under every scheme, and fails the same way where it fails (a reference to
    /// memory the recording unmapped or protected).
    #[test]
    fn random_recordings_translate_the_same_under_every_scheme(
        steps in proptest::collection::vec(step(), 1..60),
        pcid in any::<bool>(),
    ) {
        let path = write_trace(&format!("prop-{}", steps.len()), &recording(&steps));
        let shadow = ShadowConfig { unsync: true, bypass_not_present: true, budget_pages: 100_000 };
        let mut systems: Vec<System> = Paging::ALL
            .iter()
            .map(|&p| system_with(p, PageSize::Size4K, pcid, false, Some(shadow)))
            .collect();
        let mut replay = TraceReplay::new(open(&path).unwrap());
        while let Some(op) = replay.next_op() {
            let outcomes: Vec<String> = systems.iter_mut().map(|sys| apply(sys, op)).collect();
            for o in &outcomes[1..] {
                prop_assert_eq!(&outcomes[0], o, "op {:?}", op);
            }
            check_same(&mut systems)?;
        }
        prop_assert!(replay.take_error().is_none());
        let _ = va(0);
        std::fs::remove_file(path).unwrap();
    }
}
