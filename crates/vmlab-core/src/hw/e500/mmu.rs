//! The e500v2 TLB arrays and the TLB instructions (e500 Core Family Reference Manual,
//! 12.3-12.4): TLB0 (512 entries, 128 sets of 4 ways, 4 KiB pages, set chosen by EA bits
//! 45-51), TLB1 (16 entries, fully associative, 4 KiB-4 GiB). Software fills both with
//! `tlbwe`; the hardware never loads an entry on its own, so a miss is an exception the
//! operating system (or the hypervisor) handles.

use super::tlb::{Access, Mas, PageSize, TlbEntry, TlbSel};

/// TLB0's entries.
pub const TLB0_ENTRIES: usize = 512;
/// TLB0's associativity.
pub const TLB0_WAYS: usize = 4;
/// TLB0's sets.
pub const TLB0_SETS: usize = TLB0_ENTRIES / TLB0_WAYS;
/// TLB1's entries.
pub const TLB1_ENTRIES: usize = 16;

/// MMUCSR0 bit flash-invalidating TLB0 (TLB0_FI).
pub const MMUCSR0_TLB0_FI: u32 = 0x4;
/// MMUCSR0 bit flash-invalidating TLB1 (TLB1_FI).
pub const MMUCSR0_TLB1_FI: u32 = 0x2;

/// Where an entry sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TlbSlot {
    /// The array.
    pub tlb: TlbSel,
    /// TLB0: set * 4 + way; TLB1: the entry number.
    pub index: usize,
}

/// A TLB operation the hardware does not allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MmuError {
    /// MAS1 TSIZE is not one of e500v2's page sizes.
    #[error("tlbwe with unsupported TSIZE {0}")]
    BadSize(u8),
    /// MAS0 ESEL names an entry the array does not have.
    #[error("tlbwe to {0:?} entry {1}, which does not exist")]
    BadIndex(TlbSel, usize),
    /// The new TLB1 entry overlaps another valid TLB1 entry that could match the same
    /// access (a multi-hit, which the reference manual leaves undefined).
    #[error("tlbwe would make TLB1 entry {0} overlap entry {1}")]
    Overlap(usize, usize),
}

/// TLB0: set-associative, 4 KiB pages.
#[derive(Clone, Debug)]
pub struct Tlb0 {
    entries: Vec<TlbEntry>,
}

/// TLB1: fully associative, variable page sizes.
#[derive(Clone, Debug)]
pub struct Tlb1 {
    entries: [TlbEntry; TLB1_ENTRIES],
}

const INVALID: TlbEntry = TlbEntry {
    valid: false,
    iprot: false,
    tid: 0,
    ts: false,
    size: PageSize::K4,
    epn: 0,
    rpn: 0,
    perms: super::tlb::Perms::NONE,
    wimge: 0,
};

impl Tlb0 {
    fn new() -> Self {
        Tlb0 {
            entries: vec![INVALID; TLB0_ENTRIES],
        }
    }

    /// The set an effective address maps to (EA bits 45-51: the low 7 bits of the page).
    pub fn set_of(ea: u32) -> usize {
        ((ea >> 12) as usize) & (TLB0_SETS - 1)
    }

    /// The four ways of `ea`'s set.
    pub fn set(&self, ea: u32) -> &[TlbEntry] {
        let s = Self::set_of(ea) * TLB0_WAYS;
        &self.entries[s..s + TLB0_WAYS]
    }

    /// Every entry, index = set * 4 + way.
    pub fn entries(&self) -> &[TlbEntry] {
        &self.entries
    }
}

impl Tlb1 {
    /// Every entry.
    pub fn entries(&self) -> &[TlbEntry; TLB1_ENTRIES] {
        &self.entries
    }
}

/// Both arrays: one e500v2 core's TLB as software sees it.
#[derive(Clone, Debug)]
pub struct Mmu {
    tlb0: Tlb0,
    tlb1: Tlb1,
}

impl Default for Mmu {
    fn default() -> Self {
        Self::new()
    }
}

impl Mmu {
    /// Both arrays empty.
    pub fn new() -> Self {
        Mmu {
            tlb0: Tlb0::new(),
            tlb1: Tlb1 {
                entries: [INVALID; TLB1_ENTRIES],
            },
        }
    }

    /// TLB0.
    pub fn tlb0(&self) -> &Tlb0 {
        &self.tlb0
    }

    /// TLB1.
    pub fn tlb1(&self) -> &Tlb1 {
        &self.tlb1
    }

    /// The entry at `slot`.
    pub fn entry(&self, slot: TlbSlot) -> &TlbEntry {
        match slot.tlb {
            TlbSel::Tlb0 => &self.tlb0.entries[slot.index],
            TlbSel::Tlb1 => &self.tlb1.entries[slot.index],
        }
    }

    /// The entry translating `ea` for `pid` in address space `ts` and where it sits; TLB1
    /// is searched first (the hardware searches both at once; a correct OS never has two
    /// matches).
    pub fn lookup(&self, ea: u32, pid: u8, ts: bool) -> Option<(TlbSlot, &TlbEntry)> {
        if let Some(i) = self
            .tlb1
            .entries
            .iter()
            .position(|e| e.matches(ea, pid, ts))
        {
            return Some((
                TlbSlot {
                    tlb: TlbSel::Tlb1,
                    index: i,
                },
                &self.tlb1.entries[i],
            ));
        }
        let base = Tlb0::set_of(ea) * TLB0_WAYS;
        (base..base + TLB0_WAYS)
            .find(|&i| self.tlb0.entries[i].matches(ea, pid, ts))
            .map(|i| {
                (
                    TlbSlot {
                        tlb: TlbSel::Tlb0,
                        index: i,
                    },
                    &self.tlb0.entries[i],
                )
            })
    }

    /// Translates `ea`: `Ok(real address)`, `Err(Miss)` with no matching entry (a TLB miss
    /// exception) or `Err(Denied)` when the entry lacks the permission (a storage
    /// exception).
    pub fn translate(
        &self,
        ea: u32,
        pid: u8,
        ts: bool,
        access: Access,
        user: bool,
    ) -> Result<u64, Fault> {
        let (_, e) = self.lookup(ea, pid, ts).ok_or(Fault::Miss)?;
        if e.perms.allows(access, user) {
            Ok(e.translate(ea))
        } else {
            Err(Fault::Denied)
        }
    }

    /// `tlbwe`: writes the entry the MAS registers describe where MAS0 says (TLB0: the way
    /// ESEL of the set of MAS2's EPN; TLB1: entry ESEL). Returns the slot and the entry it
    /// replaced.
    pub fn tlbwe(&mut self, mas: &Mas) -> Result<(TlbSlot, TlbEntry), MmuError> {
        let entry = mas.entry().ok_or(MmuError::BadSize(mas.tsize()))?;
        let slot = match mas.tlbsel() {
            TlbSel::Tlb0 => TlbSlot {
                tlb: TlbSel::Tlb0,
                index: Tlb0::set_of(entry.epn) * TLB0_WAYS + (mas.esel() & (TLB0_WAYS - 1)),
            },
            TlbSel::Tlb1 => {
                if mas.esel() >= TLB1_ENTRIES {
                    return Err(MmuError::BadIndex(TlbSel::Tlb1, mas.esel()));
                }
                TlbSlot {
                    tlb: TlbSel::Tlb1,
                    index: mas.esel(),
                }
            }
        };
        self.write(slot, entry)
    }

    /// Writes `entry` at `slot` (the hypervisor's way to fill a host TLB), checking TLB1's
    /// no-overlap rule. Returns the slot and the entry it replaced.
    pub fn write(
        &mut self,
        slot: TlbSlot,
        entry: TlbEntry,
    ) -> Result<(TlbSlot, TlbEntry), MmuError> {
        match slot.tlb {
            TlbSel::Tlb0 => {
                if slot.index >= TLB0_ENTRIES {
                    return Err(MmuError::BadIndex(TlbSel::Tlb0, slot.index));
                }
                let old = std::mem::replace(&mut self.tlb0.entries[slot.index], entry);
                Ok((slot, old))
            }
            TlbSel::Tlb1 => {
                if slot.index >= TLB1_ENTRIES {
                    return Err(MmuError::BadIndex(TlbSel::Tlb1, slot.index));
                }
                if let Some(j) = (0..TLB1_ENTRIES)
                    .find(|&j| j != slot.index && self.tlb1.entries[j].overlaps(&entry))
                {
                    return Err(MmuError::Overlap(slot.index, j));
                }
                let old = std::mem::replace(&mut self.tlb1.entries[slot.index], entry);
                Ok((slot, old))
            }
        }
    }

    /// `tlbre`: the MAS registers of the entry MAS0 (and, for TLB0, MAS2's EPN) selects.
    pub fn tlbre(&self, mas: &Mas) -> Mas {
        let (sel, index) = match mas.tlbsel() {
            TlbSel::Tlb0 => (
                TlbSel::Tlb0,
                Tlb0::set_of(mas.mas2) * TLB0_WAYS + (mas.esel() & (TLB0_WAYS - 1)),
            ),
            TlbSel::Tlb1 => (TlbSel::Tlb1, mas.esel() % TLB1_ENTRIES),
        };
        let e = self.entry(TlbSlot { tlb: sel, index });
        Mas::of_entry(e, sel, index % if sel == TlbSel::Tlb0 { 4 } else { 16 })
    }

    /// `tlbsx`: searches for `ea` with MAS6's SPID and SAS; the matching entry and where it
    /// sits, or `None` (the instruction then clears `MAS1[V]`).
    pub fn tlbsx(&self, ea: u32, spid: u8, sas: bool) -> Option<(TlbSlot, TlbEntry)> {
        self.lookup(ea, spid, sas).map(|(s, e)| (s, *e))
    }

    /// `tlbivax`: invalidates, in the array EA bit 60 selects (set: TLB1), the entries
    /// covering `ea` whatever their TID, or with EA bit 61 set all of that array's entries;
    /// IPROT entries survive. Returns the slots invalidated.
    pub fn tlbivax(&mut self, ea: u32) -> Vec<TlbSlot> {
        let tlb = if ea & 0x8 != 0 {
            TlbSel::Tlb1
        } else {
            TlbSel::Tlb0
        };
        let all = ea & 0x4 != 0;
        self.invalidate_where(tlb, |e| all || e.covers(ea & !0xFFF))
    }

    /// MMUCSR0 flash invalidation (TLB0_FI, TLB1_FI bits); IPROT entries survive.
    pub fn flash_invalidate(&mut self, mmucsr0: u32) -> Vec<TlbSlot> {
        let mut out = Vec::new();
        if mmucsr0 & MMUCSR0_TLB0_FI != 0 {
            out.extend(self.invalidate_where(TlbSel::Tlb0, |_| true));
        }
        if mmucsr0 & MMUCSR0_TLB1_FI != 0 {
            out.extend(self.invalidate_where(TlbSel::Tlb1, |_| true));
        }
        out
    }

    /// Invalidates the valid, unprotected entries of one array for which `pred` holds.
    pub fn invalidate_where(
        &mut self,
        tlb: TlbSel,
        pred: impl Fn(&TlbEntry) -> bool,
    ) -> Vec<TlbSlot> {
        let entries: &mut [TlbEntry] = match tlb {
            TlbSel::Tlb0 => &mut self.tlb0.entries,
            TlbSel::Tlb1 => &mut self.tlb1.entries,
        };
        let mut out = Vec::new();
        for (index, e) in entries.iter_mut().enumerate() {
            if e.valid && !e.iprot && pred(e) {
                e.valid = false;
                out.push(TlbSlot { tlb, index });
            }
        }
        out
    }
}

/// Why a translation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No entry matches: a data or instruction TLB miss exception.
    Miss,
    /// An entry matches but lacks the permission: a data or instruction storage exception.
    Denied,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::e500::tlb::{Perms, MAS1_IPROT, MAS1_VALID};

    fn mas0(tlb: u32, esel: u32) -> u32 {
        (tlb << 28) | (esel << 16)
    }

    fn tlb0_write(mmu: &mut Mmu, ea: u32, pa: u32, tid: u32, way: u32) -> TlbSlot {
        let mas = Mas {
            mas0: mas0(0, way),
            mas1: MAS1_VALID | (tid << 16) | (1 << 8),
            mas2: ea,
            mas3: pa | 0x3F,
            mas7: 0,
        };
        mmu.tlbwe(&mas).unwrap().0
    }

    fn tlb1_write(mmu: &mut Mmu, esel: u32, ea: u32, pa: u32, tsize: u32, iprot: bool) {
        let mas = Mas {
            mas0: mas0(1, esel),
            mas1: MAS1_VALID | if iprot { MAS1_IPROT } else { 0 } | (tsize << 8),
            mas2: ea,
            mas3: pa | 0x15,
            mas7: 0,
        };
        mmu.tlbwe(&mas).unwrap();
    }

    #[test]
    fn tlb0_write_goes_to_the_set_of_the_epn_and_the_way_of_esel() {
        let mut mmu = Mmu::new();
        let slot = tlb0_write(&mut mmu, 0x1000_5000, 0x0020_0000, 7, 2);
        assert_eq!(slot.tlb, TlbSel::Tlb0);
        assert_eq!(slot.index, 5 * 4 + 2);
        // Same set 128 pages later: another way, both present.
        let slot2 = tlb0_write(&mut mmu, 0x1008_5000, 0x0030_0000, 7, 3);
        assert_eq!(slot2.index, 5 * 4 + 3);
        assert_eq!(
            mmu.translate(0x1000_5123, 7, false, Access::Write, true),
            Ok(0x0020_0123)
        );
        assert_eq!(
            mmu.translate(0x1008_5FFF, 7, false, Access::Read, true),
            Ok(0x0030_0FFF)
        );
        assert_eq!(
            mmu.translate(0x1000_5123, 8, false, Access::Read, true),
            Err(Fault::Miss),
            "another PID misses"
        );
        // Writing way 2 again replaces the entry and returns it.
        let (_, old) = mmu
            .tlbwe(&Mas {
                mas0: mas0(0, 2),
                mas1: MAS1_VALID | (9 << 16) | (1 << 8),
                mas2: 0x1010_5000,
                mas3: 0x0040_0000 | 0x3F,
                mas7: 0,
            })
            .unwrap();
        assert_eq!(old.epn, 0x1000_5000);
        assert_eq!(mmu.lookup(0x1000_5000, 7, false), None);
    }

    #[test]
    fn tlb1_sizes_alignment_permissions_and_no_overlap() {
        let mut mmu = Mmu::new();
        // 256 MiB kernel entry; the EPN's low bits are ignored (natural alignment).
        tlb1_write(&mut mmu, 0, 0xC123_4000, 0, 9, true);
        let e = mmu.tlb1().entries()[0];
        assert_eq!((e.epn, e.size), (0xC000_0000, PageSize::M256));
        assert_eq!(
            mmu.translate(0xCFFF_FFFC, 3, false, Access::Read, false),
            Ok(0x0FFF_FFFC)
        );
        assert_eq!(
            mmu.translate(0xC000_0000, 3, false, Access::Read, true),
            Err(Fault::Denied),
            "supervisor-only page read from user mode"
        );
        // A 64 MiB entry inside it overlaps: rejected, TLB unchanged.
        let err = mmu
            .tlbwe(&Mas {
                mas0: mas0(1, 1),
                mas1: MAS1_VALID | (8 << 8),
                mas2: 0xC400_0000,
                mas3: 0x15,
                mas7: 0,
            })
            .unwrap_err();
        assert_eq!(err, MmuError::Overlap(1, 0));
        assert!(!mmu.tlb1().entries()[1].valid);
        // In the other address space (TS=1) it does not overlap.
        mmu.tlbwe(&Mas {
            mas0: mas0(1, 1),
            mas1: MAS1_VALID | crate::hw::e500::tlb::MAS1_TS | (8 << 8),
            mas2: 0xC400_0000,
            mas3: 0x15,
            mas7: 0,
        })
        .unwrap();
        // Unsupported size and entry number.
        let bad = Mas {
            mas0: mas0(1, 2),
            mas1: MAS1_VALID | (12 << 8),
            ..Mas::default()
        };
        assert_eq!(mmu.tlbwe(&bad), Err(MmuError::BadSize(12)));
        let bad = Mas {
            mas0: mas0(1, 16),
            mas1: MAS1_VALID | (1 << 8),
            ..Mas::default()
        };
        assert_eq!(mmu.tlbwe(&bad), Err(MmuError::BadIndex(TlbSel::Tlb1, 16)));
    }

    #[test]
    fn tlbivax_and_flash_invalidation_spare_iprot() {
        let mut mmu = Mmu::new();
        tlb1_write(&mut mmu, 0, 0xC000_0000, 0, 9, true);
        tlb1_write(&mut mmu, 1, 0xD000_0000, 0x1000_0000, 5, false);
        tlb0_write(&mut mmu, 0x1000_0000, 0x0010_0000, 3, 0);
        tlb0_write(&mut mmu, 0x1000_0000, 0x0020_0000, 4, 1);
        tlb0_write(&mut mmu, 0x1000_1000, 0x0030_0000, 4, 0);
        // tlbivax of one TLB0 page: both TIDs' entries for it go, the neighbour stays.
        assert_eq!(mmu.tlbivax(0x1000_0000).len(), 2);
        assert!(mmu.lookup(0x1000_1000, 4, false).is_some());
        // tlbivax into TLB1 (EA bit 60): the protected entry survives.
        assert_eq!(mmu.tlbivax(0xC000_0008), vec![]);
        assert_eq!(
            mmu.tlbivax(0xD000_0008),
            vec![TlbSlot {
                tlb: TlbSel::Tlb1,
                index: 1
            }]
        );
        // Flash invalidation of both arrays leaves only IPROT entries.
        assert_eq!(
            mmu.flash_invalidate(MMUCSR0_TLB0_FI | MMUCSR0_TLB1_FI)
                .len(),
            1
        );
        assert!(mmu.lookup(0xC000_0000, 0, false).is_some());
        assert_eq!(mmu.tlb0().entries().iter().filter(|e| e.valid).count(), 0);
    }

    #[test]
    fn tlbsx_and_tlbre() {
        let mut mmu = Mmu::new();
        tlb0_write(&mut mmu, 0x1000_3000, 0x0050_0000, 6, 1);
        let (slot, e) = mmu.tlbsx(0x1000_3ABC, 6, false).unwrap();
        assert_eq!((slot.index, e.rpn), (3 * 4 + 1, 0x0050_0000));
        assert!(mmu.tlbsx(0x1000_3ABC, 5, false).is_none());
        let read = mmu.tlbre(&Mas {
            mas0: mas0(0, 1),
            mas2: 0x1000_3000,
            ..Mas::default()
        });
        assert_eq!(read.entry().unwrap(), e);
        assert_eq!(read.mas3 & 0x3F, Perms::ALL.bits() as u32);
    }
}
