//! Walking and editing a process's page tables in software, through pv-ops: the kernel's
//! view of its tables (the hardware walker is `hw::x86::walker`).

use crate::addr::{Gfn, Gva, PageSize};
use crate::hw::x86::pte::{EntryFormat, FRAME_MASK, X86};
use crate::hw::x86::walker::level_shift;
use crate::os::pvops::{PvOps, PvResult};

/// Where one entry lives: the table page, the index in it, and the table's level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// The table's level (1 = the leaf tables, up to the paging levels).
    pub level: u8,
    /// The table page.
    pub table: Gfn,
    /// The entry's index in the table (0..512).
    pub index: usize,
}

/// A present leaf entry found by a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafEntry {
    /// Where the entry lives.
    pub slot: Slot,
    /// Virtual address of the start of the page the entry maps.
    pub va: Gva,
    /// The entry's raw value (x86 format).
    pub entry: u64,
}

impl LeafEntry {
    /// The size of the page the entry maps, from its level.
    pub fn size(&self) -> PageSize {
        PageSize::at_level(self.slot.level).expect("leaves sit at levels 1..=3")
    }

    /// The first frame of the page the entry maps.
    pub fn frame(&self) -> Gfn {
        Gfn::new((self.entry & FRAME_MASK) >> 12)
    }
}

/// The index of the entry for `va` in its table at `level` (9 bits of the address).
pub fn index_of(va: Gva, level: u8) -> usize {
    ((va.raw() >> level_shift(level)) & 0x1ff) as usize
}

/// Bytes of address space one entry at `level` covers.
pub fn span(level: u8) -> u64 {
    1 << level_shift(level)
}

/// Whether a present `entry` at `level` maps a page (level 1, or a large page at levels 2
/// and 3) rather than pointing to the next table.
pub fn is_leaf(entry: u64, level: u8) -> bool {
    level == 1 || (X86::is_large(entry) && level <= 3)
}

/// The table a non-leaf `entry` points to.
pub fn next_table(entry: u64) -> Gfn {
    Gfn::new((entry & FRAME_MASK) >> 12)
}

/// Where a software walk for one address ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalkEnd {
    /// A present leaf maps the address.
    Leaf(LeafEntry),
    /// The entry for the address in the level-`level` table `table` is not present; every
    /// entry above it on the path is present.
    Missing {
        /// The level of the table holding the missing entry.
        level: u8,
        /// The table holding the missing entry.
        table: Gfn,
    },
}

/// Walk the tables rooted at `pgd` for `va`, reading each entry on the path once.
pub fn walk<P: PvOps + ?Sized>(pv: &mut P, pgd: Gfn, levels: u8, va: Gva) -> PvResult<WalkEnd> {
    let mut table = pgd;
    for level in (1..=levels).rev() {
        let index = index_of(va, level);
        let entry = pv.read_entry(table, index)?;
        if !X86::is_present(entry) {
            return Ok(WalkEnd::Missing { level, table });
        }
        if is_leaf(entry, level) {
            let size = PageSize::at_level(level).expect("leaves sit at levels 1..=3");
            return Ok(WalkEnd::Leaf(LeafEntry {
                slot: Slot {
                    level,
                    table,
                    index,
                },
                va: va.align_down(size),
                entry,
            }));
        }
        table = next_table(entry);
    }
    unreachable!("a level-1 entry is either missing or a leaf")
}

/// The present leaf mapping `va`, if any.
pub fn find_leaf<P: PvOps + ?Sized>(
    pv: &mut P,
    pgd: Gfn,
    levels: u8,
    va: Gva,
) -> PvResult<Option<LeafEntry>> {
    Ok(match walk(pv, pgd, levels, va)? {
        WalkEnd::Leaf(leaf) => Some(leaf),
        WalkEnd::Missing { .. } => None,
    })
}

/// Call `f` for every present leaf whose page starts in `[start, end)`, in address order;
/// stops at the first error.
pub fn for_each_leaf<P: PvOps + ?Sized>(
    pv: &mut P,
    pgd: Gfn,
    levels: u8,
    start: Gva,
    end: Gva,
    f: &mut dyn FnMut(&mut P, LeafEntry) -> PvResult,
) -> PvResult {
    visit(pv, pgd, levels, 0, start.raw(), end.raw(), f)
}

fn visit<P: PvOps + ?Sized>(
    pv: &mut P,
    table: Gfn,
    level: u8,
    base: u64,
    start: u64,
    end: u64,
    f: &mut dyn FnMut(&mut P, LeafEntry) -> PvResult,
) -> PvResult {
    let span = span(level);
    for index in 0..512u64 {
        let lo = base + index * span;
        let hi = lo + span;
        if hi <= start || lo >= end {
            continue;
        }
        let entry = pv.read_entry(table, index as usize)?;
        if !X86::is_present(entry) {
            continue;
        }
        if is_leaf(entry, level) {
            if lo >= start {
                f(
                    pv,
                    LeafEntry {
                        slot: Slot {
                            level,
                            table,
                            index: index as usize,
                        },
                        va: Gva::new(lo),
                        entry,
                    },
                )?;
            }
        } else {
            visit(pv, next_table(entry), level - 1, lo, start, end, f)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::x86::pte::Perms;
    use rustc_hash::FxHashMap;

    /// Table pages in a map; counts the entries read.
    #[derive(Default)]
    struct Tables {
        entries: FxHashMap<(u64, usize), u64>,
        reads: usize,
    }

    impl PvOps for Tables {
        fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
            self.reads += 1;
            Ok(self
                .entries
                .get(&(table.raw(), index))
                .copied()
                .unwrap_or(0))
        }
        fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
            self.entries.insert((table.raw(), index), entry);
            Ok(())
        }
        fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
            Ok(self.entries.remove(&(table.raw(), index)).unwrap_or(0))
        }
        fn alloc_table(&mut self, _level: u8, _table: Gfn) -> PvResult {
            Ok(())
        }
        fn release_table(&mut self, _level: u8, _table: Gfn) -> PvResult {
            Ok(())
        }
        fn clear_page(&mut self, _frame: Gfn, _size: PageSize) -> PvResult {
            Ok(())
        }
        fn copy_page(&mut self, _from: Gfn, _to: Gfn, _size: PageSize) -> PvResult {
            Ok(())
        }
        fn write_cr3(&mut self, _pgd: Gfn, _pcid: u16, _flush: bool) -> PvResult {
            Ok(())
        }
        fn invlpg(&mut self, _va: Gva) -> PvResult {
            Ok(())
        }
        fn flush_tlb(&mut self) -> PvResult {
            Ok(())
        }
        fn invpcid_addr(&mut self, _pcid: u16, _va: Gva) -> PvResult {
            Ok(())
        }
    }

    #[test]
    fn walk_stops_at_the_first_missing_entry_or_the_leaf() {
        let va = Gva::new(0x40_1234_5000);
        let mut pv = Tables::default();
        // pgd 1 -> pud 2 -> pmd 3; the pmd's entry for `va` is missing.
        pv.set_entry(4, Gfn::new(1), index_of(va, 4), X86::table(2 << 12))
            .unwrap();
        pv.set_entry(3, Gfn::new(2), index_of(va, 3), X86::table(3 << 12))
            .unwrap();
        let end = walk(&mut pv, Gfn::new(1), 4, va).unwrap();
        assert_eq!(
            end,
            WalkEnd::Missing {
                level: 2,
                table: Gfn::new(3)
            }
        );
        assert_eq!(pv.reads, 3);
        assert_eq!(find_leaf(&mut pv, Gfn::new(1), 4, va).unwrap(), None);

        // pmd 3 -> pt 4, whose entry maps frame 9.
        pv.set_entry(2, Gfn::new(3), index_of(va, 2), X86::table(4 << 12))
            .unwrap();
        let leaf = X86::leaf(9 << 12, Perms::ALL, false);
        pv.set_entry(1, Gfn::new(4), index_of(va, 1), leaf).unwrap();
        pv.reads = 0;
        let end = walk(&mut pv, Gfn::new(1), 4, va).unwrap();
        let expected = LeafEntry {
            slot: Slot {
                level: 1,
                table: Gfn::new(4),
                index: index_of(va, 1),
            },
            va,
            entry: leaf,
        };
        assert_eq!(end, WalkEnd::Leaf(expected));
        assert_eq!(pv.reads, 4);
        assert_eq!(
            find_leaf(&mut pv, Gfn::new(1), 4, va).unwrap(),
            Some(expected)
        );
    }
}
