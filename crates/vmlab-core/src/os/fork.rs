//! fork: a child with a copy of the parent's address space, sharing its pages copy-on-write.
//!
//! As Linux's `copy_page_range` does for private anonymous memory: for every present leaf of
//! every VMA, write-protect the parent's entry if it was writable (`ptep_set_wrprotect`),
//! give the child the same entry, write-protected and old (accessed clear), and take a
//! reference on the page. Child page tables are allocated only where the parent has entries.
//! The parent's TLB is flushed afterwards, since its writable translations are stale.

use crate::hw::x86::pte::X86;
use crate::os::kernel::{Kernel, OsError, Pid, Process};
use crate::os::pvops::PvOps;
use crate::os::tables::{self, LeafEntry};

impl Kernel {
    /// The current process forks; returns the child's pid. The parent keeps running.
    pub fn fork<P: PvOps + ?Sized>(&mut self, pv: &mut P) -> Result<Pid, OsError> {
        let parent = self.proc(self.current)?.clone();
        let child_pid = self.procs.len() as Pid;
        let child_pgd = self.alloc_table(pv, self.config.levels)?;
        // Translation Pass-Through is not inherited across fork.
        pv.mm_created(child_pgd, false)?;
        self.pti_alloc_user_pgd(pv, child_pgd, false)?;
        let levels = self.config.levels;
        let mut copied = Vec::new();
        pv.lazy_mmu_begin()?;
        for vma in parent.vmas.iter() {
            tables::for_each_leaf(
                pv,
                parent.pgd,
                levels,
                vma.start,
                vma.end,
                &mut |pv, leaf: LeafEntry| {
                    let mut entry = leaf.entry;
                    if entry & X86::WRITE != 0 {
                        entry &= !X86::WRITE;
                        pv.set_entry(leaf.slot.level, leaf.slot.table, leaf.slot.index, entry)?;
                    }
                    copied.push(LeafEntry {
                        entry: entry & !X86::ACCESSED_BIT,
                        ..leaf
                    });
                    Ok(())
                },
            )?;
        }
        let tables_before = self.counters.table_pages;
        for leaf in &copied {
            let table = self.ensure_tables(pv, child_pgd, leaf.va, leaf.slot.level)?;
            pv.set_entry(leaf.slot.level, table, leaf.slot.index, leaf.entry)?;
            self.phys.get(leaf.frame());
        }
        pv.lazy_mmu_end()?;
        self.counters.fork_table_pages += self.counters.table_pages - tables_before + 1;
        self.counters.ptes_copied += copied.len() as u64;
        if !copied.is_empty() {
            self.flush_tlb_local(pv)?;
        }
        self.procs.push(Some(Process {
            pid: child_pid,
            parent: Some(parent.pid),
            pgd: child_pgd,
            vmas: parent.vmas.clone(),
            pcid: self.pcid_for(child_pid),
            devirt: false,
        }));
        self.counters.forks += 1;
        Ok(child_pid)
    }
}
