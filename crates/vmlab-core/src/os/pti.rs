//! Kernel page-table isolation (KPTI), as Linux's arch/x86/mm/pti.c does it: every address
//! space has a second, user top-level table beside the kernel's (the upper half of an
//! order-1 `pgd_alloc`). It maps the same user half (each user top-level entry the kernel
//! writes is written into both, `pti_set_user_pgtbl`) and of the kernel half only the entry
//! trampoline ([`KernelRegion::TRAMPOLINE`](crate::os::kernel_half::KernelRegion)). User
//! code runs on the user table; each kernel entry and exit switches CR3 (`os::entry`).
//!
//! PCIDs: the user table runs with the kernel PCID plus bit 11 (`user_pcid`,
//! arch/x86/mm/tlb.c), so the two keep separate TLB entries. A flush of the user side is
//! done at once for one page with INVPCID (`native_flush_tlb_one_user`), or deferred to the
//! next return to user mode, whose CR3 write then lacks the no-flush bit
//! (`invalidate_user_asid`, `user_pcid_flush_mask`).

use crate::addr::{Gfn, Gva};
use crate::os::kernel::{Kernel, OsError};
use crate::os::pvops::PvOps;

/// The bit that tells a user PCID from its kernel one (`X86_CR3_PTI_PCID_USER_BIT`).
pub const USER_PCID_BIT: u16 = 1 << 11;

impl Kernel {
    /// A new address space with kernel table `pgd`: under KPTI, allocate its user table.
    pub(super) fn pti_alloc_user_pgd<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
        devirt: bool,
    ) -> Result<(), OsError> {
        if !self.config.kpti {
            return Ok(());
        }
        let user = self.alloc_table(pv, self.config.levels)?;
        pv.mm_created(user, devirt)?;
        self.user_pgds.insert(pgd.raw(), user);
        Ok(())
    }

    /// The address space of `pgd` is gone: free its user table.
    pub(super) fn pti_free_user_pgd<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        pgd: Gfn,
    ) -> Result<(), OsError> {
        match self.user_pgds.remove(&pgd.raw()) {
            Some(user) => self.free_table(pv, self.config.levels, user),
            None => Ok(()),
        }
    }

    /// The table user code of address space `pgd` runs on: the user table under KPTI.
    pub(super) fn user_pgd(&self, pgd: Gfn) -> Gfn {
        self.user_pgds.get(&pgd.raw()).copied().unwrap_or(pgd)
    }

    /// The kernel wrote `entry` at `index` of top-level table `table`: if that is the kernel
    /// table of an isolated address space, write the user table too (`pti_set_user_pgtbl`;
    /// the model writes only user-half entries at the top level).
    pub(super) fn pti_mirror<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        table: Gfn,
        index: usize,
        entry: u64,
    ) -> Result<(), OsError> {
        if let Some(&user) = self.user_pgds.get(&table.raw()) {
            if entry == 0 {
                pv.get_and_clear(self.config.levels, user, index)?;
            } else {
                pv.set_entry(self.config.levels, user, index, entry)?;
            }
        }
        Ok(())
    }

    /// The user PCID of the current process (its kernel PCID without KPTI).
    pub(super) fn user_pcid(&self, kernel_pcid: u16) -> u16 {
        if self.config.kpti && self.config.pcid {
            kernel_pcid | USER_PCID_BIT
        } else {
            kernel_pcid
        }
    }

    /// Flush the current address space's TLB entries (`flush_tlb_local`): the kernel side
    /// now; under KPTI the user side at the next return to user mode.
    pub(super) fn flush_tlb_local<P: PvOps + ?Sized>(&mut self, pv: &mut P) -> Result<(), OsError> {
        pv.flush_tlb()?;
        self.counters.tlb_flushes += 1;
        self.invalidate_user_pcid();
        Ok(())
    }

    /// Mark the current process's user PCID for a flush at the next return to user mode.
    pub(super) fn invalidate_user_pcid(&mut self) {
        if self.config.kpti {
            let pcid = self.user_pcid(self.pcid_for(self.current));
            self.user_pcid_flush.insert(pcid);
        }
    }

    /// Invalidate one user page (`flush_tlb_one_user`): INVLPG, and under KPTI with PCIDs an
    /// INVPCID of the user PCID too.
    pub(super) fn flush_tlb_one_user<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        va: Gva,
    ) -> Result<(), OsError> {
        pv.invlpg(va)?;
        self.counters.invlpgs += 1;
        if self.config.kpti && self.config.pcid {
            let pcid = self.user_pcid(self.pcid_for(self.current));
            pv.invpcid_addr(pcid, va)?;
            self.counters.invpcids += 1;
        }
        Ok(())
    }
}
