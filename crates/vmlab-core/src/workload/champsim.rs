//! `champsim`: replay a ChampSim trace (`champsim:file=TRACE.xz`).
//!
//! A ChampSim trace is a stream of fixed 64-byte little-endian records, one per retired
//! instruction of one thread, as ChampSim's `input_instr`: the instruction pointer (8 bytes),
//! `is_branch` and `branch_taken` (1 each), two destination and four source register numbers
//! (1 each), then two destination and four source memory addresses (8 each; 0 = no operand).
//! Distributed traces are xz-compressed, some gzip-compressed; the compression is told by the
//! file's magic bytes, not its name, and an uncompressed stream is read as it is.
//!
//! What is replayed: one process. Each record's source memory operands are loads and its
//! destination operands stores, in that order, each an [`Op::Access`]; each record is one
//! instruction, so the compute between references is the count of records between them
//! ([`Workload::instructions_retired`]). Code fetches (the `ip`), registers and branches are not
//! modeled. Operands outside the 47-bit user half (a kernel or vsyscall address) are dropped.
//!
//! What is synthetic: the mapping history. A ChampSim trace has no system calls, so the
//! first reference to a 2 MiB-aligned region no earlier reference touched maps that whole
//! region read-write ([`Op::Map`], one `mmap` of the kernel model, in the measured phase), and
//! the reference then demand-faults its 4 KiB page (or, with THP, the region's 2 MiB page).
//! Regions of 2 MiB rather than pages of 4 KiB keep the synthetic `mmap`s few (as a real
//! program's heap and stack are a few large mappings) and let THP back them.
//!
//! Parsing reads the whole trace once, to count its records and accesses (so that the
//! engine can sample and extrapolate, and `--accesses` caps the run) and its footprint, and
//! rejects a damaged trace before the run starts.

use super::spec::{ParamInfo, Values, WorkloadError};
use super::{Op, Workload, WorkloadKind};
use crate::addr::{Gva, PAGE_SIZE};
use rustc_hash::FxHashSet;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// Bytes per record (ChampSim's `input_instr`).
pub const RECORD_BYTES: usize = 64;
/// The regions the replay maps on first touch.
pub const REGION_BYTES: u64 = 2 << 20;
/// The end of the 47-bit user half: operands at or above it are dropped.
const USER_END: u64 = 1 << 47;
/// Source (load) operands per record, and their offset in it.
const LOADS: usize = 4;
const LOADS_AT: usize = 32;
/// Destination (store) operands per record, and their offset in it.
const STORES: usize = 2;
const STORES_AT: usize = 16;
/// Ops one record can make: a map and an access per operand.
const MAX_OPS: usize = 2 * (LOADS + STORES);

/// How a trace file is compressed (by its magic bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// `.xz` (magic `FD 37 7A 58 5A 00`).
    Xz,
    /// `.gz` (magic `1F 8B`); concatenated members are read as one stream.
    Gzip,
    /// Raw records.
    None,
}

impl Compression {
    /// Its name, for the report.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
            Compression::None => "none",
        }
    }
}

/// The parameters of a `champsim` run, and what the parse's pass over the file found.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ChampSimConfig {
    /// The trace.
    pub file: PathBuf,
    /// Records skipped (not replayed) at the start of the trace.
    pub skip: u64,
    /// Its compression.
    pub compression: Compression,
    /// Records replayed (after `skip`): the instructions the run retires.
    pub records: u64,
    /// Memory operands of the replayed records in the user half: the measured accesses.
    pub accesses: u64,
    /// Memory operands dropped (outside the user half).
    pub dropped: u64,
    /// Distinct 4 KiB pages the accesses touch.
    pub pages: u64,
}

/// What the workload's process is called, for TPT's mark (`tpt_task`).
const PROGRAM: &str = "champsim-trace";

/// One record's memory operands: loads, then stores; 0 = none.
fn operands(record: &[u8; RECORD_BYTES]) -> impl Iterator<Item = (u64, bool)> + '_ {
    let word = |at: usize| u64::from_le_bytes(record[at..at + 8].try_into().unwrap());
    let loads = (0..LOADS).map(move |i| (word(LOADS_AT + 8 * i), false));
    let stores = (0..STORES).map(move |i| (word(STORES_AT + 8 * i), true));
    loads.chain(stores).filter(|&(addr, _)| addr != 0)
}

/// The records of a trace file, decompressed as its magic bytes say.
pub struct Records {
    inner: Box<dyn Read + Send>,
    compression: Compression,
    /// Records read so far.
    read: u64,
}

impl Records {
    /// Opens `path`.
    pub fn open(path: &Path) -> io::Result<Records> {
        let mut file = BufReader::with_capacity(1 << 16, File::open(path)?);
        let head = file.fill_buf()?;
        let compression = if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z', 0]) {
            Compression::Xz
        } else if head.starts_with(&[0x1F, 0x8B]) {
            Compression::Gzip
        } else {
            Compression::None
        };
        let inner: Box<dyn Read + Send> = match compression {
            Compression::Xz => Box::new(BufReader::with_capacity(
                1 << 16,
                lzma_rust2::XzReader::new(file, true),
            )),
            Compression::Gzip => Box::new(BufReader::with_capacity(
                1 << 16,
                flate2::bufread::MultiGzDecoder::new(file),
            )),
            Compression::None => Box::new(file),
        };
        Ok(Records {
            inner,
            compression,
            read: 0,
        })
    }

    /// The file's compression.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Records read so far.
    pub fn read(&self) -> u64 {
        self.read
    }

    /// The next record; `None` at the end; an error for a stream that cannot be decompressed
    /// or ends inside a record.
    pub fn next_record(&mut self) -> io::Result<Option<[u8; RECORD_BYTES]>> {
        let mut record = [0u8; RECORD_BYTES];
        let mut len = 0;
        while len < RECORD_BYTES {
            match self.inner.read(&mut record[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let what = match self.compression {
                        Compression::None => "read failed".to_owned(),
                        c => format!("{} stream broken", c.name()),
                    };
                    return Err(io::Error::new(
                        e.kind(),
                        format!("{what} at record {}: {e}", self.read),
                    ));
                }
            }
        }
        match len {
            0 => Ok(None),
            RECORD_BYTES => {
                self.read += 1;
                Ok(Some(record))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "ends inside record {} ({len} of its {RECORD_BYTES} bytes): not a ChampSim trace, or truncated",
                    self.read
                ),
            )),
        }
    }

    /// Reads and drops `n` records; an error if the trace has fewer.
    fn skip(&mut self, n: u64) -> io::Result<()> {
        while self.read < n {
            if self.next_record()?.is_none() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("has {} records, fewer than skip={n}", self.read),
                ));
            }
        }
        Ok(())
    }
}

impl ChampSimConfig {
    /// Reads the trace at `file` once: its compression, and the records, accesses, dropped
    /// operands and pages after the first `skip` records.
    pub fn scan(file: PathBuf, skip: u64) -> io::Result<ChampSimConfig> {
        let mut records = Records::open(&file)?;
        records.skip(skip)?;
        let (mut accesses, mut dropped) = (0, 0);
        let mut pages = FxHashSet::default();
        while let Some(record) = records.next_record()? {
            for (addr, _) in operands(&record) {
                if addr < USER_END {
                    accesses += 1;
                    pages.insert(addr / PAGE_SIZE);
                } else {
                    dropped += 1;
                }
            }
        }
        if records.read() == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "holds no record: not a ChampSim trace",
            ));
        }
        Ok(ChampSimConfig {
            file,
            skip,
            compression: records.compression(),
            records: records.read() - skip,
            accesses,
            dropped,
            pages: pages.len() as u64,
        })
    }
}

impl WorkloadKind for ChampSimConfig {
    type Generator = ChampSim;

    const NAME: &'static str = "champsim";
    const SUMMARY: &'static str = "a ChampSim trace (.xz, .gz or raw): one process's loads and stores, one instruction per record, each 2M region mapped on first touch (a synthetic mapping history)";
    const DEFAULT_ACCESSES: u64 = 0;
    const PARAMS: &'static [ParamInfo] = &[
        ParamInfo {
            key: "file",
            default: "(required)",
            help: "the ChampSim trace to replay (xz, gzip or uncompressed)",
        },
        ParamInfo {
            key: "skip",
            default: "0",
            help: "records (instructions) at the start of the trace not replayed",
        },
    ];

    fn example() -> String {
        "champsim:file=600.perlbench_s-210B.champsimtrace.xz".to_owned()
    }

    fn parse(values: &Values<'_>) -> Result<Self, WorkloadError> {
        if values.given("file").is_none() {
            return Err(WorkloadError::MissingKey {
                workload: Self::NAME,
                key: "file",
                example: Self::example(),
                valid: "the path of a ChampSim trace".to_owned(),
            });
        }
        let skip = values.count("skip")?;
        let file = PathBuf::from(values.text("file"));
        ChampSimConfig::scan(file.clone(), skip)
            .map_err(|e| WorkloadError::unreadable(Self::NAME, "file", &file, e))
    }

    fn validate(&self) -> Result<(), WorkloadError> {
        Ok(())
    }

    fn canonical_params(&self) -> String {
        format!("file={},skip={}", self.file.display(), self.skip)
    }

    /// The distinct 4 KiB pages the replayed references touch.
    fn footprint_bytes(&self) -> u64 {
        self.pages * PAGE_SIZE
    }

    fn measured_accesses_total(&self) -> u64 {
        self.accesses
    }

    fn program(&self) -> &'static str {
        PROGRAM
    }

    /// The trace: its size, content hash, and what the parse found in it.
    fn inputs(&self) -> Vec<crate::provenance::Input> {
        let (bytes, fingerprint) =
            crate::provenance::file_fingerprint(&self.file).unwrap_or((0, "unreadable".to_owned()));
        let header = serde_json::json!({
            "format": "champsim",
            "compression": self.compression.name(),
            "skip": self.skip,
            "records": self.records,
            "accesses": self.accesses,
            "dropped_operands": self.dropped,
            "pages": self.pages,
            "mapping": "synthetic: each 2M region read-write on first touch",
        });
        vec![crate::provenance::Input {
            path: self.file.display().to_string(),
            bytes,
            fingerprint,
            header,
        }]
    }

    fn build(&self, _seed: u64) -> Result<ChampSim, WorkloadError> {
        let records = Records::open(&self.file)
            .map_err(|e| WorkloadError::unreadable(Self::NAME, "file", &self.file, e))?;
        Ok(ChampSim {
            records,
            skip: self.skip,
            accesses: self.accesses,
            queue: Box::new([Op::StartMeasurement; MAX_OPS]),
            queued: 0,
            at: 0,
            regions: FxHashSet::default(),
            started: false,
            ended: false,
            failure: None,
        })
    }
}

/// The generator of [`ChampSimConfig`]: the trace's records as ops, decoded as they are
/// pulled.
pub struct ChampSim {
    records: Records,
    skip: u64,
    accesses: u64,
    /// The ops of the last record, `queue[at..queued]` not yet handed out (boxed: it would
    /// make every [`super::AnyWorkload`] as large).
    queue: Box<[Op; MAX_OPS]>,
    queued: usize,
    at: usize,
    /// The 2 MiB regions mapped so far (by number).
    regions: FxHashSet<u64>,
    started: bool,
    ended: bool,
    failure: Option<String>,
}

impl std::fmt::Debug for ChampSim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChampSim")
            .field("accesses", &self.accesses)
            .field("records_read", &self.records.read())
            .field("regions", &self.regions.len())
            .finish()
    }
}

impl ChampSim {
    /// Ends the stream with `error` as its failure.
    #[cold]
    fn fail(&mut self, error: io::Error) -> Option<Op> {
        self.failure = Some(format!("the ChampSim trace {error}"));
        self.ended = true;
        None
    }

    /// Decodes records until one makes ops; false at the end.
    fn refill(&mut self) -> Result<bool, io::Error> {
        loop {
            let Some(record) = self.records.next_record()? else {
                return Ok(false);
            };
            let (mut n, queue, regions) = (0, &mut *self.queue, &mut self.regions);
            for (addr, write) in operands(&record) {
                if addr >= USER_END {
                    continue;
                }
                let region = addr / REGION_BYTES;
                if regions.insert(region) {
                    queue[n] = Op::Map {
                        start: Gva::new(region * REGION_BYTES),
                        len: REGION_BYTES,
                    };
                    n += 1;
                }
                queue[n] = Op::Access {
                    va: Gva::new(addr),
                    write,
                };
                n += 1;
            }
            if n > 0 {
                (self.queued, self.at) = (n, 0);
                return Ok(true);
            }
        }
    }
}

impl Workload for ChampSim {
    #[inline]
    fn next_op(&mut self) -> Option<Op> {
        if self.at < self.queued {
            self.at += 1;
            return Some(self.queue[self.at - 1]);
        }
        if self.ended {
            return None;
        }
        if !self.started {
            // No set-up: the skipped records are read, and the measurement starts.
            self.started = true;
            if let Err(e) = self.records.skip(self.skip) {
                return self.fail(e);
            }
            return Some(Op::StartMeasurement);
        }
        match self.refill() {
            Ok(true) => self.next_op(),
            Ok(false) => {
                self.ended = true;
                None
            }
            Err(e) => self.fail(e),
        }
    }

    fn measured_accesses_total(&self) -> u64 {
        self.accesses
    }

    /// None: the compute between references is the trace's instruction count.
    fn instructions_per_access(&self) -> f64 {
        0.0
    }

    /// A trace's references are those of an out-of-order core: independent unless the
    /// program chases pointers, which the trace does not say.
    fn dependent_accesses(&self) -> bool {
        false
    }

    /// The records read after the skipped ones: every instruction up to the last op handed
    /// out (and, at the end, those after the last reference too).
    fn instructions_retired(&self) -> Option<u64> {
        Some(self.records.read().saturating_sub(self.skip))
    }

    fn take_failure(&mut self) -> Option<String> {
        self.failure.take()
    }

    fn position(&self) -> Option<String> {
        Some(format!(
            "at record {} of the ChampSim trace",
            self.records.read().saturating_sub(1)
        ))
    }
}

/// Test helpers: ChampSim records and files written from them.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use std::io::Write;

    /// A record at `ip` with these load and store addresses (0 = none).
    pub(crate) fn record(ip: u64, loads: [u64; 4], stores: [u64; 2]) -> [u8; RECORD_BYTES] {
        let mut r = [0u8; RECORD_BYTES];
        r[..8].copy_from_slice(&ip.to_le_bytes());
        for (i, a) in stores.iter().enumerate() {
            r[STORES_AT + 8 * i..][..8].copy_from_slice(&a.to_le_bytes());
        }
        for (i, a) in loads.iter().enumerate() {
            r[LOADS_AT + 8 * i..][..8].copy_from_slice(&a.to_le_bytes());
        }
        r
    }

    /// Writes `records` to `path`, compressed as `compression` says.
    pub(crate) fn write(path: &Path, records: &[[u8; RECORD_BYTES]], compression: Compression) {
        let raw: Vec<u8> = records.concat();
        let bytes = match compression {
            Compression::None => raw,
            Compression::Xz => {
                let mut w =
                    lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(6))
                        .unwrap();
                w.write_all(&raw).unwrap();
                w.finish().unwrap()
            }
            Compression::Gzip => {
                let mut w =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
                w.write_all(&raw).unwrap();
                w.finish().unwrap()
            }
        };
        std::fs::write(path, bytes).unwrap();
    }

    /// A small xz trace for tests that go through every workload: a store, then a load and
    /// a store in another 2 MiB region, then an instruction without memory operands.
    pub(crate) fn tiny_champsim() -> &'static Path {
        static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
        PATH.get_or_init(|| {
            let path =
                std::env::temp_dir().join(format!("vmlab-tiny-{}.champsim.xz", std::process::id()));
            let records = [
                record(0x400000, [0; 4], [0x10_0000_0008, 0]),
                record(0x400004, [0x10_0020_1000, 0, 0, 0], [0x10_0020_2000, 0]),
                record(0x400008, [0; 4], [0; 2]),
            ];
            write(&path, &records, Compression::Xz);
            path
        })
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{record, tiny_champsim, write};
    use super::*;
    use crate::workload::test_support::drain;
    use crate::workload::{WorkloadConfig, WorkloadSpec};

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("vmlab-champsim-{}-{name}", std::process::id()))
    }

    fn map(region: u64) -> Op {
        Op::Map {
            start: Gva::new(region * REGION_BYTES),
            len: REGION_BYTES,
        }
    }

    fn access(va: u64, write: bool) -> Op {
        Op::Access {
            va: Gva::new(va),
            write,
        }
    }

    /// Five records: loads before stores within one, a region mapped once, an operand in
    /// the kernel half dropped, and records without memory operands.
    fn records() -> Vec<[u8; RECORD_BYTES]> {
        vec![
            record(0x401000, [0; 4], [0; 2]),
            record(0x401004, [0x20_0000, 0x20_1008, 0, 0], [0x20_0010, 0]),
            record(0x401008, [0; 4], [0; 2]),
            record(
                0x40100c,
                [0xffff_ffff_ff60_0000, 0, 0, 0x5f_fff8],
                [0, 0x20_2000],
            ),
            record(0x401010, [0; 4], [0; 2]),
        ]
    }

    /// The ops of [`records`] (no skip).
    fn expected() -> Vec<Op> {
        vec![
            Op::StartMeasurement,
            map(1),
            access(0x20_0000, false),
            access(0x20_1008, false),
            access(0x20_0010, true),
            map(2),
            access(0x5f_fff8, false),
            access(0x20_2000, true),
        ]
    }

    #[test]
    fn replays_raw_xz_and_gzip_traces_alike() {
        for compression in [Compression::None, Compression::Xz, Compression::Gzip] {
            let path = temp(compression.name());
            write(&path, &records(), compression);
            let spec = WorkloadSpec::parse(&format!("champsim:file={}", path.display())).unwrap();
            let WorkloadConfig::ChampSim(c) = spec.config() else {
                panic!("not champsim")
            };
            assert_eq!(c.compression, compression);
            assert_eq!((c.records, c.accesses, c.dropped, c.pages), (5, 5, 1, 4));
            assert_eq!(spec.footprint_bytes(), 4 * 4096);
            assert_eq!(spec.measured_accesses_total(), 5);
            let mut w = c.build(0).unwrap();
            assert_eq!(w.instructions_retired(), Some(0));
            assert_eq!(w.next_op(), Some(Op::StartMeasurement));
            assert_eq!(w.next_op(), Some(map(1)));
            // The second record's first op is out: two records read.
            assert_eq!(w.instructions_retired(), Some(2));
            let mut ops = vec![Op::StartMeasurement, map(1)];
            ops.extend(drain(&mut w));
            assert_eq!(ops, expected(), "{compression:?}");
            assert_eq!(w.instructions_retired(), Some(5));
            assert_eq!(w.take_failure(), None);
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn skip_drops_the_first_records() {
        let path = temp("skip");
        write(&path, &records(), Compression::Xz);
        let text = format!("champsim:file={},skip=3", path.display());
        let spec = WorkloadSpec::parse(&text).unwrap();
        assert_eq!(spec.canonical(), text);
        assert_eq!(spec.measured_accesses_total(), 2);
        let mut w = spec.build(0).unwrap();
        assert_eq!(
            drain(&mut w),
            [
                Op::StartMeasurement,
                map(2),
                access(0x5f_fff8, false),
                map(1),
                access(0x20_2000, true)
            ]
        );
        assert_eq!(w.instructions_retired(), Some(2));
        let err = WorkloadSpec::parse(&format!("champsim:file={},skip=6", path.display()));
        assert_eq!(
            err.unwrap_err().to_string(),
            format!(
                "cannot read {:?} for champsim file: has 5 records, fewer than skip=6",
                path.display().to_string()
            )
        );
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn damaged_traces_are_one_line_errors() {
        let path = temp("damaged");
        let parse = |path: &Path| {
            WorkloadSpec::parse(&format!("champsim:file={}", path.display()))
                .unwrap_err()
                .to_string()
        };
        // Five records and 10 bytes.
        let mut bytes = records().concat();
        bytes.extend_from_slice(&[1; 10]);
        std::fs::write(&path, &bytes).unwrap();
        let err = parse(&path);
        assert!(
            err.ends_with(
                "ends inside record 5 (10 of its 64 bytes): not a ChampSim trace, or truncated"
            ),
            "{err}"
        );
        // An xz stream cut short.
        write(&path, &records(), Compression::Xz);
        let xz = std::fs::read(&path).unwrap();
        std::fs::write(&path, &xz[..xz.len() / 2]).unwrap();
        let err = parse(&path);
        assert!(
            err.starts_with(&format!(
                "cannot read {:?} for champsim file: ",
                path.display().to_string()
            )),
            "{err}"
        );
        assert!(!err.contains('\n'));
        std::fs::write(&path, b"").unwrap();
        assert!(parse(&path).ends_with("holds no record: not a ChampSim trace"));
        std::fs::remove_file(&path).unwrap();
        assert!(parse(&path).starts_with("cannot read"));
        assert_eq!(
            WorkloadSpec::parse("champsim")
                .unwrap_err()
                .to_string()
                .lines()
                .count(),
            1
        );
    }

    #[test]
    fn the_tiny_trace_replays() {
        let spec =
            WorkloadSpec::parse(&format!("champsim:file={}", tiny_champsim().display())).unwrap();
        assert_eq!(spec.measured_accesses_total(), 3);
        let mut w = spec.build(0).unwrap();
        assert_eq!(drain(&mut w).len(), 1 + 2 + 3);
        assert_eq!(w.instructions_retired(), Some(3));
    }
}
