//! EPT walks in two halves: the result on the translating side, the references in the memory
//! pipeline's back end.
//!
//! Under nested paging a nested TLB miss walks the EPT. What the walk returns (the host
//! page, its size and permissions, or the fault) and the Accessed/Dirty bits it sets depend
//! only on the EPT's contents; the EPT paging-structure caches decide only where the walk
//! starts, and so which entries it reads: its references and their count. So translation
//! walks the EPT in memory, reading entries directly and setting A/D bits as the walk does,
//! and writes a record of the walk's path into the reference stream; the stream's back end
//! ([`crate::hw::pipeline`]) replays the record through the EPT paging-structure caches,
//! which it owns ([`EptReplay`]), emitting the references of the entries the walk reads from
//! where the caches let it start. Threaded, that half runs on the cache thread; with no
//! stream open, a record is replayed at once.
//!
//! The translating half starts from the path of upper-level entries an earlier walk of the
//! same 2 MiB region found (a direct-mapped memo of host speed only, forgotten at every
//! INVEPT), so it reads only the leaf-level entry, as a walk that hits the PDE cache does.
//!
//! Exactness rests on the caches agreeing with the tables: a cached prefix maps to the next
//! table and the permissions above it as the entries in memory do, and every entry it was
//! filled through has its Accessed bit set (setting a set bit again changes nothing, and
//! nothing clears an EPT Accessed bit). Both hold as long as a hypervisor that changes or
//! downgrades an EPT entry flushes (INVEPT), as the model's does (it only ever adds
//! upper-level entries, and replaces leaves). The replay checks the first: a cached prefix
//! that disagrees with the record panics. A property test compares both halves together
//! with the walker and its caches over random EPTs and walks.

use crate::addr::{Hpa, PageSize};
use crate::hw::frames::HostMemory;
use crate::hw::pipeline::{Replay, RECORD_REFS, RECORD_WORDS};
use crate::hw::x86::paging::{PagingMode, X86_64_4LEVEL, X86_64_5LEVEL};
use crate::hw::x86::pte::{EntryFormat, Ept, Perms, FRAME_MASK};
use crate::hw::x86::walker::{
    descend, walk_fast, Dimension, Fault, Leaf, Start, TableMemory, WalkCaches, WalkRequest,
};

/// A record's header: the guest-physical page in its upper bits, then what fits in the page
/// offset's bits: the level of the last entry read, the top level, and the flags of the
/// two other kinds of record, a flush and a new root.
const END_LEVEL_MASK: u64 = 0x7;
const TOP_LEVEL_SHIFT: u32 = 3;
const FLUSH: u64 = 1 << 6;
const NEW_ROOT: u64 = 1 << 7;

/// The header of the record of a walk of `gpa` from level `top` whose last entry read was
/// at level `end`.
#[inline(always)]
fn walk_header(gpa: u64, top: u8, end: u8) -> u64 {
    (gpa & FRAME_MASK) | u64::from(top) << TOP_LEVEL_SHIFT | u64::from(end)
}
/// A walk's words from `FILLS` on hold, for the top level down to level 2, the value the
/// paging-structure cache of that level takes when the walk reads a non-leaf entry there:
/// the next table's address and the permissions of the entries so far. The root table is
/// not in them: it travels in a record of its own (`ROOT` its word) whenever it changes.
const FILLS: usize = 1;
const ROOT: usize = 1;
const _: () = assert!(FILLS + 4 == RECORD_WORDS, "fills for levels 5 down to 2");

/// The translating side's half of an EPT walk of `gpa` (see the module docs): the walk's
/// result, from the EPT rooted at `eptp` in memory (A/D bits set as the walk sets them), and
/// in `record` the record of its path for [`EptReplay`]. Starts from the path `paths`
/// remembers for `gpa`'s 2 MiB region, if any: the same entries, present and with A set,
/// lead there.
#[inline(always)]
pub(crate) fn walk(
    mem: &mut HostMemory,
    paths: &mut EptPaths,
    mode: &PagingMode,
    eptp: u64,
    gpa: u64,
    write: bool,
    record: &mut [u64; RECORD_WORDS],
) -> Result<Leaf, Fault> {
    // The walker's own count is unused: the replay counts the entries the walk reads.
    let mut reads = 0;
    if let Some(path) = paths.get(gpa, eptp) {
        // Paths are remembered for 4-level walks only: the leaf level's geometry folds.
        debug_assert_eq!(*mode, X86_64_4LEVEL);
        let fill2 = path[PATH_FILL2];
        let mut recorder = Recorder::new(mem, record, 4);
        recorder.resume(path);
        let leaf = descend::<Ept, _>(
            &mut recorder,
            None,
            Dimension::Ept,
            &X86_64_4LEVEL,
            Start {
                level: 1,
                table: fill2 & FRAME_MASK,
                perms: fill2 & Perms::ALL.bits(),
            },
            WalkRequest {
                root: 0,
                addr: gpa,
                tag: 0,
                write,
            },
            &mut reads,
        );
        recorder.finish(gpa);
        return leaf;
    }
    walk_from_root(mem, paths, mode, eptp, gpa, write, record)
}

/// [`walk`]'s common case, in fewer instructions: a path is remembered for `gpa`'s region
/// and the leaf-level entry maps a 4 KiB page the access may use, with its Accessed (and,
/// for a write, Dirty) flag already set, so the walk reads one entry and writes nothing.
/// Returns the leaf with the record written, as [`walk`] would; `None`, with nothing
/// written, in any other case (then [`walk`] does it all).
#[inline(always)]
pub(crate) fn walk_remembered_4k(
    mem: &HostMemory,
    paths: &EptPaths,
    eptp: u64,
    gpa: u64,
    write: bool,
    record: &mut [u64; RECORD_WORDS],
) -> Option<Leaf> {
    let path = paths.get(gpa, eptp)?;
    let fill2 = path[PATH_FILL2];
    let at = (fill2 & FRAME_MASK) + X86_64_4LEVEL.entry_offset_of(gpa, 1);
    let entry = mem.read_u64(Hpa::new(at));
    // `Perms::bits_allow` of the walk's permissions, split between the entries above (read
    // and user, and write for a write) and the leaf (read, and write, whose EPT bits sit
    // where `Perms::bits` puts them) with the flags it must already have. An entry not
    // present allows no reads: the test turns it away too (to `walk`, which reports the
    // fault).
    let above = Perms {
        read: true,
        write,
        user: true,
        exec: false,
    }
    .bits();
    let leaf = if write {
        Ept::READ | Ept::WRITE | Ept::ACCESSED_BIT | Ept::DIRTY_BIT
    } else {
        Ept::READ | Ept::ACCESSED_BIT
    };
    if fill2 & above != above || entry & leaf != leaf {
        return None;
    }
    let perms = fill2 & Perms::ALL.bits() & Ept::perm_bits(entry);
    debug_assert!(Perms::bits_allow(perms, write));
    record[0] = walk_header(gpa, 4, 1);
    record[PATH_AT..].copy_from_slice(&path);
    Some(Leaf {
        base: Ept::frame_addr(entry),
        size: PageSize::Size4K,
        perm_bits: perms,
    })
}

/// [`walk`] with no path remembered for `gpa`'s region: from the root, remembering the path
/// it finds. Out of line, so that the common case keeps its registers.
#[inline(never)]
fn walk_from_root(
    mem: &mut HostMemory,
    paths: &mut EptPaths,
    mode: &PagingMode,
    eptp: u64,
    gpa: u64,
    write: bool,
    record: &mut [u64; RECORD_WORDS],
) -> Result<Leaf, Fault> {
    let top = mode.levels();
    let mut reads = 0; // unused, as in `walk`
    let mut recorder = Recorder::new(mem, record, top);
    let leaf = walk_fast::<Ept, _>(
        &mut recorder,
        None,
        Dimension::Ept,
        mode,
        WalkRequest {
            root: eptp,
            addr: gpa,
            tag: 0,
            write,
        },
        &mut reads,
    );
    if let Some(path) = recorder.path() {
        paths.remember(gpa, eptp, path);
    }
    recorder.finish(gpa);
    leaf
}

/// The fills of a 4-level walk's path (levels 4, 3 and 2: the record's last words), down to
/// the leaf-level table.
type Path = [u64; 3];
/// Where a path starts in a record.
const PATH_AT: usize = RECORD_WORDS - 3;
/// Where level 2's fill (the leaf-level table and the permissions above it) sits in a path.
const PATH_FILL2: usize = 2;

/// Paths through the upper levels of a 4-level EPT that walks of the translating side
/// found, by 2 MiB region of guest-physical space (direct-mapped): host speed only. A
/// remembered path stays right because the model's hypervisor only adds upper-level entries
/// (`Vm::map`), never changes one; every INVEPT forgets them all anyway, as does a new EPT
/// root.
#[derive(Debug)]
pub(crate) struct EptPaths {
    slots: Box<[PathSlot]>,
    generation: u64,
    eptp: u64,
}

/// A remembered path, in one aligned half of a host cache line.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
struct PathSlot {
    /// The region, with the generation above it.
    tag: u64,
    path: Path,
}

/// Regions [`EptPaths`] holds: 8 GiB of guest-physical space.
const PATH_SLOTS: usize = 4096;
/// Bits of a region number (guest-physical addresses are below 2^52).
const REGION_BITS: u32 = 52 - 21;

impl Default for EptPaths {
    fn default() -> Self {
        EptPaths {
            slots: vec![PathSlot::default(); PATH_SLOTS].into_boxed_slice(),
            generation: 1,
            eptp: 0,
        }
    }
}

impl EptPaths {
    #[inline(always)]
    fn slot(gpa: u64) -> usize {
        (gpa >> 21) as usize & (PATH_SLOTS - 1)
    }

    #[inline(always)]
    fn tag(&self, gpa: u64) -> u64 {
        gpa >> 21 | self.generation << REGION_BITS
    }

    /// The path remembered for `gpa`'s region under the root `eptp`.
    #[inline(always)]
    fn get(&self, gpa: u64, eptp: u64) -> Option<Path> {
        let slot = self.slots[Self::slot(gpa)];
        (slot.tag == self.tag(gpa) && eptp == self.eptp).then_some(slot.path)
    }

    /// Prefetch, in the host, where the path for `gpa` would be (the look-ahead does).
    #[inline(always)]
    pub(crate) fn prefetch(&self, gpa: u64) {
        crate::host::prefetch::prefetch(&self.slots[Self::slot(gpa)]);
    }

    fn remember(&mut self, gpa: u64, eptp: u64, path: Path) {
        if eptp != self.eptp {
            self.forget();
            self.eptp = eptp;
        }
        let tag = self.tag(gpa);
        self.slots[Self::slot(gpa)] = PathSlot { tag, path };
    }

    /// Forget every path (INVEPT).
    pub(crate) fn forget(&mut self) {
        self.generation += 1;
        if self.generation >> (64 - REGION_BITS) != 0 {
            self.slots.fill(PathSlot::default());
            self.generation = 1;
        }
    }
}

/// The EPT in memory, walked without the paging-structure caches: reads entries directly
/// (no references), sets A/D bits, and records the walk's path for [`EptReplay`].
struct Recorder<'a> {
    mem: &'a mut HostMemory,
    record: &'a mut [u64; RECORD_WORDS],
    top: u8,
    /// The level of the next entry read.
    level: u8,
    perms: u64,
}

impl<'a> Recorder<'a> {
    /// A walk of an EPT `top` levels deep (4 or 5), recorded into `record` (whose words the
    /// walk does not reach are left as they were: the replay reads only those of the levels
    /// it reads).
    #[inline(always)]
    fn new(mem: &'a mut HostMemory, record: &'a mut [u64; RECORD_WORDS], top: u8) -> Self {
        Recorder {
            mem,
            record,
            top,
            level: top,
            perms: Perms::ALL.bits(),
        }
    }

    /// Go on from the leaf-level table at the end of `path`.
    #[inline(always)]
    fn resume(&mut self, path: Path) {
        debug_assert_eq!(self.top, 4);
        self.record[PATH_AT..].copy_from_slice(&path);
        self.level = 1;
        self.perms = path[PATH_FILL2] & Perms::ALL.bits();
    }

    /// The path down to the leaf-level table, if the walk got there through 4 levels.
    #[inline(always)]
    fn path(&self) -> Option<Path> {
        (self.level == 0 && self.top == 4)
            .then(|| self.record[PATH_AT..].try_into().expect("three fills"))
    }

    /// Complete the record of the walk of `gpa` just run (it read at least one entry).
    #[inline(always)]
    fn finish(self, gpa: u64) {
        debug_assert!(self.level < self.top && gpa < 1 << 52);
        let end = self.level + 1;
        self.record[0] = walk_header(gpa, self.top, end);
    }
}

impl TableMemory for Recorder<'_> {
    #[inline(always)]
    fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
        Ok(Hpa::new(entry_addr))
    }

    /// Reads the entry and records what the cache of its level takes if it is not the
    /// leaf (unused if it is; the walk reads levels from the top down).
    #[inline(always)]
    fn read(&mut self, at: Hpa) -> u64 {
        let entry = self.mem.read_u64(at);
        let level = self.level;
        self.perms &= Ept::perm_bits(entry);
        if level >= 2 {
            self.record[FILLS + 5 - level as usize] = Ept::frame_addr(entry) | self.perms;
        }
        self.level -= 1;
        entry
    }

    #[inline(always)]
    fn set_bits(&mut self, at: Hpa, bits: u64) {
        self.mem.or_u64(at, bits)
    }
}

/// The back end's half of EPT walks: the EPT paging-structure caches, the root walks
/// start from, and the count of EPT entry reads.
#[derive(Debug)]
pub struct EptReplay {
    caches: WalkCaches,
    /// The root table of the last [`Self::root_record`], if any.
    root: Option<u64>,
    refs: u64,
}

impl EptReplay {
    /// The replay of walks through `caches`.
    pub fn new(caches: WalkCaches) -> Self {
        EptReplay {
            caches,
            root: None,
            refs: 0,
        }
    }

    /// The record that flushes the caches, in its place in the stream (INVEPT).
    pub fn flush_record() -> [u64; RECORD_WORDS] {
        let mut record = [0; RECORD_WORDS];
        record[0] = FLUSH;
        record
    }

    /// The record that makes `eptp`'s root table the one the walks after it start from (it
    /// must come before the first walk record, and again whenever the root changes: the
    /// MMU sends it when it loads a new EPT root).
    pub fn root_record(eptp: u64) -> [u64; RECORD_WORDS] {
        let mut record = [0; RECORD_WORDS];
        record[0] = NEW_ROOT;
        record[ROOT] = eptp & FRAME_MASK;
        record
    }

    /// Entry reads of the EPT replayed so far.
    pub fn refs(&self) -> u64 {
        self.refs
    }

    /// The EPT paging-structure caches.
    pub fn caches(&self) -> &WalkCaches {
        &self.caches
    }

    /// [`Replay::replay`] of a walk of `gpa` from a `top`-level root that read down to level
    /// `end`. Inlined into both of its calls, so the 4-level one has its bounds in constants.
    #[inline(always)]
    fn replay_walk(
        &mut self,
        record: &[u64; RECORD_WORDS],
        gpa: u64,
        top: u8,
        end: u8,
        out: &mut [u64; RECORD_REFS],
    ) -> usize {
        // The fill of `level` (the table below it and the permissions so far).
        let fill = |level: u8| record[FILLS + 5 - level as usize];
        let start = match self.caches.probe(gpa, 0) {
            Some((cached, value)) => {
                assert_eq!(
                    value,
                    fill(cached),
                    "EPT walk cache of level {cached} disagrees with the EPT for GPA {gpa:#x}"
                );
                cached - 1
            }
            None => top,
        };
        assert!(
            start >= end,
            "EPT walk cache holds a prefix of a faulting GPA {gpa:#x}"
        );
        let mut table = if start == top {
            self.root
                .expect("an EPT walk record before any root record")
        } else {
            fill(start + 1) & FRAME_MASK
        };
        let mut n = 0;
        let mut level = start;
        loop {
            out[n] = table + X86_64_5LEVEL.entry_offset_of(gpa, level);
            n += 1;
            if level == end {
                break;
            }
            let value = fill(level);
            if level <= 4 {
                self.caches.fill_absent(level, gpa, 0, value);
            }
            table = value & FRAME_MASK;
            level -= 1;
        }
        self.refs += n as u64;
        n
    }
}

impl Replay for EptReplay {
    /// The walk of the record's address through the caches: probed deepest first, filled
    /// with each non-leaf entry read below the level they let the walk start at, as the
    /// walker does with caches (`crate::hw::x86::walker::walk`).
    fn replay(&mut self, record: &[u64; RECORD_WORDS], out: &mut [u64; RECORD_REFS]) -> usize {
        let header = record[0];
        if header & (FLUSH | NEW_ROOT) != 0 {
            if header & FLUSH != 0 {
                self.caches.flush();
            } else {
                self.root = Some(record[ROOT]);
            }
            return 0;
        }
        let gpa = header & FRAME_MASK;
        let end = (header & END_LEVEL_MASK) as u8;
        match (header >> TOP_LEVEL_SHIFT & END_LEVEL_MASK) as u8 {
            4 => self.replay_walk(record, gpa, 4, end, out),
            top => self.replay_walk(record, gpa, top, end, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::assoc::TranslationCacheConfig;
    use crate::hw::x86::walker::walk;
    use proptest::prelude::*;

    /// EPT table pages from frame 1 up; data frames far above them.
    const EPTP: u64 = 0x1000;
    const DATA: u64 = 1 << 30;
    /// Guest-physical space the tests map: 8 regions of 2 MiB.
    const REGIONS: u64 = 8;

    /// What each 4 KiB guest page of a region gets: mapped read-write, read-only, or
    /// nothing; a region is mapped whole by a 2 MiB leaf when its first page says `Large`,
    /// and its PDE denies writes when its second page says `Ro`.
    #[derive(Clone, Copy, Debug)]
    enum Page {
        Rw,
        Ro,
        Missing,
        Large,
    }

    /// An EPT over [`REGIONS`] regions as `pages` says (`pages[r][p]` for page `p` of region
    /// `r`, eight pages per region, repeated over its 512).
    fn build(mem: &mut HostMemory, pages: &[[Page; 8]]) {
        let mut next_table = EPTP + 0x1000;
        let mut table = |mem: &mut HostMemory, at: u64| {
            let entry = mem.read_u64(Hpa::new(at));
            if Ept::is_present(entry) {
                return Ept::frame_addr(entry);
            }
            let new = next_table;
            next_table += 0x1000;
            mem.write_u64(Hpa::new(at), Ept::table(new));
            new
        };
        for (region, pages) in pages.iter().enumerate() {
            let gpa = region as u64 * PageSize::Size2M.bytes();
            let pdpt = table(mem, EPTP + X86_64_4LEVEL.entry_offset_of(gpa, 4));
            let pd = table(mem, pdpt + X86_64_4LEVEL.entry_offset_of(gpa, 3));
            let pde_at = pd + X86_64_4LEVEL.entry_offset_of(gpa, 2);
            if matches!(pages[0], Page::Large) {
                mem.write_u64(Hpa::new(pde_at), Ept::leaf(DATA + gpa, true));
                continue;
            }
            let pt = table(mem, pde_at);
            if matches!(pages[1], Page::Ro) {
                // Writes denied above the leaves too.
                mem.write_u64(Hpa::new(pde_at), Ept::table(pt) & !Ept::WRITE);
            }
            for page in 0..512u64 {
                let gpa = gpa + page * 0x1000;
                let entry = match pages[page as usize % 8] {
                    Page::Rw | Page::Large => Ept::leaf(DATA + gpa, false),
                    Page::Ro => Ept::leaf(DATA + gpa, false) & !Ept::WRITE,
                    Page::Missing => continue,
                };
                mem.write_u64(Hpa::new(pt + X86_64_4LEVEL.entry_offset_of(gpa, 1)), entry);
            }
        }
    }

    fn caches() -> WalkCaches {
        let small = |entries| TranslationCacheConfig { entries, ways: 2 };
        WalkCaches::new(&small(4), &small(2), &small(2))
    }

    /// The walker with its caches, reading through a record of the entries it reads.
    struct Reads<'a> {
        mem: &'a mut HostMemory,
        reads: Vec<u64>,
    }

    impl TableMemory for Reads<'_> {
        fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
            Ok(Hpa::new(entry_addr))
        }
        fn read(&mut self, at: Hpa) -> u64 {
            self.reads.push(at.raw());
            self.mem.read_u64(at)
        }
        fn set_bits(&mut self, at: Hpa, bits: u64) {
            self.mem.or_u64(at, bits)
        }
    }

    fn page() -> impl Strategy<Value = Page> {
        prop_oneof![
            6 => Just(Page::Rw),
            1 => Just(Page::Ro),
            1 => Just(Page::Missing),
            1 => Just(Page::Large),
        ]
    }

    /// The fast path takes a walk once its region's path is remembered and the leaf's flags
    /// are set for the access: not the first walk of a region, nor a page's first read, nor
    /// its first write; not a read-only page's write, nor a page not mapped.
    #[test]
    fn the_fast_path_takes_walks_that_read_one_entry_and_write_none() {
        let mut mem = HostMemory::new(1 << 32);
        build(
            &mut mem,
            &[[
                Page::Rw,
                Page::Missing,
                Page::Ro,
                Page::Rw,
                Page::Rw,
                Page::Rw,
                Page::Rw,
                Page::Rw,
            ]],
        );
        let mut paths = EptPaths::default();
        let mut record = [0; RECORD_WORDS];
        let mut fast = |mem: &mut HostMemory, paths: &mut EptPaths, page: u64, write| {
            let gpa = page * 0x1000 + 0x10;
            let taken = walk_remembered_4k(mem, paths, EPTP, gpa, write, &mut record).is_some();
            let _ = super::walk(mem, paths, &X86_64_4LEVEL, EPTP, gpa, write, &mut record);
            taken
        };
        assert!(
            !fast(&mut mem, &mut paths, 0, false),
            "no path remembered yet"
        );
        assert!(
            fast(&mut mem, &mut paths, 0, false),
            "path remembered, A set"
        );
        assert!(!fast(&mut mem, &mut paths, 0, true), "D not set yet");
        assert!(fast(&mut mem, &mut paths, 0, true));
        assert!(fast(&mut mem, &mut paths, 0, false));
        assert!(
            !fast(&mut mem, &mut paths, 3, false),
            "another page's A not set yet"
        );
        assert!(fast(&mut mem, &mut paths, 3, false));
        assert!(!fast(&mut mem, &mut paths, 2, false));
        assert!(fast(&mut mem, &mut paths, 2, false));
        assert!(!fast(&mut mem, &mut paths, 2, true), "read-only: a fault");
        assert!(!fast(&mut mem, &mut paths, 1, false), "not mapped: a fault");
        paths.forget();
        assert!(
            !fast(&mut mem, &mut paths, 0, false),
            "INVEPT forgets the paths"
        );
    }

    proptest! {
        /// Over random EPTs and random walks, with flushes among them: the same results,
        /// the same entries read in the same order, the same A/D bits and the same walk
        /// cache hits and misses as the walker with its caches.
        #[test]
        fn split_walks_read_what_the_walker_reads(
            pages in proptest::collection::vec(proptest::array::uniform8(page()), REGIONS as usize),
            ops in proptest::collection::vec((0..REGIONS * 512, any::<bool>(), 0..40u8), 1..300),
        ) {
            let (mut expected_mem, mut mem) = (HostMemory::new(1 << 32), HostMemory::new(1 << 32));
            build(&mut expected_mem, &pages);
            build(&mut mem, &pages);
            let mut expected_caches = caches();
            let (mut replay, mut paths) = (EptReplay::new(caches()), EptPaths::default());
            replay.replay(&EptReplay::root_record(EPTP), &mut [0; RECORD_REFS]);
            let mut expected_refs = 0;
            for (page, write, flush) in ops {
                if flush == 0 {
                    expected_caches.flush();
                    replay.replay(&EptReplay::flush_record(), &mut [0; RECORD_REFS]);
                    paths.forget();
                    continue;
                }
                let gpa = page * 0x1000 + 0x123;
                let mut reads = Reads { mem: &mut expected_mem, reads: Vec::new() };
                let mut count = 0;
                let expected = walk::<Ept, _>(&mut reads, Some(&mut expected_caches), Dimension::Ept, &X86_64_4LEVEL, WalkRequest { root: EPTP, addr: gpa, tag: 0, write }, &mut count);
                let mut record = [0; RECORD_WORDS];
                // As the nested TLB's miss does: the fast path where it applies, else the
                // whole walk.
                let got = match walk_remembered_4k(&mem, &paths, EPTP, gpa, write, &mut record) {
                    Some(leaf) => Ok(leaf),
                    None => super::walk(&mut mem, &mut paths, &X86_64_4LEVEL, EPTP, gpa, write, &mut record),
                };
                prop_assert_eq!(got, expected);
                let mut out = [0; RECORD_REFS];
                let n = replay.replay(&record, &mut out);
                prop_assert_eq!(&out[..n], &reads.reads[..]);
                expected_refs += count;
            }
            prop_assert_eq!(replay.refs(), expected_refs);
            for level in 2..=4 {
                prop_assert_eq!(replay.caches().stats(level), expected_caches.stats(level));
            }
            // Every entry of every walk's path, A/D bits included.
            for page in 0..REGIONS * 512 {
                let gpa = page * 0x1000;
                let mut table = EPTP;
                for level in (1..=4).rev() {
                    let at = Hpa::new(table + X86_64_4LEVEL.entry_offset_of(gpa, level));
                    let entry = mem.read_u64(at);
                    prop_assert_eq!(entry, expected_mem.read_u64(at));
                    if !Ept::is_present(entry) || level == 1 || Ept::is_large(entry) {
                        break;
                    }
                    table = Ept::frame_addr(entry);
                }
            }
        }
    }
}
