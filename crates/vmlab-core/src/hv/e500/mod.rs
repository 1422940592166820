//! The e500 hypervisor models.
//!
//! - [`pv`]: Linux's boot-time paravirtual patching.
//! - [`labt`]: in-place binary translation by the host.

pub mod labt;
pub mod pv;
