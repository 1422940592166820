//! What `vmlab trace info` reports about an x86 trace: processes, threads, references by
//! direction and size, instructions, system calls by name, the distinct data and code pages
//! touched and how that footprint grows, mapping changes, and the kernel's writes.

use super::error::TraceError;
use super::event::Event;
use super::format::{Header, Totals, Trailer};
use super::reader::Reader;
use super::syscalls;
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::BTreeMap;

/// Distinct pages touched after some number of references.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FootprintPoint {
    /// References read so far.
    pub refs: u64,
    /// Distinct 4 KiB data pages touched by them.
    pub data_pages: u64,
    /// Distinct 4 KiB code pages entered so far.
    pub code_pages: u64,
}

/// Changes to the address spaces.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Mapping {
    /// Map events (regions at program load).
    pub map_events: u64,
    /// Bytes those regions span.
    pub mapped_bytes: u64,
    /// mmap, munmap, mremap, brk, mprotect and madvise calls, by name.
    pub syscalls: BTreeMap<String, u64>,
}

/// A whole trace summarised.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The trace's header.
    pub header: Header,
    /// Its trailer (None for an unfinished file).
    pub trailer: Option<Trailer>,
    /// Why an unfinished file ended without a trailer.
    pub unfinished: Option<String>,
    /// What was read: events by kind, loads, stores, instructions, processes, threads.
    pub totals: Totals,
    /// Loads by size in bytes.
    pub loads_by_size: BTreeMap<u8, u64>,
    /// Stores by size in bytes.
    pub stores_by_size: BTreeMap<u8, u64>,
    /// System calls by name (`syscall_N` for numbers without one).
    pub syscalls: BTreeMap<String, u64>,
    /// System calls that did not return.
    pub syscalls_not_returned: u64,
    /// Distinct 4 KiB data pages referenced, per process (a page of two processes counts twice).
    pub data_pages: u64,
    /// Distinct 4 KiB code pages entered, per process.
    pub code_pages: u64,
    /// Distinct pages after each tenth of the references (the nearest sample at or before
    /// it; the last point is the end).
    pub footprint: Vec<FootprintPoint>,
    /// Mapping changes.
    pub mapping: Mapping,
    /// KernelWrite events' bytes.
    pub kernel_written_bytes: u64,
    /// Programs executed, in order (each distinct path once).
    pub programs: Vec<String>,
    /// Exit codes by value.
    pub exit_codes: BTreeMap<i32, u64>,
}

/// Samples at every `step` references, halving their number (and doubling `step`) when they
/// exceed a bound, so memory stays bounded and any tenth is within 1/1000 of the total.
struct Samples {
    points: Vec<FootprintPoint>,
    step: u64,
}

const MAX_SAMPLES: usize = 2048;

impl Samples {
    fn add(&mut self, p: FootprintPoint) {
        if !p.refs.is_multiple_of(self.step) {
            return;
        }
        self.points.push(p);
        if self.points.len() > MAX_SAMPLES {
            self.step *= 2;
            let step = self.step;
            self.points.retain(|q| q.refs.is_multiple_of(step));
        }
    }

    fn tenths(&self, end: FootprintPoint) -> Vec<FootprintPoint> {
        if end.refs == 0 {
            return vec![end];
        }
        let mut out: Vec<FootprintPoint> = (1..10)
            .filter_map(|k| {
                let target = end.refs * k / 10;
                let i = self.points.partition_point(|p| p.refs <= target);
                i.checked_sub(1).map(|i| self.points[i])
            })
            .collect();
        out.push(end);
        out.dedup();
        out
    }
}

impl Summary {
    /// Reads a whole trace, checking it, and counts.
    pub fn read(mut reader: Reader) -> Result<Summary, TraceError> {
        let mut by_size = [[0u64; 4]; 2];
        let mut syscalls_by_nr: BTreeMap<u32, u64> = BTreeMap::new();
        let mut not_returned = 0;
        let mut data: FxHashSet<(u32, u64)> = FxHashSet::default();
        let mut code: FxHashSet<(u32, u64)> = FxHashSet::default();
        let mut last_page = None;
        let mut pid = 0;
        let mut samples = Samples {
            points: Vec::new(),
            step: 1,
        };
        let mut refs = 0u64;
        let mut mapping = Mapping::default();
        let mut kernel_written_bytes = 0u64;
        let mut programs: Vec<String> = Vec::new();
        let mut exit_codes = BTreeMap::new();
        while let Some(e) = reader.next_event()? {
            match e {
                Event::Ref {
                    addr, size, write, ..
                } => {
                    by_size[usize::from(write)][size.trailing_zeros() as usize & 3] += 1;
                    let first = addr >> 12;
                    let last = addr.wrapping_add(u64::from(size) - 1) >> 12;
                    if last_page != Some((pid, first)) {
                        data.insert((pid, first));
                        last_page = Some((pid, first));
                    }
                    if last != first {
                        data.insert((pid, last));
                    }
                    refs += 1;
                    samples.add(FootprintPoint {
                        refs,
                        data_pages: data.len() as u64,
                        code_pages: code.len() as u64,
                    });
                }
                Event::CodePage { page } => {
                    code.insert((pid, page));
                }
                Event::Window { .. } | Event::Warm { .. } => {}
                Event::Switch { pid: p, .. } => pid = p,
                Event::Map { start, end, .. } => {
                    mapping.map_events += 1;
                    mapping.mapped_bytes += end.saturating_sub(start);
                }
                Event::Syscall { nr, ret, .. } => {
                    *syscalls_by_nr.entry(nr).or_default() += 1;
                    if ret.is_none() {
                        not_returned += 1;
                    }
                }
                Event::KernelWrite { len, .. } => {
                    kernel_written_bytes = kernel_written_bytes.saturating_add(len)
                }
                Event::Exec { path } => {
                    if !programs.contains(&path) {
                        programs.push(path);
                    }
                }
                Event::Exit { code } => *exit_codes.entry(code).or_default() += 1,
                Event::Fork { .. } => {}
            }
        }
        let end = FootprintPoint {
            refs,
            data_pages: data.len() as u64,
            code_pages: code.len() as u64,
        };
        let sizes = |row: &[u64; 4]| {
            (0..4)
                .filter(|&i| row[i] > 0)
                .map(|i| (1u8 << i, row[i]))
                .collect()
        };
        mapping.syscalls = syscalls::MAPPING
            .iter()
            .filter_map(|nr| Some((syscalls::display_name(*nr), *syscalls_by_nr.get(nr)?)))
            .collect();
        Ok(Summary {
            header: reader.header().clone(),
            trailer: reader.trailer().cloned(),
            unfinished: reader.unfinished().map(str::to_string),
            totals: reader.totals(),
            loads_by_size: sizes(&by_size[0]),
            stores_by_size: sizes(&by_size[1]),
            syscalls: syscalls_by_nr
                .iter()
                .map(|(nr, n)| (syscalls::display_name(*nr), *n))
                .collect(),
            syscalls_not_returned: not_returned,
            data_pages: end.data_pages,
            code_pages: end.code_pages,
            footprint: samples.tenths(end),
            mapping,
            kernel_written_bytes,
            programs,
            exit_codes,
        })
    }
}
