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
//! remembering each access's leaf-level table; the next takes the remembered table (or walks
//! the upper table levels, few and hot in the host's caches) and prefetches the leaf-level
//! entry, reached through the table page's slot in the simulator's table storage (so no
//! frame lookup waits on a miss); under nested paging the next reads that entry and
//! prefetches the EPT leaf entry of the data page. Only when references are served at once
//! does a last stage read the final entry and prefetch the data line's cache sets (a
//! stream's cache levels prefetch their own). The slots of [`Lookahead`] are laid out so
//! that a buffer's neighbouring regions and frames take neighbouring slots: the slots in use
//! stay few lines of the host's caches rather than one line each. [`Lookahead`] remembers
//! what outlives a batch (table frames and leaf-level tables found by earlier walks), so a
//! stage need not walk from the top.

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

/// Coming accesses one look-ahead pass handles at a time (at least the engine's batch).
pub const LOOKAHEAD_BATCH: usize = 16;
/// Remembered guest table frames (direct-mapped).
const TABLE_FRAMES: usize = 4096;
/// Remembered leaf-level tables (direct-mapped; a power of two). Enough that the leaf tables
/// of a few GiB of guest memory and of its EPT mostly keep their slots.
const LEAF_TABLES: usize = 65536;
/// Bits of a region that pick its slot (from a start the tables' root picks); the bits above
/// are part of the key.
const LEAF_TABLE_BITS: u32 = LEAF_TABLES.trailing_zeros();
/// The generation bits kept with a remembered leaf table (tables are page-aligned).
const GENERATION_MASK: u64 = 0xfff;

/// Which tables a remembered leaf table belongs to (part of its key).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tables {
    /// The guest's (or native) tables: addresses in their table space.
    Guest = 1,
    /// The EPT: host addresses.
    Ept = 2,
}

/// A leaf-level table as the look-ahead remembers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafTable {
    /// Its address in its table space (host-physical, or guest-physical for the guest's
    /// tables under nested paging).
    pub table: u64,
    /// The slot of its page in the simulator's table storage (see
    /// [`crate::hw::frames::HostMemory::entry_in_slot`]), so a later look-ahead reaches its
    /// entries without looking the frame up.
    pub slot: u32,
}

/// One remembered leaf table: 16 bytes, four to a host cache line.
#[derive(Clone, Copy, Debug, Default)]
struct Hint {
    /// The key of its tables, root and region (see [`LeafTables::key`]).
    key: u32,
    slot: u32,
    /// The table's address, the generation it was found in in the low bits (never zero
    /// there, so an empty hint matches nothing).
    table: u64,
}

/// Look-ahead state kept between batches. Only a hint: whatever it holds (even
/// something stale after the tables changed) affects which host lines get prefetched, never
/// a simulated result. Interior mutability, because prefetching happens through `&Mmu`.
pub struct Lookahead {
    /// Guest-physical frame -> host frame of guest table pages, as the EPT mapped them
    /// when last looked up: `(gfn + 1, hfn)`, `0` when empty.
    table_frames: Box<[Cell<(u64, u64)>]>,
    /// (tables, root, 2 MiB region) -> the leaf-level table covering it, as a functional
    /// walk found it. A hash of the key is stored, and only a matching generation counts,
    /// so a lookup gives at worst a stale hint.
    leaf_tables: Box<[Cell<Hint>; LEAF_TABLES]>,
    /// Bumped whenever table changes are announced (TLB and paging-structure invalidation):
    /// remembered leaf tables from before are ignored, as the paging-structure caches'
    /// entries are dropped. Never a multiple of 4,096, so its low bits are never zero.
    generation: Cell<u64>,
}

impl Default for Lookahead {
    fn default() -> Self {
        Lookahead {
            table_frames: (0..TABLE_FRAMES).map(|_| Cell::new((0, 0))).collect(),
            leaf_tables: vec![Cell::new(Hint::default()); LEAF_TABLES]
                .into_boxed_slice()
                .try_into()
                .expect("LEAF_TABLES hints"),
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

    /// The remembered leaf-level tables of `tables` rooted at `root`, as found since the
    /// latest [`Self::forget_leaf_tables`]. Hashes the tables and root once, so a lookup
    /// by region is an add and a load.
    #[inline]
    pub fn leaf_tables(&self, tables: Tables, root: u64) -> LeafTables<'_> {
        let mixed = ((root >> 12) ^ (tables as u64) << 60).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        LeafTables {
            hints: &self.leaf_tables,
            start: top_bits(mixed, LEAF_TABLES),
            // Other bits than the start's, so tables with the same start differ in key.
            key: (mixed.wrapping_mul(0xc2b2_ae3d_27d4_eb4f) >> 32) as u32,
            generation: self.generation.get() & GENERATION_MASK,
        }
    }

    /// Forget every remembered leaf table (tables may have changed).
    #[inline]
    pub fn forget_leaf_tables(&self) {
        let mut next = self.generation.get() + 1;
        if next & GENERATION_MASK == 0 {
            next += 1;
        }
        self.generation.set(next);
    }

    /// Consecutive frames take consecutive slots, for the same reason.
    #[inline]
    fn frame_slot(gfn: u64) -> usize {
        gfn as usize & (TABLE_FRAMES - 1)
    }
}

/// The remembered leaf-level tables of one set of tables and root (see
/// [`Lookahead::leaf_tables`]). Consecutive regions take consecutive slots, from a start
/// that a hash of the tables and root picks, so the slots a buffer's regions use lie
/// together and stay in the host's caches (a hash of the region too would spread them over
/// the whole table).
pub struct LeafTables<'l> {
    hints: &'l [Cell<Hint>; LEAF_TABLES],
    start: usize,
    key: u32,
    generation: u64,
}

impl LeafTables<'_> {
    /// The leaf-level table remembered for 2 MiB region `region`.
    #[inline]
    pub fn get(&self, region: u64) -> Option<LeafTable> {
        let hint = self.hint(region).get();
        let matches =
            hint.key == self.key(region) && hint.table & GENERATION_MASK == self.generation;
        matches.then_some(LeafTable {
            table: hint.table & !GENERATION_MASK,
            slot: hint.slot,
        })
    }

    /// Prefetch (in the host) the slot [`Self::get`] reads for `region`.
    #[inline]
    pub fn prefetch(&self, region: u64) {
        prefetch(self.hint(region));
    }

    /// Remember `leaf` as the leaf-level table of `region`.
    #[inline]
    pub fn remember(&self, region: u64, leaf: LeafTable) {
        self.hint(region).set(Hint {
            key: self.key(region),
            slot: leaf.slot,
            table: (leaf.table & !GENERATION_MASK) | self.generation,
        });
    }

    #[inline(always)]
    fn hint(&self, region: u64) -> &Cell<Hint> {
        &self.hints[(self.start.wrapping_add(region as usize)) & (LEAF_TABLES - 1)]
    }

    /// The region's bits above those that pick its slot, and the tables' and root's hash.
    #[inline(always)]
    fn key(&self, region: u64) -> u32 {
        self.key ^ (region >> LEAF_TABLE_BITS) as u32
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

    fn leaf(table: u64, slot: u32) -> LeafTable {
        LeafTable { table, slot }
    }

    #[test]
    fn leaf_tables_are_keyed_and_forgotten() {
        let l = Lookahead::default();
        let guest = l.leaf_tables(Tables::Guest, 0x1000);
        assert_eq!(guest.get(3), None);
        guest.remember(3, leaf(0x7000, 5));
        assert_eq!(guest.get(3), Some(leaf(0x7000, 5)));
        assert_eq!(l.leaf_tables(Tables::Ept, 0x1000).get(3), None);
        assert_eq!(l.leaf_tables(Tables::Guest, 0x2000).get(3), None);
        assert_eq!(guest.get(4), None);
        // A region whose slot is the same, with other bits above.
        assert_eq!(guest.get(3 + LEAF_TABLES as u64), None);
        l.forget_leaf_tables();
        assert_eq!(l.leaf_tables(Tables::Guest, 0x1000).get(3), None);
    }

    #[test]
    fn forgetting_never_makes_an_empty_slot_match() {
        // After 4,095 forgets the generation's low bits would be zero, as an empty slot's.
        let l = Lookahead::default();
        for _ in 0..2 * GENERATION_MASK {
            l.forget_leaf_tables();
            let tables = l.leaf_tables(Tables::Guest, 0);
            assert_ne!(tables.generation, 0);
        }
        let tables = l.leaf_tables(Tables::Guest, 0);
        for region in 0..LEAF_TABLES as u64 {
            assert_eq!(tables.get(region), None);
        }
    }

    #[test]
    fn a_buffers_regions_and_frames_keep_their_slots() {
        // Consecutive regions and frames take consecutive slots, so none of a buffer's
        // evicts another (with hashed slots, some of 4,096 would collide).
        let l = Lookahead::default();
        let tables = l.leaf_tables(Tables::Guest, 0x5000);
        for region in 0..4096 {
            tables.remember(region, leaf(region << 12, region as u32));
            l.remember_table_frame(region + 77, region);
        }
        for region in 0..4096 {
            assert_eq!(tables.get(region), Some(leaf(region << 12, region as u32)));
            assert_eq!(l.table_frame(region + 77), Some(region));
        }
    }
}
