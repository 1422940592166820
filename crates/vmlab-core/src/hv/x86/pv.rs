//! Xen-style paravirtual paging, the hypervisor's side: every guest page-table update is a
//! validated `mmu_update` hypercall, batched into multicalls inside Linux's lazy-MMU
//! sections; CR3 switches and TLB flushes are hypercalls too. Validation itself (the type
//! and reference counts Xen keeps per frame) is not modeled beyond its hypercall.

use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::vm::Vm;

/// Updates one multicall carries (Linux's lazy-MMU batching of mmu_update).
pub const PV_BATCH: u32 = 32;

/// The guest's batching of table updates into multicalls.
#[derive(Clone, Copy, Debug, Default)]
pub struct Multicall {
    /// Inside a lazy-MMU section.
    lazy: bool,
    /// Updates queued for the next multicall.
    pending: u32,
}

/// One hypercall of the guest.
pub fn hypercall(vm: &mut Vm) {
    vm.record_exit(ExitReason::Hypercall);
}

/// An explicit multicall batch of `entries` entries (`xen_mc_batch` ... `xen_mc_issue`):
/// one hypercall per [`PV_BATCH`] entries or part of it (`__xen_mc_entry` flushes a full
/// batch, `xen_mc_issue` the rest).
pub fn batch(vm: &mut Vm, entries: u64) {
    for _ in 0..entries.div_ceil(PV_BATCH as u64) {
        hypercall(vm);
    }
}

impl Multicall {
    /// One validated table update: its own hypercall, or a place in the next multicall.
    pub fn update(&mut self, vm: &mut Vm) {
        if self.lazy {
            self.pending += 1;
            if self.pending == PV_BATCH {
                hypercall(vm);
                self.pending = 0;
            }
        } else {
            hypercall(vm);
        }
    }

    /// arch_enter_lazy_mmu_mode: queue updates from now on.
    pub fn begin(&mut self) {
        self.lazy = true;
    }

    /// arch_leave_lazy_mmu_mode: send what is queued.
    pub fn end(&mut self, vm: &mut Vm) {
        self.lazy = false;
        if self.pending > 0 {
            self.pending = 0;
            hypercall(vm);
        }
    }
}
