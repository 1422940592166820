//! Which instructions Linux's boot-time paravirtual patching rewrites, and into what: the
//! rules of `kvm_check_ins` in `arch/powerpc/kernel/kvm.c` (Linux 6.1) for a 32-bit Book E
//! (e500) kernel. An instruction is matched with its RT/RS field masked off, exactly as the
//! kernel does, so only the encodings listed here are patched; everything else is left alone
//! and keeps trapping to the host (rfi, the TLB instructions, PID, MMUCSR0, BUCSR, the timer
//! SPRs, `sc`...).

use super::magic::{field, MAGIC_PAGE};
use crate::trace::e500::insn::spr_number;

/// The SPR field of mfspr/mtspr (bits 11-20).
const SPR_FIELD: u32 = 0x001F_F800;

/// What `kvm_map_magic_page`'s hypercall told the guest the host supports. e500v2 KVM
/// answers `KVM_MAGIC_FEAT_SR | KVM_MAGIC_FEAT_MAS0_TO_SPRG7` (`arch/powerpc/kvm/powerpc.c`,
/// `kvmppc_kvm_pv`), so [`Features::default`] has both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// `KVM_MAGIC_FEAT_MAS0_TO_SPRG7`: MAS0-7, SPRG4-7, ESR and PIR live on the magic page.
    pub mas0_to_sprg7: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            mas0_to_sprg7: true,
        }
    }
}

/// A template of `arch/powerpc/kernel/kvm_emul.S` a patched instruction branches to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Template {
    /// `kvm_emulate_mtmsr` (mtmsr, and mtmsrd L=0 on 64-bit kernels).
    Mtmsr,
    /// `kvm_emulate_mtmsrd` (mtmsrd L=1; 64-bit only, listed for completeness).
    Mtmsrd,
    /// `kvm_emulate_wrtee` with the source register (wrtee rS).
    Wrtee,
    /// `kvm_emulate_wrtee` with `li r30, MSR_EE` in place of the register (wrteei 1).
    WrteeiOne,
    /// `kvm_emulate_wrteei_0` (wrteei 0).
    WrteeiZero,
}

/// What boot-time patching turns one instruction into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PvPatch {
    /// A load from the magic page (`lwz rT, d(0)`): no exit.
    Load {
        /// The patched encoding.
        word: u32,
        /// The byte offset read on the magic page.
        offset: u16,
    },
    /// A store to the magic page (`stw rS, d(0)`): no exit.
    Store {
        /// The patched encoding.
        word: u32,
        /// The byte offset written on the magic page.
        offset: u16,
    },
    /// A `nop` (tlbsync).
    Nop,
    /// A branch to a copy of a template in `kvm_tmp`.
    Branch(Template),
    /// Not patched: the instruction still traps.
    Unpatched,
}

impl PvPatch {
    /// True when the patched instruction can still leave the guest: untouched instructions
    /// always, templates when they fall back to the original instruction.
    pub fn may_exit(self) -> bool {
        matches!(self, PvPatch::Unpatched | PvPatch::Branch(_))
    }
}

/// The RT/RS field (bits 6-10 of the word, `KVM_MASK_RT`).
pub const MASK_RT: u32 = 0x03E0_0000;
const INST_LWZ: u32 = 0x8000_0000;
const INST_STW: u32 = 0x9000_0000;
const INST_MFMSR: u32 = 0x7C00_00A6;
const INST_MTMSR: u32 = 0x7C00_0124;
const INST_MTMSRD_L0: u32 = 0x7C00_0164;
const INST_MTMSRD_L1: u32 = 0x7C01_0164;
const INST_WRTEE: u32 = 0x7C00_0106;
/// `wrteei 0`.
pub const INST_WRTEEI_0: u32 = 0x7C00_0146;
/// `wrteei 1`.
pub const INST_WRTEEI_1: u32 = 0x7C00_8146;
const INST_TLBSYNC: u32 = 0x7C00_046C;

/// The SPR numbers the rules name (Book E / e500).
pub mod spr {
    /// DSISR (Book S; e500 has none, but the rule is unconditional).
    pub const DSISR: u16 = 18;
    /// SRR0.
    pub const SRR0: u16 = 26;
    /// SRR1.
    pub const SRR1: u16 = 27;
    /// DEAR.
    pub const DEAR: u16 = 61;
    /// ESR.
    pub const ESR: u16 = 62;
    /// SPRG4R..SPRG7R: user-readable aliases of SPRG4-7.
    pub const SPRG4R: u16 = 260;
    /// SPRG0; SPRG1..7 are 273..279.
    pub const SPRG0: u16 = 272;
    /// PIR.
    pub const PIR: u16 = 286;
    /// MAS0..MAS4 are 624..628.
    pub const MAS0: u16 = 624;
    /// MAS6.
    pub const MAS6: u16 = 630;
    /// MAS7.
    pub const MAS7: u16 = 944;
}

/// The encoding of `mfspr r0, spr` (`KVM_INST_MFSPR`).
pub const fn mfspr(spr: u16) -> u32 {
    0x7C00_02A6 | (((spr as u32) & 0x1F) << 16) | (((spr as u32) & 0x3E0) << 6)
}

/// The encoding of `mtspr spr, r0` (`KVM_INST_MTSPR`).
pub const fn mtspr(spr: u16) -> u32 {
    mfspr(spr) | 0x100
}

/// How a magic-page access is encoded: Linux's `kvm_patch_ins_ld`/`_std` (a `u64` field:
/// 32-bit kernels take its second word) or `_lwz`/`_stw` (a `u32` field).
#[derive(Clone, Copy)]
enum Width {
    Long,
    Word,
}

fn load(rt: u32, offset: u16, width: Width) -> PvPatch {
    let offset = offset + matches!(width, Width::Long) as u16 * 4;
    let disp = MAGIC_PAGE.wrapping_add(offset as u32) & 0xFFFC;
    PvPatch::Load {
        word: INST_LWZ | rt | disp,
        offset,
    }
}

fn store(rs: u32, offset: u16, width: Width) -> PvPatch {
    let offset = offset + matches!(width, Width::Long) as u16 * 4;
    let disp = MAGIC_PAGE.wrapping_add(offset as u32) & 0xFFFC;
    PvPatch::Store {
        word: INST_STW | rs | disp,
        offset,
    }
}

/// What Linux's `kvm_check_ins` does to `word` in a 32-bit Book E (e500) kernel.
pub fn patch(word: u32, features: Features) -> PvPatch {
    let rt = word & MASK_RT;
    let ext = features.mas0_to_sprg7;
    let no_rt = word & !MASK_RT;
    // Book E's wrteei forms are matched on the whole word, after the first switch.
    match word {
        INST_WRTEEI_0 => return PvPatch::Branch(Template::WrteeiZero),
        INST_WRTEEI_1 => return PvPatch::Branch(Template::WrteeiOne),
        _ => {}
    }
    let sprg = |n: u16| field::SPRG0 + 8 * n;
    let sprg_hi = |n: u16| field::SPRG4 + 8 * n;
    match no_rt {
        INST_MFMSR => load(rt, field::MSR, Width::Long),
        INST_TLBSYNC => PvPatch::Nop,
        INST_MTMSR | INST_MTMSRD_L0 => PvPatch::Branch(Template::Mtmsr),
        INST_MTMSRD_L1 => PvPatch::Branch(Template::Mtmsrd),
        INST_WRTEE => PvPatch::Branch(Template::Wrtee),
        // The whole word but RT and the SPR field is mfspr's or mtspr's (Rc = 0).
        w if w & !SPR_FIELD == mfspr(0) => mfspr_rule(spr_number(word), rt, ext, sprg, sprg_hi),
        w if w & !SPR_FIELD == mtspr(0) => mtspr_rule(spr_number(word), rt, ext, sprg, sprg_hi),
        _ => PvPatch::Unpatched,
    }
}

fn mfspr_rule(
    n: u16,
    rt: u32,
    ext: bool,
    sprg: impl Fn(u16) -> u16,
    sprg_hi: impl Fn(u16) -> u16,
) -> PvPatch {
    use Width::{Long, Word};
    match n {
        spr::SPRG0..=275 => load(rt, sprg(n - spr::SPRG0), Long),
        spr::SRR0 => load(rt, field::SRR0, Long),
        spr::SRR1 => load(rt, field::SRR1, Long),
        spr::DEAR => load(rt, field::DAR, Long),
        spr::DSISR => load(rt, field::DSISR, Word),
        _ if !ext => PvPatch::Unpatched,
        624 => load(rt, field::MAS0, Word),
        625 => load(rt, field::MAS1, Word),
        626 => load(rt, field::MAS2, Long),
        627 => load(rt, field::MAS7_3 + 4, Word),
        628 => load(rt, field::MAS4, Word),
        spr::MAS6 => load(rt, field::MAS6, Word),
        spr::MAS7 => load(rt, field::MAS7_3, Word),
        276..=279 => load(rt, sprg_hi(n - 276), Long),
        spr::SPRG4R..=263 => load(rt, sprg_hi(n - spr::SPRG4R), Long),
        spr::ESR => load(rt, field::ESR, Word),
        spr::PIR => load(rt, field::PIR, Word),
        _ => PvPatch::Unpatched,
    }
}

fn mtspr_rule(
    n: u16,
    rs: u32,
    ext: bool,
    sprg: impl Fn(u16) -> u16,
    sprg_hi: impl Fn(u16) -> u16,
) -> PvPatch {
    use Width::{Long, Word};
    match n {
        spr::SPRG0..=275 => store(rs, sprg(n - spr::SPRG0), Long),
        spr::SRR0 => store(rs, field::SRR0, Long),
        spr::SRR1 => store(rs, field::SRR1, Long),
        spr::DEAR => store(rs, field::DAR, Long),
        spr::DSISR => store(rs, field::DSISR, Word),
        _ if !ext => PvPatch::Unpatched,
        624 => store(rs, field::MAS0, Word),
        625 => store(rs, field::MAS1, Word),
        626 => store(rs, field::MAS2, Long),
        627 => store(rs, field::MAS7_3 + 4, Word),
        628 => store(rs, field::MAS4, Word),
        spr::MAS6 => store(rs, field::MAS6, Word),
        spr::MAS7 => store(rs, field::MAS7_3, Word),
        276..=279 => store(rs, sprg_hi(n - 276), Long),
        spr::ESR => store(rs, field::ESR, Word),
        // No store rule for PIR or the read-only SPRG4R-7R aliases.
        _ => PvPatch::Unpatched,
    }
}
