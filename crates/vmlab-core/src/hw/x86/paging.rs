//! Paging modes as data: one [`PagingMode`] describes a radix table (how many levels, how
//! many address bits index each level, how big an entry is, where leaves may sit), and every
//! walk of the simulator, hardware or software, reads the geometry from it.
//!
//! - The hardware walker (`walker.rs`) runs one loop over a mode's levels for the guest
//!   (or native) tables and for the EPT.
//! - The look-ahead probe (`mmu.rs`, `host::prefetch`), the hypervisor's software
//!   walks of the EPT (`hv::x86::vm`) and of the guest tables (`hv::x86::shadow`), and the
//!   kernel model's walks use the same mode through a [`Cursor`] or [`PagingMode::soft_walk`].
//!
//! x86-64 4-level paging, LA57 5-level paging and EPT share one geometry (9 index bits per
//! level above a 4 KiB page, 8-byte entries, leaves at levels 1 to 3); the entry layouts
//! differ and are the [`EntryFormat`] a walk is instantiated with. Another architecture's
//! radix tables (say, a different page size or index width) are another descriptor, not
//! another walker.

use crate::addr::{Gfn, Hfn, PageSize, PAGE_SHIFT};
use crate::hw::x86::pte::{EntryFormat, Perms};

/// Most levels a paging mode may have (a mask: per-level tables have `MAX_LEVELS + 1` slots).
pub const MAX_LEVELS: u8 = 7;

/// The geometry and leaf rules of one radix paging mode.
///
/// Made by [`PagingMode::radix`] from its parameters, which also derives per-level tables
/// (each level's address shift, each level's leaf page size), so that a walk step is a
/// table lookup, a shift and a mask, as with constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagingMode {
    name: &'static str,
    /// Table levels; level 1 holds the smallest pages' entries, `levels` is the root.
    levels: u8,
    /// log2 of the smallest page: the address bits below the level-1 index.
    page_shift: u8,
    /// Address bits that index one table (9 on x86: 512 entries).
    index_bits: u8,
    /// log2 of an entry's size in bytes (3 on x86: 8-byte entries).
    entry_shift: u8,
    /// The highest level at which an entry with the large-page bit maps a page; level 1
    /// entries always map a page. Above it the large-page bit is reserved.
    max_leaf_level: u8,
    /// `(1 << index_bits) - 1`.
    index_mask: u64,
    /// By level: the address bits below that level's index.
    shift: [u8; MAX_LEVELS as usize + 1],
    /// By level: the page a leaf there maps, if a leaf may sit there.
    leaf: [Option<PageSize>; MAX_LEVELS as usize + 1],
}

/// x86-64 4-level paging (and 4-level EPT).
pub const X86_64_4LEVEL: PagingMode = PagingMode::radix("x86-64 4-level", 4, PAGE_SHIFT, 9, 3, 3);

/// x86-64 5-level paging, LA57 (and 5-level EPT).
pub const X86_64_5LEVEL: PagingMode = PagingMode::radix("x86-64 5-level", 5, PAGE_SHIFT, 9, 3, 3);

/// What an entry read at some level of a walk is, under a mode's leaf rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// Not present: the walk faults here.
    NotPresent,
    /// Points at the next level's table.
    Table,
    /// Maps a page of this size.
    Leaf(PageSize),
    /// Present, with a large-page bit where no leaf may sit (a reserved-bit fault).
    Reserved,
}

/// A page size the architecture cannot map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{mode} has no {size} pages (valid: {valid})")]
pub struct UnsupportedPageSize {
    /// The size asked for.
    pub size: PageSize,
    /// The paging mode's name.
    pub mode: &'static str,
    /// The sizes it has, for the message.
    pub valid: &'static str,
}

impl PagingMode {
    /// A radix paging mode: `levels` tables of `1 << index_bits` entries of
    /// `1 << entry_shift` bytes each, over pages of `1 << page_shift` bytes at level 1, with
    /// large-page leaves allowed up to `max_leaf_level`.
    ///
    /// # Panics
    /// If the parameters describe no valid mode (no levels, more than [`MAX_LEVELS`], an
    /// address wider than 64 bits, a leaf level above the root, a page under 4 KiB); in a
    /// `const` this is a compile-time error.
    pub const fn radix(
        name: &'static str,
        levels: u8,
        page_shift: u32,
        index_bits: u32,
        entry_shift: u32,
        max_leaf_level: u8,
    ) -> PagingMode {
        assert!(levels >= 1 && levels <= MAX_LEVELS, "levels out of range");
        assert!(max_leaf_level >= 1 && max_leaf_level <= levels);
        assert!(index_bits >= 1 && entry_shift <= page_shift);
        assert!(
            page_shift + index_bits * levels as u32 <= 64,
            "wider than 64 bits"
        );
        let mut shift = [0u8; MAX_LEVELS as usize + 1];
        let mut leaf = [None; MAX_LEVELS as usize + 1];
        let mut level = 1;
        while level <= MAX_LEVELS {
            let s = page_shift + index_bits * (level as u32 - 1);
            // Levels above the root (never walked) keep a shift a u64 can take.
            shift[level as usize] = if s < 64 { s as u8 } else { 63 };
            if level <= max_leaf_level {
                leaf[level as usize] = match PageSize::from_shift(s) {
                    Some(size) => Some(size),
                    None => panic!("leaf pages must be powers of two from 4 KiB"),
                };
            }
            level += 1;
        }
        PagingMode {
            name,
            levels,
            page_shift: page_shift as u8,
            index_bits: index_bits as u8,
            entry_shift: entry_shift as u8,
            max_leaf_level,
            index_mask: (1 << index_bits) - 1,
            shift,
            leaf,
        }
    }

    /// x86-64 paging with `levels` levels (4, or 5 with LA57); `None` for any other depth.
    pub const fn x86_64(levels: u8) -> Option<PagingMode> {
        match levels {
            4 => Some(X86_64_4LEVEL),
            5 => Some(X86_64_5LEVEL),
            _ => None,
        }
    }

    /// The constant x86-64 mode of `levels` levels (4, or 5 with LA57), if there is one: a
    /// `'static` descriptor, for structures that keep a reference rather than a copy.
    pub const fn x86_64_static(levels: u8) -> Option<&'static PagingMode> {
        match levels {
            4 => Some(&X86_64_4LEVEL),
            5 => Some(&X86_64_5LEVEL),
            _ => None,
        }
    }

    /// [`PagingMode::x86_64`] for a depth already validated (the machine profile accepts
    /// only 4 and 5).
    ///
    /// # Panics
    /// If `levels` is neither 4 nor 5.
    pub fn x86_64_validated(levels: u8) -> PagingMode {
        Self::x86_64(levels)
            .unwrap_or_else(|| panic!("{levels} paging levels: the profile allows 4 or 5"))
    }

    /// A human name for messages.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Number of table levels (the root is at this level).
    #[inline(always)]
    pub const fn levels(&self) -> u8 {
        self.levels
    }

    /// Address bits that index one table.
    #[inline(always)]
    pub const fn index_bits(&self) -> u32 {
        self.index_bits as u32
    }

    /// `(1 << index_bits) - 1`: the mask of a table index.
    #[inline(always)]
    pub const fn index_mask(&self) -> u64 {
        self.index_mask
    }

    /// log2 of an entry's size in bytes.
    #[inline(always)]
    pub const fn entry_shift(&self) -> u32 {
        self.entry_shift as u32
    }

    /// The highest level at which a leaf may sit (level 1 always holds leaves).
    #[inline(always)]
    pub const fn max_leaf_level(&self) -> u8 {
        self.max_leaf_level
    }

    /// Entries in one table.
    #[inline(always)]
    pub const fn entries_per_table(&self) -> usize {
        1 << self.index_bits
    }

    /// Bits of address below the part that indexes the table at `level` (level 1 = PT;
    /// `level` from 1 to [`MAX_LEVELS`]).
    #[inline(always)]
    pub const fn level_shift(&self, level: u8) -> u32 {
        debug_assert!(level >= 1 && level <= MAX_LEVELS);
        // The mask keeps the lookup in bounds without a check: a walk step is a load.
        self.shift[(level & MAX_LEVELS) as usize] as u32
    }

    /// Bytes of address space one entry at `level` covers.
    #[inline(always)]
    pub const fn span(&self, level: u8) -> u64 {
        1 << self.level_shift(level)
    }

    /// The index of `addr`'s entry in its table at `level`.
    #[inline(always)]
    pub const fn index(&self, addr: u64, level: u8) -> usize {
        ((addr >> self.level_shift(level)) & self.index_mask) as usize
    }

    /// Byte offset of entry `index` in a table.
    #[inline(always)]
    pub const fn entry_offset(&self, index: usize) -> u64 {
        (index as u64) << self.entry_shift
    }

    /// The index of the entry at byte `offset` of its table (the inverse of
    /// [`Self::entry_offset`]; bits of `offset` above the table are ignored).
    #[inline(always)]
    pub const fn entry_index(&self, offset: u64) -> usize {
        ((offset >> self.entry_shift) & self.index_mask) as usize
    }

    /// Byte offset, in its table at `level`, of `addr`'s entry.
    #[inline(always)]
    pub const fn entry_offset_of(&self, addr: u64, level: u8) -> u64 {
        self.entry_offset(self.index(addr, level))
    }

    /// The size of the page a leaf at `level` maps, if a leaf may sit there.
    #[inline(always)]
    pub const fn leaf_size(&self, level: u8) -> Option<PageSize> {
        if level <= MAX_LEVELS {
            self.leaf[(level & MAX_LEVELS) as usize]
        } else {
            None
        }
    }

    /// The level whose entries map pages of `size`, if this mode has such pages.
    pub const fn leaf_level(&self, size: PageSize) -> Option<u8> {
        let above = size.shift() as i64 - self.page_shift as i64;
        if above < 0 || above % self.index_bits as i64 != 0 {
            return None;
        }
        let level = (above / self.index_bits as i64 + 1) as u8;
        if level <= self.max_leaf_level {
            Some(level)
        } else {
            None
        }
    }

    /// The page sizes this mode maps, smallest first.
    pub fn page_sizes(&self) -> impl Iterator<Item = PageSize> + '_ {
        (1..=self.max_leaf_level).filter_map(|level| self.leaf_size(level))
    }

    /// Whether this mode maps pages of `size`.
    pub const fn supports(&self, size: PageSize) -> bool {
        self.leaf_level(size).is_some()
    }

    /// `size` if this mode maps pages of that size, else an error naming the valid ones.
    pub fn check_page_size(&self, size: PageSize) -> Result<PageSize, UnsupportedPageSize> {
        if self.supports(size) {
            return Ok(size);
        }
        Err(UnsupportedPageSize {
            size,
            mode: self.name,
            valid: "4k, 2m, 1g",
        })
    }

    /// Whether a present entry at `level` maps a page (rather than pointing at a table).
    /// A large-page bit where no leaf may sit is not a leaf; see [`Self::classify`].
    #[inline(always)]
    pub fn is_leaf<F: EntryFormat>(&self, entry: u64, level: u8) -> bool {
        level == 1 || (F::is_large(entry) && level <= self.max_leaf_level)
    }

    /// What `entry`, read at `level`, is: the leaf rules of the mode in one place.
    #[inline(always)]
    pub fn classify<F: EntryFormat>(&self, entry: u64, level: u8) -> EntryKind {
        if !F::is_present(entry) {
            return EntryKind::NotPresent;
        }
        if level == 1 || F::is_large(entry) {
            return match self.leaf_size(level) {
                Some(size) => EntryKind::Leaf(size),
                None => EntryKind::Reserved,
            };
        }
        EntryKind::Table
    }

    /// The output address of the start of the page of `size` that leaf `entry` maps.
    #[inline(always)]
    pub fn leaf_base<F: EntryFormat>(entry: u64, size: PageSize) -> u64 {
        F::frame_addr(entry) & !(size.bytes() - 1)
    }

    /// A software walk of the tables rooted at `root` for `addr`: reads each entry with
    /// `read(table, index)` and stops at the first leaf, missing entry or reserved entry.
    /// No caches, no counters, no A/D updates; `read` may fail (a table frame that cannot
    /// be reached), which ends the walk with its error.
    pub fn soft_walk<F: EntryFormat, T: TableFrame, E>(
        &self,
        root: T,
        addr: u64,
        read: impl FnMut(T, usize) -> Result<u64, E>,
    ) -> Result<SoftWalk<T>, E> {
        // Level 0 is never reached: the walk ends at a leaf by level 1 at the latest.
        self.soft_walk_to::<F, T, E>(root, addr, 0, read)
    }

    /// [`Self::soft_walk`] that also stops at the entry at level `stop` (unjudged: present or
    /// not, leaf or table), if the walk gets that far (`stop` = 0: never).
    pub fn soft_walk_to<F: EntryFormat, T: TableFrame, E>(
        &self,
        root: T,
        addr: u64,
        stop: u8,
        mut read: impl FnMut(T, usize) -> Result<u64, E>,
    ) -> Result<SoftWalk<T>, E> {
        let mut cursor = Cursor::new(self, root, addr);
        let mut perms = Perms::ALL.bits();
        loop {
            let slot = cursor.slot();
            let entry = read(slot.table, slot.index)?;
            let at = SoftEntry { slot, entry };
            if slot.level == stop {
                return Ok(SoftWalk::Stopped(at));
            }
            return Ok(match cursor.step::<F>(entry) {
                EntryKind::Table => {
                    perms &= F::perm_bits(entry);
                    continue;
                }
                EntryKind::Leaf(size) => SoftWalk::Leaf {
                    at,
                    size,
                    perms: Perms::from_bits(perms & F::perm_bits(entry)),
                },
                EntryKind::NotPresent => SoftWalk::NotPresent(at),
                EntryKind::Reserved => SoftWalk::Reserved(at),
            });
        }
    }
}

/// A frame that holds a page table, in the space the tables of a walk live in: guest frames
/// for the guest's tables, host frames for native tables, shadow tables and the EPT.
pub trait TableFrame: Copy {
    /// The frame holding the table at `addr` (a table's address, page-aligned).
    fn from_table_addr(addr: u64) -> Self;
}

impl TableFrame for Gfn {
    #[inline(always)]
    fn from_table_addr(addr: u64) -> Self {
        Gfn::new(addr >> PAGE_SHIFT)
    }
}

impl TableFrame for Hfn {
    #[inline(always)]
    fn from_table_addr(addr: u64) -> Self {
        Hfn::new(addr >> PAGE_SHIFT)
    }
}

/// Where one entry lives: the level, the table page and the index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot<T> {
    /// The table's level (1 = the leaf-level table).
    pub level: u8,
    /// The table page.
    pub table: T,
    /// The entry's index in the table.
    pub index: usize,
}

/// An entry a software walk read, and where it lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftEntry<T> {
    /// Where the entry lives.
    pub slot: Slot<T>,
    /// Its value.
    pub entry: u64,
}

/// How a software walk ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftWalk<T> {
    /// At a present leaf mapping a page of `size`.
    Leaf {
        /// The leaf entry.
        at: SoftEntry<T>,
        /// The size of the page it maps.
        size: PageSize,
        /// The permissions of the whole path (every level's, ANDed), as hardware checks them.
        perms: Perms,
    },
    /// At a missing entry.
    NotPresent(SoftEntry<T>),
    /// At a present entry whose large-page bit is reserved at its level.
    Reserved(SoftEntry<T>),
    /// At the entry of the level asked for ([`PagingMode::soft_walk_to`]), unjudged.
    Stopped(SoftEntry<T>),
}

impl<T> SoftWalk<T> {
    /// The leaf entry and the size it maps, if the walk ended at one.
    pub fn leaf(self) -> Option<(SoftEntry<T>, PageSize)> {
        match self {
            SoftWalk::Leaf { at, size, .. } => Some((at, size)),
            _ => None,
        }
    }
}

/// A walk in progress, one level at a time: for software walkers that act at each level
/// (create a missing table, link a shadow page, set an accessed bit) between reading an
/// entry and going down.
#[derive(Clone, Copy, Debug)]
pub struct Cursor<'m, T> {
    mode: &'m PagingMode,
    addr: u64,
    level: u8,
    table: T,
}

impl<'m, T: TableFrame> Cursor<'m, T> {
    /// A walk for `addr` standing at the root table `root`.
    #[inline]
    pub fn new(mode: &'m PagingMode, root: T, addr: u64) -> Self {
        Cursor {
            mode,
            addr,
            level: mode.levels,
            table: root,
        }
    }

    /// A walk for `addr` standing at `table`, the level-`level` table on the path to `addr`
    /// (where an earlier walk for the same address stopped).
    #[inline]
    pub fn at(mode: &'m PagingMode, table: T, level: u8, addr: u64) -> Self {
        Cursor {
            mode,
            addr,
            level,
            table,
        }
    }

    /// The level of the table the walk stands at.
    #[inline]
    pub fn level(&self) -> u8 {
        self.level
    }

    /// The table the walk stands at.
    #[inline]
    pub fn table(&self) -> T {
        self.table
    }

    /// The index of the address's entry in the current table.
    #[inline]
    pub fn index(&self) -> usize {
        self.mode.index(self.addr, self.level)
    }

    /// The entry the walk reads next.
    #[inline]
    pub fn slot(&self) -> Slot<T> {
        Slot {
            level: self.level,
            table: self.table,
            index: self.index(),
        }
    }

    /// Judge `entry`, read at the current slot, and go down to the table it points at if it
    /// is one (else stay). Returns what the entry is.
    #[inline]
    pub fn step<F: EntryFormat>(&mut self, entry: u64) -> EntryKind {
        let kind = self.mode.classify::<F>(entry, self.level);
        if kind == EntryKind::Table {
            self.descend(T::from_table_addr(F::frame_addr(entry)));
        }
        kind
    }

    /// Go down one level to `table` (a table the caller found or created).
    ///
    /// # Panics
    /// In debug builds, if the walk already stands at level 1.
    #[inline]
    pub fn descend(&mut self, table: T) {
        debug_assert!(self.level > 1, "no table below level 1");
        self.table = table;
        self.level -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::x86::pte::{Ept, X86};

    #[test]
    fn x86_geometry_per_level() {
        let m = X86_64_4LEVEL;
        assert_eq!(
            (1..=4).map(|l| m.level_shift(l)).collect::<Vec<_>>(),
            [12, 21, 30, 39]
        );
        assert_eq!(X86_64_5LEVEL.level_shift(5), 48);
        assert_eq!(m.entries_per_table(), 512);
        assert_eq!(m.span(2), 2 << 20);
        // 0x7f_c030_1234_5678: PML4 index 0xff, PDPT 0x100, PD 0x1a2, PT 0x45.
        let va = (0xff << 39) | (0x100 << 30) | (0x1a2 << 21) | (0x45 << 12) | 0x678;
        assert_eq!(
            (1..=4).map(|l| m.index(va, l)).collect::<Vec<_>>(),
            [0x45, 0x1a2, 0x100, 0xff]
        );
        assert_eq!(m.entry_offset_of(va, 1), 0x45 * 8);
        assert_eq!(X86_64_5LEVEL.index(1 << 48 | va, 5), 1);
        assert_eq!(PagingMode::x86_64(4), Some(X86_64_4LEVEL));
        assert_eq!(PagingMode::x86_64(5), Some(X86_64_5LEVEL));
        assert_eq!(PagingMode::x86_64(3), None);
    }

    #[test]
    fn leaf_levels_and_page_sizes() {
        let m = X86_64_4LEVEL;
        assert_eq!(m.leaf_size(1), Some(PageSize::Size4K));
        assert_eq!(m.leaf_size(2), Some(PageSize::Size2M));
        assert_eq!(m.leaf_size(3), Some(PageSize::Size1G));
        assert_eq!(m.leaf_size(4), None);
        assert_eq!(m.leaf_size(0), None);
        assert_eq!(m.page_sizes().collect::<Vec<_>>(), PageSize::ALL);
        for size in m.page_sizes() {
            assert_eq!(m.leaf_size(m.leaf_level(size).unwrap()), Some(size));
            assert_eq!(m.check_page_size(size), Ok(size));
        }
        // Powers of two x86 cannot map are valid sizes, rejected by the mode.
        for bytes in [8 << 10, 64 << 10, 4 << 20, 512 << 30, 1 << 39] {
            let size = PageSize::from_bytes(bytes).unwrap();
            assert!(!m.supports(size), "{size}");
            let err = m.check_page_size(size).unwrap_err();
            assert!(err.to_string().contains("valid: 4k, 2m, 1g"), "{err}");
        }
    }

    #[test]
    fn invalid_page_sizes_are_not_page_sizes() {
        assert_eq!(PageSize::from_bytes(0), None);
        assert_eq!(PageSize::from_bytes(2048), None);
        assert_eq!(PageSize::from_bytes(3 << 20), None);
        assert_eq!(PageSize::from_shift(11), None);
        assert_eq!(PageSize::from_shift(64), None);
        assert_eq!(PageSize::from_name("3k"), None);
        assert_eq!(PageSize::from_name("2M"), Some(PageSize::Size2M));
        assert_eq!(PageSize::from_bytes(1 << 30), Some(PageSize::Size1G));
        assert_eq!(PageSize::from_shift(63).unwrap().name(), "8e");
    }

    #[test]
    fn leaf_rules() {
        let m = X86_64_4LEVEL;
        let table = X86::table(0x5000);
        let large = X86::leaf(0x4000_0000, Perms::ALL, true);
        let small = X86::leaf(0x7000, Perms::ALL, false);
        assert_eq!(m.classify::<X86>(0, 3), EntryKind::NotPresent);
        assert_eq!(m.classify::<X86>(table, 4), EntryKind::Table);
        assert_eq!(m.classify::<X86>(table, 2), EntryKind::Table);
        assert_eq!(
            m.classify::<X86>(small, 1),
            EntryKind::Leaf(PageSize::Size4K)
        );
        // Bit 7 at level 1 is PAT, not a size: still a 4K leaf.
        assert_eq!(
            m.classify::<X86>(large, 1),
            EntryKind::Leaf(PageSize::Size4K)
        );
        assert_eq!(
            m.classify::<X86>(large, 2),
            EntryKind::Leaf(PageSize::Size2M)
        );
        assert_eq!(
            m.classify::<X86>(large, 3),
            EntryKind::Leaf(PageSize::Size1G)
        );
        assert_eq!(m.classify::<X86>(large, 4), EntryKind::Reserved);
        assert!(m.is_leaf::<X86>(large, 3) && !m.is_leaf::<X86>(large, 4));
        assert_eq!(
            m.classify::<Ept>(Ept::leaf(0x20_0000, true), 2),
            EntryKind::Leaf(PageSize::Size2M)
        );
        assert_eq!(m.classify::<Ept>(Ept::MEMTYPE_WB, 1), EntryKind::NotPresent);
        assert_eq!(
            PagingMode::leaf_base::<X86>(
                X86::leaf(0x4020_1000, Perms::ALL, true),
                PageSize::Size2M
            ),
            0x4020_0000
        );
    }

    #[test]
    fn cursor_walks_down_and_soft_walk_stops_where_asked() {
        use std::collections::HashMap;
        let m = X86_64_4LEVEL;
        let va: u64 = 0x4020_0000 + 0x1234;
        let mut tables: HashMap<(u64, usize), u64> = HashMap::new();
        tables.insert((1, 0), X86::table(0x2000));
        tables.insert((2, 1), X86::table(0x3000));
        tables.insert((3, 1), X86::leaf(0x60_0000, Perms::ALL, true));
        let read = |t: Hfn, i: usize| Ok::<_, ()>(*tables.get(&(t.raw(), i)).unwrap_or(&0));
        let (at, size) = m
            .soft_walk::<X86, _, _>(Hfn::new(1), va, read)
            .unwrap()
            .leaf()
            .unwrap();
        assert_eq!(size, PageSize::Size2M);
        assert_eq!(
            at.slot,
            Slot {
                level: 2,
                table: Hfn::new(3),
                index: 1
            }
        );
        let stopped = m
            .soft_walk_to::<X86, _, _>(Hfn::new(1), va, 3, read)
            .unwrap();
        assert!(matches!(stopped, SoftWalk::Stopped(e) if e.slot.table == Hfn::new(2)));
        let absent = m
            .soft_walk::<X86, _, _>(Hfn::new(1), 1 << 39, read)
            .unwrap();
        assert!(matches!(absent, SoftWalk::NotPresent(e) if e.slot.level == 4));
    }
}
