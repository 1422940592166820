//! Recorded executions of real guests, read as streams.
//!
//! - [`e500`]: a PowerPC e500v2 Linux guest recorded under QEMU by `guests/e500/`.

pub mod e500;
