//! The x86 trace format, version 1 (`docs/x86-trace.md`): magic, version, a JSON header, then
//! independently zstd-compressed chunks of encoded events, a JSON trailer with the totals, and
//! a fixed-size footer pointing at the trailer.

use serde::{Deserialize, Serialize};

/// The first eight bytes of the file (not compressed).
pub const MAGIC: &[u8; 8] = b"VMLX86T\n";
/// The version this crate writes. Version 2 added the sampled recording's events (Window,
/// Warm); a version 1 file, which has none, reads the same.
pub const VERSION: u32 = 2;
/// The oldest version this crate reads.
pub const OLDEST_VERSION: u32 = 1;
/// The last eight bytes of a finished file.
pub const FOOTER_MAGIC: &[u8; 8] = b"VMLX86E\n";

/// Block tag of a chunk.
pub(crate) const BLOCK_CHUNK: u8 = 0x01;
/// Block tag of the trailer.
pub(crate) const BLOCK_TRAILER: u8 = 0x02;
/// Bytes of the file prefix before the header's JSON: magic, version, length, CRC.
pub(crate) const PREFIX_LEN: u64 = 8 + 4 + 4 + 4;
/// Bytes of a chunk's header: tag, raw length, compressed length, events, pid, tid, CRC of
/// the raw bytes, CRC of the header's previous bytes.
pub(crate) const CHUNK_HEADER_LEN: usize = 29;
/// Bytes before a trailer's JSON: tag, length, CRC.
pub(crate) const TRAILER_HEADER_LEN: usize = 9;
/// Bytes of the footer: the trailer's offset and [`FOOTER_MAGIC`].
pub(crate) const FOOTER_LEN: usize = 16;
/// The pid and tid a chunk header records when no thread is current yet.
pub(crate) const NO_THREAD: u32 = u32::MAX;

/// The writer closes a chunk once its encoded events reach this many bytes.
pub(crate) const CHUNK_TARGET: usize = 1 << 20;
/// The longest Exec path the writer accepts (Linux's PATH_MAX is 4096).
pub const MAX_PATH: usize = 1 << 16;
/// The largest encoded chunk a reader accepts: the target plus one maximal event, rounded up.
pub(crate) const MAX_CHUNK_RAW: u32 = 2 << 20;
/// The largest compressed chunk a reader accepts (zstd never expands by more than a little).
pub(crate) const MAX_CHUNK_COMPRESSED: u32 = MAX_CHUNK_RAW + (64 << 10);
/// The largest header or trailer JSON a reader accepts.
pub(crate) const MAX_JSON: u32 = 16 << 20;

/// The machine the program was recorded on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Host {
    /// Its hostname.
    pub hostname: String,
    /// Its kernel (`uname -sr`).
    pub kernel: String,
    /// Its CPU model name.
    pub cpu: String,
}

/// What a recording is: the program, where and how it was recorded. The recorder fills it;
/// every field defaults to empty so a reader accepts headers with fields added later.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Header {
    /// The recorded program (the path given to the recorder).
    pub program: String,
    /// Its arguments, `argv[1..]`.
    pub args: Vec<String>,
    /// Its working directory.
    pub cwd: String,
    /// The recording machine.
    pub host: Host,
    /// The recorder's version.
    pub recorder: String,
    /// The QEMU version the recorder ran under.
    pub qemu: String,
    /// When the recording started, UTC, RFC 3339 (`2025-01-31T12:00:00Z`).
    pub date: String,
    /// How the threads' events were interleaved into one stream (free-form).
    pub interleaving: String,
    /// The sampling of a sampled recording (`vmlab record --sample`); None: every reference.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample: Option<Sampling>,
}

/// How a sampled recording sampled each thread's references.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// References per period.
    pub period: u64,
    /// The last `window` references of every period are recorded in full.
    pub window: u64,
    /// References summarized (as their distinct lines) before each window.
    pub warm: u64,
}

impl Sampling {
    /// References summarized before each window when a sample spec does not say.
    pub const DEFAULT_WARM: u64 = 1_000_000;

    /// A sample spec as `vmlab record --sample` takes it: `PERIOD:WINDOW[:WARM]`, each a
    /// count with an optional K, M or G (thousands), like `100M:1M`; the error says what is
    /// wrong in one line.
    pub fn parse(text: &str) -> Result<Sampling, String> {
        let count = |part: &str| -> Result<u64, String> {
            let (digits, unit) = match part.char_indices().last() {
                Some((i, c)) if c.is_ascii_alphabetic() => (&part[..i], &part[i..]),
                _ => (part, ""),
            };
            let scale = match unit.to_ascii_uppercase().as_str() {
                "" => 1,
                "K" => 1_000,
                "M" => 1_000_000,
                "G" => 1_000_000_000,
                _ => return Err(format!("{part:?}: a count takes K, M or G")),
            };
            digits
                .parse::<u64>()
                .ok()
                .and_then(|n| n.checked_mul(scale))
                .ok_or_else(|| format!("{part:?} is not a count (like 100M)"))
        };
        let parts: Vec<&str> = text.split(':').collect();
        let (period, window, warm) = match parts[..] {
            [p, w] => (count(p)?, count(w)?, Sampling::DEFAULT_WARM),
            [p, w, n] => (count(p)?, count(w)?, count(n)?),
            _ => return Err("give PERIOD:WINDOW or PERIOD:WINDOW:WARM, like 100M:1M".to_owned()),
        };
        if window == 0 || window > period {
            return Err(format!(
                "the window ({window}) must be at least 1 and at most the period ({period})"
            ));
        }
        if warm == 0 {
            return Err("the warm-up summary needs at least 1 reference".to_owned());
        }
        Ok(Sampling {
            period,
            window,
            warm,
        })
    }
}

/// Events of each kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct EventCounts {
    /// [`Event::Ref`](super::Event::Ref).
    pub refs: u64,
    /// [`Event::CodePage`](super::Event::CodePage).
    pub code_pages: u64,
    /// [`Event::Switch`](super::Event::Switch).
    pub switches: u64,
    /// [`Event::Map`](super::Event::Map).
    pub maps: u64,
    /// [`Event::Syscall`](super::Event::Syscall).
    pub syscalls: u64,
    /// [`Event::KernelWrite`](super::Event::KernelWrite).
    pub kernel_writes: u64,
    /// [`Event::Fork`](super::Event::Fork).
    pub forks: u64,
    /// [`Event::Exec`](super::Event::Exec).
    pub execs: u64,
    /// [`Event::Exit`](super::Event::Exit).
    pub exits: u64,
    /// [`Event::Window`](super::Event::Window).
    pub windows: u64,
    /// [`Event::Warm`](super::Event::Warm).
    pub warms: u64,
}

impl EventCounts {
    /// All events.
    pub fn total(&self) -> u64 {
        self.refs
            + self.code_pages
            + self.switches
            + self.maps
            + self.syscalls
            + self.kernel_writes
            + self.forks
            + self.execs
            + self.exits
            + self.windows
            + self.warms
    }
}

/// The totals of a trace, counted by the writer and checked by the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Totals {
    /// Events by kind (`events.refs` references, `events.syscalls` system calls).
    pub events: EventCounts,
    /// References that read.
    pub loads: u64,
    /// References that write.
    pub stores: u64,
    /// Instructions: the sum of the references' and Window events' `insns`.
    pub instructions: u64,
    /// Distinct processes: pids of Switch events and of Fork children.
    pub processes: u64,
    /// Distinct threads: (pid, tid) pairs of Switch events.
    pub threads: u64,
    /// Chunks.
    pub chunks: u64,
    /// References the program made that a sampled recording did not write: the sum of the
    /// Window events' `skipped`. The program made `events.refs + unrecorded_refs`.
    pub unrecorded_refs: u64,
}

impl Totals {
    /// Every reference the program made, written or not.
    pub fn program_refs(&self) -> u64 {
        self.events.refs + self.unrecorded_refs
    }
}

/// The end of a finished trace: how the recording ended and the totals.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Trailer {
    /// The recording covers the whole run (false: it was cut short, see `end`).
    pub complete: bool,
    /// How the recording ended: `exited with status 0`, `interrupted (SIGINT)`, `program
    /// killed by signal 11`...
    pub end: String,
    /// What the trace holds.
    pub totals: Totals,
}
