//! The simulated machine: everything the hardware does on its own.

pub mod assoc;
pub mod cache;
pub mod frames;
pub mod hugepages;
pub mod mmu;
pub mod prefetch;
pub mod pte;
pub mod simd;
pub mod tags;
pub mod walker;
