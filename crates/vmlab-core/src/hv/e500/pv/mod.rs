//! Linux's boot-time paravirtual patching on e500 (`arch/powerpc/kernel/kvm.c`,
//! `kvm_emul.S`), applied to a recorded guest: the kernel, told by the host that it runs
//! under KVM, rewrites its own privileged instructions once at boot into loads and stores on
//! the page it shares with the host, `nop`s, or branches to small templates; what is left
//! keeps trapping.
//!
//! - [`magic`]: the shared page's address and layout.
//! - [`rules`]: `kvm_check_ins`: which encodings become what.
//! - [`templates`]: the templates' paths and instruction counts.
//! - [`model`]: the `pv` hypervisor model: KVM for whatever the patching left.
//! - [`PvText`]: where the rules apply (the kernel text but the templates themselves).

pub mod magic;
pub mod model;
pub mod rules;
pub mod templates;

pub use model::Pv;
pub use rules::{patch, Features, PvPatch, Template};
pub use templates::{run, TemplateInput, TemplateRun};

use crate::trace::e500::Header;

/// The part of the guest the patching loop of `kvm_use_magic_page` walks: every word of
/// `[_stext, _etext)` except `[kvm_template_start, kvm_template_end)`. Code outside it
/// (the early head code run at physical addresses, `.init.text`) is never patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PvText {
    /// `[_stext, _etext)`.
    pub text: (u32, u32),
    /// `[kvm_template_start, kvm_template_end)`, when the kernel has the templates.
    pub templates: Option<(u32, u32)>,
    /// What the host's hypercall answered.
    pub features: Features,
}

impl PvText {
    /// The ranges from a trace header's System.map; `None` when it lacks `_stext`/`_etext`.
    pub fn from_header(header: &Header) -> Option<PvText> {
        let text = header.kernel_text()?;
        let templates = header
            .symbol("kvm_template_start")
            .zip(header.symbol("kvm_template_end"));
        Some(PvText {
            text,
            templates,
            features: Features::default(),
        })
    }

    /// What patching made of the instruction `word` at `pc`.
    pub fn patch_at(&self, pc: u32, word: u32) -> PvPatch {
        let inside = |(lo, hi): (u32, u32)| pc >= lo && pc < hi;
        if !inside(self.text) || self.templates.is_some_and(inside) {
            return PvPatch::Unpatched;
        }
        rules::patch(word, self.features)
    }
}

/// Where Linux's `kvm_guest_init` (the initcall that patches the kernel) lies, from
/// System.map: `[its address, the next symbol's)`. The kernel runs unpatched until then.
pub fn patch_at_time(header: &Header) -> Option<(u32, u32)> {
    let start = header.symbol("kvm_guest_init")?;
    let end = header
        .system_map
        .lines()
        .filter_map(|l| u32::from_str_radix(l.split_whitespace().next()?, 16).ok())
        .filter(|&a| a > start)
        .min()?;
    Some((start, end))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod model_tests;
