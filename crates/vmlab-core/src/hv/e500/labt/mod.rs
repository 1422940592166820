//! LABT: the host rewrites the guest kernel's privileged instructions in place, on their
//! first exit, so that they stop exiting; no guest cooperation is needed.
//!
//! - [`rewrite`]: what each privileged instruction becomes (one load/store on the shared
//!   page, a branch to a routine, a nop, or nothing: it keeps exiting).
//! - [`reach`]: whether a single branch reaches from a site to its routine and back.
//! - [`cache`]: the translation cache, FIFO; an evicted routine's site reverts.
//! - [`resize`]: adaptive shadow-TLB resizing (split around sites, merge back).
//! - [`translator`]: the state machine tying them together with read/write tracing
//!   (execute-only shadows; reads answered with the original bytes, a write to a site
//!   undoes it) and avoid-read-faults (hot loads served from a data cache on the shared
//!   page).
//! - [`model`]: the `labt` hypervisor models (KVM with huge pages plus the translator),
//!   one per [`Variant`].

pub mod cache;
pub mod model;
pub mod reach;
pub mod resize;
pub mod rewrite;
pub mod translator;

pub use model::{Labt, Variant};
pub use resize::{Block, Piece};
pub use rewrite::Rewrite;
pub use translator::{DataOutcome, LabtConfig, LabtStats, PrivOutcome, Translator};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod model_tests;
