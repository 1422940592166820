//! One e500v2 TLB entry and the MAS registers that carry it (e500 Core Family Reference
//! Manual, 12.7 "MMU registers"; Linux `arch/powerpc/include/asm/mmu-book3e.h` for the field
//! masks). MAS fields use the MMU architecture version 1.0 encoding e500v2 implements:
//! `TSIZE` is MAS1 bits 52-55 and the page size is 4^TSIZE KiB.

/// A page size e500v2's TLB1 supports: 4 KiB times a power of four, 4 KiB to 4 GiB
/// (TSIZE 1..=11). TLB0 holds only 4 KiB pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageSize(u8);

impl PageSize {
    /// 4 KiB (TSIZE 1).
    pub const K4: Self = Self(1);
    /// 16 KiB.
    pub const K16: Self = Self(2);
    /// 64 KiB.
    pub const K64: Self = Self(3);
    /// 256 KiB.
    pub const K256: Self = Self(4);
    /// 1 MiB.
    pub const M1: Self = Self(5);
    /// 4 MiB.
    pub const M4: Self = Self(6);
    /// 16 MiB.
    pub const M16: Self = Self(7);
    /// 64 MiB.
    pub const M64: Self = Self(8);
    /// 256 MiB.
    pub const M256: Self = Self(9);
    /// 1 GiB.
    pub const G1: Self = Self(10);
    /// 4 GiB (TSIZE 11).
    pub const G4: Self = Self(11);
    /// Every size, smallest first.
    pub const ALL: [Self; 11] = [
        Self::K4,
        Self::K16,
        Self::K64,
        Self::K256,
        Self::M1,
        Self::M4,
        Self::M16,
        Self::M64,
        Self::M256,
        Self::G1,
        Self::G4,
    ];

    /// The size of a MAS1 TSIZE value, or `None` outside 1..=11.
    pub fn from_tsize(tsize: u8) -> Option<Self> {
        (1..=11).contains(&tsize).then_some(Self(tsize))
    }

    /// The size of exactly `bytes`, if it is one of e500v2's sizes.
    pub fn from_bytes(bytes: u64) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.bytes() == bytes)
    }

    /// The TSIZE value (1..=11).
    pub fn tsize(self) -> u8 {
        self.0
    }

    /// The size in bytes: 4^TSIZE KiB.
    pub fn bytes(self) -> u64 {
        1u64 << (10 + 2 * self.0 as u32)
    }

    /// The mask of offset bits within a page of this size.
    pub fn offset_mask(self) -> u64 {
        self.bytes() - 1
    }

    /// The next smaller size (a quarter), if any.
    pub fn smaller(self) -> Option<Self> {
        Self::from_tsize(self.0 - 1)
    }

    /// The next larger size (four times), if any.
    pub fn larger(self) -> Option<Self> {
        Self::from_tsize(self.0 + 1)
    }

    /// Human-readable, e.g. `256M`.
    pub fn label(self) -> String {
        let b = self.bytes();
        match b {
            b if b >= 1 << 30 => format!("{}G", b >> 30),
            b if b >= 1 << 20 => format!("{}M", b >> 20),
            b => format!("{}K", b >> 10),
        }
    }
}

/// The six permission bits of MAS3 (bit values as in MAS3's low byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Perms(u8);

impl Perms {
    /// Supervisor read.
    pub const SR: Self = Self(0x01);
    /// User read.
    pub const UR: Self = Self(0x02);
    /// Supervisor write.
    pub const SW: Self = Self(0x04);
    /// User write.
    pub const UW: Self = Self(0x08);
    /// Supervisor execute.
    pub const SX: Self = Self(0x10);
    /// User execute.
    pub const UX: Self = Self(0x20);
    /// No permission.
    pub const NONE: Self = Self(0);
    /// All six.
    pub const ALL: Self = Self(0x3F);

    /// From MAS3's low six bits (higher bits ignored).
    pub fn from_bits(bits: u32) -> Self {
        Self((bits & 0x3F) as u8)
    }

    /// The MAS3 bits.
    pub fn bits(self) -> u8 {
        self.0
    }

    /// Both sets of bits.
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// The bits of `self` not in `other`.
    pub fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    /// True when every bit of `other` is set.
    pub fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether `access` is allowed in user mode (`user`, `MSR[PR]=1`) or supervisor mode.
    pub fn allows(self, access: Access, user: bool) -> bool {
        self.contains(Self::needed(access, user))
    }

    /// The bit an access needs.
    pub fn needed(access: Access, user: bool) -> Self {
        match (access, user) {
            (Access::Read, false) => Self::SR,
            (Access::Read, true) => Self::UR,
            (Access::Write, false) => Self::SW,
            (Access::Write, true) => Self::UW,
            (Access::Execute, false) => Self::SX,
            (Access::Execute, true) => Self::UX,
        }
    }

    /// The supervisor bits moved to the user positions (SR->UR, SW->UW, SX->UX), user bits
    /// dropped: how KVM shadows a guest kernel's mapping, since the guest kernel runs in the
    /// host's user mode (Linux `kvmppc_e500_shadow_mas3_attrib`).
    pub fn supervisor_as_user(self) -> Self {
        Self((self.0 & 0x15) << 1)
    }
}

/// What an access does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Access {
    /// A load.
    Read,
    /// A store.
    Write,
    /// An instruction fetch.
    Execute,
}

/// Which TLB array (MAS0 TLBSEL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlbSel {
    /// TLB0: 512 entries, 4-way, 4 KiB pages.
    Tlb0,
    /// TLB1: 16 entries, fully associative, variable page sizes.
    Tlb1,
}

/// One TLB entry. `epn` and `rpn` are the base addresses (naturally aligned to `size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbEntry {
    /// Valid (`MAS1[V]`).
    pub valid: bool,
    /// Protected from invalidation by tlbivax and MMUCSR0 flash invalidation (`MAS1[IPROT]`).
    pub iprot: bool,
    /// Translation ID; 0 matches every PID (global).
    pub tid: u8,
    /// Translation space (`MAS1[TS]`): matched against `MSR[IS]` for fetches, `MSR[DS]` for data.
    pub ts: bool,
    /// Page size.
    pub size: PageSize,
    /// Effective base address.
    pub epn: u32,
    /// Real (guest- or host-physical, 36-bit) base address.
    pub rpn: u64,
    /// Permissions.
    pub perms: Perms,
    /// WIMGE storage attributes (MAS2 low five bits).
    pub wimge: u8,
}

impl TlbEntry {
    /// A valid entry, base addresses aligned down to `size`.
    pub fn new(epn: u32, rpn: u64, size: PageSize, tid: u8, perms: Perms) -> Self {
        let mask = size.offset_mask();
        TlbEntry {
            valid: true,
            iprot: false,
            tid,
            ts: false,
            size,
            epn: (epn as u64 & !mask) as u32,
            rpn: rpn & !mask,
            perms,
            wimge: 0,
        }
    }

    /// The first effective address past the page (as u64: a 4 GiB page ends at 2^32).
    pub fn end(&self) -> u64 {
        self.epn as u64 + self.size.bytes()
    }

    /// Whether the page covers effective address `ea`.
    pub fn covers(&self, ea: u32) -> bool {
        (ea as u64) >= self.epn as u64 && (ea as u64) < self.end()
    }

    /// Whether the entry translates `ea` for process `pid` in address space `ts`: valid,
    /// covering, same TS, TID 0 or equal to the PID.
    pub fn matches(&self, ea: u32, pid: u8, ts: bool) -> bool {
        self.valid && self.ts == ts && (self.tid == 0 || self.tid == pid) && self.covers(ea)
    }

    /// The real address of `ea` (which the entry must cover).
    pub fn translate(&self, ea: u32) -> u64 {
        self.rpn | (ea as u64 & self.size.offset_mask())
    }

    /// Whether the two entries' effective ranges overlap and could match the same access
    /// (same TS, and TIDs equal or one of them global).
    pub fn overlaps(&self, other: &TlbEntry) -> bool {
        self.valid
            && other.valid
            && self.ts == other.ts
            && (self.tid == 0 || other.tid == 0 || self.tid == other.tid)
            && (self.epn as u64) < other.end()
            && (other.epn as u64) < self.end()
    }
}

/// The MAS registers a `tlbwe` writes from (MAS0, MAS1, MAS2, MAS3, MAS7, as the trace
/// records them) and `tlbre`/`tlbsx` fill.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mas {
    /// TLBSEL, ESEL, NV.
    pub mas0: u32,
    /// V, IPROT, TID, TS, TSIZE.
    pub mas1: u32,
    /// EPN, WIMGE.
    pub mas2: u32,
    /// RPN (low 32 bits), U0-U3, permissions.
    pub mas3: u32,
    /// RPN bits 32-35.
    pub mas7: u32,
}

/// `MAS1[V]`.
pub const MAS1_VALID: u32 = 0x8000_0000;
/// `MAS1[IPROT]`.
pub const MAS1_IPROT: u32 = 0x4000_0000;
/// `MAS1[TS]`.
pub const MAS1_TS: u32 = 0x0000_1000;

impl Mas {
    /// From a tlbwe record's values (MAS0, MAS1, MAS2, MAS3, MAS7), or `None` when fewer.
    pub fn from_values(v: &[u32]) -> Option<Self> {
        match *v {
            [mas0, mas1, mas2, mas3, mas7, ..] => Some(Mas {
                mas0,
                mas1,
                mas2,
                mas3,
                mas7,
            }),
            _ => None,
        }
    }

    /// `MAS0[TLBSEL]`: 0 selects TLB0, 1 TLB1 (other values are reserved; treated as TLB1).
    pub fn tlbsel(&self) -> TlbSel {
        if (self.mas0 >> 28) & 3 == 0 {
            TlbSel::Tlb0
        } else {
            TlbSel::Tlb1
        }
    }

    /// `MAS0[ESEL]`: the entry (TLB1) or way (TLB0).
    pub fn esel(&self) -> usize {
        ((self.mas0 >> 16) & 0xFFF) as usize
    }

    /// `MAS0[NV]`: the next victim way hint for TLB0.
    pub fn nv(&self) -> usize {
        (self.mas0 & 0xFFF) as usize
    }

    /// MAS1 TSIZE (4 bits, MMU v1.0 encoding).
    pub fn tsize(&self) -> u8 {
        ((self.mas1 >> 8) & 0xF) as u8
    }

    /// The entry these registers describe; `None` when a valid TLB1 entry's TSIZE is not a
    /// supported size. TLB0 ignores TSIZE (always 4 KiB), as the reference manual specifies.
    pub fn entry(&self) -> Option<TlbEntry> {
        let valid = self.mas1 & MAS1_VALID != 0;
        let size = match self.tlbsel() {
            TlbSel::Tlb0 => PageSize::K4,
            // An invalid entry's size does not matter (Linux clears entries with MAS1 = 0).
            TlbSel::Tlb1 if !valid => PageSize::from_tsize(self.tsize()).unwrap_or(PageSize::K4),
            TlbSel::Tlb1 => PageSize::from_tsize(self.tsize())?,
        };
        let rpn = ((self.mas7 as u64 & 0xF) << 32) | (self.mas3 & 0xFFFF_F000) as u64;
        let mut e = TlbEntry::new(
            self.mas2 & 0xFFFF_F000,
            rpn,
            size,
            ((self.mas1 >> 16) & 0xFF) as u8,
            Perms::from_bits(self.mas3),
        );
        e.valid = valid;
        e.iprot = self.mas1 & MAS1_IPROT != 0;
        e.ts = self.mas1 & MAS1_TS != 0;
        e.wimge = (self.mas2 & 0x1F) as u8;
        Some(e)
    }

    /// The registers `tlbre` would fill for `entry` in array `sel` at `esel`.
    pub fn of_entry(entry: &TlbEntry, sel: TlbSel, esel: usize) -> Self {
        let tlbsel = match sel {
            TlbSel::Tlb0 => 0,
            TlbSel::Tlb1 => 1,
        };
        Mas {
            mas0: (tlbsel << 28) | ((esel as u32 & 0xFFF) << 16),
            mas1: if entry.valid { MAS1_VALID } else { 0 }
                | if entry.iprot { MAS1_IPROT } else { 0 }
                | (entry.tid as u32) << 16
                | if entry.ts { MAS1_TS } else { 0 }
                | (entry.size.tsize() as u32) << 8,
            mas2: entry.epn | entry.wimge as u32,
            mas3: (entry.rpn as u32 & 0xFFFF_F000) | entry.perms.bits() as u32,
            mas7: (entry.rpn >> 32) as u32 & 0xF,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes_are_powers_of_four() {
        assert_eq!(PageSize::K4.bytes(), 4096);
        assert_eq!(PageSize::M256.bytes(), 256 << 20);
        assert_eq!(PageSize::G4.bytes(), 4 << 30);
        assert_eq!(PageSize::from_bytes(64 << 20), Some(PageSize::M64));
        assert_eq!(PageSize::from_bytes(128 << 20), None);
        assert_eq!(PageSize::from_tsize(0), None);
        assert_eq!(PageSize::from_tsize(12), None);
        assert_eq!(PageSize::M256.smaller(), Some(PageSize::M64));
        assert_eq!(PageSize::K4.smaller(), None);
        assert_eq!(PageSize::M256.label(), "256M");
    }

    #[test]
    fn mas_round_trip_and_fields() {
        // Linux's first kernel TLB1 entry: 64 MiB at 0xC0000000 -> 0, IPROT, SX|SW|SR, M.
        let mas = Mas {
            mas0: 0x1000_0000,
            mas1: MAS1_VALID | MAS1_IPROT | (8 << 8),
            mas2: 0xC000_0004,
            mas3: 0x15,
            mas7: 0,
        };
        let e = mas.entry().unwrap();
        assert_eq!(mas.tlbsel(), TlbSel::Tlb1);
        assert_eq!(e.size, PageSize::M64);
        assert_eq!((e.epn, e.rpn, e.tid), (0xC000_0000, 0, 0));
        assert!(e.iprot && e.valid && !e.ts);
        assert_eq!(e.perms, Perms::SR.union(Perms::SW).union(Perms::SX));
        assert_eq!(e.translate(0xC012_3456), 0x0012_3456);
        assert_eq!(Mas::of_entry(&e, TlbSel::Tlb1, 0), mas);
    }

    #[test]
    fn matching_respects_tid_ts_and_range() {
        let mut e = TlbEntry::new(0x1000_0000, 0x2000_0000, PageSize::K16, 5, Perms::ALL);
        assert!(e.matches(0x1000_3FFF, 5, false));
        assert!(!e.matches(0x1000_4000, 5, false));
        assert!(!e.matches(0x1000_0000, 6, false));
        assert!(!e.matches(0x1000_0000, 5, true));
        e.tid = 0;
        assert!(e.matches(0x1000_0000, 6, false), "TID 0 is global");
    }

    #[test]
    fn permissions() {
        let k = Perms::SR.union(Perms::SX);
        assert!(k.allows(Access::Read, false));
        assert!(!k.allows(Access::Write, false));
        assert!(!k.allows(Access::Read, true));
        assert_eq!(k.supervisor_as_user(), Perms::UR.union(Perms::UX));
    }
}
