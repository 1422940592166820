//! Why an x86 trace cannot be read or written: one line each, naming the problem.

use super::format::{OLDEST_VERSION, VERSION};
use std::io;

/// Why an x86 trace cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or created.
    #[error("cannot open {path}: {source}")]
    Open {
        /// The path given.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
    /// Reading or writing failed after the file was opened.
    #[error("x86 trace I/O error: {0}")]
    Io(#[from] io::Error),
    /// The file does not start with the x86 trace magic.
    #[error("not a vmlab x86 trace (bad magic)")]
    NotX86,
    /// The file is an e500 trace.
    #[error("not an x86 trace: this is a vmlab e500 trace (docs/e500-trace.md)")]
    E500,
    /// A version this reader does not know.
    #[error("x86 trace version {0} is not supported (this vmlab reads versions {OLDEST_VERSION} to {VERSION})")]
    Version(u32),
    /// The file ends inside the header or a chunk, or has no trailer.
    #[error("x86 trace is truncated at byte {0}")]
    Truncated(u64),
    /// The header cannot be decoded.
    #[error("x86 trace header is corrupt: {0}")]
    CorruptHeader(String),
    /// A chunk cannot be decoded.
    #[error("x86 trace chunk {index} (at byte {offset}) is corrupt: {what}")]
    CorruptChunk {
        /// The chunk's index, from 0.
        index: u64,
        /// The file offset of its header.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The trailer or the footer cannot be decoded.
    #[error("x86 trace trailer is corrupt: {0}")]
    CorruptTrailer(String),
    /// The events read do not add up to the trailer's totals.
    #[error("x86 trace totals mismatch: {0}")]
    TotalsMismatch(String),
    /// The writer was given an event the format cannot hold.
    #[error("cannot write x86 trace event: {0}")]
    InvalidEvent(String),
}
