//! The MMU's look-ahead: prefetching, in the host, what the coming accesses will walk (see
//! `crate::host::prefetch`). Host speed only: nothing here changes a simulated number.

use super::*;

impl Mmu {
    /// Prefetch, in the host, what the coming accesses `vas` will touch; no simulated effect.
    ///
    /// Runs in stages, each over a batch before the next, so the host overlaps the misses a
    /// random-access workload causes in the simulator's own tables. A first pass prefetches
    /// the slots remembering each access's leaf-level table; the next takes the remembered
    /// table (or walks the upper levels functionally: no caches, counters or A/D updates)
    /// and prefetches the leaf-level entry through its storage slot; under nested paging the
    /// next reads that entry and prefetches the EPT leaf entry of the data page. Unless a
    /// stream is open (its cache levels prefetch their own sets), a last stage prefetches
    /// the cache sets of the data line. See `crate::host::prefetch`.
    pub fn prefetch(&self, mem: &HostMemory, vas: &[Gva]) {
        let stream = self.memory.is_streaming();
        for batch in vas.chunks(LOOKAHEAD_BATCH) {
            match (self.root, stream) {
                (Root::None, _) => return,
                // No look-ahead for agile walks (host speed only: no simulated effect). The
                // 1D look-ahead would read guest-physical addresses below a switch as host
                // ones.
                (Root::Agile { .. }, _) => return,
                (Root::OneD { cr3 } | Root::Tagged { cr3 }, true) => {
                    self.lookahead_native::<true>(mem, cr3.raw(), batch)
                }
                (Root::OneD { cr3 } | Root::Tagged { cr3 }, false) => {
                    self.lookahead_native::<false>(mem, cr3.raw(), batch)
                }
                (Root::TwoD { guest_cr3, eptp }, true) => {
                    self.lookahead_nested::<true>(mem, guest_cr3.raw(), eptp, batch)
                }
                (Root::TwoD { guest_cr3, eptp }, false) => {
                    self.lookahead_nested::<false>(mem, guest_cr3.raw(), eptp, batch)
                }
            }
        }
    }

    /// The look-ahead of a batch through one-dimensional tables at `cr3` (host addresses).
    /// `STREAM`: a stream is open, so the data line's cache sets are left to its levels.
    #[inline(always)]
    fn lookahead_native<const STREAM: bool>(&self, mem: &HostMemory, cr3: u64, batch: &[Gva]) {
        let leaves = self.lookahead.leaf_tables(Tables::Guest, cr3);
        for va in batch {
            leaves.prefetch(leaf_region(va.raw()));
        }
        let mut entries = [&NOT_PRESENT; LOOKAHEAD_BATCH];
        for (entry, va) in entries.iter_mut().zip(batch) {
            let va = va.raw();
            if self.held_by_l1::<STREAM>(va) {
                continue;
            }
            *entry = self.lookahead_leaf::<X86, STREAM>(mem, &leaves, cr3, va);
        }
        if STREAM {
            return;
        }
        for (entry, va) in entries.iter().zip(batch) {
            self.prefetch_data::<X86>(**entry, va.raw());
        }
    }

    /// The look-ahead of a batch through the guest's tables at `guest_cr3` and the EPT at
    /// `eptp`. `STREAM` as for [`Self::lookahead_native`].
    #[inline(always)]
    fn lookahead_nested<const STREAM: bool>(
        &self,
        mem: &HostMemory,
        guest_cr3: u64,
        eptp: Hpa,
        batch: &[Gva],
    ) {
        let guest = self.lookahead.leaf_tables(Tables::Guest, guest_cr3);
        let ept = self.lookahead.leaf_tables(Tables::Ept, eptp.raw());
        for va in batch {
            guest.prefetch(leaf_region(va.raw()));
        }
        // The guest leaf entries (and the guest leaf tables they sit in), then the EPT
        // leaf entries of those tables, then those of the data pages (with their
        // guest-physical addresses) for the last stage. The tables' stage comes between
        // the guest entries' prefetch and their reads, so those have time to arrive.
        let mut guest_entries = [&NOT_PRESENT; LOOKAHEAD_BATCH];
        let mut guest_tables = [NO_TABLE; LOOKAHEAD_BATCH];
        let mut ept_entries = [(&NOT_PRESENT, 0); LOOKAHEAD_BATCH];
        for (((entry, table), data), va) in guest_entries
            .iter_mut()
            .zip(&mut guest_tables)
            .zip(&mut ept_entries)
            .zip(batch)
        {
            let va = va.raw();
            if self.held_by_l1::<STREAM>(va) {
                continue;
            }
            let to_host = |gpa| self.guest_table_to_host(mem, &ept, gpa, eptp);
            let slot_of = |table| {
                let hpa = self.guest_table_to_host(mem, &ept, table, eptp)?;
                mem.table_slot(Hpa::new(hpa).frame())
            };
            match self.leaf_table::<X86>(mem, &guest, guest_cr3, va, to_host, slot_of) {
                Found::Table(leaf) => {
                    if let Some(found) = mem.entry_in_slot(leaf.slot, leaf_entry_offset(va)) {
                        prefetch(found);
                        *entry = found;
                    }
                    *table = leaf.table;
                }
                Found::Output(gpa) => {
                    *data = (
                        self.lookahead_leaf::<Ept, STREAM>(mem, &ept, eptp.raw(), gpa),
                        gpa,
                    );
                }
                Found::Fault => {}
            }
        }
        for (&table, va) in guest_tables.iter().zip(batch) {
            if table == NO_TABLE {
                continue;
            }
            // The walk translates the table's address too, and the nested TLB rarely holds
            // the translation of one of many leaf-level tables.
            self.lookahead_leaf::<Ept, STREAM>(mem, &ept, eptp.raw(), table);
            self.ept_paths.prefetch(table);
            if let Some(hfn) = self
                .lookahead
                .table_frame(table >> PageSize::Size4K.shift())
            {
                mem.prefetch_index(Hfn::new(hfn));
                if !STREAM {
                    let at = hfn << PageSize::Size4K.shift() | leaf_entry_offset(va.raw());
                    self.memory.prefetch(Hpa::new(at));
                }
            }
        }
        for ((entry, data), va) in guest_entries.iter().zip(&mut ept_entries).zip(batch) {
            let entry = **entry;
            if X86::is_present(entry) {
                let gpa = X86::frame_addr(entry) | (va.raw() & (PageSize::Size4K.bytes() - 1));
                self.ept_paths.prefetch(gpa);
                *data = (
                    self.lookahead_leaf::<Ept, STREAM>(mem, &ept, eptp.raw(), gpa),
                    gpa,
                );
            }
        }
        if STREAM {
            return;
        }
        for &(entry, gpa) in &ept_entries {
            self.prefetch_data::<Ept>(*entry, gpa);
        }
    }

    /// Prefetch the leaf-level entry (format `F`) mapping `addr` in the host-address tables
    /// at `root` (native tables, or the EPT for a guest-physical `addr`), and unless
    /// `STREAM`, the cache sets of its line (or those of the output line if a large page
    /// maps `addr`); returns the entry.
    #[inline(always)]
    fn lookahead_leaf<'m, F: EntryFormat, const STREAM: bool>(
        &self,
        mem: &'m HostMemory,
        leaves: &LeafTables<'_>,
        root: u64,
        addr: u64,
    ) -> &'m u64 {
        let slot_of = |table| mem.table_slot(Hpa::new(table).frame());
        match self.leaf_table::<F>(mem, leaves, root, addr, Some, slot_of) {
            Found::Table(leaf) => {
                let offset = leaf_entry_offset(addr);
                mem.prefetch_index(Hpa::new(leaf.table).frame());
                if !STREAM {
                    self.memory.prefetch(Hpa::new(leaf.table + offset));
                }
                if let Some(found) = mem.entry_in_slot(leaf.slot, offset) {
                    prefetch(found);
                    return found;
                }
            }
            Found::Output(hpa) if !STREAM => self.memory.prefetch(Hpa::new(hpa)),
            Found::Output(_) | Found::Fault => {}
        }
        &NOT_PRESENT
    }

    /// Prefetch the cache sets of the line a leaf-level `entry` of format `F` maps `addr` to.
    #[inline(always)]
    fn prefetch_data<F: EntryFormat>(&self, entry: u64, addr: u64) {
        if F::is_present(entry) {
            let out = F::frame_addr(entry) | (addr & (PageSize::Size4K.bytes() - 1));
            self.memory.prefetch(Hpa::new(out));
        }
    }

    /// Whether the L1 DTLB holds `va`'s translation (peeked, no side effects): then the
    /// access needs no walk, only its data line, whose cache sets are prefetched. With a
    /// stream open (`STREAM`) the data line is left to the cache levels and the peek is
    /// skipped: it costs more than a needless prefetch of a leaf entry (hot anyway when the
    /// L1 DTLB hits).
    #[inline(always)]
    fn held_by_l1<const STREAM: bool>(&self, va: u64) -> bool {
        if STREAM {
            return false;
        }
        let held = sizes_in(self.sizes_in_use).find_map(|size| {
            let value = self.l1[size.index()].peek(tlb_key(va, size, self.tag))?;
            Some(Hpa::new((value & FRAME_MASK) | (va & (size.bytes() - 1))))
        });
        held.inspect(|&hpa| self.memory.prefetch(hpa)).is_some()
    }

    /// The leaf-level table covering `addr` in the tables at `root`: as `leaves` remembers
    /// it, else found by [`Self::find_leaf_table`].
    #[inline(always)]
    fn leaf_table<F: EntryFormat>(
        &self,
        mem: &HostMemory,
        leaves: &LeafTables<'_>,
        root: u64,
        addr: u64,
        to_host: impl Fn(u64) -> Option<u64>,
        slot_of: impl FnOnce(u64) -> Option<u32>,
    ) -> Found {
        match leaves.get(leaf_region(addr)) {
            Some(leaf) => Found::Table(leaf),
            None => self.find_leaf_table::<F>(mem, leaves, root, addr, to_host, slot_of),
        }
    }

    /// [`probe`] for `addr` in the tables at `root`, each table address mapped to a host
    /// address by `to_host`; a leaf-level table found is remembered in `leaves` with its
    /// storage slot (`slot_of` its address), if its frame has table contents.
    #[inline(never)]
    fn find_leaf_table<F: EntryFormat>(
        &self,
        mem: &HostMemory,
        leaves: &LeafTables<'_>,
        root: u64,
        addr: u64,
        to_host: impl Fn(u64) -> Option<u64>,
        slot_of: impl FnOnce(u64) -> Option<u32>,
    ) -> Found {
        // Both x86 depths have the same geometry below the root, so the 4-level descriptor
        // (a constant: its index arithmetic folds) serves 5-level tables below the root.
        let end = match self.mode.levels() {
            5 => probe::<F>(mem, &X86_64_5LEVEL, root, addr, to_host),
            _ => probe::<F>(mem, &X86_64_4LEVEL, root, addr, to_host),
        };
        match end {
            Probe::Entry(at) => {
                let table = at - leaf_entry_offset(addr);
                let Some(slot) = slot_of(table) else {
                    return Found::Fault;
                };
                let leaf = LeafTable { table, slot };
                leaves.remember(leaf_region(addr), leaf);
                Found::Table(leaf)
            }
            Probe::Output(out) => Found::Output(out),
            Probe::Fault => Found::Fault,
        }
    }

    /// The host address of the guest table entry at guest-physical `gpa`: the table's frame
    /// as last seen, else from a functional EPT walk (and then remembered).
    fn guest_table_to_host(
        &self,
        mem: &HostMemory,
        ept: &LeafTables<'_>,
        gpa: u64,
        eptp: Hpa,
    ) -> Option<u64> {
        let offset = gpa & (PageSize::Size4K.bytes() - 1);
        let gfn = gpa >> PageSize::Size4K.shift();
        if let Some(hfn) = self.lookahead.table_frame(gfn) {
            return Some(hfn << PageSize::Size4K.shift() | offset);
        }
        let slot_of = |table| mem.table_slot(Hpa::new(table).frame());
        let hpa = match self.leaf_table::<Ept>(mem, ept, eptp.raw(), gpa, Some, slot_of) {
            Found::Table(leaf) => {
                // Read through the frame, not the remembered slot: this is remembered longer.
                let entry = mem.read_u64(Hpa::new(leaf.table + leaf_entry_offset(gpa)));
                if !Ept::is_present(entry) {
                    return None;
                }
                Ept::frame_addr(entry) | offset
            }
            Found::Output(hpa) => hpa,
            Found::Fault => return None,
        };
        self.lookahead
            .remember_table_frame(gfn, hpa >> PageSize::Size4K.shift());
        Some(hpa)
    }
}

/// The region one leaf-level table covers (2 MiB) that `addr` lies in, as the look-ahead
/// remembers leaf tables by it. Both x86 depths have the same geometry below the root.
#[inline(always)]
fn leaf_region(addr: u64) -> u64 {
    addr >> X86_64_4LEVEL.level_shift(2)
}

/// The byte offset of `addr`'s entry in its leaf-level table (both x86 depths alike).
#[inline(always)]
fn leaf_entry_offset(addr: u64) -> u64 {
    X86_64_4LEVEL.entry_offset_of(addr, 1)
}

/// What the look-ahead reads for an access no table page has an entry for: not present.
static NOT_PRESENT: u64 = 0;

/// A guest leaf table the look-ahead did not find (table addresses are page-aligned).
const NO_TABLE: u64 = u64::MAX;

/// Where the look-ahead found an address's translation to end.
enum Found {
    /// At the leaf-level entry of this table.
    Table(LeafTable),
    /// At a large leaf: the output address.
    Output(u64),
    /// At a missing entry (or a leaf-level table without contents: nothing to prefetch).
    Fault,
}

/// Where a functional walk for prefetching ended.
enum Probe {
    /// At the leaf-level entry at this address of the table space (not read).
    Entry(u64),
    /// At a large leaf: the output address.
    Output(u64),
    /// At a missing entry.
    Fault,
}

/// A functional walk for prefetching (`#[inline(always)]`, so a constant `mode` folds):
/// reads the entries above the leaf level directly (no
/// caches, no counters, no A/D updates), each table address mapped to a host address by
/// `to_host`, and stops at the leaf-level entry without reading it or mapping its address.
#[inline(always)]
fn probe<F: EntryFormat>(
    mem: &HostMemory,
    mode: &PagingMode,
    root: u64,
    addr: u64,
    to_host: impl Fn(u64) -> Option<u64>,
) -> Probe {
    let mut table = root & FRAME_MASK;
    for level in (2..=mode.levels()).rev() {
        let Some(at) = to_host(table + mode.entry_offset_of(addr, level)) else {
            return Probe::Fault;
        };
        let entry = mem.read_u64(Hpa::new(at));
        match mode.classify::<F>(entry, level) {
            EntryKind::Table => table = F::frame_addr(entry),
            EntryKind::Leaf(size) => {
                return Probe::Output(
                    PagingMode::leaf_base::<F>(entry, size) | (addr & (size.bytes() - 1)),
                )
            }
            EntryKind::NotPresent | EntryKind::Reserved => return Probe::Fault,
        }
    }
    Probe::Entry(table + mode.entry_offset_of(addr, 1))
}
