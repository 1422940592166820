//! The hypervisor model. Mechanisms that more than one scheme uses sit here: host remapping
//! of guest pages (`remap`), direct paging's host-address copies of guest tables shared by PV
//! and TPT (`direct`), PV's hypercall batching (`pv`) and TPT's device and page moves
//! (`tpt`). The x86 hypervisor proper (a VM's guest memory and its EPT, exits by reason,
//! KVM's shadow MMU) lives in [`x86`].

pub mod direct;
pub mod e500;
pub mod pv;
pub mod remap;
pub mod tpt;
pub mod x86;

pub use remap::{Moved, RemapCounters};
pub use x86::exits::{ExitCounters, ExitReason};
pub use x86::vm::{BackingConfig, HvError, Vm};
