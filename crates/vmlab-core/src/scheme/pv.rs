//! Xen-style paravirtual direct paging: every address space's tables hold machine frames
//! (the copies of `hv::x86::direct`, walked in 1D); every update is a validated hypercall, batched
//! in lazy-MMU sections (`hv::x86::pv`); CR3 loads and flushes are hypercalls; system calls and
//! faults bounce through the hypervisor, since a 64-bit PV kernel runs in ring 3. There is
//! no EPT: the toolstack populates the guest's memory when it builds the domain, so a first
//! touch costs no exit. The guest-physical view the kernel reads stands in for Xen's
//! machine-to-physical table.

use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::{Gfn, Gva};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::pv::{batch, hypercall, Multicall};
use crate::hv::x86::shadow::ShadowMmu;
use crate::hv::x86::vm::Vm;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::Mmu;
use crate::os::{Kernel, PvOps, PvResult};

/// PV paging: one VM, the machine-frame tables and the multicall batch.
pub struct Pv {
    vm: Vm,
    direct: DirectTables,
    batch: Multicall,
    /// Paging levels of the guest's tables.
    levels: u8,
}

impl Scheme for Pv {
    fn new(m: &mut Machine, config: &SystemConfig) -> Result<Pv, SimError> {
        let mut vm = super::new_vm(m, config)?;
        vm.populate_at_build();
        Ok(Pv {
            vm,
            direct: DirectTables::default(),
            batch: Multicall::default(),
            levels: config.levels,
        })
    }

    fn traits(_: Paging) -> SchemeTraits {
        SchemeTraits {
            guest_page_in_one_entry: true,
            // Linux turns page-table isolation off in Xen PV guests (arch/x86/mm/pti.c,
            // pti_check_boottime_disable).
            kpti: false,
            guest_built_host_tables: true,
            // Host remapping would need the machine-frame tables' own invalidation.
            ..SchemeTraits::HARDWARE_ASSISTED
        }
    }

    fn paging(&self) -> Paging {
        Paging::Pv
    }

    fn with_pvops<R>(&mut self, m: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R {
        f(&mut PvPvOps {
            mem: &mut m.mem,
            mmu: &mut m.mmu,
            vm: &mut self.vm,
            direct: &mut self.direct,
            batch: &mut self.batch,
            levels: self.levels,
        })
    }

    fn vm(&self) -> Option<&Vm> {
        Some(&self.vm)
    }

    fn vm_mut(&mut self) -> Option<&mut Vm> {
        Some(&mut self.vm)
    }

    fn shadow_mmu(&self) -> Option<&ShadowMmu> {
        None
    }

    fn direct_tables(&self) -> Option<&DirectTables> {
        Some(&self.direct)
    }

    fn kernel_entry(&mut self, _kernel: &Kernel) {
        self.vm.record_exit(ExitReason::PvBounce);
    }

    /// A guest page fault enters Xen through its IDT (only ring 0 can read CR2): handle_PF
    /// finds nothing of Xen's own to fix for a user fault (fixup_page_fault: no writable
    /// page-table emulation outside guest kernel mode, no shadow mode), and
    /// pv_inject_page_fault bounces it to the guest kernel's #PF handler with CR2 saved in
    /// the vCPU (xen/arch/x86/traps.c, pv/traps.c `pv_inject_event`). One `pv_page_fault`,
    /// then the kernel's fault path, whose table updates are hypercalls.
    fn guest_fault(
        &mut self,
        machine: &mut Machine,
        kernel: &mut Kernel,
        va: Gva,
        write: bool,
    ) -> Result<(), SimError> {
        self.vm.record_exit(ExitReason::PvPageFault);
        Ok(self.with_pvops(machine, |pv| kernel.page_fault(pv, va, write))?)
    }

    /// Xen delivers the tick as an event (VIRQ_TIMER, an upcall: the entry's bounce) and the
    /// guest re-arms its timer with a hypercall (`xen_vcpuop_set_next_event`:
    /// VCPUOP_set_singleshot_timer).
    fn timer_interrupt(&mut self, _machine: &mut Machine) {
        hypercall(&mut self.vm);
    }
}

/// The PV pv-ops backend: dual writes into machine-frame tables, each a hypercall or a place
/// in a multicall.
pub struct PvPvOps<'a> {
    /// Host memory, holding the bytes of every table page.
    pub mem: &'a mut HostMemory,
    /// The MMU, whose TLBs the kernel's flushes and CR3 loads reach.
    pub mmu: &'a mut Mmu,
    /// The VM: the backing of guest memory, and its exit counts.
    pub vm: &'a mut Vm,
    /// The host-address copies of the guest's tables, written beside them.
    pub direct: &'a mut DirectTables,
    /// The guest's multicall batch, open while it is in a lazy-MMU section.
    pub batch: &'a mut Multicall,
    /// Paging levels of the guest's tables (4 or 5).
    pub levels: u8,
}

impl PvOps for PvPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
        Ok(self.direct.read_entry(self.mem, self.vm, table, index)?)
    }

    fn set_entry(&mut self, level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
        if self
            .direct
            .set_entry(self.mem, self.vm, level, table, index, entry)?
        {
            self.batch.update(self.vm);
        }
        Ok(())
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
        let (old, dual) = self.direct.get_and_clear(self.mem, self.vm, table, index)?;
        if dual {
            self.batch.update(self.vm);
        }
        Ok(old)
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        Ok(self.direct.alloc_table(self.mem, self.vm, table)?)
    }

    fn release_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        self.direct.release_table(self.mem, self.vm, table);
        Ok(())
    }

    backed_page_writes!();

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) -> PvResult {
        let root = self.direct.root(pgd, self.vm.eptp(), false);
        self.mmu.set_root(root, pcid as u64, flush);
        hypercall(self.vm); // the CR3 switch (mmuext_op new_baseptr)
        Ok(())
    }

    fn invlpg(&mut self, va: Gva) -> PvResult {
        self.mmu.invlpg(va);
        hypercall(self.vm);
        Ok(())
    }

    fn flush_tlb(&mut self) -> PvResult {
        self.mmu.flush_current();
        hypercall(self.vm);
        Ok(())
    }

    /// Linux turns page-table isolation off in Xen PV guests (arch/x86/mm/pti.c,
    /// pti_check_boottime_disable), so it never issues this; as a hypercall if it did.
    fn invpcid_addr(&mut self, pcid: u16, va: Gva) -> PvResult {
        self.mmu.invlpg_tag(va, pcid as u64);
        hypercall(self.vm);
        Ok(())
    }

    fn lazy_mmu_begin(&mut self) -> PvResult {
        self.batch.begin();
        Ok(())
    }

    fn lazy_mmu_end(&mut self) -> PvResult {
        self.batch.end(self.vm);
        Ok(())
    }

    /// Linux's `xen_exit_mmap` unpins the dying address space (`xen_pgd_unpin`) in one
    /// multicall batch: an MMUEXT_UNPIN_TABLE of the top-level table, then, walking the user
    /// half, each table page made writable again (`MULTI_update_va_mapping`), a last-level
    /// page with its own MMUEXT_UNPIN_TABLE first (split page-table locks): 1 + 2 per
    /// last-level page + 1 per other page (the top-level one included) entries. The teardown
    /// after it writes unpinned pages: plain stores (`xen_set_pmd` and friends), no hypercall.
    fn mm_exiting(&mut self, pgd: Gfn) -> PvResult {
        if !self.direct.is_direct(pgd) {
            return Ok(());
        }
        let (last_level, upper) = self.direct.unpin(self.mem, self.vm, pgd, self.levels)?;
        batch(self.vm, 1 + 2 * last_level + upper);
        Ok(())
    }

    fn mm_created(&mut self, pgd: Gfn, _devirt: bool) -> PvResult {
        // Under PV every address space is paravirtualized.
        Ok(self.direct.add_root(self.mem, pgd)?)
    }
}
