//! The streaming reader: decompresses as it goes, checks the magic, the version, every
//! record's structure, the end record's totals and the CRC-32, and never holds more than a
//! buffer of the trace. Any truncation or corruption is a [`TraceError`], never a panic.

use super::format::*;
use smallvec::SmallVec;
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Why a trace cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Open {
        /// The path given.
        path: String,
        /// The I/O error.
        source: io::Error,
    },
    /// Not an e500 trace.
    #[error(
        "not a vmlab e500 trace (bad magic); expected a file written by guests/e500's recorder"
    )]
    BadMagic,
    /// A version this reader does not know.
    #[error("e500 trace version {0} is not supported (this vmlab reads version {VERSION})")]
    Version(u32),
    /// The stream ends before the end record.
    #[error("e500 trace is truncated at byte {0} of the decompressed stream (no end record)")]
    Truncated(u64),
    /// A record that cannot be decoded.
    #[error("e500 trace is corrupt at byte {offset} of the decompressed stream: {what}")]
    Corrupt {
        /// Where, in the decompressed stream.
        offset: u64,
        /// What is wrong.
        what: String,
    },
    /// The end record's CRC does not match the bytes read.
    #[error("e500 trace checksum mismatch: stored {stored:#010x}, computed {computed:#010x} (the file is corrupt)")]
    Checksum {
        /// The CRC in the end record.
        stored: u32,
        /// The CRC of what was read.
        computed: u32,
    },
    /// The zstd layer failed.
    #[error("e500 trace cannot be decompressed: {0}")]
    Decompress(String),
}

/// A buffered byte source that keeps a CRC-32 of everything consumed.
struct Source<R> {
    inner: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    hashed: usize,
    base: u64,
    crc: crc32fast::Hasher,
}

impl<R: Read> Source<R> {
    fn new(inner: R) -> Self {
        Source {
            inner,
            buf: vec![0; 1 << 16].into_boxed_slice(),
            pos: 0,
            end: 0,
            hashed: 0,
            base: 0,
            crc: crc32fast::Hasher::new(),
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    fn refill(&mut self) -> Result<bool, TraceError> {
        self.crc.update(&self.buf[self.hashed..self.pos]);
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        self.hashed = 0;
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Err(TraceError::Truncated(self.offset()))
                }
                Err(e) => return Err(TraceError::Decompress(e.to_string())),
            }
        }
    }

    fn byte(&mut self) -> Result<u8, TraceError> {
        if self.pos == self.end && !self.refill()? {
            return Err(TraceError::Truncated(self.offset()));
        }
        let b = self.buf[self.pos];
        self.pos += 1;
        Ok(b)
    }

    /// True when the stream has no byte left.
    fn at_eof(&mut self) -> Result<bool, TraceError> {
        Ok(self.pos == self.end && !self.refill()?)
    }

    fn bytes(&mut self, n: usize) -> Result<Vec<u8>, TraceError> {
        let mut v = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            v.push(self.byte()?);
        }
        Ok(v)
    }

    fn u32le(&mut self) -> Result<u32, TraceError> {
        let b = [self.byte()?, self.byte()?, self.byte()?, self.byte()?];
        Ok(u32::from_le_bytes(b))
    }

    fn varint(&mut self) -> Result<u64, TraceError> {
        let start = self.offset();
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                if shift == 63 && b > 1 {
                    break;
                }
                return Ok(v);
            }
        }
        Err(TraceError::Corrupt {
            offset: start,
            what: "varint longer than 64 bits".into(),
        })
    }

    fn signed(&mut self) -> Result<i64, TraceError> {
        let z = self.varint()?;
        Ok((z >> 1) as i64 ^ -((z & 1) as i64))
    }

    fn crc_so_far(&mut self) -> u32 {
        self.crc.update(&self.buf[self.hashed..self.pos]);
        self.hashed = self.pos;
        self.crc.clone().finalize()
    }
}

/// Largest text section accepted (System.map of the guest kernel is well under 1 MiB).
const MAX_SECTION: u64 = 64 << 20;

/// Reads an e500 trace record by record (an [`Iterator`] of `Result<Event, TraceError>`).
pub struct Reader<R> {
    src: Source<R>,
    header: Header,
    last_pc: u32,
    last_vaddr: u32,
    records: u64,
    user_insns: u64,
    kernel_insns: u64,
    done: bool,
    totals: Option<Totals>,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the header of a decompressed trace stream.
    pub fn new(inner: R) -> Result<Self, TraceError> {
        let mut src = Source::new(inner);
        let magic = src.bytes(MAGIC.len()).map_err(|e| match e {
            TraceError::Truncated(_) => TraceError::BadMagic,
            e => e,
        })?;
        if magic != MAGIC {
            return Err(TraceError::BadMagic);
        }
        let version = src.u32le()?;
        if version != VERSION {
            return Err(TraceError::Version(version));
        }
        let mut text = || -> Result<String, TraceError> {
            let at = src.offset();
            let len = src.varint()?;
            if len > MAX_SECTION {
                return Err(corrupt(at, format!("header section of {len} bytes")));
            }
            let bytes = src.bytes(len as usize)?;
            String::from_utf8(bytes).map_err(|_| corrupt(at, "header section is not UTF-8".into()))
        };
        let header = Header {
            meta: text()?,
            system_map: text()?,
            phases_text: text()?,
        };
        Ok(Reader {
            src,
            header,
            last_pc: 0,
            last_vaddr: 0,
            records: 0,
            user_insns: 0,
            kernel_insns: 0,
            done: false,
            totals: None,
        })
    }

    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The end record's totals, once the whole trace has been read and checked.
    pub fn totals(&self) -> Option<Totals> {
        self.totals
    }

    fn u32_field(&mut self, what: &str) -> Result<u32, TraceError> {
        let at = self.src.offset();
        let v = self.src.varint()?;
        u32::try_from(v).map_err(|_| corrupt(at, format!("{what} {v:#x} exceeds 32 bits")))
    }

    fn delta(&mut self, last: u32, what: &str) -> Result<u32, TraceError> {
        let at = self.src.offset();
        let d = self.src.signed()?;
        let v = i64::from(last) + d;
        u32::try_from(v).map_err(|_| corrupt(at, format!("{what} out of the 32-bit space")))
    }

    fn pc(&mut self) -> Result<u32, TraceError> {
        let pc = self.delta(self.last_pc, "pc")?;
        self.last_pc = pc;
        Ok(pc)
    }

    fn record(&mut self) -> Result<Option<Event>, TraceError> {
        let at = self.src.offset();
        let tag = self.src.byte()?;
        if tag == TAG_END {
            self.finish(at)?;
            return Ok(None);
        }
        let user_insns = self.src.varint()?;
        let kernel_insns = self.src.varint()?;
        let record = match tag {
            TAG_PRIV => {
                let pc = self.pc()?;
                let word = self.src.u32le()?;
                let flags = self.src.byte()?;
                let n = (flags & 0x7F) as usize;
                if n > MAX_PRIV_VALUES {
                    return Err(corrupt(at, format!("{n} values in a privileged record")));
                }
                let mut values = SmallVec::new();
                for _ in 0..n {
                    values.push(self.u32_field("value")?);
                }
                Record::Priv {
                    pc,
                    word,
                    values,
                    gprs_unknown: flags & 0x80 != 0,
                }
            }
            TAG_USER_SC => Record::UserSyscall {
                pc: self.pc()?,
                number: self.u32_field("syscall number")?,
            },
            TAG_EXC => {
                let k = self.src.byte()?;
                Record::Exception {
                    kind: ExceptionKind(k & 0x7F),
                    by_branch: k & 0x80 != 0,
                    vector: self.pc()?,
                    srr0: self.u32_field("srr0")?,
                    srr1: self.u32_field("srr1")?,
                    dear: self.u32_field("dear")?,
                    esr: self.u32_field("esr")?,
                }
            }
            TAG_MARK => {
                let id = self.src.varint()?;
                Record::Marker {
                    id: u16::try_from(id).map_err(|_| corrupt(at, format!("marker {id:#x}")))?,
                }
            }
            TAG_BOOT_END => Record::BootEnd { pc: self.pc()? },
            t if t & 0xF0 == TAG_MEM => {
                let pc = self.pc()?;
                let vaddr = self.delta(self.last_vaddr, "address")?;
                self.last_vaddr = vaddr;
                let off = self.src.signed()?;
                let paddr = i64::from(vaddr.wrapping_sub(KERNEL_BASE)) + off;
                let count = self.u32_field("count")?;
                if count == 0 {
                    return Err(corrupt(at, "memory record with a count of 0".into()));
                }
                Record::Mem {
                    pc,
                    vaddr,
                    paddr: u64::try_from(paddr)
                        .map_err(|_| corrupt(at, "negative physical address".into()))?,
                    store: t & TAG_MEM_STORE != 0,
                    size_log2: t & 3,
                    count,
                }
            }
            t => return Err(corrupt(at, format!("unknown record tag {t:#04x}"))),
        };
        self.records += 1;
        self.user_insns += user_insns;
        self.kernel_insns += kernel_insns;
        Ok(Some(Event {
            user_insns,
            kernel_insns,
            record,
        }))
    }

    fn finish(&mut self, at: u64) -> Result<(), TraceError> {
        let totals = Totals {
            records: self.src.varint()?,
            user_insns: self.src.varint()?,
            kernel_insns: self.src.varint()?,
        };
        let computed = self.src.crc_so_far();
        let stored = self.src.u32le()?;
        if stored != computed {
            return Err(TraceError::Checksum { stored, computed });
        }
        let seen = Totals {
            records: self.records,
            user_insns: self.user_insns,
            kernel_insns: self.kernel_insns,
        };
        if totals != seen {
            return Err(corrupt(
                at,
                format!("end record says {totals:?}, the records add up to {seen:?}"),
            ));
        }
        if !self.src.at_eof()? {
            return Err(corrupt(
                self.src.offset(),
                "data after the end record".into(),
            ));
        }
        self.totals = Some(totals);
        Ok(())
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Event, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.record() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

fn corrupt(offset: u64, what: String) -> TraceError {
    TraceError::Corrupt { offset, what }
}

/// Decompresses a zstd stream on the fly; other input is read as it is.
pub fn decompress<'a, R: Read + 'a>(mut inner: R) -> Result<Box<dyn Read + 'a>, TraceError> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match inner.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(TraceError::Decompress(e.to_string())),
        }
    }
    let chained = io::Cursor::new(head[..n].to_vec()).chain(inner);
    if n == 4 && head == ZSTD_MAGIC {
        let d = ruzstd::decoding::StreamingDecoder::new(chained)
            .map_err(|e| TraceError::Decompress(e.to_string()))?;
        Ok(Box::new(d))
    } else {
        Ok(Box::new(chained))
    }
}

/// Opens a trace file (zstd-compressed, as recorded, or raw) and reads its header.
pub fn open(path: &Path) -> Result<Reader<Box<dyn Read>>, TraceError> {
    let file = File::open(path).map_err(|source| TraceError::Open {
        path: path.display().to_string(),
        source,
    })?;
    Reader::new(decompress(io::BufReader::new(file))?)
}
