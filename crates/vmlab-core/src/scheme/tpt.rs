//! Translation Pass-Through (USENIX ATC 2023; docs/mechanisms.md, section 1): for chosen processes the guest
//! keeps one-dimensional GVA->HPA page tables (the devirt copies of `hv::x86::direct`, kept by dual
//! writes), the hardware walks them in user mode, and memory tags keep the guest inside its
//! own frames. Other processes, and the guest kernel, run on nested paging. The mechanism
//! follows the artifact's guest pv-ops backend.
//!
//! The same module runs the artifact's Intel prototype (`tpt-prototype`): no tagging
//! hardware, so the copies are walked as plain 1D tables, and each user<->kernel round trip
//! of a TPT process costs about 3 exits (the switches between its host-address tables and the
//! kernel's nested paging are hypercalls); it pins guest memory, so the host never moves it.

use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::Gfn;
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::ShadowMmu;
use crate::hv::x86::vm::Vm;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::Mmu;
use crate::os::{Kernel, PvOps, PvResult};

/// Exits per user<->kernel round trip of a TPT process in the Intel prototype (about 3:
/// docs/mechanisms.md, section 1).
const PROTOTYPE_EXITS_PER_ROUND_TRIP: u32 = 3;

/// TPT (with tags) or its Intel prototype: one VM and the devirt copies.
pub struct Tpt {
    vm: Vm,
    direct: DirectTables,
    prototype: bool,
}

impl Tpt {
    /// TPT with memory tags (`prototype` false) or the Intel prototype.
    pub fn build(m: &mut Machine, config: &SystemConfig, prototype: bool) -> Result<Tpt, SimError> {
        Ok(Tpt {
            vm: super::new_vm(m, config)?,
            direct: DirectTables::default(),
            prototype,
        })
    }
}

impl Scheme for Tpt {
    fn new(m: &mut Machine, config: &SystemConfig) -> Result<Tpt, SimError> {
        Tpt::build(m, config, config.paging == Paging::TptPrototype)
    }

    fn traits(paging: Paging) -> SchemeTraits {
        SchemeTraits {
            guest_page_in_one_entry: true,
            tpt_processes: true,
            guest_built_host_tables: true,
            // The prototype pins guest memory, so the host never moves it.
            host_remap: paging == Paging::Tpt,
            ..SchemeTraits::HARDWARE_ASSISTED
        }
    }

    fn paging(&self) -> Paging {
        if self.prototype {
            Paging::TptPrototype
        } else {
            Paging::Tpt
        }
    }

    fn with_pvops<R>(&mut self, m: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R {
        f(&mut TptPvOps {
            mem: &mut m.mem,
            mmu: &mut m.mmu,
            vm: &mut self.vm,
            direct: &mut self.direct,
            tagged: !self.prototype,
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

    fn kernel_entry(&mut self, kernel: &Kernel) {
        if !self.prototype || !kernel.process(kernel.current()).is_some_and(|p| p.devirt) {
            return;
        }
        for _ in 0..PROTOTYPE_EXITS_PER_ROUND_TRIP {
            self.vm.record_exit(ExitReason::TptSwitch);
        }
    }

    fn host_remap(&mut self, m: &mut Machine, gfn: Gfn) -> Result<(), SimError> {
        crate::hv::x86::tpt::move_guest_page(&mut m.mem, &mut self.vm, &mut self.direct, gfn)?;
        // A tag change is visible to every CPU only after a global flush.
        m.mmu.flush_all();
        Ok(())
    }
}

/// The TPT pv-ops backend: nested paging's, plus dual writes into the devirt copies of TPT
/// address spaces.
pub struct TptPvOps<'a> {
    /// Host memory, holding the bytes of every table page.
    pub mem: &'a mut HostMemory,
    /// The MMU, whose TLBs the kernel's flushes and CR3 loads reach.
    pub mmu: &'a mut Mmu,
    /// The VM: the backing of guest memory, and its exit counts.
    pub vm: &'a mut Vm,
    /// The host-address copies of the guest's tables, written beside them.
    pub direct: &'a mut DirectTables,
    /// Walk TPT address spaces with tag checks (false: the prototype's plain 1D walks).
    pub tagged: bool,
}

impl PvOps for TptPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> PvResult<u64> {
        Ok(self.direct.read_entry(self.mem, self.vm, table, index)?)
    }

    fn set_entry(&mut self, level: u8, table: Gfn, index: usize, entry: u64) -> PvResult {
        self.direct
            .set_entry(self.mem, self.vm, level, table, index, entry)?;
        Ok(())
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> PvResult<u64> {
        Ok(self
            .direct
            .get_and_clear(self.mem, self.vm, table, index)?
            .0)
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
        let root = self.direct.root(pgd, self.vm.eptp(), self.tagged);
        self.mmu.set_root(root, pcid as u64, flush);
        Ok(())
    }

    hardware_tlb_ops!();

    fn mm_created(&mut self, pgd: Gfn, devirt: bool) -> PvResult {
        if devirt {
            self.direct.add_root(self.mem, pgd)?;
        }
        Ok(())
    }
}
