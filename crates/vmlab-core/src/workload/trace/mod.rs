//! `trace`: replay a real program recorded by `vmlab record` (`trace:file=PATH`).
//!
//! The recording's processes fork, exec and exit where the program's did; its memory is
//! mapped, protected and unmapped at the recorded addresses (QEMU's layout: no randomisation),
//! so demand faults, copy-on-write faults and page-table pages are the program's own; its
//! references run in the recorded interleaving of threads and processes (docs/x86-trace.md);
//! its compute between references is the recorded instruction count. [`replay`] turns events
//! into operations; [`address_space`] keeps each process's map as the program saw it.

mod address_space;
mod ahead;
mod replay;

use ahead::Ahead;

pub use replay::{TraceReplay, RECORDED_EXEC};

use super::spec::{ParamInfo, Values, WorkloadError};
use super::{Op, Workload, WorkloadKind};
use crate::trace::x86::{open, read_trailer};
use std::path::PathBuf;

/// The parameters of a `trace` run: the file, and what its trailer says it holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TraceConfig {
    /// The recording.
    pub file: PathBuf,
    /// The references the program made (the trailer's count, with those a sampled
    /// recording did not write).
    pub refs: u64,
    /// For a sampled recording (`vmlab record --sample`), whose windows only are measured:
    /// the accesses its replay runs (written references and warm-up lines).
    pub sampled: Option<u64>,
}

/// What the workload's first process is called, for TPT's mark (`tpt_task`).
const PROGRAM: &str = "recorded";

impl WorkloadKind for TraceConfig {
    type Generator = TraceWorkload;

    const NAME: &'static str = "trace";
    const SUMMARY: &'static str = "a real program recorded by `vmlab record`: its processes, mappings, system calls and every data reference, replayed at the recorded addresses, with the recorded instructions between references";
    const DEFAULT_ACCESSES: u64 = 0;
    const PARAMS: &'static [ParamInfo] = &[ParamInfo {
        key: "file",
        default: "(required)",
        help: "the recording (.vmtrace) to replay",
    }];

    fn example() -> String {
        "trace:file=ls.vmtrace".to_owned()
    }

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        if values.given("file").is_none() {
            return Err(WorkloadError::MissingKey {
                workload: Self::NAME,
                key: "file",
                example: Self::example(),
                valid: "the path of a recording made by `vmlab record`".to_owned(),
            });
        }
        let file = PathBuf::from(values.text("file"));
        let unreadable = |e| WorkloadError::unreadable(Self::NAME, "file", &file, e);
        let trailer = read_trailer(&file).map_err(unreadable)?;
        let totals = trailer.totals;
        let sampled = open(&file)
            .map_err(unreadable)?
            .header()
            .sample
            .map(|_| totals.events.refs + totals.events.warms);
        Ok(TraceConfig {
            refs: trailer.totals.program_refs(),
            sampled,
            file,
        })
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        Ok(())
    }

    fn canonical_params(&self) -> String {
        format!("file={}", self.file.display())
    }

    /// Not known before the replay: the recording holds references, not a footprint.
    fn footprint_bytes(&self) -> u64 {
        0
    }

    fn measured_accesses_total(&self) -> u64 {
        self.refs
    }

    fn program(&self) -> &'static str {
        PROGRAM
    }

    fn programs(&self) -> Vec<&'static str> {
        vec![PROGRAM, RECORDED_EXEC.name]
    }

    /// The recording: its size, content hash and header.
    fn inputs(&self) -> Vec<crate::provenance::Input> {
        let (bytes, fingerprint) =
            crate::provenance::file_fingerprint(&self.file).unwrap_or((0, "unreadable".to_owned()));
        let header = open(&self.file)
            .ok()
            .and_then(|r| serde_json::to_value(r.header()).ok())
            .unwrap_or(serde_json::Value::Null);
        vec![crate::provenance::Input {
            path: self.file.display().to_string(),
            bytes,
            fingerprint,
            header,
        }]
    }

    fn build(&self, _seed: u64) -> Result<TraceWorkload, WorkloadError> {
        let reader = open(&self.file)
            .map_err(|e| WorkloadError::unreadable(Self::NAME, "file", &self.file, e))?;
        Ok(TraceWorkload {
            replay: Box::new(Ahead::start(TraceReplay::new(reader))),
            refs: self.refs,
            sampled: self.sampled,
        })
    }
}

/// The generator of [`TraceConfig`]: a [`TraceReplay`], run ahead on a thread of its own,
/// as a [`Workload`].
pub struct TraceWorkload {
    /// Boxed: its batch would make every [`super::AnyWorkload`] as large.
    replay: Box<Ahead>,
    refs: u64,
    sampled: Option<u64>,
}

impl std::fmt::Debug for TraceWorkload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceWorkload")
            .field("refs", &self.refs)
            .field("replayed", &self.replay.refs())
            .finish()
    }
}

/// A small recording for tests that go through every workload: one process maps two pages,
/// stores to the first, loads from the second and exits. Written once per test process.
#[cfg(test)]
pub(crate) fn tiny_trace() -> &'static std::path::Path {
    use crate::trace::x86::{Event, Header, Writer};
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("vmlab-tiny-{}.vmtrace", std::process::id()));
        let mut w = Writer::create(&path, &Header::default()).unwrap();
        let events = [
            Event::Switch { pid: 0, tid: 0 },
            Event::Map {
                start: 0x10000,
                end: 0x12000,
                prot: 3,
            },
            Event::Ref {
                addr: 0x10000,
                size: 8,
                write: true,
                insns: 5,
            },
            Event::Ref {
                addr: 0x11008,
                size: 4,
                write: false,
                insns: 2,
            },
            Event::Exit { code: 0 },
        ];
        for e in &events {
            w.push(e).unwrap();
        }
        w.finish(true, "exited with status 0".to_owned()).unwrap();
        path
    })
}

impl Workload for TraceWorkload {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        self.replay.next_op()
    }

    fn measured_accesses_total(&self) -> u64 {
        self.refs
    }

    /// None: the compute between references is the recorded instruction count.
    fn instructions_per_access(&self) -> f64 {
        0.0
    }

    /// Recorded references are those of out-of-order cores: independent unless the program
    /// chases pointers, which the recording does not say.
    fn dependent_accesses(&self) -> bool {
        false
    }

    fn sampled(&self) -> Option<u64> {
        self.sampled
    }

    fn instructions_retired(&self) -> Option<u64> {
        Some(self.replay.retired())
    }

    fn take_failure(&mut self) -> Option<String> {
        self.replay.take_failure()
    }

    fn position(&self) -> Option<String> {
        Some(self.replay.position())
    }
}
