//! Each patching rule on hand-built instruction words, with the encodings worked out by hand
//! from `kvm.c`'s macros, and the templates' paths.

use super::rules::{mfspr, mtspr, spr, INST_WRTEEI_0, INST_WRTEEI_1};
use super::templates::MSR_EE;
use super::*;

const fn rt(r: u32) -> u32 {
    r << 21
}

fn on() -> Features {
    Features::default()
}

#[test]
fn mfmsr_becomes_a_load_of_the_msr_word() {
    // mfmsr r3 -> lwz r3, -4096 + 88 + 4 (r0): the second word of the u64 msr field.
    assert_eq!(
        patch(0x7C60_00A6, on()),
        PvPatch::Load {
            word: 0x8060_F05C,
            offset: 92
        }
    );
}

#[test]
fn sprg_srr_dear_accesses_become_loads_and_stores() {
    // mfspr r4, SPRG3 -> lwz r4, 60(magic)
    assert_eq!(mfspr(275) | rt(4), 0x7C93_42A6);
    assert_eq!(
        patch(0x7C93_42A6, on()),
        PvPatch::Load {
            word: 0x8080_F03C,
            offset: 60
        }
    );
    // mtspr SRR0, r5 -> stw r5, 68(magic)
    assert_eq!(mtspr(spr::SRR0) | rt(5), 0x7CBA_03A6);
    assert_eq!(
        patch(0x7CBA_03A6, on()),
        PvPatch::Store {
            word: 0x90A0_F044,
            offset: 68
        }
    );
    // mfspr r0, DEAR -> the dar field; mtspr SPRG0 -> sprg0.
    assert!(matches!(
        patch(mfspr(spr::DEAR), on()),
        PvPatch::Load { offset: 84, .. }
    ));
    assert!(matches!(
        patch(mtspr(spr::SPRG0) | rt(31), on()),
        PvPatch::Store {
            word: 0x93E0_F024,
            offset: 36
        }
    ));
}

#[test]
fn mas_registers_use_their_own_widths() {
    // mtspr MAS3, r9 -> stw r9, mas7_3 + 4 = 180 (a u32 store into the low word).
    assert_eq!(mtspr(627) | rt(9), 0x7D33_9BA6);
    assert_eq!(
        patch(0x7D33_9BA6, on()),
        PvPatch::Store {
            word: 0x9120_F0B4,
            offset: 180
        }
    );
    // mfspr MAS7 -> the high word of mas7_3; MAS2 is a u64 (offset + 4).
    assert!(matches!(
        patch(mfspr(spr::MAS7), on()),
        PvPatch::Load { offset: 176, .. }
    ));
    assert!(matches!(
        patch(mfspr(626), on()),
        PvPatch::Load { offset: 188, .. }
    ));
    assert!(matches!(
        patch(mtspr(spr::ESR), on()),
        PvPatch::Store { offset: 200, .. }
    ));
    // Only a read rule for PIR and the user-readable SPRG4R alias.
    assert!(matches!(
        patch(mfspr(spr::PIR), on()),
        PvPatch::Load { offset: 204, .. }
    ));
    assert_eq!(patch(mtspr(spr::PIR), on()), PvPatch::Unpatched);
    assert!(matches!(
        patch(mfspr(spr::SPRG4R + 1), on()),
        PvPatch::Load { offset: 220, .. }
    ));
}

#[test]
fn without_the_feature_only_the_base_set_is_patched() {
    let off = Features {
        mas0_to_sprg7: false,
    };
    assert_eq!(patch(mfspr(spr::MAS0), off), PvPatch::Unpatched);
    assert_eq!(patch(mtspr(spr::ESR), off), PvPatch::Unpatched);
    assert_eq!(patch(mtspr(276), off), PvPatch::Unpatched);
    assert!(matches!(
        patch(mfspr(spr::SPRG0 + 1), off),
        PvPatch::Load { offset: 44, .. }
    ));
}

#[test]
fn msr_writers_branch_to_templates() {
    assert_eq!(patch(0x7C60_0124, on()), PvPatch::Branch(Template::Mtmsr)); // mtmsr r3
    assert_eq!(patch(0x7C60_0106, on()), PvPatch::Branch(Template::Wrtee)); // wrtee r3
    assert_eq!(
        patch(INST_WRTEEI_0, on()),
        PvPatch::Branch(Template::WrteeiZero)
    );
    assert_eq!(
        patch(INST_WRTEEI_1, on()),
        PvPatch::Branch(Template::WrteeiOne)
    );
    assert_eq!(patch(0x7C00_046C, on()), PvPatch::Nop); // tlbsync
}

#[test]
fn what_linux_leaves_alone_keeps_trapping() {
    for word in [
        0x4C00_0064,          // rfi
        0x7C00_07A4,          // tlbwe
        0x7C00_0724,          // tlbsx 0,r0
        0x7C00_0624,          // tlbivax 0,r0
        mtspr(48) | rt(3),    // mtspr PID, r3
        mtspr(1012),          // mtspr MMUCSR0
        mtspr(1013) | rt(9),  // mtspr BUCSR (the exception path's branch-buffer flush)
        mtspr(22),            // mtspr DEC
        mtspr(336),           // mtspr TSR
        mfspr(22),            // mfspr DEC
        mfspr(spr::SRR0) | 1, // not the canonical encoding (Rc set)
        0x4400_0002,          // sc
        0x7C08_02A6,          // mflr r0: not privileged, not a rule
    ] {
        assert_eq!(patch(word, on()), PvPatch::Unpatched, "{word:#010x}");
    }
}

#[test]
fn only_the_kernel_text_outside_the_templates_is_patched() {
    let text = PvText {
        text: (0xC000_0000, 0xC040_0000),
        templates: Some((0xC001_0000, 0xC002_0000)),
        features: on(),
    };
    let mfmsr = 0x7C60_00A6;
    assert!(matches!(
        text.patch_at(0xC000_1000, mfmsr),
        PvPatch::Load { .. }
    ));
    assert_eq!(text.patch_at(0xC001_0004, mfmsr), PvPatch::Unpatched);
    assert_eq!(text.patch_at(0xC040_0000, mfmsr), PvPatch::Unpatched);
    assert_eq!(text.patch_at(0x0000_0100, mfmsr), PvPatch::Unpatched);
}

fn input(old_msr: u32, value: u32, int_pending: bool) -> TemplateInput {
    TemplateInput {
        old_msr,
        value,
        int_pending,
    }
}

#[test]
fn wrtee_paths() {
    let done = |insns| TemplateRun {
        insns,
        exits: false,
    };
    assert_eq!(run(Template::WrteeiZero, input(MSR_EE, 0, true)), done(14));
    assert_eq!(run(Template::Wrtee, input(MSR_EE, 0, true)), done(17));
    assert_eq!(run(Template::Wrtee, input(0, MSR_EE, false)), done(20));
    assert_eq!(run(Template::WrteeiOne, input(0, 0, false)), done(20));
    assert_eq!(
        run(Template::WrteeiOne, input(0, 0, true)),
        TemplateRun {
            insns: 22,
            exits: true
        }
    );
}

#[test]
fn mtmsr_stays_in_the_guest_only_for_ee_and_ri() {
    let msr = 0x0002_1000; // CE | ME
    assert_eq!(
        run(Template::Mtmsr, input(msr, msr | MSR_EE, false)),
        TemplateRun {
            insns: 23,
            exits: false
        }
    );
    // Setting MSR[PR] (or FP, DE, ...) needs the host.
    assert_eq!(
        run(Template::Mtmsr, input(msr, msr | 0x4000, false)),
        TemplateRun {
            insns: 20,
            exits: true
        }
    );
    assert_eq!(
        run(Template::Mtmsr, input(msr, msr, true)),
        TemplateRun {
            insns: 25,
            exits: false
        }
    );
    assert_eq!(
        run(Template::Mtmsr, input(msr, msr | MSR_EE, true)),
        TemplateRun {
            insns: 27,
            exits: true
        }
    );
}
