//! Traces of a PowerPC e500v2 Linux guest, recorded under QEMU by the `e500rec` plugin of
//! `guests/e500/` (format: `docs/e500-trace.md`).
//!
//! - [`mod@format`]: the record types and the format's constants.
//! - [`reader`]: a streaming reader that checks version, structure and checksum.
//! - [`writer`]: the same format written from Rust (tests, tools).
//! - [`insn`]: which instructions are privileged, by class, and SPR names.
//! - [`summary`]: the statistics `vmlab trace info` prints, per phase.

pub mod format;
pub mod insn;
pub mod reader;
pub mod summary;
pub mod writer;

pub use format::{Event, ExceptionKind, Header, Phase, Record};
pub use reader::{open, Reader, TraceError};
pub use writer::Writer;
