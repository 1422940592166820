//! The simulated machine: everything the hardware does on its own.
//!
//! This level holds what every machine has, whatever its architecture: set-associative
//! arrays (`assoc`), the cache hierarchy (`cache`), host memory and its table pages
//! (`frames`), memory tags (`tags`) and the decoupled pipeline that serves memory
//! references level by level (`pipeline`). What is particular to one architecture lives in its
//! own folder: [`x86`] (entry layouts, paging modes, the MMU and its walker).

pub mod assoc;
pub mod cache;
pub mod e500;
pub mod frames;
pub mod pipeline;
pub mod tags;
pub mod x86;
