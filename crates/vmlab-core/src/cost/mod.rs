//! Machine profiles and the cost model that turns exact event counts into cycles.

pub mod assumptions;
pub mod e500;
pub mod model;
pub mod profile;

pub use model::{CycleBreakdown, Events, KernelCost};
pub use profile::{CostKey, CostTable, Profile, ProfileError, DEFAULT_PROFILE};
