//! `pv`: KVM/e500 with a guest that patched itself at boot (Linux's `kvm_use_magic_page`).
//! The host side is KVM's ([`Kvm`]: shadow TLB, exits of what is left); each privileged
//! instruction executed after the patching point is looked up in [`PvText`]: a magic-page
//! load or store or a nop runs in the guest, a template runs its path (and exits only when
//! it falls back to the original instruction), anything unpatched exits as under KVM.
//!
//! The trace has what the templates read except two things, handled so:
//! - `int_pending`: the host has an interrupt queued for when the guest sets `MSR[EE]`. The
//!   recorded guest takes such an interrupt right after the instruction that enabled EE
//!   (an external, decrementer or fixed-interval interrupt with SRR0 = pc + 4), so an
//!   EE-enabling template followed by one took the trapping path: the exit and the longer
//!   path are counted when that interrupt is seen.
//! - the value an mtmsr writes when the trace lacks it (QEMU had not written the GPR back):
//!   the guest state's MSR then stays as it was, so the template sees no change outside
//!   EE/RI and stays in the guest. In the recorded kernel every mtmsr is the exception
//!   prologue's `LOAD_REG_IMMEDIATE(r11, MSR_KERNEL); mtmsr r11` (head_booke.h), and
//!   MSR_KERNEL (ME|RI|CE) differs from the MSR an interrupt leaves (CE|ME|DE of the old
//!   one, DE clear in Linux's MSR_USER) only in RI, one of the template's safe bits.

use super::{patch_at_time, templates::MSR_EE, PvPatch, PvText, Template, TemplateInput};
use super::{run, TemplateRun};
use crate::hv::e500::kvm::{priv_exit, HostConfig, Kvm};
use crate::hv::e500::model::{
    AccessCtx, GuestEvent, GuestState, HvModel, ModelCounters, Translation,
};
use crate::trace::e500::insn::PrivClass;
use crate::trace::e500::{ExceptionKind, Header};

/// Interrupts the host holds for `MSR[EE]`: external input, decrementer, fixed interval.
pub fn is_ee_gated(kind: ExceptionKind) -> bool {
    matches!(kind.0, 4 | 10 | 11)
}

/// A template that finished in the guest with `MSR[EE]` set: if the next event is an
/// EE-gated interrupt at `pc + 4`, it really took the trapping path.
#[derive(Debug, Clone, Copy)]
pub struct EeWindow {
    /// The patched instruction.
    pub pc: u32,
    /// Its class (the exit reason if it trapped).
    pub class: PrivClass,
    /// Its template.
    pub template: Template,
    /// What it read.
    pub input: TemplateInput,
    /// The path counted so far.
    pub counted: TemplateRun,
}

impl EeWindow {
    /// The path the template took had `int_pending` been set, when that exits.
    pub fn trapped(&self) -> Option<TemplateRun> {
        let r = run(
            self.template,
            TemplateInput {
                int_pending: true,
                ..self.input
            },
        );
        r.exits.then_some(r)
    }
}

/// The paravirtual model.
#[derive(Debug, Clone)]
pub struct Pv {
    name: &'static str,
    kvm: Kvm,
    text: Option<PvText>,
    patch_fn: Option<(u32, u32)>,
    patched: bool,
    prev_msr: u32,
    window: Option<EeWindow>,
}

impl Pv {
    /// PV on KVM with guest memory in 4 KiB host pages, or huge pages (`huge`).
    pub fn new(config: &HostConfig, huge: bool) -> Self {
        Pv {
            name: if huge { "pv-huge" } else { "pv" },
            kvm: Kvm::new(config, huge),
            text: None,
            patch_fn: None,
            patched: false,
            prev_msr: 0,
            window: None,
        }
    }

    /// Instructions of the templates, run in the guest.
    fn template_insns(&mut self, insns: u64) {
        self.kvm.counters_mut().added_insns += insns;
    }

    fn on_priv(&mut self, guest: &GuestState, event: &GuestEvent<'_>, pc: u32, word: u32) {
        let GuestEvent::Priv { class, .. } = event else {
            return;
        };
        if self.text.is_none() {
            // No header: the text range from the guest state, patched from the start.
            self.text = guest.kernel_text.map(|text| PvText {
                text,
                templates: None,
                features: Default::default(),
            });
            self.patched = true;
        }
        let patch = match (&self.text, self.patched) {
            (Some(t), true) => t.patch_at(pc, word),
            _ => PvPatch::Unpatched,
        };
        match patch {
            PvPatch::Unpatched => self.kvm.on_event(guest, event),
            PvPatch::Load { .. } | PvPatch::Store { .. } | PvPatch::Nop => {
                self.kvm.guest_access(guest, pc, pc, guest.kernel_fetch());
                self.kvm.counters_mut().bump("in_place", 1);
            }
            PvPatch::Branch(template) => {
                self.kvm.guest_access(guest, pc, pc, guest.kernel_fetch());
                let input = TemplateInput {
                    old_msr: self.prev_msr,
                    value: guest.msr,
                    int_pending: false,
                };
                let r = run(template, input);
                self.template_insns(r.insns as u64);
                self.kvm.counters_mut().bump("template_runs", 1);
                if r.exits {
                    self.kvm.count_emulated_exit(guest, *class, word, pc);
                } else if guest.msr & MSR_EE != 0 {
                    self.window = Some(EeWindow {
                        pc,
                        class: *class,
                        template,
                        input,
                        counted: r,
                    });
                }
            }
        }
    }
}

/// Settles an EE window at an interrupt: when the interrupt proves `int_pending` was set,
/// returns the trapping path to count instead.
pub fn settle(window: Option<EeWindow>, event: &GuestEvent<'_>) -> Option<(EeWindow, TemplateRun)> {
    let w = window?;
    match event {
        GuestEvent::Exception {
            kind,
            by_branch: false,
            srr0,
            ..
        } if is_ee_gated(*kind) && *srr0 == w.pc.wrapping_add(4) => w.trapped().map(|t| (w, t)),
        _ => None,
    }
}

impl HvModel for Pv {
    fn name(&self) -> &str {
        self.name
    }

    fn on_start(&mut self, header: &Header) {
        self.text = PvText::from_header(header);
        self.patch_fn = patch_at_time(header);
        // Without kvm_guest_init in System.map, the kernel counts as patched from the start.
        self.patched = self.patch_fn.is_none();
    }

    fn on_event(&mut self, guest: &GuestState, event: &GuestEvent<'_>) {
        if !matches!(event, GuestEvent::Insns { .. }) {
            if let Some((w, t)) = settle(self.window.take(), event) {
                self.template_insns((t.insns - w.counted.insns) as u64);
                self.kvm.count_exit(priv_exit(w.class), w.pc);
                self.kvm.counters_mut().bump("pending_interrupt_exits", 1);
            }
        }
        let pc = match event {
            GuestEvent::Priv { pc, .. } | GuestEvent::Mem { pc, .. } => Some(*pc),
            _ => None,
        };
        if let (Some(pc), Some((lo, hi)), false) = (pc, self.patch_fn, self.patched) {
            // kvm_guest_init runs: the kernel patches itself now.
            self.patched = pc >= lo && pc < hi;
        }
        match event {
            GuestEvent::Priv { pc, word, .. } => self.on_priv(guest, event, *pc, *word),
            _ => self.kvm.on_event(guest, event),
        }
        self.prev_msr = guest.msr;
    }

    fn counters(&self) -> &ModelCounters {
        self.kvm.counters()
    }

    fn shadow_translate(&self, guest: &GuestState, ea: u32, ctx: AccessCtx) -> Option<Translation> {
        self.kvm.shadow_translate(guest, ea, ctx)
    }
}
