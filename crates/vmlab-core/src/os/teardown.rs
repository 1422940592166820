//! Taking address spaces apart: zapping pages (munmap, madvise, exit, exec), freeing page
//! tables, and process exit. Nothing leaks: every data frame goes back when its last mapping
//! goes, every table page when its address space (or its last covered mapping) goes.

use crate::addr::{Gfn, Gva};
use crate::hw::x86::pte::{EntryFormat, X86};
use crate::os::kernel::{Kernel, OsError, Pid};
use crate::os::mm::VmaList;
use crate::os::pvops::{PvOps, PvResult};
use crate::os::tables::{self, LeafEntry};

impl Kernel {
    /// Clear every present leaf of `pid` in `[start, end)` and drop its page references.
    /// Returns whether any entry was cleared.
    pub(super) fn zap_range<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pid: Pid,
        start: Gva,
        end: Gva,
    ) -> PvResult<bool> {
        let Ok(process) = self.proc(pid) else {
            return Ok(false);
        };
        let pgd = process.pgd;
        self.zap_leaves(pv, pgd, &[(start, end)])
    }

    /// Clear every present leaf under `pgd` in the `ranges` (one lazy-MMU section) and drop
    /// the page references; returns whether any entry was cleared.
    fn zap_leaves<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
        ranges: &[(Gva, Gva)],
    ) -> PvResult<bool> {
        let mut zapped = Vec::new();
        pv.lazy_mmu_begin()?;
        for &(start, end) in ranges {
            tables::for_each_leaf(
                pv,
                pgd,
                self.config.levels,
                start,
                end,
                &mut |pv, leaf: LeafEntry| {
                    pv.get_and_clear(leaf.slot.level, leaf.slot.table, leaf.slot.index)?;
                    zapped.push(leaf);
                    Ok(())
                },
            )?;
        }
        pv.lazy_mmu_end()?;
        for leaf in &zapped {
            if self.phys.put(leaf.frame(), leaf.size()) {
                self.counters.frames_freed += leaf.size().frames();
            }
        }
        Ok(!zapped.is_empty())
    }

    /// Free the page tables of `pid` reachable from `[start, end)` whose span holds no
    /// remaining VMA (after munmap), clearing the entries that pointed at them. Flushes the
    /// TLB if any went, since the paging-structure caches may hold them.
    pub(super) fn free_empty_tables<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pid: Pid,
        start: Gva,
        end: Gva,
    ) -> Result<(), OsError> {
        let Ok(process) = self.proc(pid) else {
            return Ok(());
        };
        let (pgd, vmas) = (process.pgd, process.vmas.clone());
        let levels = self.config.levels;
        let before = self.counters.table_pages;
        self.free_unused(pv, &vmas, pgd, levels, 0, start.raw(), end.raw())?;
        if self.counters.table_pages != before {
            self.flush_tlb_local(pv)?;
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn free_unused<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        vmas: &VmaList,
        table: Gfn,
        level: u8,
        base: u64,
        start: u64,
        end: u64,
    ) -> Result<(), OsError> {
        let span = tables::span(level);
        for index in 0..512u64 {
            let lo = base + index * span;
            if lo + span <= start || lo >= end {
                continue;
            }
            let entry = pv.read_entry(table, index as usize)?;
            if !X86::is_present(entry) || tables::is_leaf(entry, level) {
                continue;
            }
            let child = tables::next_table(entry);
            // As Linux's free_pgtables: a table goes when no mapping is left in its span.
            if !vmas.overlaps(Gva::new(lo), Gva::new(lo + span)) {
                self.free_entry(pv, table, level, index as usize, child)?;
            } else {
                self.free_unused(pv, vmas, child, level - 1, lo, start, end)?;
            }
        }
        Ok(())
    }

    /// Free the table `child` that entry `index` of `table` (at `level`) points to, as
    /// Linux's free_pgd_range does it: the tables below first, then the entry is cleared
    /// (`pmd_clear`, `pud_clear`, `p4d_clear`: a write to `table`) and the page freed.
    fn free_entry<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        table: Gfn,
        level: u8,
        index: usize,
        child: Gfn,
    ) -> Result<(), OsError> {
        self.free_children(pv, child, level - 1)?;
        pv.get_and_clear(level, table, index)?;
        if level == self.config.levels {
            self.pti_mirror(pv, table, index, 0)?;
        }
        self.free_table(pv, level - 1, child)
    }

    /// Free every table below `table` (their leaves must be zapped already), clearing the
    /// entries that point at them.
    fn free_children<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        table: Gfn,
        level: u8,
    ) -> Result<(), OsError> {
        if level == 1 {
            return Ok(());
        }
        for index in 0..512 {
            let entry = pv.read_entry(table, index)?;
            if X86::is_present(entry) && !tables::is_leaf(entry, level) {
                self.free_entry(pv, table, level, index, tables::next_table(entry))?;
            }
        }
        Ok(())
    }

    /// Tear down an address space that no CPU runs any more: its pages and its tables.
    pub(super) fn destroy_mm<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
        vmas: &VmaList,
    ) -> Result<(), OsError> {
        // exit_mmap -> arch_exit_mmap first (Xen PV unpins the tables there).
        pv.mm_exiting(pgd)?;
        let ranges: Vec<(Gva, Gva)> = vmas.iter().map(|v| (v.start, v.end)).collect();
        self.zap_leaves(pv, pgd, &ranges)?;
        // exit_mmap -> free_pgtables over the whole user range: every upper-level entry is
        // cleared as its table goes; then the top-level table itself (pgd_free).
        pv.lazy_mmu_begin()?;
        self.free_children(pv, pgd, self.config.levels)?;
        pv.lazy_mmu_end()?;
        self.free_table(pv, self.config.levels, pgd)?;
        self.pti_free_user_pgd(pv, pgd)
    }

    /// The current process exits; `next` runs after it (the parent collecting it, say).
    pub fn exit<P: PvOps + ?Sized>(&mut self, pv: &mut P, next: Pid) -> Result<(), OsError> {
        let pid = self.current;
        if next == pid {
            return Err(OsError::LastProcess(pid));
        }
        self.proc(next)?;
        // Drop the dying address space's translations (its PCID may be reused later).
        self.flush_tlb_local(pv)?;
        self.switch_to(pv, next)?;
        let dead = self.procs[pid as usize]
            .take()
            .ok_or(OsError::NoProcess(pid))?;
        self.destroy_mm(pv, dead.pgd, &dead.vmas)?;
        self.counters.exits += 1;
        Ok(())
    }
}
