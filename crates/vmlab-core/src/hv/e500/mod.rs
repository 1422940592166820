//! The e500 hypervisor models: what a hypervisor on an e500v2 core without hardware
//! virtualization does for a recorded guest (docs/model.md, "e500").
//!
//! - [`model`]: the interface every model implements, the guest state and events the
//!   replay driver gives it, and the counters it reports.
//! - [`exits`]: exit reasons in the classes KVM/e500 counts; [`work`]: the hypervisor's
//!   other priced work, per unit.
//! - [`registry`]: the models by name; [`sid`]: KVM's shadow address-space IDs.
//! - [`bare`]: no hypervisor (the baseline); [`kvm`]: KVM's trap-and-emulate with a shadow
//!   TLB.
//! - [`pv`]: Linux's boot-time paravirtual patching; [`labt`]: in-place binary translation
//!   by the host.

pub mod bare;
pub mod exits;
pub mod kvm;
pub mod labt;
pub mod model;
pub mod pv;
pub mod registry;
pub mod replay;
pub mod sid;
pub mod work;

pub use exits::{E500Exit, E500ExitCounts};
pub use model::{
    AccessCtx, GuestEvent, GuestState, HvModel, ModelCounters, TlbEffect, Translation,
};
pub use work::{E500Work, E500WorkCounts};
