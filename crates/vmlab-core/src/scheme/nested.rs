//! Nested paging (EPT/NPT): the guest kernel's tables map GVA->GPA, the hypervisor's EPT maps
//! GPA->HPA, and the hardware walks both (2D). Guest page-table updates are plain stores;
//! the only hypervisor work is backing guest frames on first touch (EPT violations), and
//! host moves of guest pages (p2m update, global flush).

use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::{Gfn, Hpa};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::shadow::ShadowMmu;
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::os::{PvOps, PvResult};

/// Nested paging: one VM, whose EPT is the p2m.
pub struct Nested {
    vm: Vm,
}

impl Scheme for Nested {
    fn new(m: &mut Machine, config: &SystemConfig) -> Result<Nested, SimError> {
        Ok(Nested {
            vm: super::new_vm(m, config)?,
        })
    }

    fn traits(_: Paging) -> SchemeTraits {
        SchemeTraits {
            host_remap: true,
            ..SchemeTraits::HARDWARE_ASSISTED
        }
    }

    fn paging(&self) -> Paging {
        Paging::Nested
    }

    fn with_pvops<R>(&mut self, m: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R {
        f(&mut NestedPvOps {
            mem: &mut m.mem,
            mmu: &mut m.mmu,
            vm: &mut self.vm,
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
        None
    }

    fn host_remap(&mut self, m: &mut Machine, gfn: Gfn) -> Result<(), SimError> {
        self.vm.remap(&mut m.mem, gfn, false)?;
        // An EPT change is visible to every CPU only after a global flush.
        m.mmu.flush_all();
        self.vm.remap_counters_mut().global_flushes += 1;
        Ok(())
    }
}

/// The nested-paging pv-ops backend: the guest writes its own memory; a write to a guest
/// frame the host never backed traps first (EPT violation) and is backed. Other schemes'
/// hypervisors read the guest's tables through it too.
pub struct NestedPvOps<'a> {
    /// Host memory, holding the bytes of every table page.
    pub mem: &'a mut HostMemory,
    /// The MMU, whose TLBs the kernel's flushes and CR3 loads reach.
    pub mmu: &'a mut Mmu,
    /// The VM: the backing of guest memory, and its exit counts.
    pub vm: &'a mut Vm,
}

impl NestedPvOps<'_> {
    fn host_addr(&mut self, table: Gfn, index: usize) -> Result<Hpa, HvError> {
        Ok(self.vm.touch(self.mem, table)?.addr_at(index as u64 * 8))
    }
}

impl PvOps for NestedPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
        let at = self.host_addr(table, index)?;
        Ok(self.mem.read_u64(at))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
        let at = self.host_addr(table, index)?;
        self.mem.write_u64(at, entry);
        Ok(())
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
        let at = self.host_addr(table, index)?;
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        Ok(old)
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        // Zeroing the new table is the guest's first touch of the frame if it is new.
        let at = self.host_addr(table, 0)?;
        self.mem.drop_contents(at.frame());
        Ok(())
    }

    fn release_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        if let Some(hfn) = self.vm.translate(self.mem, table) {
            self.mem.drop_contents(hfn);
        }
        Ok(())
    }

    backed_page_writes!();

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) -> PvResult {
        self.mmu.set_root(
            Root::TwoD {
                guest_cr3: pgd.addr(),
                eptp: self.vm.eptp(),
            },
            pcid as u64,
            flush,
        );
        Ok(())
    }

    hardware_tlb_ops!();
}
