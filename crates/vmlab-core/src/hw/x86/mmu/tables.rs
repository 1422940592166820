//! Where the MMU's walks read their tables ([`TableMemory`]): host memory (1D walks), host
//! memory with memory-tag checks (TPT), and guest tables seen through the EPT (2D walks).

use super::*;

/// Host-address tables built by a guest (TPT): each table frame is tag-checked before its
/// entry is read, so a table in someone else's memory is never read.
pub(super) struct TaggedTables<'a> {
    pub(super) host: HostTables<'a>,
    pub(super) counters: &'a mut MmuCounters,
    pub(super) reads: bool,
    pub(super) va: u64,
    pub(super) write: bool,
}

impl TaggedTables<'_> {
    pub(super) fn check(&mut self, hfn: u64) -> Result<(), Fault> {
        self.counters.tag_checks += 1;
        if self.reads {
            self.host.memory.reference(
                Hpa::new(self.host.mem.tags().entry_addr(hfn)),
                Requester::Tag,
            );
        }
        if self.host.mem.tags().owned(hfn) {
            Ok(())
        } else {
            self.counters.tag_violations += 1;
            Err(Fault {
                dimension: Dimension::Guest,
                addr: self.va,
                level: 0,
                kind: crate::hw::x86::walker::FaultKind::TagViolation,
                write: self.write,
            })
        }
    }
}

impl TableMemory for TaggedTables<'_> {
    fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
        self.check(entry_addr >> crate::addr::PAGE_SHIFT)?;
        Ok(Hpa::new(entry_addr))
    }
    #[inline]
    fn read(&mut self, at: Hpa) -> u64 {
        self.host.read(at)
    }
    fn set_bits(&mut self, at: Hpa, bits: u64) {
        self.host.set_bits(at, bits)
    }
}

/// Host-physical tables, read through the cache hierarchy.
pub(super) struct HostTables<'a> {
    pub(super) mem: &'a mut HostMemory,
    pub(super) memory: &'a mut MemoryHierarchy,
}

impl TableMemory for HostTables<'_> {
    fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
        Ok(Hpa::new(entry_addr))
    }
    #[inline]
    fn read(&mut self, at: Hpa) -> u64 {
        self.memory.reference(at, Requester::Walk);
        self.mem.read_u64(at)
    }
    fn set_bits(&mut self, at: Hpa, bits: u64) {
        self.mem.or_u64(at, bits)
    }
}

/// Guest tables seen through the EPT: every guest table address is translated first.
pub(crate) struct Nested<'a> {
    pub(super) mem: &'a mut HostMemory,
    pub(super) memory: &'a mut MemoryHierarchy,
    pub(super) ept_paths: &'a mut EptPaths,
    pub(super) nested_tlb: &'a mut TranslationCache,
    pub(super) nested_sizes_in_use: &'a mut u8,
    pub(crate) counters: &'a mut MmuCounters,
    pub(super) eptp: Hpa,
    pub(super) mode: &'a PagingMode,
}

impl Nested<'_> {
    /// GPA -> HPA through the nested TLB, or an EPT walk.
    #[inline(always)]
    pub(crate) fn translate(&mut self, gpa: u64, write: bool) -> Result<Leaf, Fault> {
        let (nested_tlb, mut found) = (&mut *self.nested_tlb, 0u8);
        let hit = first_size(
            *self.nested_sizes_in_use,
            #[inline(always)]
            |size| {
                let value = nested_tlb.lookup(tlb_key(gpa, size, 0))?;
                if usable(value, write) {
                    return Some(Leaf {
                        base: value & FRAME_MASK,
                        size: size.page_size(),
                        perm_bits: value & Perms::ALL.bits(),
                    });
                }
                found |= 1 << size.index();
                None
            },
        );
        if let Some(leaf) = hit {
            self.counters.nested_tlb_hits += 1;
            return Ok(leaf);
        }
        self.translate_miss(gpa, write, found)
    }

    /// [`Self::translate`] after a nested TLB miss (`found` as its probe reported): walk the
    /// EPT and fill the nested TLB. The walk's result comes from the EPT in memory, its
    /// references from the replay of its record in the stream's back end, through the EPT
    /// paging-structure caches (`crate::hw::x86::deferred`). Out of line: the walk is most
    /// of the code.
    #[inline(never)]
    fn translate_miss(&mut self, gpa: u64, write: bool, found: u8) -> Result<Leaf, Fault> {
        self.counters.nested_tlb_misses += 1;
        let record = self.memory.record_slot();
        if let Some(leaf) = deferred::walk_remembered_4k(
            self.mem,
            self.ept_paths,
            self.eptp.raw(),
            gpa,
            write,
            record,
        ) {
            self.memory.commit_record();
            self.fill_nested_tlb(gpa, TlbSize::K4, &leaf, write, found);
            return Ok(leaf);
        }
        let leaf = deferred::walk(
            self.mem,
            self.ept_paths,
            self.mode,
            self.eptp.raw(),
            gpa,
            write,
            record,
        );
        self.memory.commit_record();
        let leaf = leaf?;
        self.fill_nested_tlb(gpa, TlbSize::of(leaf.size), &leaf, write, found);
        Ok(leaf)
    }

    /// Fill the nested TLB with the translation of `gpa` a walk for a `write` found, after
    /// a lookup whose probe reported `found`.
    #[inline(always)]
    fn fill_nested_tlb(&mut self, gpa: u64, size: TlbSize, leaf: &Leaf, write: bool, found: u8) {
        *self.nested_sizes_in_use |= 1 << size.index();
        let (key, value) = (
            tlb_key(gpa, size, 0),
            tlb_value(leaf.base, leaf.perm_bits, write),
        );
        if found & (1 << size.index()) != 0 {
            self.nested_tlb.fill(key, value);
        } else {
            // The probe of this size missed, or the size was not in use: no entry to replace.
            self.nested_tlb.fill_absent(key, value);
        }
    }
}

impl TableMemory for Nested<'_> {
    /// Guest paging-structure accesses are EPT writes when EPT A/D flags are on.
    fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
        let leaf = self.translate(entry_addr, true)?;
        Ok(Hpa::new(leaf.output(entry_addr)))
    }
    #[inline]
    fn read(&mut self, at: Hpa) -> u64 {
        self.memory.reference(at, Requester::Walk);
        self.mem.read_u64(at)
    }
    fn set_bits(&mut self, at: Hpa, bits: u64) {
        self.mem.or_u64(at, bits)
    }
}
