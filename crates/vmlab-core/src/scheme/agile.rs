//! Agile paging (Gandhi, Hill, Swift, ISCA 2016): shadow paging for the parts of the guest's
//! tables it rarely writes, nested paging below a switch for the parts it writes often, in
//! one walk. The hypervisor is KVM's shadow MMU with agile paging's nested mode
//! (`hv::x86::shadow::agile`); the hardware walk that switches from shadow to guest tables is
//! `hw::x86::agile`. A fault below a switch entry is the guest's own and reaches it without
//! an exit, as under nested paging; a fault in the shadow part exits, as under shadow paging.

use super::shadow::{shadow_fault, ShadowPvOps};
use super::{Machine, Paging, Scheme, SchemeTraits, SimError, SystemConfig};
use crate::addr::Gva;
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::{Ctx, ShadowConfig, ShadowMmu};
use crate::hv::x86::vm::Vm;
use crate::os::{Kernel, PvOps};

/// Agile paging: one VM and its shadow MMU in agile mode.
pub struct Agile {
    vm: Vm,
    shadow: ShadowMmu,
}

impl Scheme for Agile {
    fn new(m: &mut Machine, config: &SystemConfig) -> Result<Agile, SimError> {
        let vm = super::new_vm(m, config)?;
        let options = config
            .shadow
            .unwrap_or(ShadowConfig::kvm_default(vm.guest_frames()));
        Ok(Agile {
            shadow: ShadowMmu::new(options, config.levels).with_agile(config.agile),
            vm,
        })
    }

    fn traits(_: Paging) -> SchemeTraits {
        // Host remapping would need the shadow part's own invalidation: not modeled.
        SchemeTraits::HARDWARE_ASSISTED
    }

    fn paging(&self) -> Paging {
        Paging::Agile
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

    fn timer_interrupt(&mut self, m: &mut Machine) {
        self.vm.record_exit(ExitReason::Timer);
        self.vm.record_exit(ExitReason::TscDeadline);
        // The hypervisor runs at the timer's exit: its scan of nested-mode tables goes here.
        let mut ctx = Ctx {
            mem: &mut m.mem,
            vm: &mut self.vm,
            mmu: &mut m.mmu,
        };
        self.shadow.agile_tick(&mut ctx);
    }

    fn guest_fault(
        &mut self,
        m: &mut Machine,
        kernel: &mut Kernel,
        va: Gva,
        write: bool,
    ) -> Result<(), SimError> {
        let ctx = Ctx {
            mem: &mut m.mem,
            vm: &mut self.vm,
            mmu: &mut m.mmu,
        };
        if self.shadow.agile_switched_at(&ctx, va) {
            // Raised in the guest's own tables (nested mode): delivered without an exit.
            return Ok(self.with_pvops(m, |pv| kernel.page_fault(pv, va, write))?);
        }
        shadow_fault(&mut self.vm, &mut self.shadow, m, kernel, va, write)
    }
}
