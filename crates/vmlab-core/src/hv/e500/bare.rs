//! `bare`: the guest kernel on the hardware, no hypervisor. Nothing exits and nothing is
//! added; the guest's own TLB is the TLB the hardware uses. The baseline of every slowdown.

use super::model::{AccessCtx, GuestEvent, GuestState, HvModel, ModelCounters, Translation};

/// The bare-metal model.
#[derive(Debug, Default)]
pub struct Bare {
    counters: ModelCounters,
}

impl Bare {
    /// A bare machine.
    pub fn new() -> Self {
        Self::default()
    }
}

impl HvModel for Bare {
    fn name(&self) -> &str {
        "bare"
    }

    fn on_event(&mut self, _guest: &GuestState, _event: &GuestEvent<'_>) {}

    fn counters(&self) -> &ModelCounters {
        &self.counters
    }

    fn shadow_translate(&self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> Option<Translation> {
        // On bare hardware the TLB the MMU uses is the guest's own.
        guest.translate(ea, ctx)
    }
}
