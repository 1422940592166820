//! The interface through which the kernel model touches page tables and the TLB, named after
//! Linux's paravirt MMU operations. Native hardware, nested paging and (later) shadow, PV and
//! TPT each implement it; the kernel code above it is the same for all.
//!
//! Entries hold guest-physical frame addresses in x86-64 layout (see `hw::x86::pte::X86`): the
//! kernel's view of memory. A backend may keep other copies (shadow, devirt) in sync.

use crate::addr::{Gfn, Gva, PageSize};

pub trait PvOps {
    /// Read entry `index` of the page-table page `table` (the kernel reading its own tables).
    fn read_entry(&mut self, table: Gfn, index: usize) -> u64;
    /// set_pte / set_pmd / set_pud / set_p4d (level 1 / 2 / 3 / 4): write entry `index` of the
    /// level-`level` table `table`.
    fn set_entry(&mut self, level: u8, table: Gfn, index: usize, entry: u64);
    /// ptep_get_and_clear (and its upper-level twins): atomically read and clear an entry.
    fn get_and_clear(&mut self, level: u8, table: Gfn, index: usize) -> u64;
    /// A page-table page for `level` was allocated; the kernel zeroes it here (pte_alloc).
    fn alloc_table(&mut self, level: u8, table: Gfn);
    /// A page-table page is about to be freed.
    fn release_table(&mut self, level: u8, table: Gfn);
    /// The kernel writes a whole newly allocated page (clear_page of anonymous memory).
    fn clear_page(&mut self, frame: Gfn, size: PageSize);
    /// The kernel copies a page into a newly allocated one (copy-on-write).
    fn copy_page(&mut self, from: Gfn, to: Gfn, size: PageSize);
    /// Load a new page-table root; `flush` drops the TLB entries of `pcid` (no-PCID CR3 load).
    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool);
    /// Invalidate the translation of one page.
    fn invlpg(&mut self, va: Gva);
    /// Flush the current address space's translations.
    fn flush_tlb(&mut self);
    /// A new address space with top-level table `pgd`; `devirt` when its process runs with
    /// Translation Pass-Through (its tables get host-address copies). Most backends ignore it.
    fn mm_created(&mut self, _pgd: Gfn, _devirt: bool) {}
    /// Linux's arch_enter/leave_lazy_mmu_mode around loops of entry updates (fork's copy,
    /// munmap's zap, mprotect): a paravirtual backend may batch the updates between them.
    fn lazy_mmu_begin(&mut self) {}
    fn lazy_mmu_end(&mut self) {}
}
