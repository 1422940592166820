//! Machine profiles and the cost model that turns exact event counts into cycles.

pub mod model;
pub mod profile;

pub use model::{CycleBreakdown, Events};
pub use profile::{Profile, ProfileError, DEFAULT_PROFILE};
