//! Host-physical memory: which frames exist, which are free, and the bytes of every
//! page-table page.
//!
//! Data pages have no contents in the simulator (nothing reads the data a workload writes);
//! only page-table pages do, because walkers read real entries. A frame gets contents the
//! first time an entry is written into it, so guest tables, EPT tables and (later) shadow or
//! devirt tables all live here the same way. Memory use is proportional to the number of
//! page-table pages, not to the simulated footprint: pages live in one arena, found through a
//! small open-addressing index from frame number to arena slot. Walks read table pages at
//! random, so the index is kept compact (8 bytes per bucket, frame and slot packed in one
//! word, at most half full): a lookup is a multiply and, nearly always, one load from a
//! table small enough to stay in the host's L2.

use crate::addr::{Hfn, Hpa, PageSize};
use crate::host::hugepages::{FixedVec, HUGE_PAGE};
use crate::hw::tags::TagTable;

/// Entries in one 4 KiB table page.
pub const ENTRIES_PER_TABLE: usize = 512;
type TablePage = [u64; ENTRIES_PER_TABLE];

/// Bits of an index bucket that hold the slot; the frame number sits above them, in 41
/// bits: one more than a frame number needs (addresses are below 2^52, frames below 2^40),
/// so an all-ones frame field is never a frame.
const SLOT_BITS: u32 = 23;
/// Most table pages the storage holds (2^23: 32 GiB of page tables).
pub const MAX_TABLE_PAGES: usize = 1 << SLOT_BITS;
/// An empty index bucket: its frame field, all ones, is no frame number (see [`SLOT_BITS`]).
const EMPTY: u64 = u64::MAX;

/// Frame number -> arena slot of every frame with table contents: open addressing with
/// linear probing, at most half full, deletion by backward shift (no tombstones).
struct FrameIndex {
    /// `frame << SLOT_BITS | slot` (see `bucket`), or [`EMPTY`].
    buckets: Box<[u64]>,
    /// `64 - log2(buckets.len())`: the bucket of a frame is the top bits of its hash.
    shift: u32,
    len: usize,
}

impl FrameIndex {
    fn new() -> Self {
        let buckets = 1024;
        FrameIndex {
            buckets: vec![EMPTY; buckets].into_boxed_slice(),
            shift: 64 - buckets.trailing_zeros(),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, frame: u64) -> usize {
        (frame.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> self.shift) as usize
    }

    #[inline]
    fn get(&self, frame: u64) -> Option<u32> {
        let mask = self.buckets.len() - 1;
        let mut i = self.home(frame);
        loop {
            debug_assert!(i < self.buckets.len());
            // SAFETY: `i < buckets.len()`: `home` is the top `64 - shift` bits of a u64, below
            // `2^(64 - shift) == buckets.len()` (kept so by `new` and `grow`), and later probes
            // are masked by `buckets.len() - 1` (a power of two minus one). Walks look frames up
            // several times per simulated access, so the check is worth dropping here.
            let found = unsafe { *self.buckets.get_unchecked(i) };
            if frame_of(found) == frame {
                return Some(slot_of(found));
            }
            if found == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// Prefetch, in the host, the bucket where a lookup of `frame` starts.
    #[inline]
    fn prefetch(&self, frame: u64) {
        // `home` is below `buckets.len()` (see `get`), so this `get` always finds a bucket.
        if let Some(bucket) = self.buckets.get(self.home(frame)) {
            crate::host::prefetch::prefetch(bucket);
        }
    }

    /// Insert `frame`, which must not be present.
    fn insert(&mut self, frame: u64, slot: u32) {
        if 2 * (self.len + 1) > self.buckets.len() {
            self.grow();
        }
        let mask = self.buckets.len() - 1;
        let mut i = self.home(frame);
        debug_assert_ne!(frame, EMPTY);
        while self.buckets[i] != EMPTY {
            debug_assert_ne!(
                frame_of(self.buckets[i]),
                frame,
                "frame {frame} indexed twice"
            );
            i = (i + 1) & mask;
        }
        self.buckets[i] = bucket(frame, slot);
        self.len += 1;
    }

    fn remove(&mut self, frame: u64) -> Option<u32> {
        let mask = self.buckets.len() - 1;
        let mut hole = self.home(frame);
        let slot = loop {
            let found = self.buckets[hole];
            if found == EMPTY {
                return None;
            }
            if frame_of(found) == frame {
                break slot_of(found);
            }
            hole = (hole + 1) & mask;
        };
        // Shift back every later entry of the run that may not sit past the hole.
        let mut i = hole;
        loop {
            i = (i + 1) & mask;
            let found = self.buckets[i];
            if found == EMPTY {
                break;
            }
            let home = self.home(frame_of(found));
            // The entry at `i` can fill the hole unless its home lies cyclically in (hole, i].
            if (i.wrapping_sub(home) & mask) >= (i.wrapping_sub(hole) & mask) {
                self.buckets[hole] = self.buckets[i];
                hole = i;
            }
        }
        self.buckets[hole] = EMPTY;
        self.len -= 1;
        Some(slot)
    }

    fn grow(&mut self) {
        let doubled = vec![EMPTY; self.buckets.len() * 2].into_boxed_slice();
        let old = std::mem::replace(&mut self.buckets, doubled);
        self.shift -= 1;
        self.len = 0;
        for found in old.iter().copied().filter(|&found| found != EMPTY) {
            self.insert(frame_of(found), slot_of(found));
        }
    }
}

/// An index bucket: `frame` above the slot bits (a frame is below 2^40, a slot below
/// [`MAX_TABLE_PAGES`]), never [`EMPTY`].
#[inline]
fn bucket(frame: u64, slot: u32) -> u64 {
    debug_assert!(frame < 1 << 40 && (slot as usize) < MAX_TABLE_PAGES);
    frame << SLOT_BITS | u64::from(slot)
}

/// The frame in a bucket (all ones in an empty one: no frame).
#[inline]
fn frame_of(bucket: u64) -> u64 {
    bucket >> SLOT_BITS
}

/// The slot in a bucket.
#[inline]
fn slot_of(bucket: u64) -> u32 {
    (bucket & ((1 << SLOT_BITS) - 1)) as u32
}

/// Table pages in the arena's first allocation: one host huge page (see
/// [`crate::host::hugepages`]).
const FIRST_PAGES: usize = HUGE_PAGE / std::mem::size_of::<TablePage>();

/// The table pages, by slot, in one block on host huge pages, since walks read them at
/// random. One block makes a page's address one multiply-add from its slot (no chunk table
/// to load); the block doubles when full, copying its pages, which costs about one more
/// write per page over a run and, during the copy, half again the arena's memory.
struct Arena {
    pages: FixedVec<TablePage>,
}

impl Arena {
    fn new() -> Self {
        Arena {
            pages: FixedVec::with_capacity(0),
        }
    }

    /// Slots handed out so far.
    fn len(&self) -> usize {
        self.pages.len()
    }

    #[inline]
    fn page(&self, slot: usize) -> &TablePage {
        &self.pages[slot]
    }

    #[inline]
    fn page_mut(&mut self, slot: usize) -> &mut TablePage {
        &mut self.pages[slot]
    }

    /// A new zeroed page; returns its slot.
    fn push_zeroed(&mut self) -> usize {
        if self.pages.is_full() {
            let capacity = (2 * self.pages.capacity()).max(FIRST_PAGES);
            let mut bigger = FixedVec::with_capacity(capacity);
            bigger.extend_from_slice(&self.pages);
            self.pages = bigger;
        }
        self.pages.push([0; ENTRIES_PER_TABLE]);
        self.pages.len() - 1
    }
}

/// Out of host memory: the profile's `host_memory` is too small for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("out of host memory: {size} allocation failed with {total_frames} frames of 4 KiB in total; raise host_memory in the machine profile")]
pub struct OutOfMemory {
    /// The page size that could not be allocated.
    pub size: PageSize,
    /// Host memory in all, in 4 KiB frames.
    pub total_frames: u64,
}

/// The machine's physical memory.
pub struct HostMemory {
    total_frames: u64,
    /// Frame number -> slot in `pages` of each frame with table contents.
    index: FrameIndex,
    pages: Arena,
    free_slots: Vec<u32>,
    allocator: FrameAllocator,
    /// Memory tags: which frames belong to the VM (checked under TPT).
    tags: TagTable,
}

impl HostMemory {
    /// `bytes` of host RAM (whole 4 KiB frames), all free, no table contents, no frame owned
    /// by the VM.
    pub fn new(bytes: u64) -> Self {
        let total_frames = bytes >> crate::addr::PAGE_SHIFT;
        HostMemory {
            total_frames,
            index: FrameIndex::new(),
            pages: Arena::new(),
            free_slots: Vec::new(),
            allocator: FrameAllocator::new(total_frames),
            // The tag table occupies 16 bytes per frame right above RAM.
            tags: TagTable::new(total_frames, bytes),
        }
    }

    /// The memory tags: which frames the VM owns.
    pub fn tags(&self) -> &TagTable {
        &self.tags
    }

    /// The memory tags, to assign frames to the VM or take them back.
    pub fn tags_mut(&mut self) -> &mut TagTable {
        &mut self.tags
    }

    /// Host RAM in 4 KiB frames.
    pub fn total_frames(&self) -> u64 {
        self.total_frames
    }

    /// Allocate a naturally aligned page of `size`; its table contents (if any) are zero.
    pub fn alloc(&mut self, size: PageSize) -> Result<Hfn, OutOfMemory> {
        self.allocator.alloc(size).map(Hfn::new).ok_or(OutOfMemory {
            size,
            total_frames: self.total_frames,
        })
    }

    /// Return a page to the allocator, dropping any table contents it held.
    pub fn free(&mut self, frame: Hfn, size: PageSize) {
        for f in frame.raw()..frame.raw() + size.frames() {
            self.drop_contents(Hfn::new(f));
        }
        self.allocator.free(frame.raw(), size);
    }

    /// Frames currently allocated (in 4 KiB units).
    pub fn frames_in_use(&self) -> u64 {
        self.allocator.in_use
    }

    /// Number of frames that hold page-table contents.
    pub fn table_pages(&self) -> usize {
        self.pages.len() - self.free_slots.len()
    }

    /// Read the 8-byte entry at `addr` (which must be 8-byte aligned). A frame without table
    /// contents reads as zeros: a not-present entry.
    #[inline]
    pub fn read_u64(&self, addr: Hpa) -> u64 {
        self.table(addr.frame())
            .map_or(0, |page| page[entry_index(addr)])
    }

    /// The simulator's copy of the 8-byte entry at `addr` (8-byte aligned), if its frame has
    /// table contents (else it reads as zero): for the look-ahead, which finds an entry in
    /// one stage and reads it in a later one.
    #[inline]
    pub fn entry(&self, addr: Hpa) -> Option<&u64> {
        self.table(addr.frame())
            .map(|page| &page[entry_index(addr)])
    }

    /// Prefetch, in the host, where the table storage's index keeps `frame` (the look-ahead
    /// does, for the frames the coming walks will read: each read looks its frame up).
    #[inline]
    pub fn prefetch_index(&self, frame: Hfn) {
        self.index.prefetch(frame.raw());
    }

    /// The slot of `frame`'s page in the table storage, if it has table contents: for the
    /// look-ahead, which remembers table pages by slot (see [`Self::entry_in_slot`]).
    #[inline]
    pub fn table_slot(&self, frame: Hfn) -> Option<u32> {
        self.index.get(frame.raw())
    }

    /// The entry at byte `offset` (taken modulo the page, 8-byte aligned) of the table page
    /// in storage slot `slot`, if there is such a slot: for the look-ahead, which finds
    /// entries without looking their frame up. A remembered slot is only a hint: once its
    /// frame's contents are dropped it may hold another frame's table, or old contents,
    /// but never lies outside the storage.
    #[inline]
    pub fn entry_in_slot(&self, slot: u32, offset: u64) -> Option<&u64> {
        let index = ((offset >> 3) & (ENTRIES_PER_TABLE as u64 - 1)) as usize;
        self.pages.pages.get(slot as usize).map(|page| &page[index])
    }

    /// Write the 8-byte entry at `addr`, giving the frame table contents if it had none.
    pub fn write_u64(&mut self, addr: Hpa, value: u64) {
        let slot = match self.slot(addr.frame()) {
            Some(slot) => slot,
            None => {
                if value == 0 {
                    return; // zero into a zero page changes nothing; don't materialize it
                }
                self.materialize(addr.frame())
            }
        };
        self.pages.page_mut(slot)[entry_index(addr)] = value;
    }

    /// Set `bits` in the entry at `addr` (an atomic OR, as hardware A/D updates are).
    #[inline]
    pub fn or_u64(&mut self, addr: Hpa, bits: u64) {
        // One index lookup: A/D updates follow a walk's read of the same entry.
        match self.table_mut(addr.frame()) {
            Some(page) => page[entry_index(addr)] |= bits,
            None => self.write_u64(addr, bits),
        }
    }

    /// The 512 entries of a frame with table contents (None: it reads as all zeros).
    pub fn table_entries(&self, frame: Hfn) -> Option<&[u64; ENTRIES_PER_TABLE]> {
        self.table(frame)
    }

    /// Give frame `to` the table contents of frame `from` (none if `from` has none): a page
    /// copy, as far as the simulator keeps page contents.
    pub fn copy_contents(&mut self, from: Hfn, to: Hfn) {
        self.drop_contents(to);
        if let Some(src) = self.slot(from) {
            let dst = self.materialize(to);
            let page = *self.pages.page(src);
            *self.pages.page_mut(dst) = page;
        }
    }

    /// Forget a frame's table contents (it reads as zeros again).
    pub fn drop_contents(&mut self, frame: Hfn) {
        if let Some(slot) = self.index.remove(frame.raw()) {
            self.free_slots.push(slot);
        }
    }

    #[inline]
    fn slot(&self, frame: Hfn) -> Option<usize> {
        self.index.get(frame.raw()).map(|slot| slot as usize)
    }

    /// The table page of `frame`, if it has contents: the walkers' path, without a bounds
    /// check on the arena.
    #[inline]
    fn table(&self, frame: Hfn) -> Option<&TablePage> {
        let slot = self.slot(frame)?;
        debug_assert!(slot < self.pages.len());
        // SAFETY: `slot < pages.len()`. The index holds only slots that `materialize` took
        // from the arena (freshly pushed, or freed by `drop_contents` after an earlier push),
        // and the arena never shrinks (it only pushes, and growth keeps every page).
        Some(unsafe { self.pages.pages.get_unchecked(slot) })
    }

    /// [`Self::table`] for writing.
    #[inline]
    fn table_mut(&mut self, frame: Hfn) -> Option<&mut TablePage> {
        let slot = self.slot(frame)?;
        debug_assert!(slot < self.pages.len());
        // SAFETY: as in `table`.
        Some(unsafe { self.pages.pages.get_unchecked_mut(slot) })
    }

    fn materialize(&mut self, frame: Hfn) -> usize {
        assert!(
            frame.raw() < self.total_frames,
            "frame {frame:?} is outside host memory"
        );
        let slot = match self.free_slots.pop() {
            Some(slot) => {
                self.pages.page_mut(slot as usize).fill(0);
                slot
            }
            None => {
                // 32 GiB of simulated page tables, more than the host holds for the arena.
                assert!(
                    self.pages.len() < MAX_TABLE_PAGES,
                    "more than {MAX_TABLE_PAGES} page-table pages"
                );
                self.pages.push_zeroed() as u32
            }
        };
        self.index.insert(frame.raw(), slot);
        slot as usize
    }
}

#[inline]
fn entry_index(addr: Hpa) -> usize {
    ((addr.raw() >> 3) & (ENTRIES_PER_TABLE as u64 - 1)) as usize
}

/// A physical-frame allocator for one address space of `total` 4 KiB frames.
///
/// Simplification: 4 KiB frames are handed out bottom-up and large pages top-down from
/// separate bump pointers, with free lists per size; freed large pages are not split and
/// freed small frames are not merged. That is enough to give every page a distinct, aligned
/// frame; fragmentation is modeled where it matters, by the hypervisor's backing policy.
pub struct FrameAllocator {
    total: u64,
    next_small: u64,
    /// Lowest frame handed out by the top-down large-page pointer.
    large_floor: u64,
    /// Freed pages of each size, by `shift - PageSize::MIN_SHIFT`, last freed first.
    free: Vec<Vec<u64>>,
    in_use: u64,
}

impl FrameAllocator {
    /// An allocator of `total_frames` 4 KiB frames, all free (frame 0 is never handed out).
    pub fn new(total_frames: u64) -> Self {
        // Frame 0 is never handed out, so a zero frame number can mean "none" in tables.
        FrameAllocator {
            total: total_frames,
            next_small: 1,
            large_floor: total_frames,
            free: vec![Vec::new(); (PageSize::MAX_SHIFT - PageSize::MIN_SHIFT + 1) as usize],
            in_use: 0,
        }
    }

    /// Allocate `size` worth of frames, aligned to `size`; returns the first frame number.
    pub fn alloc(&mut self, size: PageSize) -> Option<u64> {
        let frame = match self.free[Self::free_list(size)].pop() {
            Some(frame) => frame,
            None if size == PageSize::Size4K => {
                if self.next_small >= self.large_floor {
                    return None;
                }
                self.next_small += 1;
                self.next_small - 1
            }
            None => {
                let n = size.frames();
                let candidate = (self.large_floor.checked_sub(n)?) & !(n - 1);
                if candidate < self.next_small {
                    return None;
                }
                self.large_floor = candidate;
                candidate
            }
        };
        self.in_use += size.frames();
        Some(frame)
    }

    /// Return the page of `size` starting at `frame` (as [`Self::alloc`] gave it) to the free
    /// list of its size.
    pub fn free(&mut self, frame: u64, size: PageSize) {
        debug_assert!(frame < self.total);
        self.in_use -= size.frames();
        self.free[Self::free_list(size)].push(frame);
    }

    /// The free list of pages of `size`.
    fn free_list(size: PageSize) -> usize {
        (size.shift() - PageSize::MIN_SHIFT) as usize
    }

    /// Frames currently allocated (in 4 KiB units).
    pub fn in_use(&self) -> u64 {
        self.in_use
    }

    /// Frames managed in all (4 KiB units).
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untouched_frames_read_zero_and_writes_stick() {
        let mut mem = HostMemory::new(1 << 30);
        let addr = Hfn::new(77).addr_at(8 * 5);
        assert_eq!(mem.read_u64(addr), 0);
        mem.write_u64(addr, 0xdead_b000);
        assert_eq!(mem.read_u64(addr), 0xdead_b000);
        assert_eq!(mem.read_u64(Hfn::new(77).addr_at(8 * 6)), 0);
        assert_eq!(mem.table_pages(), 1);
        mem.or_u64(addr, 1 << 5);
        assert_eq!(mem.read_u64(addr), 0xdead_b020);
        mem.drop_contents(Hfn::new(77));
        assert_eq!(mem.read_u64(addr), 0);
        assert_eq!(mem.table_pages(), 0);
    }

    #[test]
    fn index_survives_growth_and_removals() {
        let mut mem = HostMemory::new(1 << 40);
        let frames: Vec<u64> = (0..5000u64)
            .map(|i| i.wrapping_mul(0x2545_f491) % (1 << 28))
            .collect();
        for (i, &f) in frames.iter().enumerate() {
            mem.write_u64(Hfn::new(f).addr_at(8), i as u64 + 1);
        }
        for (i, &f) in frames.iter().enumerate().filter(|(i, _)| i % 3 == 0) {
            assert_eq!(mem.read_u64(Hfn::new(f).addr_at(8)), i as u64 + 1);
            mem.drop_contents(Hfn::new(f));
        }
        for (i, &f) in frames.iter().enumerate() {
            let want = if i % 3 == 0 { 0 } else { i as u64 + 1 };
            assert_eq!(mem.read_u64(Hfn::new(f).addr_at(8)), want, "frame {f}");
        }
        assert_eq!(mem.table_pages(), frames.len() - frames.len().div_ceil(3));
    }

    #[test]
    fn index_keeps_the_largest_frames_and_slots_apart_from_empty_buckets() {
        let mut index = FrameIndex::new();
        let last_frame = (1u64 << 40) - 1;
        let last_slot = (MAX_TABLE_PAGES - 1) as u32;
        // A bucket of the largest frame and slot is not an empty one: a lookup of an absent
        // largest frame finds nothing, and a present one finds its slot.
        assert_ne!(bucket(last_frame, last_slot), EMPTY);
        assert_eq!(index.get(last_frame), None);
        index.insert(last_frame, last_slot);
        index.insert(0, 0);
        assert_eq!(index.get(last_frame), Some(last_slot));
        assert_eq!(index.get(0), Some(0));
        assert_eq!(index.remove(last_frame), Some(last_slot));
        assert_eq!(index.get(last_frame), None);
        assert_eq!(index.get(0), Some(0));
    }

    #[test]
    fn or_sets_bits_once_and_materializes_only_for_nonzero_bits() {
        let mut mem = HostMemory::new(1 << 30);
        let addr = Hfn::new(9).addr_at(8 * 511);
        mem.or_u64(addr, 0);
        assert_eq!(mem.table_pages(), 0);
        mem.or_u64(addr, 1 << 5);
        mem.or_u64(addr, 1 << 5 | 1 << 6);
        assert_eq!((mem.read_u64(addr), mem.table_pages()), (0x60, 1));
    }

    #[test]
    fn freed_pages_are_reused_zeroed_and_survive_arena_growth() {
        let mut mem = HostMemory::new(1 << 40);
        let first = FIRST_PAGES as u64;
        // Fill past the first arena block so that it grows (and copies) at least twice.
        for f in 1..=3 * first {
            mem.write_u64(Hfn::new(f).addr_at(8 * (f % 512)), f);
        }
        for f in (1..=first).step_by(2) {
            mem.drop_contents(Hfn::new(f));
        }
        // New frames take the freed slots, which must read as zeros apart from the new write.
        for f in 4 * first..4 * first + first / 2 {
            mem.write_u64(Hfn::new(f).addr_at(0), f);
            let entries = mem.table_entries(Hfn::new(f)).unwrap();
            assert_eq!(entries.iter().filter(|&&e| e != 0).count(), 1);
        }
        assert_eq!(
            mem.pages.len(),
            3 * first as usize,
            "freed slots were reused"
        );
        for f in 1..=3 * first {
            let want = if f <= first && f % 2 == 1 { 0 } else { f };
            assert_eq!(
                mem.read_u64(Hfn::new(f).addr_at(8 * (f % 512))),
                want,
                "frame {f}"
            );
            assert_eq!(
                mem.entry(Hfn::new(f).addr_at(8 * (f % 512))).is_some(),
                want != 0
            );
        }
    }

    #[test]
    fn entries_are_found_by_slot_and_a_stale_slot_stays_inside() {
        let mut mem = HostMemory::new(1 << 30);
        mem.write_u64(Hpa::new(0x5008), 11);
        mem.write_u64(Hpa::new(0x9ff8), 22);
        let (a, b) = (mem.table_slot(Hfn::new(5)), mem.table_slot(Hfn::new(9)));
        assert_eq!(mem.table_slot(Hfn::new(6)), None);
        // The offset is taken within the page, whatever lies above it.
        assert_eq!(mem.entry_in_slot(a.unwrap(), 0x7_0008).copied(), Some(11));
        assert_eq!(mem.entry_in_slot(b.unwrap(), 0xff8).copied(), Some(22));
        assert_eq!(mem.entry_in_slot(a.unwrap(), 0x10).copied(), Some(0));
        assert_eq!(mem.entry_in_slot(2, 0), None, "no third slot");
        // Dropped contents leave the slot behind: it reads, but no longer as frame 5.
        mem.drop_contents(Hfn::new(5));
        mem.write_u64(Hpa::new(0xc008), 33);
        assert_eq!(mem.table_slot(Hfn::new(12)), a);
        assert_eq!(mem.entry_in_slot(a.unwrap(), 8).copied(), Some(33));
        assert_eq!(mem.entry_in_slot(u32::MAX, 8), None);
    }

    #[test]
    fn writing_zero_does_not_materialize() {
        let mut mem = HostMemory::new(1 << 30);
        mem.write_u64(Hpa::new(0x5000), 0);
        assert_eq!(mem.table_pages(), 0);
    }

    #[test]
    fn allocations_are_aligned_distinct_and_counted() {
        let mut alloc = FrameAllocator::new(4 << 18); // 4 GiB
        let small = alloc.alloc(PageSize::Size4K).unwrap();
        let huge = alloc.alloc(PageSize::Size2M).unwrap();
        let giant = alloc.alloc(PageSize::Size1G).unwrap();
        assert_ne!(small, 0);
        assert_eq!(huge % 512, 0);
        assert_eq!(giant % (512 * 512), 0);
        assert!(giant + 512 * 512 <= 4 << 18);
        assert!(huge + 512 <= giant || huge >= giant + 512 * 512);
        assert_eq!(alloc.in_use(), 1 + 512 + 512 * 512);
        alloc.free(huge, PageSize::Size2M);
        assert_eq!(alloc.alloc(PageSize::Size2M), Some(huge));
    }

    #[test]
    fn allocator_reports_exhaustion() {
        let mut alloc = FrameAllocator::new(4);
        assert!(alloc.alloc(PageSize::Size2M).is_none());
        assert_eq!(alloc.alloc(PageSize::Size4K), Some(1));
        assert_eq!(alloc.alloc(PageSize::Size4K), Some(2));
        assert_eq!(alloc.alloc(PageSize::Size4K), Some(3));
        assert_eq!(alloc.alloc(PageSize::Size4K), None);
    }
}
