//! The kernel model: the same code runs natively and inside a guest. It edits page tables
//! only through [`PvOps`], so each paging scheme plugs in its own backend.

pub mod kernel;
pub mod mm;
pub mod pvops;

pub use kernel::{Kernel, KernelConfig, KernelCounters, OsError, ThpPolicy};
pub use pvops::PvOps;
