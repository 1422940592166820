//! Native paging: the kernel's physical frames are host frames and its tables are the ones
//! the hardware walks (1D). No hypervisor.

use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::{Gfn, PageSize};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::shadow::ShadowMmu;
use crate::hv::x86::vm::Vm;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::os::{PvOps, PvResult};

/// Bare metal: no hypervisor state.
pub struct Native;

impl Scheme for Native {
    fn new(_machine: &mut Machine, _config: &SystemConfig) -> Result<Native, SimError> {
        Ok(Native)
    }

    fn traits(_: Paging) -> SchemeTraits {
        SchemeTraits {
            virtualized: false,
            ..SchemeTraits::HARDWARE_ASSISTED
        }
    }

    fn paging(&self) -> Paging {
        Paging::Native
    }

    fn vm(&self) -> Option<&Vm> {
        None
    }

    fn vm_mut(&mut self) -> Option<&mut Vm> {
        None
    }

    fn shadow_mmu(&self) -> Option<&ShadowMmu> {
        None
    }

    fn direct_tables(&self) -> Option<&DirectTables> {
        None
    }

    fn with_pvops<R>(&mut self, m: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R {
        f(&mut NativePvOps {
            mem: &mut m.mem,
            mmu: &mut m.mmu,
        })
    }
}

/// The native pv-ops backend: every operation is the plain hardware operation.
pub struct NativePvOps<'a> {
    /// Host memory, holding the bytes of every table page.
    pub mem: &'a mut HostMemory,
    /// The MMU, whose TLBs the kernel's flushes and CR3 loads reach.
    pub mmu: &'a mut Mmu,
}

impl PvOps for NativePvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
        Ok(self
            .mem
            .read_u64(table.identity_host().addr_at(index as u64 * 8)))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
        self.mem
            .write_u64(table.identity_host().addr_at(index as u64 * 8), entry);
        Ok(())
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
        let at = table.identity_host().addr_at(index as u64 * 8);
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        Ok(old)
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        self.mem.drop_contents(table.identity_host());
        Ok(())
    }

    fn release_table(&mut self, _level: u8, table: Gfn) -> PvResult {
        self.mem.drop_contents(table.identity_host());
        Ok(())
    }

    fn clear_page(&mut self, _frame: Gfn, _size: PageSize) -> PvResult {
        Ok(())
    }

    fn copy_page(&mut self, _from: Gfn, _to: Gfn, _size: PageSize) -> PvResult {
        Ok(())
    }

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) -> PvResult {
        self.mmu.set_root(
            Root::OneD {
                cr3: pgd.identity_host().addr(),
            },
            pcid as u64,
            flush,
        );
        Ok(())
    }

    hardware_tlb_ops!();
}
