//! The streaming reader: checks magic, version and header, reads the trailer through the
//! footer without scanning, then decompresses one chunk at a time, checking its lengths
//! against hard caps, its CRC-32 and its event count, and at the end the totals against the
//! trailer. Any truncation or corruption is a [`TraceError`], never a panic.

use super::codec::{Bases, Decoder, Threads};
use super::error::TraceError;
use super::event::Event;
use super::format::*;
use super::totals::{differences, Counter};
use ruzstd::decoding::FrameDecoder;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// The first bytes of an e500 trace as recorded (a zstd frame) and decompressed.
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const E500_MAGIC: &[u8; 8] = b"VMLE500T";

/// Reads an x86 trace event by event (also an [`Iterator`] of `Result<Event, TraceError>`).
pub struct Reader {
    file: BufReader<File>,
    /// The file offset of the next block.
    offset: u64,
    /// Where chunks must end: the trailer's offset, or the file's length without a trailer.
    chunks_end: u64,
    header: Header,
    trailer: Option<Trailer>,
    /// Opened by [`open_unfinished`]: the end of the whole chunks is the end of the stream.
    tolerant: bool,
    unfinished: Option<String>,
    compressed: Vec<u8>,
    /// The current chunk: its events' tags, then their fields.
    raw: Vec<u8>,
    /// The next tag's index (also the number of events decoded from the chunk).
    tag_pos: usize,
    /// Where the chunk's fields start (its event count) and the next field's offset.
    data_start: usize,
    pos: usize,
    /// Events of the current chunk not yet decoded.
    left: u32,
    zstd: FrameDecoder,
    /// Index and offset of the current chunk.
    chunk: u64,
    chunk_offset: u64,
    threads: Threads<Bases>,
    thread: (u32, u32),
    counter: Counter,
    done: bool,
}

/// Opens a finished trace: the header and, through the footer, the trailer. A file without a
/// footer (cut short, or still being recorded) is [`TraceError::Truncated`] at its length.
pub fn open(path: &Path) -> Result<Reader, TraceError> {
    Reader::open(path, false)
}

/// Opens a trace that may be unfinished (no trailer: the recording is still running, or its
/// writer died): its events are those of its whole chunks, and the stream ends cleanly after
/// the last one, [`Reader::unfinished`] then saying why there was no trailer. A finished
/// file reads exactly as with [`open`]. Corrupt chunks are errors either way.
pub fn open_unfinished(path: &Path) -> Result<Reader, TraceError> {
    Reader::open(path, true)
}

/// The trailer of a finished trace, read through the footer without reading the events.
pub fn read_trailer(path: &Path) -> Result<Trailer, TraceError> {
    let reader = open(path)?;
    reader
        .trailer
        .ok_or_else(|| TraceError::CorruptTrailer("missing".into()))
}

fn read_at(file: &mut BufReader<File>, offset: u64, buf: &mut [u8]) -> io::Result<()> {
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Reader {
    fn open(path: &Path, tolerant: bool) -> Result<Reader, TraceError> {
        let file = File::open(path).map_err(|source| TraceError::Open {
            path: path.display().to_string(),
            source,
        })?;
        let len = file.metadata()?.len();
        let mut file = BufReader::with_capacity(1 << 16, file);
        let mut prefix = [0u8; PREFIX_LEN as usize];
        let have = len.min(PREFIX_LEN) as usize;
        read_at(&mut file, 0, &mut prefix[..have])?;
        let magic_len = have.min(MAGIC.len());
        if prefix[..magic_len] != MAGIC[..magic_len] {
            return Err(
                if prefix.starts_with(&ZSTD_MAGIC) || prefix.starts_with(E500_MAGIC) {
                    TraceError::E500
                } else {
                    TraceError::NotX86
                },
            );
        }
        if have < 12 {
            return Err(TraceError::Truncated(len));
        }
        let version = u32_at(&prefix, 8);
        if !(OLDEST_VERSION..=VERSION).contains(&version) {
            return Err(TraceError::Version(version));
        }
        if have < PREFIX_LEN as usize {
            return Err(TraceError::Truncated(len));
        }
        let json_len = u32_at(&prefix, 12);
        if json_len > MAX_JSON {
            return Err(TraceError::CorruptHeader(format!(
                "{json_len} bytes of JSON"
            )));
        }
        let data_start = PREFIX_LEN + u64::from(json_len);
        if data_start > len {
            return Err(TraceError::Truncated(len));
        }
        let mut json = vec![0; json_len as usize];
        read_at(&mut file, PREFIX_LEN, &mut json)?;
        if crc32fast::hash(&json) != u32_at(&prefix, 16) {
            return Err(TraceError::CorruptHeader("checksum mismatch".into()));
        }
        let header: Header =
            serde_json::from_slice(&json).map_err(|e| TraceError::CorruptHeader(e.to_string()))?;
        let trailer = read_footer(&mut file, len, data_start)?;
        let chunks_end = match &trailer {
            Some((offset, _)) => *offset,
            None if tolerant => len,
            None => return Err(TraceError::Truncated(len)),
        };
        file.seek(SeekFrom::Start(data_start))?;
        let mut zstd = FrameDecoder::new();
        zstd.set_max_window_size(u64::from(MAX_CHUNK_RAW));
        Ok(Reader {
            file,
            offset: data_start,
            chunks_end,
            header,
            trailer: trailer.map(|(_, t)| t),
            tolerant,
            unfinished: None,
            compressed: Vec::new(),
            raw: Vec::new(),
            tag_pos: 0,
            data_start: 0,
            pos: 0,
            left: 0,
            zstd,
            chunk: 0,
            chunk_offset: data_start,
            threads: Threads::default(),
            thread: (NO_THREAD, NO_THREAD),
            counter: Counter::default(),
            done: false,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The trailer: always there when opened by [`open`]; None for an unfinished file opened
    /// by [`open_unfinished`].
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// Once the stream of an unfinished file has ended: why it ended without a trailer.
    pub fn unfinished(&self) -> Option<&str> {
        self.unfinished.as_deref()
    }

    /// The totals of the events read so far (`chunks`: chunks read so far).
    pub fn totals(&self) -> Totals {
        self.counter.totals
    }

    /// The next event, or None at the end (after checking the totals against the trailer).
    /// After an error, the stream is over.
    #[inline]
    pub fn next_event(&mut self) -> Result<Option<Event>, TraceError> {
        while self.left == 0 {
            if self.done {
                return Ok(None);
            }
            let more = self.end_chunk().and_then(|()| self.next_chunk());
            match more {
                Ok(true) => {}
                Ok(false) => {
                    self.done = true;
                    return Ok(None);
                }
                Err(e) => return Err(self.fail(e)),
            }
        }
        let (tags, data) = self.raw.split_at(self.data_start);
        let mut decoder = Decoder {
            tags,
            tag_pos: self.tag_pos,
            buf: data,
            pos: self.pos,
        };
        let event = decoder.event(&mut self.threads, &mut self.counter);
        self.tag_pos = decoder.tag_pos;
        self.pos = decoder.pos;
        match event {
            Ok(e) => {
                self.left -= 1;
                if let Event::Switch { pid, tid } = e {
                    self.thread = (pid, tid);
                }
                Ok(Some(e))
            }
            Err(what) => {
                let e = self.corrupt(what.to_string());
                Err(self.fail(e))
            }
        }
    }

    fn fail(&mut self, e: TraceError) -> TraceError {
        self.done = true;
        self.left = 0;
        e
    }

    fn corrupt(&self, what: String) -> TraceError {
        TraceError::CorruptChunk {
            index: self.chunk,
            offset: self.chunk_offset,
            what,
        }
    }

    /// Checks the current chunk held exactly its events.
    fn end_chunk(&mut self) -> Result<(), TraceError> {
        let data_len = self.raw.len() - self.data_start;
        if self.pos != data_len {
            return Err(self.corrupt(format!(
                "{} bytes after its last event",
                data_len - self.pos
            )));
        }
        Ok(())
    }

    /// The stream ends at `offset` without a trailer: the end in tolerant mode, else an error.
    fn cut(&mut self, offset: u64, why: String) -> Result<bool, TraceError> {
        if self.trailer.is_some() {
            Err(self.corrupt("it runs past the trailer".into()))
        } else if self.tolerant {
            self.unfinished = Some(why);
            Ok(false)
        } else {
            Err(TraceError::Truncated(offset))
        }
    }

    /// Loads the next chunk; false at the end of the chunks.
    fn next_chunk(&mut self) -> Result<bool, TraceError> {
        let chunks = self.counter.totals.chunks;
        self.chunk = chunks;
        self.chunk_offset = self.offset;
        if self.offset == self.chunks_end {
            return match self.trailer.clone() {
                Some(t) => self.check_totals(&t).map(|()| false),
                None => self.cut(
                    self.offset,
                    format!("no trailer; the file ends after chunk {chunks}"),
                ),
            };
        }
        let mut header = [0u8; CHUNK_HEADER_LEN];
        if self.offset + CHUNK_HEADER_LEN as u64 > self.chunks_end {
            return self.cut(
                self.chunks_end,
                format!(
                    "no trailer; {} bytes of an unfinished chunk after chunk {chunks}",
                    self.chunks_end - self.offset
                ),
            );
        }
        self.file.read_exact(&mut header)?;
        if header[0] == BLOCK_TRAILER && self.trailer.is_none() {
            return self.cut(
                self.offset,
                format!("an unfinished trailer after chunk {chunks}"),
            );
        }
        if header[0] != BLOCK_CHUNK {
            return Err(self.corrupt(format!("unknown block tag {:#04x}", header[0])));
        }
        if crc32fast::hash(&header[..25]) != u32_at(&header, 25) {
            return Err(self.corrupt("header checksum mismatch".into()));
        }
        let raw_len = u32_at(&header, 1);
        let compressed_len = u32_at(&header, 5);
        let events = u32_at(&header, 9);
        let thread = (u32_at(&header, 13), u32_at(&header, 17));
        let crc = u32_at(&header, 21);
        if raw_len > MAX_CHUNK_RAW || compressed_len > MAX_CHUNK_COMPRESSED {
            return Err(self.corrupt(format!(
                "lengths {raw_len}/{compressed_len} exceed the caps {MAX_CHUNK_RAW}/{MAX_CHUNK_COMPRESSED}"
            )));
        }
        if events == 0 || events > raw_len {
            return Err(self.corrupt(format!("{events} events in {raw_len} bytes")));
        }
        if thread != self.thread {
            return Err(self.corrupt(format!(
                "starts in thread {thread:?}, the stream is in {:?}",
                self.thread
            )));
        }
        let data = self.offset + CHUNK_HEADER_LEN as u64;
        let end = data + u64::from(compressed_len);
        if end > self.chunks_end {
            return self.cut(
                self.chunks_end,
                format!(
                    "no trailer; chunk {chunks} is cut after {} of its {compressed_len} bytes",
                    self.chunks_end - data
                ),
            );
        }
        self.compressed.resize(compressed_len as usize, 0);
        self.file.read_exact(&mut self.compressed)?;
        self.raw.resize(raw_len as usize, 0);
        match self.zstd.decode_all(&self.compressed, &mut self.raw) {
            Ok(n) if n == raw_len as usize => {}
            Ok(n) => return Err(self.corrupt(format!("decompresses to {n} bytes, not {raw_len}"))),
            Err(e) => return Err(self.corrupt(format!("undecodable: {e}"))),
        }
        let computed = crc32fast::hash(&self.raw);
        if computed != crc {
            return Err(self.corrupt(format!(
                "CRC mismatch (stored {crc:#010x}, computed {computed:#010x})"
            )));
        }
        self.offset = end;
        self.data_start = events as usize;
        self.tag_pos = 0;
        self.pos = 0;
        self.left = events;
        self.threads.reset();
        self.counter.totals.chunks += 1;
        Ok(true)
    }

    fn check_totals(&self, trailer: &Trailer) -> Result<(), TraceError> {
        let seen = self.counter.totals;
        if seen != trailer.totals {
            return Err(TraceError::TotalsMismatch(format!(
                "trailer/events: {}",
                differences(&trailer.totals, &seen)
            )));
        }
        Ok(())
    }
}

/// The trailer's offset and the trailer, when the file ends with a footer.
fn read_footer(
    file: &mut BufReader<File>,
    len: u64,
    data_start: u64,
) -> Result<Option<(u64, Trailer)>, TraceError> {
    let least = data_start + (TRAILER_HEADER_LEN + FOOTER_LEN) as u64;
    if len < least {
        return Ok(None);
    }
    let mut footer = [0u8; FOOTER_LEN];
    read_at(file, len - FOOTER_LEN as u64, &mut footer)?;
    if footer[8..] != FOOTER_MAGIC[..] {
        return Ok(None);
    }
    let bad = |what: String| Err(TraceError::CorruptTrailer(what));
    let mut offset = [0u8; 8];
    offset.copy_from_slice(&footer[..8]);
    let offset = u64::from_le_bytes(offset);
    if offset < data_start || offset > len - (TRAILER_HEADER_LEN + FOOTER_LEN) as u64 {
        return bad(format!("the footer points at byte {offset}"));
    }
    let mut head = [0u8; TRAILER_HEADER_LEN];
    read_at(file, offset, &mut head)?;
    let json_len = u32_at(&head, 1);
    if head[0] != BLOCK_TRAILER
        || json_len > MAX_JSON
        || offset + (TRAILER_HEADER_LEN + FOOTER_LEN) as u64 + u64::from(json_len) != len
    {
        return bad(format!(
            "no trailer at byte {offset}, where the footer points"
        ));
    }
    let mut json = vec![0; json_len as usize];
    file.read_exact(&mut json)?;
    if crc32fast::hash(&json) != u32_at(&head, 5) {
        return bad("checksum mismatch".into());
    }
    let trailer =
        serde_json::from_slice(&json).map_err(|e| TraceError::CorruptTrailer(e.to_string()))?;
    Ok(Some((offset, trailer)))
}

impl Iterator for Reader {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}
