//! The hypervisor model. What does not depend on the architecture (host remapping of guest
//! pages, `remap`) sits here; the x86 hypervisor (a VM's guest memory and its EPT, exits by
//! reason, KVM's shadow MMU) lives in [`x86`].

pub mod remap;
pub mod x86;

pub use remap::{Moved, RemapCounters};
pub use x86::exits::{ExitCounters, ExitReason};
pub use x86::vm::{BackingConfig, Vm};
