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

/// The present leaf mapping `va`, if any.
pub fn find_leaf<P: PvOps + ?Sized>(
    pv: &mut P,
    pgd: Gfn,
    levels: u8,
    va: Gva,
) -> PvResult<Option<LeafEntry>> {
    let mut table = pgd;
    for level in (1..=levels).rev() {
        let index = index_of(va, level);
        let entry = pv.read_entry(table, index)?;
        if !X86::is_present(entry) {
            return Ok(None);
        }
        if is_leaf(entry, level) {
            let Some(size) = PageSize::at_level(level) else {
                return Ok(None);
            };
            return Ok(Some(LeafEntry {
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
    Ok(None)
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
