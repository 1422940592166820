//! Recorded executions of real guests, read as streams.
//!
//! - [`e500`]: a PowerPC e500v2 Linux guest recorded under QEMU by `guests/e500/`.
//! - [`x86`]: x86-64 Linux programs and the processes they start, recorded under QEMU user mode.

pub mod e500;
pub mod x86;
