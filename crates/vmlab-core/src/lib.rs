//! vmlab-core: an execution-driven simulator of address translation in virtual machines.
//!
//! The modules mirror the real stack (see `docs/design.md`):
//! - [`hw`]: the machine: frames, page-table entry layouts, the walker, TLBs, paging-structure
//!   caches and the cache hierarchy.
//! - [`hv`]: the hypervisor: guest-physical memory, its backing (p2m) and EPT.
//! - [`os`]: the kernel model: address spaces, VMAs, demand paging, pv-ops.
//! - [`workload`]: generators of operations (memory accesses, OS calls).
//! - [`engine`]: runs a workload through the OS and the machine under one paging scheme.
//! - [`cost`]: machine profiles and the model that turns events into cycles.
//! - [`stats`]: counters and the run report.
//! - [`provenance`]: where a report comes from (version, commit, command, profile, seed).
//! - [`trace`]: recorded executions of real guests (the e500 Linux guest of `guests/e500/`)
//!   and of real x86-64 programs.
//! - [`record`]: recording a real x86-64 program under QEMU user mode into a trace.
//!
//! The library does no I/O besides reading profiles it is pointed at, and never panics on
//! user input: configuration and workload errors are typed values.

pub mod addr;
pub mod cost;
pub mod engine;
mod host;
pub mod hv;
pub mod hw;
pub mod lab;
pub mod os;
pub mod provenance;
pub mod record;
pub mod scheme;
pub mod stats;
pub mod trace;
pub mod units;
pub mod workload;
