//! The hypervisor model: VMs, guest-physical memory and its backing (the p2m, kept as the
//! EPT itself), and exit accounting.

pub mod exits;
pub mod remap;
pub mod shadow;
pub mod vm;

pub use exits::{ExitCounters, ExitReason};
pub use remap::{Moved, RemapCounters};
pub use vm::{BackingConfig, Vm};
