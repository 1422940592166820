//! Writes an x86 trace: the header at creation, events into a buffer that becomes a
//! compressed, checksummed chunk each time it reaches about 1 MiB, and at [`Writer::finish`]
//! the last chunk, the trailer and the footer.

use super::codec::{encode, EncodeThread, Encoded, Threads};
use super::error::TraceError;
use super::event::Event;
use super::format::*;
use super::totals::Counter;
use ruzstd::encoding::{compress_to_vec, CompressionLevel};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// An x86 trace being written. Dropped without [`Writer::finish`] (an error, a panic), it
/// still writes the events pushed so far as a last whole chunk, but no trailer: readers then
/// need [`open_unfinished`](super::open_unfinished).
pub struct Writer {
    out: BufWriter<File>,
    /// Bytes written to `out` so far: the next block's offset.
    offset: u64,
    raw: Encoded,
    /// The chunk's bytes as stored: the tags, then the fields.
    joined: Vec<u8>,
    chunk_events: u32,
    /// The thread current when the pending chunk started.
    chunk_thread: (u32, u32),
    /// The thread current now.
    thread: (u32, u32),
    threads: Threads<EncodeThread>,
    counter: Counter,
    /// Encoded bytes that close a chunk ([`CHUNK_TARGET`]; smaller in tests).
    chunk_target: usize,
    finished: bool,
}

impl Writer {
    /// Creates (or truncates) `path` and writes the magic, the version and `header`.
    pub fn create(path: &Path, header: &Header) -> Result<Writer, TraceError> {
        let file = File::create(path).map_err(|source| TraceError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let json = serde_json::to_vec(header)
            .map_err(|e| TraceError::CorruptHeader(format!("cannot serialize: {e}")))?;
        let len = u32::try_from(json.len())
            .ok()
            .filter(|&n| n <= MAX_JSON)
            .ok_or_else(|| TraceError::CorruptHeader(format!("{} bytes of JSON", json.len())))?;
        let mut out = BufWriter::with_capacity(1 << 20, file);
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&len.to_le_bytes())?;
        out.write_all(&crc32fast::hash(&json).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(Writer {
            out,
            offset: PREFIX_LEN + u64::from(len),
            raw: Encoded::default(),
            joined: Vec::with_capacity(CHUNK_TARGET + MAX_PATH + 64),
            chunk_events: 0,
            chunk_thread: (NO_THREAD, NO_THREAD),
            thread: (NO_THREAD, NO_THREAD),
            threads: Threads::default(),
            counter: Counter::default(),
            chunk_target: CHUNK_TARGET,
            finished: false,
        })
    }

    /// Appends one event. An event the format cannot hold (a Ref of another size, an Exec
    /// path over [`MAX_PATH`] bytes) is an error and is not written.
    pub fn push(&mut self, e: &Event) -> Result<(), TraceError> {
        encode(&mut self.raw, e, &mut self.threads).map_err(TraceError::InvalidEvent)?;
        self.counter.count(e);
        self.chunk_events += 1;
        if let Event::Switch { pid, tid } = e {
            self.thread = (*pid, *tid);
        }
        if self.raw.len() >= self.chunk_target {
            self.write_chunk()?;
        }
        Ok(())
    }

    /// Closes chunks at `bytes` encoded bytes instead of [`CHUNK_TARGET`], so tests make many.
    #[cfg(test)]
    pub(crate) fn set_chunk_target(&mut self, bytes: usize) {
        self.chunk_target = bytes.min(CHUNK_TARGET);
    }

    /// The totals of the events pushed so far (`chunks`: chunks written so far).
    pub fn totals(&self) -> Totals {
        self.counter.totals
    }

    fn write_chunk(&mut self) -> Result<(), TraceError> {
        if self.chunk_events == 0 {
            return Ok(());
        }
        self.joined.clear();
        self.joined.extend_from_slice(&self.raw.tags);
        self.joined.extend_from_slice(&self.raw.data);
        let compressed = compress_to_vec(&self.joined[..], CompressionLevel::Fastest);
        let mut header = [0u8; CHUNK_HEADER_LEN];
        header[0] = BLOCK_CHUNK;
        // Both lengths fit: the buffer is closed at CHUNK_TARGET plus one event.
        header[1..5].copy_from_slice(&(self.joined.len() as u32).to_le_bytes());
        header[5..9].copy_from_slice(&(compressed.len() as u32).to_le_bytes());
        header[9..13].copy_from_slice(&self.chunk_events.to_le_bytes());
        header[13..17].copy_from_slice(&self.chunk_thread.0.to_le_bytes());
        header[17..21].copy_from_slice(&self.chunk_thread.1.to_le_bytes());
        header[21..25].copy_from_slice(&crc32fast::hash(&self.joined).to_le_bytes());
        let header_crc = crc32fast::hash(&header[..25]);
        header[25..29].copy_from_slice(&header_crc.to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(&compressed)?;
        self.offset += (CHUNK_HEADER_LEN + compressed.len()) as u64;
        self.counter.totals.chunks += 1;
        self.raw.clear();
        self.chunk_events = 0;
        self.chunk_thread = self.thread;
        self.threads.reset();
        Ok(())
    }

    /// Writes the last chunk, the trailer (`complete`, `end` and the totals) and the footer,
    /// and returns the trailer.
    pub fn finish(mut self, complete: bool, end: String) -> Result<Trailer, TraceError> {
        self.finished = true;
        self.write_chunk()?;
        let trailer = Trailer {
            complete,
            end,
            totals: self.counter.totals,
        };
        let json = serde_json::to_vec(&trailer)
            .map_err(|e| TraceError::CorruptTrailer(format!("cannot serialize: {e}")))?;
        let len = u32::try_from(json.len())
            .ok()
            .filter(|&n| n <= MAX_JSON)
            .ok_or_else(|| TraceError::CorruptTrailer(format!("{} bytes of JSON", json.len())))?;
        self.out.write_all(&[BLOCK_TRAILER])?;
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&crc32fast::hash(&json).to_le_bytes())?;
        self.out.write_all(&json)?;
        self.out.write_all(&self.offset.to_le_bytes())?;
        self.out.write_all(FOOTER_MAGIC)?;
        self.out.flush()?;
        Ok(trailer)
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        if !self.finished {
            // Best effort: the events so far become a whole chunk; BufWriter flushes on drop.
            let _ = self.write_chunk();
        }
    }
}
