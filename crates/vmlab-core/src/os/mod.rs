//! The kernel model: the same code runs natively and inside a guest. It edits page tables
//! only through [`PvOps`], so each paging scheme plugs in its own backend.

pub mod entry;
pub mod exec;
mod fault;
mod fork;
pub mod frames;
pub mod kernel;
pub mod kernel_half;
pub mod mm;
mod pti;
pub mod pvops;
pub mod tables;
mod teardown;

pub use entry::EntryKind;
pub use exec::{ImageRegion, Program, HELLO, SMALL_IMAGE};
pub use kernel::{Kernel, KernelConfig, KernelCounters, OsError, Pid, Process, ThpPolicy};
pub use pvops::{BackendError, PvOps, PvResult};
