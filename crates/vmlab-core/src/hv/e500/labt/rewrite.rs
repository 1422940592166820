//! What LABT rewrites a privileged instruction into, on its first exit. The host knows what
//! its own emulation of each instruction does (Linux `arch/powerpc/kvm/booke_emulate.c`,
//! `e500_emulate.c`, `emulate.c`), so:
//! - an instruction whose emulation only moves a value between a guest register and the
//!   vCPU state becomes one load or store on the shared page, where the host keeps that
//!   state (mfmsr; mfspr of any SPR whose value only changes by the guest's own writes;
//!   mtspr of an SPR whose emulation is a plain store: SPRGs, SRR0/1, DEAR, ESR, the MAS
//!   registers, IVPR and the IVORs, which the host reads when it delivers an interrupt,
//!   and BUCSR, L1CSR0/1, HID0/1, whose writes KVM only records);
//! - one that changes `MSR[EE]` (wrtee, wrteei, and mtmsr when only EE/RI change) becomes a
//!   branch to a routine in the translation cache that does what Linux's paravirtual
//!   templates do (`kvm_emul.S`), falling back to the original instruction, which traps,
//!   when the host must act;
//! - tlbsync becomes a nop (KVM emulates it as nothing);
//! - everything with side effects in the host keeps exiting: rfi (changes privilege and
//!   address space), the TLB instructions, mtspr of PID, MMUCSR0, the timer and debug
//!   registers, mfspr of registers that change on their own (DEC, TSR, DBSR), dcbi.

use crate::hv::e500::pv::magic::{field, MAGIC_PAGE};
use crate::hv::e500::pv::rules::MASK_RT;
use crate::hv::e500::pv::Template;
use crate::trace::e500::insn::{classify, spr_number, PrivClass};

/// What LABT turns one privileged instruction into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rewrite {
    /// One load from the shared page, at this byte offset.
    Load(u16),
    /// One store to the shared page, at this byte offset.
    Store(u16),
    /// A nop.
    Nop,
    /// A branch to a routine in the translation cache running this template's logic.
    Routine(Template),
    /// Not translatable: keeps exiting.
    Exit,
}

impl Rewrite {
    /// A single-instruction rewrite in place (no translation-cache routine).
    pub fn in_place(self) -> bool {
        matches!(self, Rewrite::Load(_) | Rewrite::Store(_) | Rewrite::Nop)
    }

    /// The rewritten word for the site, when it is a single instruction
    /// (`lwz`/`stw` rT, d(0) on the shared page, or `nop`).
    pub fn in_place_word(self, original: u32) -> Option<u32> {
        let rt = original & MASK_RT;
        let disp = |off: u16| MAGIC_PAGE.wrapping_add(off as u32) & 0xFFFC;
        match self {
            Rewrite::Load(off) => Some(0x8000_0000 | rt | disp(off)),
            Rewrite::Store(off) => Some(0x9000_0000 | rt | disp(off)),
            Rewrite::Nop => Some(0x6000_0000),
            _ => None,
        }
    }
}

/// Where LABT keeps, on the shared page, the SPRs Linux's paravirtual layout
/// (`struct kvm_vcpu_arch_shared`, 240 bytes) has no field for: one word each from
/// [`EXTRA_BASE`] on, in this order.
pub const EXTRA_SPRS: [u16; 34] = [
    1013, // BUCSR
    1010, 1011, // L1CSR0, L1CSR1
    1008, 1009, // HID0, HID1
    63,   // IVPR
    400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414,
    415, // IVOR0-15
    528, 529, 530, 531, // IVOR32-35
    287, 1023, // PVR, SVR (read-only)
    688, 689, 1015, // TLB0CFG, TLB1CFG, MMUCFG (read-only)
    48,   // PID (reads; writes exit)
    340,  // TCR (reads; writes exit)
    1012, // MMUCSR0 (reads as 0; writes exit)
];

/// The first byte of LABT's extra SPR words on the shared page.
pub const EXTRA_BASE: u16 = 256;

fn extra(spr: u16) -> Option<u16> {
    EXTRA_SPRS
        .iter()
        .position(|&s| s == spr)
        .map(|i| EXTRA_BASE + 4 * i as u16)
}

/// The shared-page word holding SPR `spr` (the second word of Linux's `u64` fields).
fn spr_slot(spr: u16) -> Option<u16> {
    let long = |off: u16| Some(off + 4);
    match spr {
        272..=275 => long(field::SPRG0 + 8 * (spr - 272)),
        276..=279 => long(field::SPRG4 + 8 * (spr - 276)),
        26 => long(field::SRR0),
        27 => long(field::SRR1),
        61 => long(field::DAR),
        62 => Some(field::ESR),
        286 => Some(field::PIR),
        624 => Some(field::MAS0),
        625 => Some(field::MAS1),
        626 => long(field::MAS2),
        627 => Some(field::MAS7_3 + 4),
        628 => Some(field::MAS4),
        630 => Some(field::MAS6),
        944 => Some(field::MAS7_3),
        _ => extra(spr),
    }
}

/// SPRs whose mtspr the host must act on (kept exiting even though they have a slot).
fn write_has_side_effects(spr: u16) -> bool {
    matches!(spr, 48 | 340 | 1012 | 286 | 287 | 1023 | 688 | 689 | 1015)
}

/// LABT's rewrite of the privileged instruction `word`.
pub fn rewrite(word: u32) -> Rewrite {
    let Some(class) = classify(word) else {
        return Rewrite::Exit;
    };
    match class {
        PrivClass::Mfmsr => Rewrite::Load(field::MSR + 4),
        PrivClass::Mtmsr => Rewrite::Routine(Template::Mtmsr),
        PrivClass::Wrtee => Rewrite::Routine(Template::Wrtee),
        PrivClass::Wrteei if word & 0x8000 != 0 => Rewrite::Routine(Template::WrteeiOne),
        PrivClass::Wrteei => Rewrite::Routine(Template::WrteeiZero),
        PrivClass::Tlbsync => Rewrite::Nop,
        PrivClass::Mfspr => spr_slot(spr_number(word)).map_or(Rewrite::Exit, Rewrite::Load),
        PrivClass::Mtspr => {
            let spr = spr_number(word);
            match spr_slot(spr) {
                Some(off) if !write_has_side_effects(spr) => Rewrite::Store(off),
                _ => Rewrite::Exit,
            }
        }
        PrivClass::Rfi
        | PrivClass::RfOther
        | PrivClass::Tlbwe
        | PrivClass::Tlbre
        | PrivClass::Tlbsx
        | PrivClass::Tlbivax
        | PrivClass::Other => Rewrite::Exit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hv::e500::pv::rules::{mfspr, mtspr};

    #[test]
    fn register_moves_become_one_access_on_the_shared_page() {
        assert_eq!(rewrite(0x7C60_00A6), Rewrite::Load(92)); // mfmsr r3
        assert_eq!(rewrite(mfspr(275) | 4 << 21), Rewrite::Load(60)); // SPRG3
        assert_eq!(rewrite(mtspr(26)), Rewrite::Store(68)); // SRR0
        assert_eq!(rewrite(mtspr(627)), Rewrite::Store(180)); // MAS3
                                                              // Beyond Linux's layout: BUCSR and IVOR4 have LABT's own words.
        assert_eq!(rewrite(mtspr(1013)), Rewrite::Store(256));
        assert_eq!(rewrite(mtspr(404)), Rewrite::Store(256 + 4 * 10));
        // PID: reads from the page, writes exit (the shadow context changes).
        assert_eq!(rewrite(mfspr(48)), Rewrite::Load(256 + 4 * 31));
        assert_eq!(rewrite(mtspr(48)), Rewrite::Exit);
        assert_eq!(
            Rewrite::Load(92).in_place_word(0x7C60_00A6),
            Some(0x8060_F05C)
        );
        assert_eq!(
            Rewrite::Store(256).in_place_word(mtspr(1013) | 9 << 21),
            Some(0x9120_F100)
        );
    }

    #[test]
    fn msr_writers_get_routines_and_the_rest_exits() {
        assert_eq!(rewrite(0x7C60_0124), Rewrite::Routine(Template::Mtmsr));
        assert_eq!(rewrite(0x7C00_8146), Rewrite::Routine(Template::WrteeiOne));
        assert_eq!(rewrite(0x7C00_0146), Rewrite::Routine(Template::WrteeiZero));
        assert_eq!(rewrite(0x7C60_0106), Rewrite::Routine(Template::Wrtee));
        assert_eq!(rewrite(0x7C00_046C), Rewrite::Nop);
        for w in [
            0x4C00_0064, // rfi
            0x7C00_07A4, // tlbwe
            0x7C00_0624, // tlbivax
            mtspr(1012), // MMUCSR0
            mtspr(22),   // DEC
            mfspr(22),   // DEC changes on its own
            mtspr(336),  // TSR
            mfspr(336),
            0x6000_0000, // not privileged
        ] {
            assert_eq!(rewrite(w), Rewrite::Exit, "{w:#010x}");
        }
    }
}
