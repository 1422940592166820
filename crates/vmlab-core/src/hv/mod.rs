//! The hypervisor model: the x86 hypervisor ([`x86`]: a VM's guest memory and its EPT,
//! exits by reason, KVM's shadow MMU, host remapping of guest pages, direct paging's
//! host-address copies of guest tables shared by PV and TPT, PV's hypercall batching and
//! TPT's device and page moves) and the e500 hypervisor models ([`e500`]).

pub mod e500;
pub mod x86;

pub use x86::exits::{ExitCounters, ExitReason};
pub use x86::remap::{Moved, RemapCounters};
pub use x86::vm::{BackingConfig, HvError, Vm};
