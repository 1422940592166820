//! Page faults, the way Linux's `handle_mm_fault` treats anonymous memory.
//!
//! - Not present: allocate missing table levels (zeroed), then a zeroed page (2 MiB when THP
//!   is `always` and the VMA covers the aligned region, else 4 KiB), and set the leaf with the
//!   VMA's permissions, accessed, and dirty on a write fault.
//! - Write to a present read-only page of a writable VMA: copy-on-write. If no other mapping
//!   shares the page it is reused (made writable), else it is copied to a new page. A 2 MiB
//!   page is copied whole (simplification: Linux splits the PMD and copies 4 KiB).
//! - Present and allowed: a spurious fault (a stale TLB entry); nothing to do.

use crate::addr::{Gfn, Gva, PageSize};
use crate::hw::x86::pte::{EntryFormat, Perms, FRAME_MASK, X86};
use crate::os::kernel::{Kernel, OsError};
use crate::os::pvops::PvOps;
use crate::os::tables::{self, LeafEntry, WalkEnd};

impl Kernel {
    /// Handle a page fault of the current process at `va`.
    pub fn handle_page_fault<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        va: Gva,
        write: bool,
    ) -> Result<(), OsError> {
        let current = self.current;
        let process = self.proc(current)?;
        let vma = *process
            .vmas
            .find(va)
            .filter(|v| v.writable || !write)
            .ok_or(OsError::SegFault { va, write })?;
        let pgd = process.pgd;
        self.counters.page_faults += 1;
        let missing = match tables::walk(pv, pgd, self.config.levels, va)? {
            WalkEnd::Leaf(leaf) => {
                if X86::perms(leaf.entry).allows(write) {
                    return Ok(());
                }
                return self.copy_on_write(pv, leaf);
            }
            WalkEnd::Missing { level, table } => (level, table),
        };
        let perms = Perms {
            write: vma.writable,
            exec: false,
            ..Perms::ALL
        };
        let huge_base = va.align_down(PageSize::Size2M);
        let thp_tried = self.config.thp == crate::os::ThpPolicy::Always
            && vma.covers(huge_base, PageSize::Size2M.bytes());
        if thp_tried {
            let pmd = self.ensure_tables_below(pv, pgd, missing, va, 2)?;
            if !X86::is_present(pv.read_entry(pmd, tables::index_of(va, 2))?) {
                if let Some(frame) = self.phys.alloc(PageSize::Size2M) {
                    pv.clear_page(frame, PageSize::Size2M)?;
                    self.counters.frames_cleared += PageSize::Size2M.frames();
                    pv.set_entry(
                        2,
                        pmd,
                        tables::index_of(va, 2),
                        leaf_entry(frame, perms, write, true),
                    )?;
                    self.counters.huge_page_faults += 1;
                    return Ok(());
                }
                // No aligned 2 MiB frame left: fall back to 4 KiB pages, as THP does.
            }
        }
        let pt = if thp_tried {
            self.ensure_tables(pv, pgd, va, 1)?
        } else {
            self.ensure_tables_below(pv, pgd, missing, va, 1)?
        };
        let frame = self.alloc_frame(PageSize::Size4K)?;
        pv.clear_page(frame, PageSize::Size4K)?;
        self.counters.frames_cleared += 1;
        pv.set_entry(
            1,
            pt,
            tables::index_of(va, 1),
            leaf_entry(frame, perms, write, false),
        )?;
        Ok(())
    }

    /// A write to a present, write-protected page of a writable mapping.
    fn copy_on_write<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        leaf: LeafEntry,
    ) -> Result<(), OsError> {
        let size = leaf.size();
        let old = leaf.frame();
        let entry = if self.phys.refcount(old) == 1 {
            self.counters.cow_reuses += 1;
            leaf.entry | X86::WRITE | X86::DIRTY_BIT | X86::ACCESSED_BIT
        } else {
            let new = self.alloc_frame(size)?;
            pv.copy_page(old, new, size)?;
            self.phys.put(old, size);
            self.counters.cow_faults += 1;
            self.counters.frames_copied += size.frames();
            (leaf.entry & !FRAME_MASK)
                | new.addr().raw()
                | X86::WRITE
                | X86::DIRTY_BIT
                | X86::ACCESSED_BIT
        };
        pv.set_entry(leaf.slot.level, leaf.slot.table, leaf.slot.index, entry)?;
        // The read-only translation may be cached.
        self.flush_tlb_one_user(pv, leaf.va)?;
        Ok(())
    }

    /// The table at `level` on the path to `va`, creating missing tables above it.
    pub(super) fn ensure_tables<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
        va: Gva,
        level: u8,
    ) -> Result<Gfn, OsError> {
        self.ensure_tables_from(pv, pgd, self.config.levels, va, level)
    }

    /// [`Self::ensure_tables`] after a walk of the same tables for `va` stopped at a missing
    /// entry of the level-`missing.0` table `missing.1` (tables rooted at `pgd`), with no table changed since: the
    /// present entries above it need not be read again (reading an entry has no simulated
    /// effect once its table has been read), so the same tables are created in the same
    /// order.
    fn ensure_tables_below<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
        missing: (u8, Gfn),
        va: Gva,
        level: u8,
    ) -> Result<Gfn, OsError> {
        let (from, table) = missing;
        if from < level {
            // The path is present down to `level`: walk it from the top.
            return self.ensure_tables(pv, pgd, va, level);
        }
        self.ensure_tables_from(pv, table, from, va, level)
    }

    /// The table at `level` on the path to `va`, starting at the level-`top` table `table`,
    /// creating missing tables below it.
    fn ensure_tables_from<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        table: Gfn,
        top: u8,
        va: Gva,
        level: u8,
    ) -> Result<Gfn, OsError> {
        let mut table = table;
        for upper in (level + 1..=top).rev() {
            let index = tables::index_of(va, upper);
            let entry = pv.read_entry(table, index)?;
            table = if X86::is_present(entry) {
                tables::next_table(entry)
            } else {
                let next = self.alloc_table(pv, upper - 1)?;
                let entry = X86::table(next.addr().raw());
                pv.set_entry(upper, table, index, entry)?;
                if upper == self.config.levels {
                    self.pti_mirror(pv, table, index, entry)?;
                }
                next
            };
        }
        Ok(table)
    }
}

/// A user leaf entry as Linux builds it for anonymous memory: accessed set (part of the
/// user page protections), dirty on a write fault.
fn leaf_entry(frame: Gfn, perms: Perms, write: bool, large: bool) -> u64 {
    let mut entry = X86::leaf(frame.addr().raw(), perms, large) | X86::ACCESSED_BIT;
    if write {
        entry |= X86::DIRTY_BIT;
    }
    entry
}
