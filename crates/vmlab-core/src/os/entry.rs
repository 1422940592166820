//! Kernel entries and exits: what the guest executes each time a system call, an exception
//! (a page fault) or an interrupt enters the kernel and returns to user mode, for every
//! scheme alike. Each scheme decides what these steps cost it (nothing beyond the kernel's
//! own work natively and under nested paging; exits under shadow paging).
//!
//! On entry (arch/x86/entry/entry_64.S, `entry_SYSCALL_64`, `asm_exc_page_fault` via
//! `idtentry`, and calling.h's `SWITCH_TO_KERNEL_CR3`):
//! - the CPU and the entry code use the CPU entry area and the entry text through the tables
//!   CR3 holds;
//! - under KPTI, CR3 is switched to the kernel table, with the no-flush bit when PCIDs are on;
//! - the kernel then runs on its half ([`KernelRegion::ALL`]): text, the task's stack in
//!   vmalloc space, per-CPU data and page tables in the direct map, `struct page`s.
//!
//! On exit (`SWITCH_TO_USER_CR3_STACK`, `swapgs_restore_regs_and_return_to_usermode`),
//! under KPTI CR3 goes back to the user table: with the no-flush bit unless the user PCID
//! was marked for a flush while in the kernel, and always flushing without PCIDs.

use crate::addr::Gva;
use crate::os::kernel::{Kernel, OsError};
use crate::os::kernel_half::KernelRegion;
use crate::os::pvops::PvOps;

/// Why the kernel was entered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A system call (SYSCALL).
    Syscall,
    /// An exception: a page fault.
    Exception,
    /// An interrupt (the timer).
    Interrupt,
}

impl Kernel {
    /// The running process enters the kernel.
    pub fn enter<P: PvOps + ?Sized>(&mut self, pv: &mut P, kind: EntryKind) -> Result<(), OsError> {
        self.counters.kernel_entries += 1;
        if kind == EntryKind::Interrupt {
            self.counters.interrupts += 1;
        }
        let process = self.proc(self.current)?;
        let (pgd, pcid) = (process.pgd, process.pcid);
        if self.config.kpti {
            self.use_kernel_half(pv, &KernelRegion::TRAMPOLINE)?;
            pv.write_cr3(pgd, pcid, !self.config.pcid)?;
            self.counters.cr3_writes += 1;
        }
        self.use_kernel_half(pv, &KernelRegion::ALL)
    }

    /// The kernel runs on the loaded root and uses `regions` of its half through it.
    pub(super) fn use_kernel_half<P: PvOps + ?Sized>(
        &self,
        pv: &mut P,
        regions: &[KernelRegion],
    ) -> Result<(), OsError> {
        for region in regions {
            pv.kernel_access(region.top_index(self.config.levels))?;
        }
        Ok(())
    }

    /// The kernel returns to the running process (which may differ from the one that
    /// entered, after a context switch).
    pub fn leave<P: PvOps + ?Sized>(&mut self, pv: &mut P) -> Result<(), OsError> {
        if !self.config.kpti {
            return Ok(());
        }
        let process = self.proc(self.current)?;
        let user = self.user_pgd(process.pgd);
        let pcid = self.user_pcid(process.pcid);
        let flush = self.user_pcid_flush.remove(&pcid) || !self.config.pcid;
        pv.write_cr3(user, pcid, flush)?;
        self.counters.cr3_writes += 1;
        // The last instructions of the return run on the user tables, from the entry text
        // and the trampoline stack.
        self.use_kernel_half(pv, &KernelRegion::TRAMPOLINE)
    }

    /// A page fault of the running process at `va`: entry, the handler, return.
    pub fn page_fault<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        va: Gva,
        write: bool,
    ) -> Result<(), OsError> {
        self.enter(pv, EntryKind::Exception)?;
        self.handle_page_fault(pv, va, write)?;
        self.leave(pv)
    }
}
