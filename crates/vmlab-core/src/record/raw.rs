//! The recorder plugin's raw files (`recorder/x86/x86rec.c`): one per process image, a header
//! then blocks of one thread's records. Indexed without reading the blocks; a block is read
//! and decoded when the merge reaches it. docs/x86-trace.md ("Raw files") has the layout.

use super::RecordError;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const RAW_MAGIC: &[u8; 8] = b"VMLXRAW1";
const BLOCK_MAGIC: u32 = 0x314b_4c42;
const BLOCK_HEADER: u64 = 20;
/// A block is at most the plugin's buffer (256 KiB); anything larger is corruption.
const MAX_BLOCK: u32 = 1 << 20;
/// Paths in the header are at most this long.
const MAX_PATH: u32 = 1 << 16;

/// How a process image began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// The program `vmlab record` started.
    Root,
    /// A program exec'd by a recorded process (same host pid as the image before it).
    Exec,
    /// The child of a fork: `parent` is the forking process's host pid, `ordinal` which of
    /// the parent image's forks (from 0).
    Fork {
        /// The parent's host pid.
        parent: u32,
        /// The parent image's fork count when it forked.
        ordinal: u32,
    },
}

/// Where one block lies in its file.
#[derive(Clone, Copy, Debug)]
pub struct BlockRef {
    /// The host thread that wrote it.
    pub tid: u32,
    /// CLOCK_MONOTONIC nanoseconds of its first record.
    pub stamp: u64,
    /// Byte offset of its records.
    pub offset: u64,
    /// Bytes of records.
    pub len: u32,
}

/// One raw file: its header and block index.
#[derive(Debug)]
pub struct RawImage {
    /// The file.
    pub path: PathBuf,
    /// How the image began.
    pub kind: ImageKind,
    /// The host process id.
    pub host_pid: u32,
    /// CLOCK_MONOTONIC nanoseconds when the file was created.
    pub stamp: u64,
    /// The program as QEMU loaded it.
    pub program: String,
    /// QEMU's `-d page` log of this image (empty for a fork child, which inherits its map).
    pub maps: String,
    /// The blocks, in file order.
    pub blocks: Vec<BlockRef>,
    /// Bytes past the last whole block (a block cut short: the process died writing it).
    pub torn_bytes: u64,
    file: File,
}

fn corrupt(path: &Path, what: impl std::fmt::Display) -> RecordError {
    RecordError::Raw(format!("{}: {what}", path.display()))
}

impl RawImage {
    /// Reads the header and indexes the blocks of `path`.
    pub fn open(path: &Path) -> Result<RawImage, RecordError> {
        let io = |e: std::io::Error| corrupt(path, e);
        let mut file = File::open(path).map_err(io)?;
        let size = file.metadata().map_err(io)?.len();
        let mut head = [0u8; 32];
        file.read_exact(&mut head)
            .map_err(|_| corrupt(path, "shorter than a raw header"))?;
        if &head[..8] != RAW_MAGIC {
            return Err(corrupt(path, "not a raw recorder file (bad magic)"));
        }
        let word = |at: usize| u32::from_le_bytes(head[at..at + 4].try_into().expect("4 bytes"));
        let kind = match word(8) {
            0 => ImageKind::Root,
            1 => ImageKind::Exec,
            2 => ImageKind::Fork {
                parent: word(16),
                ordinal: word(20),
            },
            other => return Err(corrupt(path, format!("unknown image kind {other}"))),
        };
        let host_pid = word(12);
        let stamp = u64::from_le_bytes(head[24..32].try_into().expect("8 bytes"));
        let string = |file: &mut File| -> Result<String, RecordError> {
            let mut n = [0u8; 4];
            file.read_exact(&mut n)
                .map_err(|_| corrupt(path, "header cut short"))?;
            let n = u32::from_le_bytes(n);
            if n > MAX_PATH {
                return Err(corrupt(path, "header path too long"));
            }
            let mut bytes = vec![0u8; n as usize];
            file.read_exact(&mut bytes)
                .map_err(|_| corrupt(path, "header cut short"))?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        };
        let program = string(&mut file)?;
        let maps = string(&mut file)?;
        let mut at = file.stream_position().map_err(io)?;
        let mut blocks = Vec::new();
        let mut header = [0u8; BLOCK_HEADER as usize];
        while at + BLOCK_HEADER <= size {
            file.read_exact_at(&mut header, at).map_err(io)?;
            let w = |i: usize| u32::from_le_bytes(header[i..i + 4].try_into().expect("4 bytes"));
            if w(0) != BLOCK_MAGIC {
                return Err(corrupt(path, format!("bad block magic at byte {at}")));
            }
            let len = w(16);
            if len > MAX_BLOCK {
                return Err(corrupt(path, format!("block of {len} bytes at byte {at}")));
            }
            if at + BLOCK_HEADER + u64::from(len) > size {
                break;
            }
            blocks.push(BlockRef {
                tid: w(4),
                stamp: u64::from_le_bytes(header[8..16].try_into().expect("8 bytes")),
                offset: at + BLOCK_HEADER,
                len,
            });
            at += BLOCK_HEADER + u64::from(len);
        }
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        Ok(RawImage {
            path: path.to_owned(),
            kind,
            host_pid,
            stamp,
            program,
            maps,
            blocks,
            torn_bytes: size - at,
            file,
        })
    }

    /// The address the image's first successful mmap returned (None: it made none).
    pub fn first_mmap(&self) -> Result<Option<u64>, RecordError> {
        const MMAP: u64 = crate::trace::x86::syscalls::MMAP as u64;
        let mut buf = Vec::new();
        for i in 0..self.blocks.len() {
            self.read_block(i, &mut buf)?;
            let mut decoder = BlockDecoder::new(&buf);
            while let Some(record) = decoder.next_record().map_err(|e| corrupt(&self.path, e))? {
                if let RawRecord::Sysret { nr: MMAP, ret } = record {
                    if !(-4095..0).contains(&ret) {
                        return Ok(Some(ret as u64));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The records of block `i`, into `buf`.
    pub fn read_block(&self, i: usize, buf: &mut Vec<u8>) -> Result<(), RecordError> {
        let block = self.blocks[i];
        buf.resize(block.len as usize, 0);
        self.file
            .read_exact_at(buf, block.offset)
            .map_err(|e| corrupt(&self.path, e))
    }
}

/// One record of a block, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawRecord {
    /// A data reference.
    Ref {
        /// Virtual address.
        addr: u64,
        /// Bytes (1, 2, 4 or 8).
        size: u8,
        /// A store.
        write: bool,
        /// Instructions since the thread's previous reference.
        insns: u64,
    },
    /// Instructions now come from this 4 KiB page.
    CodePage(u64),
    /// A system call's entry.
    Syscall {
        /// Its number.
        nr: u64,
        /// Its six arguments.
        args: [u64; 6],
    },
    /// A system call's return.
    Sysret {
        /// Its number.
        nr: u64,
        /// What it returned.
        ret: i64,
    },
    /// The kernel wrote `[addr, addr + len)` for the last call.
    KernelWrite {
        /// First byte.
        addr: u64,
        /// Bytes.
        len: u64,
    },
    /// The image's `n`-th fork (from 0) is being made.
    ForkPoint(u64),
    /// exit_group with this status.
    ExitGroup(i64),
    /// The thread exits.
    ThreadExit,
    /// A sampled recording's window of the thread opens or closes; `skipped` references were
    /// made and not written since the thread's previous Window record.
    Window {
        /// Opens (true) or closes.
        open: bool,
        /// References not written.
        skipped: u64,
        /// Instructions since the thread's last written reference.
        insns: u64,
    },
    /// Up to [`WARM_PER_RECORD`] lines of the warm-up summary before a window, in order.
    Warm {
        /// Line numbers (address / 64); the first `count` are valid.
        lines: [u64; WARM_PER_RECORD],
        /// How many.
        count: u8,
    },
}

/// The most lines one Warm record holds.
pub const WARM_PER_RECORD: usize = 8;

/// Decodes one block's records in order, with the block's fresh delta state.
pub struct BlockDecoder<'a> {
    bytes: &'a [u8],
    at: usize,
    last_addr: u64,
}

impl<'a> BlockDecoder<'a> {
    /// A decoder over one block's records.
    pub fn new(bytes: &'a [u8]) -> Self {
        BlockDecoder {
            bytes,
            at: 0,
            last_addr: 0,
        }
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// The next record; `Ok(None)` at the block's end, an error for a record cut short or of
    /// an unknown kind.
    pub fn next_record(&mut self) -> Result<Option<RawRecord>, String> {
        let start = self.at;
        let Some(tag) = self.byte() else {
            return Ok(None);
        };
        let cut = || format!("record cut short at byte {start} of its block");
        let record = if tag < 0x80 {
            let small = u64::from(tag >> 3);
            let insns = if small == 15 {
                self.varint().ok_or_else(cut)?
            } else {
                small
            };
            let delta = self.zigzag().ok_or_else(cut)?;
            self.last_addr = self.last_addr.wrapping_add(delta as u64);
            RawRecord::Ref {
                addr: self.last_addr,
                size: 1 << (tag & 3),
                write: tag & 4 != 0,
                insns,
            }
        } else {
            match tag {
                0x80 => RawRecord::CodePage(self.varint().ok_or_else(cut)?),
                0x81 => {
                    let nr = self.varint().ok_or_else(cut)?;
                    let mut args = [0u64; 6];
                    for a in &mut args {
                        *a = self.varint().ok_or_else(cut)?;
                    }
                    RawRecord::Syscall { nr, args }
                }
                0x82 => RawRecord::Sysret {
                    nr: self.varint().ok_or_else(cut)?,
                    ret: self.zigzag().ok_or_else(cut)?,
                },
                0x83 => RawRecord::KernelWrite {
                    addr: self.varint().ok_or_else(cut)?,
                    len: self.varint().ok_or_else(cut)?,
                },
                0x84 => RawRecord::ForkPoint(self.varint().ok_or_else(cut)?),
                0x85 => RawRecord::ExitGroup(self.zigzag().ok_or_else(cut)?),
                0x86 => RawRecord::ThreadExit,
                0x87 => RawRecord::Window {
                    open: self.byte().ok_or_else(cut)? != 0,
                    skipped: self.varint().ok_or_else(cut)?,
                    insns: self.varint().ok_or_else(cut)?,
                },
                0x88 => {
                    let count = self.byte().ok_or_else(cut)?;
                    if count == 0 || usize::from(count) > WARM_PER_RECORD {
                        return Err(format!("a warm record of {count} lines at byte {start}"));
                    }
                    let mut lines = [0u64; WARM_PER_RECORD];
                    lines[0] = self.varint().ok_or_else(cut)?;
                    for i in 1..usize::from(count) {
                        let delta = self.zigzag().ok_or_else(cut)?;
                        lines[i] = lines[i - 1].wrapping_add(delta as u64);
                    }
                    RawRecord::Warm { lines, count }
                }
                other => return Err(format!("unknown record tag {other:#04x} at byte {start}")),
            }
        };
        Ok(Some(record))
    }
}

/// A region of QEMU's guest page layout: `[start, end)` with PROT_READ/WRITE/EXEC bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Region {
    /// First byte.
    pub start: u64,
    /// First byte past it.
    pub end: u64,
    /// PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4.
    pub prot: u8,
}

/// The page layout the program starts with, from QEMU's `-d page` log: the layout after the
/// binary load and after the pages QEMU maps for itself next (x86-64 QEMU 7.2 maps its signal
/// trampolines after loading, and the program may use them), up to the first layout change the
/// program makes. That is found by `first_mmap`, the address the image's first successful mmap
/// returned: the layout is the last one after the load that does not hold it yet (with no mmap,
/// the layout after the load). None if the log has no layout after a binary load.
pub fn initial_layout(log: &str, first_mmap: Option<u64>) -> Option<Vec<Region>> {
    let mut lines = log
        .lines()
        .skip_while(|l| !l.starts_with("page layout changed following binary load"))
        .peekable();
    lines.peek()?;
    let mut layout: Option<Vec<Region>> = None;
    while let Some(line) = lines.next() {
        if !line.starts_with("page layout changed") {
            continue;
        }
        lines.next(); // the column header
        let mut block = Vec::new();
        while let Some(region) = lines.peek().and_then(|l| region_line(l)) {
            block.push(region);
            lines.next();
        }
        let holds = |a: u64| block.iter().any(|r| (r.start..r.end).contains(&a));
        match first_mmap {
            Some(a) if layout.is_some() && holds(a) => break,
            None if layout.is_some() => break,
            _ => layout = Some(block),
        }
    }
    layout
}

/// One `start-end size prot` line of a layout.
fn region_line(line: &str) -> Option<Region> {
    let (range, rest) = line.split_once(' ')?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (
        u64::from_str_radix(start, 16).ok()?,
        u64::from_str_radix(end, 16).ok()?,
    );
    let flags = rest.split_whitespace().nth(1).unwrap_or("");
    let prot = flags.bytes().fold(0u8, |p, c| match c {
        b'r' => p | 1,
        b'w' => p | 2,
        b'x' => p | 4,
        _ => p,
    });
    Some(Region { start, end, prot })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_record_kind() {
        // A store of 8 bytes at 0x1000 after 3 instructions; a load of 1 byte at 0xff8 after
        // 20 (escaped) instructions; then one of each other record.
        let mut b = vec![0x04 | 0x03 | (3 << 3), 0x80, 0x40];
        b.extend([(15 << 3), 20, 0x0f]); // delta -8: zigzag 15
        b.extend([0x80, 0x05]);
        b.extend([0x81, 0x3c, 1, 2, 3, 4, 5, 6]);
        b.extend([0x82, 0x3c, 0x03]); // ret -2
        b.extend([0x83, 0x10, 0x20, 0x84, 0x02, 0x85, 0x02, 0x86]);
        let mut d = BlockDecoder::new(&b);
        let mut got = Vec::new();
        while let Some(r) = d.next_record().unwrap() {
            got.push(r);
        }
        assert_eq!(
            got,
            vec![
                RawRecord::Ref {
                    addr: 0x1000,
                    size: 8,
                    write: true,
                    insns: 3
                },
                RawRecord::Ref {
                    addr: 0xff8,
                    size: 1,
                    write: false,
                    insns: 20
                },
                RawRecord::CodePage(5),
                RawRecord::Syscall {
                    nr: 60,
                    args: [1, 2, 3, 4, 5, 6]
                },
                RawRecord::Sysret { nr: 60, ret: -2 },
                RawRecord::KernelWrite {
                    addr: 0x10,
                    len: 0x20
                },
                RawRecord::ForkPoint(2),
                RawRecord::ExitGroup(1),
                RawRecord::ThreadExit,
            ]
        );
    }

    #[test]
    fn a_record_cut_short_is_an_error_not_a_panic() {
        for bytes in [&[0x05u8][..], &[0x81, 0x3c, 1], &[0xff], &[0x78]] {
            let mut d = BlockDecoder::new(bytes);
            assert!(d.next_record().is_err(), "{bytes:?}");
        }
    }

    #[test]
    fn reads_the_layout_after_binary_load() {
        let log = "page layout changed following mmap\nstart end size prot\n\
            0000004000000000-000000400200a000 000000000200a000 ---\n\
            page layout changed following binary load\n\
            start            end              size             prot\n\
            0000004000000000-0000004000004000 0000000000004000 r--\n\
            0000004000004000-000000400001a000 0000000000016000 r-x\n\
            0000004002027000-0000004002827000 0000000000800000 rw-\n\
            start_brk   0x0000000000000000\n";
        assert_eq!(
            initial_layout(log, None).unwrap(),
            vec![
                Region {
                    start: 0x40_0000_0000,
                    end: 0x40_0000_4000,
                    prot: 1
                },
                Region {
                    start: 0x40_0000_4000,
                    end: 0x40_0001_a000,
                    prot: 5
                },
                Region {
                    start: 0x40_0202_7000,
                    end: 0x40_0282_7000,
                    prot: 3
                },
            ]
        );
        assert_eq!(initial_layout("nothing here", None), None);
    }

    /// QEMU maps its signal trampolines after the load; the program's first mmap comes after
    /// them. The layout keeps QEMU's pages and stops before the program's.
    #[test]
    fn keeps_qemus_own_pages_up_to_the_programs_first_mmap() {
        let block = |regions: &[&str]| {
            format!(
                "start            end              size             prot\n{}\n",
                regions.join("\n")
            )
        };
        let load = "0000004000000000-0000004000004000 0000000000004000 r-x";
        let tramp = "0000004000004000-0000004000006000 0000000000002000 rw-";
        let mine = "0000004000006000-0000004000008000 0000000000002000 rw-";
        let log = format!(
            "page layout changed following binary load\n{}start_brk 0x0\n\
             page layout changed following mmap\n{}\
             page layout changed following mmap\n{}",
            block(&[load]),
            block(&[load, tramp]),
            block(&[load, tramp, mine]),
        );
        let ends = |first| {
            initial_layout(&log, first)
                .unwrap()
                .iter()
                .map(|r| r.end)
                .collect::<Vec<_>>()
        };
        assert_eq!(ends(Some(0x40_0000_6000)), [0x40_0000_4000, 0x40_0000_6000]);
        assert_eq!(ends(None), [0x40_0000_4000]);
    }
}
