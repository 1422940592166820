//! Software prefetch of the simulator's own memory.
//!
//! Simulating a random-access workload means reading the simulator's own tables (table
//! pages, cache tag arrays) at random, and those reads miss the host's caches. The engine
//! looks a few accesses ahead and asks the MMU to prefetch what they will touch (see
//! [`crate::hw::x86::mmu::Mmu::prefetch`]), so the host overlaps those misses. Prefetching is a
//! hint: it changes no simulated state and no result, only the simulator's speed.
//!
//! The look-ahead of a batch of coming accesses runs in stages, each over the whole batch
//! and each reading only what an earlier stage prefetched: a first pass prefetches the slots
//! remembering each access's leaf-level table; the next walks the upper table levels (few,
//! and hot in the host's caches), or takes the remembered leaf table, and prefetches the
//! frame-index bucket of the leaf-level entry; the next finds the entry's page and prefetches
//! the entry; the next reads it and prefetches the next entry (the EPT leaf of a nested walk)
//! or the data line's cache sets. The slots of [`Lookahead`] are laid out so that a buffer's
//! neighbouring regions and frames take neighbouring slots: the slots in use stay few lines
//! of the host's caches rather than one line each. Where each access stands between stages
//! is a [`Next`], kept by the caller; [`Lookahead`] remembers what outlives a batch (table
//! frames and leaf-level tables found by earlier walks), so a stage need not walk from the
//! top.

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

/// What the look-ahead of one coming access does at its next stage. Entries are the
/// simulator's copies in host memory (`'m`), found when they were prefetched.
#[derive(Clone, Copy, Debug, Default)]
pub enum Next<'m> {
    /// Nothing left to prefetch.
    #[default]
    Done,
    /// Find the simulator's copy of the leaf-level entry of the guest (or native) tables
    /// at host address `at` (its frame-index bucket was prefetched) and prefetch it.
    GuestLocate { at: u64 },
    /// Read the leaf-level entry of the guest (or native) tables.
    GuestLeaf { entry: &'m u64 },
    /// Read the leaf-level EPT entry that maps guest-physical `gpa`.
    EptLeaf { entry: &'m u64, gpa: u64 },
}

/// Coming accesses one look-ahead pass handles at a time (at least the engine's batch).
pub const LOOKAHEAD_BATCH: usize = 16;
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

/// Look-ahead state kept between batches. Only a hint: whatever it holds (even
/// something stale after the tables changed) affects which host lines get prefetched, never
/// a simulated result. Interior mutability, because prefetching happens through `&Mmu`.
pub struct Lookahead {
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
            table_frames: (0..TABLE_FRAMES).map(|_| Cell::new((0, 0))).collect(),
            leaf_tables: (0..LEAF_TABLES).map(|_| Cell::new((0, 0))).collect(),
            generation: Cell::new(1),
        }
    }
}

impl Lookahead {
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
        let (stored, value) = self.leaf_tables[Self::leaf_slot(tables, root, region)].get();
        (stored == key && value & 0xfff == self.generation.get() & 0xfff).then_some(value & !0xfff)
    }

    /// Prefetch (in the host) the slot [`Self::leaf_table`] reads for these arguments.
    #[inline]
    pub fn prefetch_leaf_table(&self, tables: Tables, root: u64, region: u64) {
        let slot = Self::leaf_slot(tables, root, region);
        prefetch(&self.leaf_tables[slot]);
    }

    /// Remember that `table` is the leaf-level table of `region` of `tables` at `root`.
    #[inline]
    pub fn remember_leaf_table(&self, tables: Tables, root: u64, region: u64, table: u64) {
        let key = Self::leaf_key(tables, root, region);
        let value = (table & !0xfff) | (self.generation.get() & 0xfff);
        self.leaf_tables[Self::leaf_slot(tables, root, region)].set((key, value));
    }

    /// Forget every remembered leaf table (tables may have changed).
    #[inline]
    pub fn forget_leaf_tables(&self) {
        self.generation.set(self.generation.get() + 1);
    }

    #[inline]
    fn leaf_key(tables: Tables, root: u64, region: u64) -> u64 {
        let mixed = (root >> 12).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ region.wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
            ^ tables as u64;
        // One more multiply so the index bits depend on every input bit.
        mixed.wrapping_mul(0x1656_67b1_9e37_79f9) | 1
    }

    /// The slot of `region` of `tables` at `root`: consecutive regions of one set of tables
    /// take consecutive slots, from a start that a hash of the tables and root picks, so the
    /// slots a buffer's regions use lie together and stay in the host's caches (a hash of
    /// the region too would spread them over the whole table).
    #[inline]
    fn leaf_slot(tables: Tables, root: u64, region: u64) -> usize {
        let start = ((root >> 12) ^ (tables as u64) << 60).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (top_bits(start, LEAF_TABLES) + region as usize) & (LEAF_TABLES - 1)
    }

    /// Consecutive frames take consecutive slots, for the same reason.
    #[inline]
    fn frame_slot(gfn: u64) -> usize {
        gfn as usize & (TABLE_FRAMES - 1)
    }
}

/// A slot of a direct-mapped table of `slots` (a power of two) from a mixed hash: as many of
/// its top bits as the table needs, so every slot is used whatever the table's size (a fixed
/// shift of 52 reaches only 4,096 slots of a larger table).
#[inline]
fn top_bits(hash: u64, slots: usize) -> usize {
    debug_assert!(slots.is_power_of_two() && slots > 1);
    (hash >> (64 - slots.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_buffers_regions_and_frames_keep_their_slots() {
        // Consecutive regions and frames take consecutive slots, so none of a buffer's
        // evicts another (with hashed slots, some of 4,096 would collide).
        let l = Lookahead::default();
        for region in 0..4096 {
            l.remember_leaf_table(Tables::Guest, 0x5000, region, region << 12);
            l.remember_table_frame(region + 77, region);
        }
        for region in 0..4096 {
            assert_eq!(
                l.leaf_table(Tables::Guest, 0x5000, region),
                Some(region << 12)
            );
            assert_eq!(l.table_frame(region + 77), Some(region));
        }
    }
}
