//! Software prefetch of the simulator's own memory.
//!
//! Simulating a random-access workload means reading the simulator's own tables (table
//! pages, cache tag arrays) at random, and those reads miss the host's caches. The engine
//! looks a few accesses ahead and asks the MMU to prefetch what they will touch (see
//! [`crate::hw::mmu::Mmu::prefetch`]), so the host overlaps those misses. Prefetching is a
//! hint: it changes no simulated state and no result, only the simulator's speed.
//!
//! The look-ahead of one access runs in stages, each reading only what an earlier stage
//! prefetched: the first walks the upper table levels (few, and hot in the host's caches)
//! and prefetches the leaf-level entry; the next reads it and prefetches the next entry (the
//! EPT leaf of a nested walk) or the data line's cache sets. [`Lookahead`] keeps where each
//! coming access stopped, so a stage resumes instead of walking again from the top.

use std::cell::Cell;

/// Ask the host to bring the line holding `ptr` into its caches.
#[inline(always)]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint. It never faults, whatever the address, and changes no
    // architectural state, so any pointer value is fine.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// What the look-ahead of one coming access does at its next stage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Next {
    /// Nothing left to prefetch.
    #[default]
    Done,
    /// Read the leaf-level entry of the guest (or native) tables at host address `at`.
    GuestLeaf { at: u64 },
    /// Read the leaf-level EPT entry at host address `at`, which maps guest-physical `gpa`.
    EptLeaf { at: u64, gpa: u64 },
}

/// Coming accesses remembered between stages; at least the engine's batch.
const RING: usize = 64;
/// Stages with their own read position (later ones share the last).
const CURSORS: usize = 4;
/// Remembered guest table frames (direct-mapped).
const TABLE_FRAMES: usize = 4096;
/// Remembered leaf-level tables (direct-mapped; a power of two). Enough that the leaf tables
/// of a few GiB of guest memory and of its EPT mostly keep their slots.
const LEAF_TABLES: usize = 65536;
/// Which tables a remembered leaf table belongs to (part of its key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// The guest's (or native) tables: addresses in their table space.
    Guest = 1,
    Ept = 2,
}

/// Look-ahead state kept between prefetch stages. Only a hint: whatever it holds (even
/// something stale after the tables changed) affects which host lines get prefetched, never
/// a simulated result. Interior mutability, because prefetching happens through `&Mmu`.
pub struct Lookahead {
    /// `(va, next)` of recent coming accesses, in the order the first stage saw them.
    ring: Box<[Cell<(u64, Next)>]>,
    /// Slot the first stage fills next (counts up; the slot is this modulo [`RING`]).
    head: Cell<usize>,
    /// Per later stage, the slot it expects next: stages see the accesses in the same order.
    cursors: [Cell<usize>; CURSORS],
    /// Guest-physical frame -> host frame of guest table pages, as the EPT mapped them
    /// when last looked up: `(gfn + 1, hfn)`, `0` when empty.
    table_frames: Box<[Cell<(u64, u64)>]>,
    /// (tables, root, 2 MiB region) -> address of the leaf-level table covering it, as a
    /// functional walk found it: `(key, table | generation)` with the generation in the low
    /// 12 bits (tables are page-aligned). A hash of the key is stored, and only a matching
    /// generation counts, so a lookup gives at worst a stale hint.
    leaf_tables: Box<[Cell<(u64, u64)>]>,
    /// Bumped whenever table changes are announced (TLB and paging-structure invalidation):
    /// remembered leaf tables from before are ignored, as the paging-structure caches'
    /// entries are dropped.
    generation: Cell<u64>,
}

impl Default for Lookahead {
    fn default() -> Self {
        Lookahead {
            ring: (0..RING).map(|_| Cell::new((0, Next::Done))).collect(),
            head: Cell::new(0),
            cursors: Default::default(),
            table_frames: (0..TABLE_FRAMES).map(|_| Cell::new((0, 0))).collect(),
            leaf_tables: (0..LEAF_TABLES).map(|_| Cell::new((0, 0))).collect(),
            generation: Cell::new(1),
        }
    }
}

impl Lookahead {
    /// Remember the first stage's outcome for the coming access to `va`.
    #[inline]
    pub fn start(&self, va: u64, next: Next) {
        let head = self.head.get();
        self.ring[head % RING].set((va, next));
        self.head.set(head + 1);
    }

    /// The slot and pending step of `va` for a later `stage` (1, 2, ...), if remembered.
    #[inline]
    pub fn resume(&self, stage: u32, va: u64) -> Option<(usize, Next)> {
        let cursor = &self.cursors[(stage as usize).min(CURSORS - 1)];
        let head = self.head.get();
        let expected = cursor.get();
        let slot = if expected < head && self.ring[expected % RING].get().0 == va {
            expected
        } else {
            // Out of step (another caller, or a different order): look for it, newest first.
            (head.saturating_sub(RING)..head).rev().find(|&s| self.ring[s % RING].get().0 == va)?
        };
        cursor.set(slot + 1);
        Some((slot, self.ring[slot % RING].get().1))
    }

    /// Record the next step of the access in `slot` (from [`Self::resume`]).
    #[inline]
    pub fn update(&self, slot: usize, next: Next) {
        let cell = &self.ring[slot % RING];
        cell.set((cell.get().0, next));
    }

    /// The host frame remembered for guest table frame `gfn`.
    #[inline]
    pub fn table_frame(&self, gfn: u64) -> Option<u64> {
        let (key, hfn) = self.table_frames[Self::frame_slot(gfn)].get();
        (key == gfn + 1).then_some(hfn)
    }

    /// Remember that guest table frame `gfn` is at host frame `hfn`.
    #[inline]
    pub fn remember_table_frame(&self, gfn: u64, hfn: u64) {
        self.table_frames[Self::frame_slot(gfn)].set((gfn + 1, hfn));
    }

    /// The leaf-level table covering 2 MiB region `region` of `tables` rooted at `root`, as
    /// last found since the latest [`Self::forget_leaf_tables`].
    #[inline]
    pub fn leaf_table(&self, tables: Tables, root: u64, region: u64) -> Option<u64> {
        let key = Self::leaf_key(tables, root, region);
        let (stored, value) = self.leaf_tables[Self::leaf_slot(key)].get();
        (stored == key && value & 0xfff == self.generation.get() & 0xfff).then_some(value & !0xfff)
    }

    /// Remember that `table` is the leaf-level table of `region` of `tables` at `root`.
    #[inline]
    pub fn remember_leaf_table(&self, tables: Tables, root: u64, region: u64, table: u64) {
        let key = Self::leaf_key(tables, root, region);
        let value = (table & !0xfff) | (self.generation.get() & 0xfff);
        self.leaf_tables[Self::leaf_slot(key)].set((key, value));
    }

    /// Forget every remembered leaf table (tables may have changed).
    #[inline]
    pub fn forget_leaf_tables(&self) {
        self.generation.set(self.generation.get() + 1);
    }

    #[inline]
    fn leaf_key(tables: Tables, root: u64, region: u64) -> u64 {
        let mixed = (root >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ region.wrapping_mul(0xc2b2_ae3d_27d4_eb4f) ^ tables as u64;
        // One more multiply so the index bits depend on every input bit.
        mixed.wrapping_mul(0x1656_67b1_9e37_79f9) | 1
    }

    /// The slot of a leaf-table key: its top bits (the key's last multiply mixes every input
    /// bit into them).
    #[inline]
    fn leaf_slot(key: u64) -> usize {
        (key >> (64 - LEAF_TABLES.trailing_zeros())) as usize
    }

    #[inline]
    fn frame_slot(gfn: u64) -> usize {
        (gfn.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 52) as usize % TABLE_FRAMES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_resume_in_order_and_out_of_order() {
        let l = Lookahead::default();
        for va in [10, 20, 30] {
            l.start(va, Next::GuestLeaf { at: va * 8 });
        }
        assert_eq!(l.resume(1, 10), Some((0, Next::GuestLeaf { at: 80 })));
        l.update(0, Next::EptLeaf { at: 1, gpa: 2 });
        assert_eq!(l.resume(1, 30), Some((2, Next::GuestLeaf { at: 240 })));
        assert_eq!(l.resume(1, 99), None);
        assert_eq!(l.resume(2, 10), Some((0, Next::EptLeaf { at: 1, gpa: 2 })));
        assert_eq!(l.resume(2, 20), Some((1, Next::GuestLeaf { at: 160 })));
        // Slots are reused after RING starts; the oldest are forgotten.
        for va in 100..100 + RING as u64 {
            l.start(va, Next::Done);
        }
        assert_eq!(l.resume(1, 10), None);
        assert_eq!(l.resume(1, 100), Some((3, Next::Done)));
    }

    #[test]
    fn table_frames_are_remembered_by_frame() {
        let l = Lookahead::default();
        assert_eq!(l.table_frame(0), None);
        l.remember_table_frame(0, 7);
        l.remember_table_frame(5, 9);
        assert_eq!(l.table_frame(0), Some(7));
        assert_eq!(l.table_frame(5), Some(9));
        assert_eq!(l.table_frame(6), None);
    }

    #[test]
    fn leaf_tables_are_keyed_and_forgotten() {
        let l = Lookahead::default();
        assert_eq!(l.leaf_table(Tables::Guest, 0x1000, 3), None);
        l.remember_leaf_table(Tables::Guest, 0x1000, 3, 0x7000);
        assert_eq!(l.leaf_table(Tables::Guest, 0x1000, 3), Some(0x7000));
        assert_eq!(l.leaf_table(Tables::Ept, 0x1000, 3), None);
        assert_eq!(l.leaf_table(Tables::Guest, 0x2000, 3), None);
        assert_eq!(l.leaf_table(Tables::Guest, 0x1000, 4), None);
        l.forget_leaf_tables();
        assert_eq!(l.leaf_table(Tables::Guest, 0x1000, 3), None);
    }
}
