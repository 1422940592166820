//! Page-table entry layouts: x86-64 paging entries and EPT entries, bit for bit.
//!
//! Both formats share the frame field (bits 12..=51) and the "large page" bit 7, and differ in
//! where permission and A/D bits sit. The walker is generic over [`EntryFormat`], so one walk
//! loop serves the guest (or native) dimension and the EPT dimension.

/// Bits 12..=51: the physical frame an entry points at.
pub const FRAME_MASK: u64 = 0x000f_ffff_ffff_f000;

/// Permissions accumulated along a walk (the AND of every level's bits; NX acts as "no exec").
///
/// x86 entries are always readable when present; EPT entries have no user bit, so `user` is
/// true for them. Combining both dimensions is then a plain AND.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Perms {
    /// Data reads allowed.
    pub read: bool,
    /// Data writes allowed.
    pub write: bool,
    /// User-mode (CPL 3) accesses allowed.
    pub user: bool,
    /// Instruction fetches allowed.
    pub exec: bool,
}

impl Perms {
    /// Every permission: the identity of [`Perms::and`], where a walk starts.
    pub const ALL: Perms = Perms {
        read: true,
        write: true,
        user: true,
        exec: true,
    };

    /// Both sets at once: what a walk keeps when it passes one more entry.
    pub fn and(self, other: Perms) -> Perms {
        Perms {
            read: self.read && other.read,
            write: self.write && other.write,
            user: self.user && other.user,
            exec: self.exec && other.exec,
        }
    }

    /// Whether a user-mode data access of this kind is allowed (workloads run in user mode).
    pub fn allows(self, write: bool) -> bool {
        self.read && self.user && (!write || self.write)
    }

    /// [`Self::allows`] on permissions packed by [`Self::bits`] (higher bits ignored): one
    /// mask test, for the walker and the TLBs, which keep permissions packed.
    #[inline(always)]
    pub const fn bits_allow(bits: u64, write: bool) -> bool {
        let needed = 1 | 4 | (write as u64) << 1;
        bits & needed == needed
    }

    /// Pack into the low 4 bits of a cached translation (TLB and walk-cache values).
    pub const fn bits(self) -> u64 {
        (self.read as u64)
            | (self.write as u64) << 1
            | (self.user as u64) << 2
            | (self.exec as u64) << 3
    }

    /// Unpack the low 4 bits written by [`Perms::bits`]; higher bits are ignored.
    pub const fn from_bits(bits: u64) -> Perms {
        Perms {
            read: bits & 1 != 0,
            write: bits & 2 != 0,
            user: bits & 4 != 0,
            exec: bits & 8 != 0,
        }
    }
}

/// An entry layout the walker can read.
pub trait EntryFormat {
    /// Human name for traces and errors.
    const NAME: &'static str;
    /// The entry maps something; a walk that meets a non-present entry faults.
    fn is_present(entry: u64) -> bool;
    /// Bit 7: the entry maps a page (2M at level 2, 1G at level 3) instead of pointing at a table.
    fn is_large(entry: u64) -> bool {
        entry & LARGE != 0
    }
    /// The physical address the entry points at (bits 12..=51): a table or a page.
    fn frame_addr(entry: u64) -> u64 {
        entry & FRAME_MASK
    }
    /// The permissions this one entry grants (a walk ANDs them over every level).
    fn perms(entry: u64) -> Perms;
    /// [`Self::perms`] packed as [`Perms::bits`]: the walker ANDs these along a walk, one
    /// integer AND per level instead of four.
    fn perm_bits(entry: u64) -> u64 {
        Self::perms(entry).bits()
    }
    /// The accessed bit, which the walker sets in every entry it uses.
    const ACCESSED: u64;
    /// The dirty bit, which the walker sets in a leaf entry on a write.
    const DIRTY: u64;
}

const LARGE: u64 = 1 << 7;

/// x86-64 paging entries (Intel SDM vol. 3, 4.5).
pub struct X86;

impl X86 {
    /// P: the entry is valid.
    pub const PRESENT: u64 = 1 << 0;
    /// R/W: writes allowed (clear makes the region read-only).
    pub const WRITE: u64 = 1 << 1;
    /// U/S: user-mode accesses allowed.
    pub const USER: u64 = 1 << 2;
    /// A: set by the processor when the entry is used in a translation.
    pub const ACCESSED_BIT: u64 = 1 << 5;
    /// D: set by the processor in a leaf entry when the page is written.
    pub const DIRTY_BIT: u64 = 1 << 6;
    /// PS: page size (large leaf) at levels 2 and 3.
    pub const LARGE_PAGE: u64 = LARGE;
    /// G: in a leaf, the translation survives a CR3 write (with CR4.PGE).
    pub const GLOBAL: u64 = 1 << 8;
    /// XD (NX): instruction fetches forbidden (with EFER.NXE).
    pub const NO_EXEC: u64 = 1 << 63;

    /// A non-leaf entry pointing at the table at `table_addr`, with the permissions Linux gives
    /// user page-table entries (present, writable, user, accessed).
    pub fn table(table_addr: u64) -> u64 {
        (table_addr & FRAME_MASK) | Self::PRESENT | Self::WRITE | Self::USER | Self::ACCESSED_BIT
    }

    /// A leaf entry mapping `frame_addr`; `large` for a 2M/1G leaf.
    pub fn leaf(frame_addr: u64, perms: Perms, large: bool) -> u64 {
        let mut e = (frame_addr & FRAME_MASK) | Self::PRESENT;
        if perms.write {
            e |= Self::WRITE;
        }
        if perms.user {
            e |= Self::USER;
        }
        if !perms.exec {
            e |= Self::NO_EXEC;
        }
        if large {
            e |= Self::LARGE_PAGE;
        }
        e
    }
}

impl EntryFormat for X86 {
    const NAME: &'static str = "x86";
    const ACCESSED: u64 = X86::ACCESSED_BIT;
    const DIRTY: u64 = X86::DIRTY_BIT;

    fn is_present(entry: u64) -> bool {
        entry & Self::PRESENT != 0
    }

    fn perms(entry: u64) -> Perms {
        Perms {
            read: true,
            write: entry & Self::WRITE != 0,
            user: entry & Self::USER != 0,
            exec: entry & Self::NO_EXEC == 0,
        }
    }

    /// W and U sit at the same bits as in [`Perms::bits`]; read is always set; NX inverted.
    #[inline]
    fn perm_bits(entry: u64) -> u64 {
        1 | (entry & (Self::WRITE | Self::USER)) | ((!entry >> 63) << 3)
    }
}

/// EPT entries (Intel SDM vol. 3, 29.3.2), with accessed/dirty flags enabled (EPTP bit 6).
pub struct Ept;

impl Ept {
    /// Guest reads allowed.
    pub const READ: u64 = 1 << 0;
    /// Guest writes allowed.
    pub const WRITE: u64 = 1 << 1;
    /// Guest instruction fetches allowed.
    pub const EXEC: u64 = 1 << 2;
    /// Memory type write-back (6) in bits 3..=5 of leaf entries, as KVM maps RAM.
    pub const MEMTYPE_WB: u64 = 6 << 3;
    /// Bit 7: the entry maps a page (2M at level 2, 1G at level 3).
    pub const LARGE_PAGE: u64 = LARGE;
    /// Accessed: set by the processor when the entry is used (needs EPTP bit 6).
    pub const ACCESSED_BIT: u64 = 1 << 8;
    /// Dirty: set by the processor in a leaf entry when guest memory is written.
    pub const DIRTY_BIT: u64 = 1 << 9;

    /// A non-leaf EPT entry pointing at the EPT table at `table_addr` (read/write/execute).
    pub fn table(table_addr: u64) -> u64 {
        (table_addr & FRAME_MASK) | Self::READ | Self::WRITE | Self::EXEC
    }

    /// A leaf EPT entry mapping guest memory to `frame_addr` with full access, write-back.
    pub fn leaf(frame_addr: u64, large: bool) -> u64 {
        let mut e =
            (frame_addr & FRAME_MASK) | Self::READ | Self::WRITE | Self::EXEC | Self::MEMTYPE_WB;
        if large {
            e |= Self::LARGE_PAGE;
        }
        e
    }
}

impl EntryFormat for Ept {
    const NAME: &'static str = "ept";
    const ACCESSED: u64 = Ept::ACCESSED_BIT;
    const DIRTY: u64 = Ept::DIRTY_BIT;

    /// An EPT entry is present when any of read/write/execute is set.
    fn is_present(entry: u64) -> bool {
        entry & (Self::READ | Self::WRITE | Self::EXEC) != 0
    }

    /// EPT has no user bit: guest user/supervisor is the guest tables' business.
    fn perms(entry: u64) -> Perms {
        Perms {
            read: entry & Self::READ != 0,
            write: entry & Self::WRITE != 0,
            user: true,
            exec: entry & Self::EXEC != 0,
        }
    }

    /// R and W sit at the same bits as in [`Perms::bits`]; user is always set; X moves up.
    #[inline]
    fn perm_bits(entry: u64) -> u64 {
        (entry & (Self::READ | Self::WRITE)) | 1 << 2 | (entry & Self::EXEC) << 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x86_leaf_bits() {
        let rw_noexec = Perms {
            exec: false,
            ..Perms::ALL
        };
        let e = X86::leaf(0x1234_5000, rw_noexec, false);
        assert_eq!(e, 0x1234_5000 | 0b111 | X86::NO_EXEC);
        assert!(X86::is_present(e));
        assert!(!X86::is_large(e));
        assert_eq!(X86::frame_addr(e), 0x1234_5000);
        assert_eq!(X86::perms(e), rw_noexec);
        assert_eq!(Perms::from_bits(rw_noexec.bits()), rw_noexec);
    }

    #[test]
    fn ept_bits() {
        let e = Ept::leaf(0x20_0000, true);
        assert!(Ept::is_present(e));
        assert!(Ept::is_large(e));
        assert_eq!(Ept::frame_addr(e), 0x20_0000);
        assert!(!Ept::is_present(Ept::MEMTYPE_WB));
        assert_eq!(Ept::ACCESSED, 1 << 8);
    }

    #[test]
    fn perm_bits_are_packed_perms() {
        let mut x = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..1000 {
            x = x
                .rotate_left(7)
                .wrapping_mul(0xc2b2_ae3d_27d4_eb4f)
                .wrapping_add(1);
            assert_eq!(X86::perm_bits(x), X86::perms(x).bits(), "{x:#x}");
            assert_eq!(Ept::perm_bits(x), Ept::perms(x).bits(), "{x:#x}");
        }
    }

    #[test]
    fn perms_allow() {
        let ro = Perms {
            write: false,
            ..Perms::ALL
        };
        assert!(ro.allows(false));
        assert!(!ro.allows(true));
        assert!(!Perms {
            user: false,
            ..Perms::ALL
        }
        .allows(false));
    }
}
