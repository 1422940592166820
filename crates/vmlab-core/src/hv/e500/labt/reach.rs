//! Branch reach on Power: an I-form branch (`b`/`ba`) carries a 24-bit word offset, so it
//! reaches ±32 MiB relative to itself (`b`) or, with AA=1 (`ba`), an absolute target whose
//! sign-extended 26-bit address lies in the bottom or the top 32 MiB of the 32-bit space.
//! A rewrite into the translation cache needs a single branch each way: from the patch site
//! to its routine, and from the routine's end back to the instruction after the site.

/// 32 MiB: the reach of an I-form branch.
pub const REACH: u32 = 1 << 25;

/// How a branch from one address to another can be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchForm {
    /// `b target`: `target - from` fits in ±32 MiB.
    Relative,
    /// `ba target`: the target is in the bottom or top 32 MiB.
    Absolute,
}

/// The encoding a single branch at `from` to `to` can use, or `None` when neither reaches
/// (or an address is not word-aligned).
pub fn branch(from: u32, to: u32) -> Option<BranchForm> {
    if !from.is_multiple_of(4) || !to.is_multiple_of(4) {
        return None;
    }
    let offset = to.wrapping_sub(from) as i32 as i64;
    if (-(REACH as i64)..REACH as i64).contains(&offset) {
        Some(BranchForm::Relative)
    } else if to < REACH || to >= REACH.wrapping_neg() {
        Some(BranchForm::Absolute)
    } else {
        None
    }
}

/// The encoding of that branch: `b`/`ba` (opcode 18), LI = the word offset or address.
pub fn encode(from: u32, to: u32) -> Option<u32> {
    let (li, aa) = match branch(from, to)? {
        BranchForm::Relative => (to.wrapping_sub(from), 0),
        BranchForm::Absolute => (to, 2),
    };
    Some(0x4800_0000 | (li & 0x03FF_FFFC) | aa)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_reach_is_32_mib_either_way() {
        let pc = 0xC000_1000;
        assert_eq!(branch(pc, pc + REACH - 4), Some(BranchForm::Relative));
        assert_eq!(branch(pc, pc + REACH), None);
        assert_eq!(branch(pc, pc - REACH), Some(BranchForm::Relative));
        assert_eq!(branch(pc, pc - REACH - 4), None);
        assert_eq!(branch(pc, pc + 2), None);
    }

    #[test]
    fn absolute_reaches_the_top_and_bottom_32_mib() {
        let pc = 0xC000_1000;
        assert_eq!(branch(pc, 0x01FF_FFFC), Some(BranchForm::Absolute));
        assert_eq!(branch(pc, 0x0200_0000), None);
        assert_eq!(branch(pc, 0xFE00_0000), Some(BranchForm::Absolute));
        assert_eq!(branch(pc, 0xFDFF_FFFC), None);
        // ...but the way back from the top to the kernel is out of reach.
        assert_eq!(branch(0xFE00_0100, pc), None);
    }

    #[test]
    fn encodings() {
        // b +0x100 and b -4, ba 0xFFFFF000.
        assert_eq!(encode(0xC000_0000, 0xC000_0100), Some(0x4800_0100));
        assert_eq!(encode(0xC000_0004, 0xC000_0000), Some(0x4BFF_FFFC));
        assert_eq!(encode(0xC000_0000, 0xFFFF_F000), Some(0x4BFF_F002));
    }
}
