//! Traces of x86-64 Linux programs recorded under QEMU user mode, with the processes they fork
//! and exec (format: `docs/x86-trace.md`).
//!
//! - [`event`]: the event model.
//! - [`mod@format`]: the header, trailer and totals, and the format's constants.
//! - [`writer`]: writes a trace event by event, in compressed, checksummed chunks.
//! - [`reader`]: streams a trace back, checking every chunk and the totals.
//! - [`summary`]: the statistics `vmlab trace info` prints.
//! - [`syscalls`]: x86-64 system call names.

mod codec;
pub mod error;
pub mod event;
pub mod format;
pub mod reader;
pub mod summary;
pub mod syscalls;
mod totals;
pub mod writer;

#[cfg(test)]
mod tests;

pub use error::TraceError;
pub use event::{Event, PROT_EXEC, PROT_READ, PROT_WRITE};
pub use format::{EventCounts, Header, Host, Sampling, Totals, Trailer};
pub use reader::{open, open_unfinished, read_trailer, Reader};
pub use summary::Summary;
pub use writer::Writer;
