//! The paths through Linux's patching templates (`arch/powerpc/kernel/kvm_emul.S`, 32-bit
//! build) and how many instructions each executes. A template either finishes in the guest
//! (the new MSR is kept on the magic page) or, when the change needs the host, executes the
//! original instruction, which traps.
//!
//! Counts, per the 32-bit expansion of the macros: `SCRATCH_SAVE` and `SCRATCH_RESTORE` are 5
//! instructions each, `LL64`/`STL64` one `lwz`/`stw`, `LOAD_REG_IMMEDIATE(r30,
//! ~(MSR_EE|MSR_RI))` a `lis` and an `ori`. The final `b` back to the patch site is counted;
//! the patched site's own branch into the template is not (it replaces the original
//! instruction one for one).

use super::rules::Template;

/// `MSR[EE]`: external interrupts enabled.
pub const MSR_EE: u32 = 1 << 15;
/// `MSR[RI]`: recoverable interrupt (Book S; part of the templates' "safe" mask).
pub const MSR_RI: u32 = 1 << 1;
/// The MSR bits `kvm_emulate_mtmsr` may change without the host.
pub const MSR_SAFE_BITS: u32 = MSR_EE | MSR_RI;

/// One execution of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateRun {
    /// Instructions the template executed (the trapping original instruction included).
    pub insns: u32,
    /// The template fell back to the original instruction, which trapped to the host.
    pub exits: bool,
}

/// What a template reads to decide its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateInput {
    /// The MSR on the magic page before the instruction.
    pub old_msr: u32,
    /// The value written: the source register of mtmsr/wrtee (`wrteei` ignores it).
    pub value: u32,
    /// The magic page's `int_pending`: the host holds an interrupt for `MSR[EE]`.
    pub int_pending: bool,
}

impl Template {
    /// The template's code size in words (every path), as copied per site.
    pub fn words(self) -> u32 {
        match self {
            Template::WrteeiZero => 14,
            Template::Wrtee | Template::WrteeiOne => 27,
            Template::Mtmsr => 32,
            Template::Mtmsrd => 31,
        }
    }
}

const SAVE: u32 = 5;
const RESTORE: u32 = 5;

/// The path one execution of `template` takes, and its instruction count.
pub fn run(template: Template, input: TemplateInput) -> TemplateRun {
    let done = |insns| TemplateRun {
        insns,
        exits: false,
    };
    let trap = |insns| TemplateRun { insns, exits: true };
    match template {
        Template::WrteeiZero => {
            // save, ld msr, rlwinm, st msr, restore, b
            done(SAVE + 3 + RESTORE + 1)
        }
        Template::Wrtee | Template::WrteeiOne => {
            let ee = match template {
                Template::WrteeiOne => true,
                _ => input.value & MSR_EE != 0,
            };
            // save, ld msr, ori/li, rlwimi, andi., st msr, beq
            let head = SAVE + 6;
            if !ee {
                done(head + RESTORE + 1)
            } else if !input.int_pending {
                // lwz int_pending, cmpwi, bne; restore, b
                done(head + 3 + RESTORE + 1)
            } else {
                // ...; do_wrtee: restore, wrtee (traps), b, b
                trap(head + 3 + RESTORE + 3)
            }
        }
        Template::Mtmsr => {
            // save, ld msr, ori, xor, lis+ori, and., beq
            let head = SAVE + 7;
            let critical = (input.value ^ input.old_msr) & !MSR_SAFE_BITS != 0;
            if critical {
                // do_mtmsr: restore, mtmsr (traps), b, b
                return trap(head + RESTORE + 3);
            }
            // maybe_stay_in_guest: ori, st msr, lwz int_pending, cmpwi, beq+
            let stay = head + 5;
            if !input.int_pending {
                done(stay + RESTORE + 1)
            } else if input.value & MSR_EE == 0 {
                // andi., bne (not taken); no_mtmsr: restore, b
                done(stay + 2 + RESTORE + 1)
            } else {
                trap(stay + 2 + RESTORE + 3)
            }
        }
        Template::Mtmsrd => {
            // save, ld msr, lis+ori, and, ori, andi., or, st msr, lwz, cmpwi, beq+
            let head = SAVE + 11;
            if !input.int_pending {
                done(head + RESTORE + 1)
            } else if input.value & MSR_EE == 0 {
                done(head + 2 + RESTORE + 1)
            } else {
                trap(head + 2 + RESTORE + 3)
            }
        }
    }
}
