//! The simulated machine: everything the hardware does on its own.
//!
//! This level holds what every machine has, whatever its architecture: set-associative
//! arrays (`assoc`), the cache levels (`cache`), the memory hierarchy's front end that the MMU
//! sends references to (`memory`), the decoupled pipeline that serves them level by level or
//! on a second thread (`pipeline`), host memory and its table pages (`frames`) and memory tags
//! (`tags`). `cache` depends on nothing here, `pipeline` on `cache`, `memory` on both. What is particular to one architecture lives in its
//! own folder: [`x86`] (entry layouts, paging modes, the MMU and its walker).

pub mod assoc;
pub mod cache;
pub mod e500;
pub mod frames;
pub mod memory;
pub mod pipeline;
pub mod tags;
pub mod x86;
