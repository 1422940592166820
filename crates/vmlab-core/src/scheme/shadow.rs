//! Shadow paging (KVM's shadow MMU): the guest's tables map GVA->GPA in guest memory, and
//! the hypervisor keeps shadow tables (GVA->HPA) that the hardware walks (1D). The guest's
//! page-table writes, CR3 loads and TLB flushes reach the hypervisor (see `hv::x86::shadow`),
//! and every fault in the shadow tables exits to it before the guest sees anything.

use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::{Gfn, Gva, Hfn, Hpa, PageSize};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::{Ctx, ShadowConfig, ShadowMmu};
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::Mmu;
use crate::os::{Kernel, PvOps, PvResult};

/// Shadow paging: one VM and its shadow MMU.
pub struct Shadow {
    vm: Vm,
    shadow: ShadowMmu,
}

impl Shadow {
    /// The shadow MMU.
    pub fn mmu(&self) -> &ShadowMmu {
        &self.shadow
    }
}

impl Scheme for Shadow {
    fn new(m: &mut Machine, config: &SystemConfig) -> Result<Shadow, SimError> {
        let vm = super::new_vm(m, config)?;
        let options = config
            .shadow
            .unwrap_or(ShadowConfig::kvm_default(vm.guest_frames()));
        Ok(Shadow {
            shadow: ShadowMmu::new(options, config.levels),
            vm,
        })
    }

    fn traits(_: Paging) -> SchemeTraits {
        // Host remapping would need the shadow tables' own invalidation: not modeled.
        SchemeTraits::HARDWARE_ASSISTED
    }

    fn paging(&self) -> Paging {
        Paging::Shadow
    }

    fn with_pvops<R>(&mut self, m: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R {
        f(&mut ShadowPvOps {
            mem: &mut m.mem,
            mmu: &mut m.mmu,
            vm: &mut self.vm,
            shadow: &mut self.shadow,
        })
    }

    fn vm(&self) -> Option<&Vm> {
        Some(&self.vm)
    }

    fn vm_mut(&mut self) -> Option<&mut Vm> {
        Some(&mut self.vm)
    }

    fn shadow_mmu(&self) -> Option<&ShadowMmu> {
        Some(&self.shadow)
    }

    fn direct_tables(&self) -> Option<&DirectTables> {
        None
    }

    fn guest_fault(
        &mut self,
        m: &mut Machine,
        kernel: &mut Kernel,
        va: Gva,
        write: bool,
    ) -> Result<(), SimError> {
        shadow_fault(&mut self.vm, &mut self.shadow, m, kernel, va, write)
    }
}

/// A fault in the shadow tables: it exits to the hypervisor first; only a fault the guest's
/// own tables would raise reaches the guest.
pub(super) fn shadow_fault(
    vm: &mut Vm,
    shadow: &mut ShadowMmu,
    m: &mut Machine,
    kernel: &mut Kernel,
    va: Gva,
    write: bool,
) -> Result<(), SimError> {
    let mut ctx = Ctx {
        mem: &mut m.mem,
        vm,
        mmu: &mut m.mmu,
    };
    match shadow.page_fault(&mut ctx, va, write)? {
        Ok(()) => Ok(()),
        Err(_) => {
            let mut pv = ShadowPvOps {
                mem: &mut m.mem,
                mmu: &mut m.mmu,
                vm,
                shadow,
            };
            Ok(kernel.page_fault(&mut pv, va, write)?)
        }
    }
}

/// The shadow-paging pv-ops backend: the guest's own operations, as the hypervisor sees them.
pub struct ShadowPvOps<'a> {
    /// Host memory, holding the bytes of every table page.
    pub mem: &'a mut HostMemory,
    /// The MMU, whose root and TLBs the shadow MMU sets and flushes.
    pub mmu: &'a mut Mmu,
    /// The VM: the backing of guest memory, and its exit counts.
    pub vm: &'a mut Vm,
    /// The shadow MMU, which sees (and traps) the guest's table writes, CR3 loads and flushes.
    pub shadow: &'a mut ShadowMmu,
}

impl ShadowPvOps<'_> {
    fn ctx(&mut self) -> (Ctx<'_>, &mut ShadowMmu) {
        (
            Ctx {
                mem: self.mem,
                vm: self.vm,
                mmu: self.mmu,
            },
            self.shadow,
        )
    }

    /// The guest's first touch of a frame faults in the shadow tables (its direct map) and
    /// the hypervisor backs it.
    fn host_frame(&mut self, gfn: Gfn) -> Result<Hfn, HvError> {
        if let Some(hfn) = self.vm.translate(self.mem, gfn) {
            return Ok(hfn);
        }
        self.vm.record_exit(ExitReason::ShadowFault);
        self.vm.back(self.mem, gfn)
    }

    fn entry_addr(&mut self, table: Gfn, index: usize) -> Result<Hpa, HvError> {
        Ok(self.host_frame(table)?.addr_at(index as u64 * 8))
    }

    /// The guest wrote whole frames: back them, and unshadow any that was a page table.
    fn wrote_frames(&mut self, frame: Gfn, size: PageSize) -> PvResult {
        for offset in 0..size.frames() {
            let gfn = Gfn::new(frame.raw() + offset);
            self.host_frame(gfn)?;
            let (mut ctx, shadow) = self.ctx();
            shadow.guest_page_written(&mut ctx, gfn)?;
        }
        Ok(())
    }
}

impl PvOps for ShadowPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
        let at = self.entry_addr(table, index)?;
        Ok(self.mem.read_u64(at))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
        let at = self.entry_addr(table, index)?;
        self.mem.write_u64(at, entry);
        let (mut ctx, shadow) = self.ctx();
        Ok(shadow.guest_write(&mut ctx, table, index, entry)?)
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
        let at = self.entry_addr(table, index)?;
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        let (mut ctx, shadow) = self.ctx();
        shadow.guest_write(&mut ctx, table, index, 0)?;
        Ok(old)
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        let hfn = self.host_frame(table)?;
        self.mem.drop_contents(hfn);
        let (mut ctx, shadow) = self.ctx();
        Ok(shadow.guest_page_written(&mut ctx, table)?)
    }

    fn release_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        if let Some(hfn) = self.vm.translate(self.mem, table) {
            self.mem.drop_contents(hfn);
        }
        Ok(())
    }

    fn clear_page(&mut self, frame: Gfn, size: PageSize) -> PvResult {
        self.wrote_frames(frame, size)
    }

    fn copy_page(&mut self, _from: Gfn, to: Gfn, size: PageSize) -> PvResult {
        self.wrote_frames(to, size)
    }

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) -> PvResult {
        self.host_frame(pgd)?;
        let (mut ctx, shadow) = self.ctx();
        Ok(shadow.load_cr3(&mut ctx, pgd, pcid, flush)?)
    }

    fn invlpg(&mut self, va: Gva) -> PvResult {
        let (mut ctx, shadow) = self.ctx();
        shadow.invlpg(&mut ctx, va);
        Ok(())
    }

    fn flush_tlb(&mut self) -> PvResult {
        let (mut ctx, shadow) = self.ctx();
        shadow.flush(&mut ctx);
        Ok(())
    }

    fn invpcid_addr(&mut self, pcid: u16, va: Gva) -> PvResult {
        let (mut ctx, shadow) = self.ctx();
        shadow.invpcid_addr(&mut ctx, pcid, va);
        Ok(())
    }

    fn kernel_access(&mut self, index: usize) -> PvResult {
        let (mut ctx, shadow) = self.ctx();
        shadow.kernel_access(&mut ctx, index);
        Ok(())
    }
}
