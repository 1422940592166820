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
    /// sits, or `None` (the instruction then clears MAS1[V]).
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
