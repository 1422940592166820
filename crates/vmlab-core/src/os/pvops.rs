//! The interface through which the kernel model touches page tables and the TLB, named after
//! Linux's paravirt MMU operations. Each paging scheme implements it (see `scheme`); the kernel code above it is the same for all.
//!
//! Entries hold guest-physical frame addresses in x86-64 layout (see `hw::x86::pte::X86`): the
//! kernel's view of memory. A backend may keep other copies (shadow, devirt) in sync.

use crate::addr::{Gfn, Gva, PageSize};

/// Why a pv-op could not be carried out: the backend (a hypervisor) failed, for example out of
/// host memory. Not an architectural event: the guest kernel never sees it, the run stops.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct BackendError(pub Box<dyn std::error::Error + Send + Sync>);

/// Kernel errors compare by value in tests; two backend errors are equal when they say the
/// same thing.
impl PartialEq for BackendError {
    fn eq(&self, other: &BackendError) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for BackendError {}

/// What a pv-op returns.
pub type PvResult<T = ()> = Result<T, BackendError>;

/// The kernel's paravirt MMU operations. Every operation can fail only with a
/// [`BackendError`]; the kernel passes it up unchanged.
pub trait PvOps {
    /// Read entry `index` of the page-table page `table` (the kernel reading its own tables).
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64>;
    /// set_pte / set_pmd / set_pud / set_p4d (level 1 / 2 / 3 / 4): write entry `index` of the
    /// level-`level` table `table`.
    fn set_entry(&mut self, level: u8, table: Gfn, index: usize, entry: u64) -> PvResult;
    /// ptep_get_and_clear (and its upper-level twins): atomically read and clear an entry.
    fn get_and_clear(&mut self, level: u8, table: Gfn, index: usize) -> PvResult<u64>;
    /// A page-table page for `level` was allocated; the kernel zeroes it here (pte_alloc).
    fn alloc_table(&mut self, level: u8, table: Gfn) -> PvResult;
    /// A page-table page is about to be freed.
    fn release_table(&mut self, level: u8, table: Gfn) -> PvResult;
    /// The kernel writes a whole newly allocated page (clear_page of anonymous memory).
    fn clear_page(&mut self, frame: Gfn, size: PageSize) -> PvResult;
    /// The kernel copies a page into a newly allocated one (copy-on-write).
    fn copy_page(&mut self, from: Gfn, to: Gfn, size: PageSize) -> PvResult;
    /// Load a new page-table root; `flush` drops the TLB entries of `pcid` (no-PCID CR3 load).
    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) -> PvResult;
    /// Invalidate the translation of one page.
    fn invlpg(&mut self, va: Gva) -> PvResult;
    /// Flush the current address space's translations.
    fn flush_tlb(&mut self) -> PvResult;
    /// INVPCID of one address: invalidate `va` in the address space tagged `pcid` (Linux's
    /// flush of a user page under page-table isolation, `native_flush_tlb_one_user`).
    fn invpcid_addr(&mut self, pcid: u16, va: Gva) -> PvResult;
    /// The kernel uses top-level entry `index` of the loaded root (its own half of the
    /// address space: text, stacks, the direct map). The kernel's own accesses are not
    /// simulated; a backend that builds the tables the hardware walks may have to link the
    /// entry first (a new shadow root).
    fn kernel_access(&mut self, _index: usize) -> PvResult {
        Ok(())
    }
    /// A new address space with top-level table `pgd`; `devirt` when its process runs with
    /// Translation Pass-Through (its tables get host-address copies). Most backends ignore it.
    fn mm_created(&mut self, _pgd: Gfn, _devirt: bool) -> PvResult {
        Ok(())
    }
    /// The address space with top-level table `pgd` is about to be torn down (Linux's
    /// `arch_exit_mmap`, at the start of `exit_mmap`); no CPU runs on it any more. Xen PV
    /// unpins its tables here, so the teardown that follows is plain stores.
    fn mm_exiting(&mut self, _pgd: Gfn) -> PvResult {
        Ok(())
    }
    /// Linux's arch_enter/leave_lazy_mmu_mode around loops of entry updates (fork's copy,
    /// munmap's zap, mprotect): a paravirtual backend may batch the updates between them.
    fn lazy_mmu_begin(&mut self) -> PvResult {
        Ok(())
    }
    /// The end of a lazy-MMU section: a batching backend issues the queued updates now.
    fn lazy_mmu_end(&mut self) -> PvResult {
        Ok(())
    }
}
