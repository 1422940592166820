//! The page walker: one loop that walks any radix table (x86 or EPT format, 4 or 5 levels),
//! reading real entries and setting Accessed/Dirty bits as hardware does.
//!
//! A 2D (nested) walk is this loop run on the guest tables with a [`TableMemory`] that turns
//! every guest table address into a host address by running this loop again on the EPT
//! (see `mmu.rs`); the final guest-physical address is translated the same way. That is all
//! the difference between a 1D and a 2D walk, and it is why the reference counts come out as
//! 4 (native) and 24 (nested, 4K on 4K) without either number being written down anywhere.

use crate::addr::PageSize;
use crate::hw::assoc::{TranslationCache, TranslationCacheConfig};
use crate::hw::x86::paging::{PagingMode, X86_64_4LEVEL};
use crate::hw::x86::pte::{EntryFormat, Perms, FRAME_MASK};

/// Which tables a fault came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dimension {
    /// The tables the OS built (the guest's, or the native kernel's).
    Guest,
    /// The hypervisor's EPT (GPA -> HPA).
    Ept,
}

/// Why a walk faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// An entry on the walk had its present bit clear.
    NotPresent,
    /// The permissions along the walk deny the access (say, a write to a read-only page),
    /// or a large-page bit sits at a level where no leaf may be.
    Protection,
    /// A memory-tag check failed: the frame belongs to someone else (TPT isolation).
    TagViolation,
}

/// An architectural translation fault: an ordinary value, handled by the OS (guest dimension)
/// or the hypervisor (EPT dimension, an EPT violation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fault {
    /// The tables being walked when the fault happened.
    pub dimension: Dimension,
    /// The address being translated in that dimension (a GVA, or a GPA for EPT faults).
    pub addr: u64,
    /// The level whose entry denied the translation.
    pub level: u8,
    /// Why the translation was denied.
    pub kind: FaultKind,
    /// Whether the faulting access was a write.
    pub write: bool,
}

/// A completed walk: the page the address lies in, in the walked dimension's output space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Leaf {
    /// Output address of the start of the page.
    pub base: u64,
    /// The page's size (set by the level the leaf entry sits at).
    pub size: PageSize,
    /// The permissions of every entry on the walk, combined, packed as [`Perms::bits`]
    /// (translation caches and the next dimension combine them packed).
    pub perm_bits: u64,
}

impl Leaf {
    /// The permissions of every entry on the walk, combined.
    pub fn perms(&self) -> Perms {
        Perms::from_bits(self.perm_bits)
    }

    /// The output address of `addr` (an input address inside this page).
    pub fn output(&self, addr: u64) -> u64 {
        self.base | (addr & (self.size.bytes() - 1))
    }
}

/// Where the walker's table reads go.
pub trait TableMemory {
    /// The host address of the entry at `entry_addr`, an address in the walked dimension's
    /// table space (host-physical for native and EPT tables, guest-physical for guest tables).
    fn locate(&mut self, entry_addr: u64) -> Result<crate::addr::Hpa, Fault>;
    /// Read one entry: one walk reference, through the cache hierarchy.
    fn read(&mut self, at: crate::addr::Hpa) -> u64;
    /// Atomically set bits in an entry (A/D updates).
    fn set_bits(&mut self, at: crate::addr::Hpa, bits: u64);

    /// The walk goes down through the non-leaf `entry` just read. Tables in one address
    /// space ignore it; agile paging's tables change space below an entry with the switch
    /// bit (`crate::hw::x86::agile`).
    #[inline(always)]
    fn descend(&mut self, _entry: u64) {}

    /// The table space the walk is in, as bits 4..=5 of a walk-cache value (beside the
    /// packed permissions in bits 0..=3), so a walk that starts from a cached prefix starts
    /// in the right space. Zero for tables in one space.
    #[inline(always)]
    fn space_bits(&self) -> u64 {
        0
    }

    /// Enter the table space a walk-cache value (its bits 4..=5) says the cached table is in.
    #[inline(always)]
    fn enter_space(&mut self, _cached: u64) {}
}

/// Paging-structure caches of one dimension: for levels 2..=4 (PDE, PDPTE, PML4E caches) they
/// map an address prefix to the next table's address and the permissions accumulated so far,
/// so a walk can start below the top (Intel SDM vol. 3, 4.10.3). A PML5E cache is not modeled.
#[derive(Debug)]
pub struct WalkCaches {
    /// Index `level - 2`.
    by_level: [TranslationCache; 3],
}

/// Bit position of the address-space tag (PCID, VPID) in cache keys: above every prefix.
pub const TAG_SHIFT: u32 = 48;

impl WalkCaches {
    /// Caches of the given geometry for the PDE, PDPTE and PML4E levels.
    pub fn new(
        pde: &TranslationCacheConfig,
        pdpte: &TranslationCacheConfig,
        pml4e: &TranslationCacheConfig,
    ) -> Self {
        WalkCaches {
            by_level: [
                TranslationCache::new(pde),
                TranslationCache::new(pdpte),
                TranslationCache::new(pml4e),
            ],
        }
    }

    /// Every level off: walks always start at the root.
    pub fn disabled() -> Self {
        let off = TranslationCacheConfig::DISABLED;
        Self::new(&off, &off, &off)
    }

    /// The key of `addr`'s prefix at `level`: the cached levels (2..=4) have the same
    /// geometry in every x86 paging mode.
    fn key(level: u8, addr: u64, tag: u64) -> u64 {
        (addr >> X86_64_4LEVEL.level_shift(level)) | (tag << TAG_SHIFT)
    }

    /// Drop every cached prefix, of every tag.
    pub fn flush(&mut self) {
        self.by_level.iter_mut().for_each(TranslationCache::flush);
    }

    /// Drop every cached prefix covering `addr` (INVLPG drops the paging-structure caches).
    pub fn invalidate_addr(&mut self, addr: u64, tag: u64) {
        for level in 2..=4u8 {
            self.by_level[level as usize - 2].invalidate(Self::key(level, addr, tag));
        }
    }

    /// Drop entries of one address-space tag.
    pub fn flush_tag(&mut self, tag: u64) {
        for cache in &mut self.by_level {
            cache.retain(|key, _| key >> TAG_SHIFT != tag);
        }
    }

    /// Probe the caches for `addr`'s prefixes, deepest first, as a walk does: the level of
    /// the first that holds one, and its value (the next table and the permissions above).
    #[inline(always)]
    pub(crate) fn probe(&mut self, addr: u64, tag: u64) -> Option<(u8, u64)> {
        // Constant bounds (every cached level is below the root): the probes unroll, each
        // with its cache and key shift fixed.
        for level in 2..=4u8 {
            if let Some(value) =
                self.by_level[level as usize - 2].lookup(Self::key(level, addr, tag))
            {
                return Some((level, value));
            }
        }
        None
    }

    /// Fill the cache of `level` (2..=4) for `addr`'s prefix, which its probe just missed.
    #[inline(always)]
    pub(crate) fn fill_absent(&mut self, level: u8, addr: u64, tag: u64, value: u64) {
        self.by_level[level as usize - 2].fill_absent(Self::key(level, addr, tag), value);
    }

    /// (hits, misses) of the cache for `level` (2..=4).
    pub fn stats(&self, level: u8) -> (u64, u64) {
        let c = &self.by_level[level as usize - 2];
        (c.hits(), c.misses())
    }
}

/// Bits of address below the part that indexes the table at `level` (level 1 = PT), in
/// x86-64 paging. Kept for callers that have not moved to [`PagingMode::level_shift`].
#[inline]
pub const fn level_shift(level: u8) -> u32 {
    X86_64_4LEVEL.level_shift(level)
}

/// What one walk translates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkRequest {
    /// The top-level table's address, in the walked dimension's table space.
    pub root: u64,
    /// The address to translate.
    pub addr: u64,
    /// The address space's tag (PCID or VPID): part of every walk-cache key.
    pub tag: u64,
    /// Whether the access is a write (the leaf's D bit, write permission).
    pub write: bool,
}

/// Where a walk starts: the table at `level`, the entries above having allowed `perms`
/// (packed [`Perms::bits`]). The root, or the table a walk cache remembered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Start {
    pub(crate) level: u8,
    pub(crate) table: u64,
    pub(crate) perms: u64,
}

/// Walk the tables rooted at `req.root` (an address in the table space) for `req.addr`.
///
/// `mode` gives the levels, the index of each and the leaf rules. `caches`, if given, are
/// probed deepest first to skip upper levels and filled with each non-leaf entry read. Sets A
/// on every entry used and D on the leaf of a write; a failed permission check leaves the
/// leaf's D bit alone. Returns the number of entry reads through `refs`.
pub fn walk<F: EntryFormat, T: TableMemory>(
    tables: &mut T,
    caches: Option<&mut WalkCaches>,
    dimension: Dimension,
    mode: &PagingMode,
    req: WalkRequest,
    refs: &mut u64,
) -> Result<Leaf, Fault> {
    walk_loop::<F, T>(tables, caches, dimension, mode, req, refs)
}

/// [`walk`] for the x86 MMU's miss path, whose modes are x86-64 ones: at 4 levels (the usual
/// case) the loop runs on the constant descriptor, so its geometry folds into the
/// instructions as if it were written out; at 5 the same loop reads the descriptor.
#[inline(always)]
pub(crate) fn walk_fast<F: EntryFormat, T: TableMemory>(
    tables: &mut T,
    caches: Option<&mut WalkCaches>,
    dimension: Dimension,
    mode: &PagingMode,
    req: WalkRequest,
    refs: &mut u64,
) -> Result<Leaf, Fault> {
    if mode.levels() == X86_64_4LEVEL.levels() {
        debug_assert_eq!(*mode, X86_64_4LEVEL);
        walk_loop::<F, T>(tables, caches, dimension, &X86_64_4LEVEL, req, refs)
    } else {
        walk_loop::<F, T>(tables, caches, dimension, mode, req, refs)
    }
}

/// The walk loop, inlined into [`walk`] and [`walk_fast`].
#[inline(always)]
fn walk_loop<F: EntryFormat, T: TableMemory>(
    tables: &mut T,
    mut caches: Option<&mut WalkCaches>,
    dimension: Dimension,
    mode: &PagingMode,
    req: WalkRequest,
    refs: &mut u64,
) -> Result<Leaf, Fault> {
    let mut start = Start {
        level: mode.levels(),
        table: req.root & FRAME_MASK,
        // Accumulated as packed [`Perms::bits`]: one AND per level.
        perms: Perms::ALL.bits(),
    };
    debug_assert!(mode.levels() >= 4, "walk caches cover levels 2..=4");
    if let Some((cached_level, value)) = caches
        .as_deref_mut()
        .and_then(|c| c.probe(req.addr, req.tag))
    {
        start = Start {
            level: cached_level - 1,
            table: value & FRAME_MASK,
            perms: value & Perms::ALL.bits(),
        };
        tables.enter_space(value);
    }
    descend::<F, T>(tables, caches, dimension, mode, start, req, refs)
}

/// The walk from `start`: what [`walk`] does below where its caches let it start (`req.root`
/// is not read). `caches`, if given, are filled with each non-leaf entry read.
#[inline(always)]
pub(crate) fn descend<F: EntryFormat, T: TableMemory>(
    tables: &mut T,
    mut caches: Option<&mut WalkCaches>,
    dimension: Dimension,
    mode: &PagingMode,
    start: Start,
    req: WalkRequest,
    refs: &mut u64,
) -> Result<Leaf, Fault> {
    let WalkRequest {
        addr, tag, write, ..
    } = req;
    let Start {
        mut level,
        mut table,
        mut perms,
    } = start;
    let fault = |level, kind| Fault {
        dimension,
        addr,
        level,
        kind,
        write,
    };

    // The mode's geometry, read once: a step below shifts the address by one index width
    // less, so each level costs a shift, a mask and a scale, as with constants. These are
    // [`PagingMode::entry_offset_of`] and [`PagingMode::classify`] unrolled into the loop.
    let (index_bits, index_mask) = (mode.index_bits(), mode.index_mask());
    let (entry_shift, max_leaf_level) = (mode.entry_shift(), mode.max_leaf_level());
    let mut shift = mode.level_shift(level);
    loop {
        let at = tables.locate(table + (((addr >> shift) & index_mask) << entry_shift))?;
        let entry = tables.read(at);
        *refs += 1;
        if !F::is_present(entry) {
            return Err(fault(level, FaultKind::NotPresent));
        }
        perms &= F::perm_bits(entry);
        if level == 1 || F::is_large(entry) {
            if level > max_leaf_level {
                // A large bit where no leaf may sit is reserved: a protection fault.
                return Err(fault(level, FaultKind::Protection));
            }
            // A leaf at this level maps the address bits below its index.
            let size = PageSize::from_level_shift(shift);
            if !Perms::bits_allow(perms, write) {
                return Err(fault(level, FaultKind::Protection));
            }
            let bits = if write {
                F::ACCESSED | F::DIRTY
            } else {
                F::ACCESSED
            };
            if entry & bits != bits {
                tables.set_bits(at, bits);
            }
            let base = PagingMode::leaf_base::<F>(entry, size);
            return Ok(Leaf {
                base,
                size,
                perm_bits: perms,
            });
        }
        if entry & F::ACCESSED == 0 {
            tables.set_bits(at, F::ACCESSED);
        }
        table = F::frame_addr(entry);
        tables.descend(entry);
        if let Some(caches) = caches.as_deref_mut() {
            if level <= 4 {
                // Every level below the cache hit (if any) was probed and missed.
                caches.fill_absent(level, addr, tag, table | perms | tables.space_bits());
            }
        }
        level -= 1;
        shift -= index_bits;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Hpa;
    use crate::hw::frames::HostMemory;
    use crate::hw::x86::pte::X86;

    /// Host memory read directly, counting nothing but the refs the walker counts.
    struct Direct<'a>(&'a mut HostMemory);

    impl TableMemory for Direct<'_> {
        fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
            Ok(Hpa::new(entry_addr))
        }
        fn read(&mut self, at: Hpa) -> u64 {
            self.0.read_u64(at)
        }
        fn set_bits(&mut self, at: Hpa, bits: u64) {
            self.0.or_u64(at, bits)
        }
    }

    /// Tables mapping VA 0x4000_1000 -> frame 0x99 with 4 levels, roots at frames 1..=4.
    fn four_level(mem: &mut HostMemory, leaf_perms: Perms) -> u64 {
        let va: u64 = 0x4000_1000;
        let tables = [0x1000u64, 0x2000, 0x3000, 0x4000];
        for level in (2..=4u8).rev() {
            let table = tables[4 - level as usize];
            let idx = (va >> level_shift(level)) & 0x1ff;
            mem.write_u64(
                Hpa::new(table + idx * 8),
                X86::table(tables[5 - level as usize]),
            );
        }
        mem.write_u64(
            Hpa::new(0x4000 + ((va >> 12) & 0x1ff) * 8),
            X86::leaf(0x99000, leaf_perms, false),
        );
        va
    }

    #[test]
    fn native_walk_reads_four_entries_and_sets_accessed_then_dirty() {
        let mut mem = HostMemory::new(1 << 30);
        let va = four_level(&mut mem, Perms::ALL);
        let leaf_at = Hpa::new(0x4000 + ((va >> 12) & 0x1ff) * 8);
        mem.write_u64(leaf_at, mem.read_u64(leaf_at) & !X86::ACCESSED_BIT);
        let mut refs = 0;
        let leaf = walk::<X86, _>(
            &mut Direct(&mut mem),
            None,
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va + 0x123,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, 4);
        assert_eq!(leaf.output(va + 0x123), 0x99123);
        assert_eq!(leaf.size, PageSize::Size4K);
        assert_eq!(
            mem.read_u64(leaf_at) & (X86::ACCESSED_BIT | X86::DIRTY_BIT),
            X86::ACCESSED_BIT
        );
        walk::<X86, _>(
            &mut Direct(&mut mem),
            None,
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 0,
                write: true,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, 8);
        assert_ne!(mem.read_u64(leaf_at) & X86::DIRTY_BIT, 0);
    }

    #[test]
    fn read_only_leaf_faults_on_write_without_setting_dirty() {
        let mut mem = HostMemory::new(1 << 30);
        let va = four_level(
            &mut mem,
            Perms {
                write: false,
                ..Perms::ALL
            },
        );
        let mut refs = 0;
        let err = walk::<X86, _>(
            &mut Direct(&mut mem),
            None,
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 0,
                write: true,
            },
            &mut refs,
        )
        .unwrap_err();
        assert_eq!(
            (err.level, err.kind, err.dimension),
            (1, FaultKind::Protection, Dimension::Guest)
        );
        let leaf_at = Hpa::new(0x4000 + ((va >> 12) & 0x1ff) * 8);
        assert_eq!(mem.read_u64(leaf_at) & X86::DIRTY_BIT, 0);
    }

    #[test]
    fn missing_entry_faults_at_its_level() {
        let mut mem = HostMemory::new(1 << 30);
        let mut refs = 0;
        let err = walk::<X86, _>(
            &mut Direct(&mut mem),
            None,
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: 0x1234_5000,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap_err();
        assert_eq!((err.level, err.kind, refs), (4, FaultKind::NotPresent, 1));
    }

    #[test]
    fn walk_caches_skip_upper_levels() {
        let mut mem = HostMemory::new(1 << 30);
        let va = four_level(&mut mem, Perms::ALL);
        let cfg = TranslationCacheConfig {
            entries: 4,
            ways: 4,
        };
        let mut caches = WalkCaches::new(&cfg, &cfg, &cfg);
        let mut refs = 0;
        walk::<X86, _>(
            &mut Direct(&mut mem),
            Some(&mut caches),
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, 4);
        // Same 2 MiB region: the PDE cache hands over the PT directly.
        walk::<X86, _>(
            &mut Direct(&mut mem),
            Some(&mut caches),
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va + 0x1000,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap_err();
        assert_eq!(refs, 5);
        // Another address-space tag misses every cache.
        walk::<X86, _>(
            &mut Direct(&mut mem),
            Some(&mut caches),
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 7,
                write: false,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, 9);
        caches.invalidate_addr(va, 0);
        walk::<X86, _>(
            &mut Direct(&mut mem),
            Some(&mut caches),
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(refs, 13);
    }

    #[test]
    fn large_leaf_ends_the_walk_early() {
        let mut mem = HostMemory::new(1 << 30);
        let va: u64 = 0x4020_0000 + 0x1234;
        mem.write_u64(Hpa::new(0x1000), X86::table(0x2000));
        mem.write_u64(Hpa::new(0x2000 + 8), X86::table(0x3000));
        mem.write_u64(Hpa::new(0x3000 + 8), X86::leaf(0x60_0000, Perms::ALL, true));
        let mut refs = 0;
        let leaf = walk::<X86, _>(
            &mut Direct(&mut mem),
            None,
            Dimension::Guest,
            &X86_64_4LEVEL,
            WalkRequest {
                root: 0x1000,
                addr: va,
                tag: 0,
                write: false,
            },
            &mut refs,
        )
        .unwrap();
        assert_eq!(
            (refs, leaf.size, leaf.output(va)),
            (3, PageSize::Size2M, 0x60_1234)
        );
    }

    mod soft_walk_agrees {
        //! The software walk helper ([`PagingMode::soft_walk`]) against the hardware walker
        //! on random tables: same leaf, same page size, same permissions, and a fault at the
        //! same level for the same reason.
        use super::*;
        use crate::addr::Hfn;
        use crate::hw::x86::paging::{SoftWalk, X86_64_5LEVEL};
        use proptest::prelude::*;

        /// Table pages are frames 1..=TABLES; entries are written at a few indices each, and
        /// addresses are made of the same indices, so walks go deep.
        const TABLES: u64 = 6;
        const INDICES: [u64; 4] = [0, 1, 2, 511];

        /// A random entry: absent, a table pointer, a leaf (large bit or not) or any bits
        /// at all (frame kept inside the 1 GiB of test memory).
        fn entry() -> impl Strategy<Value = u64> {
            let perms = (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(w, u, x)| Perms {
                read: true,
                write: w,
                user: u,
                exec: x,
            });
            prop_oneof![
                1 => Just(0u64),
                1 => (1..=TABLES, perms.clone()).prop_map(|(t, p)| X86::leaf(t << 12, p, false)),
                5 => (1..=TABLES).prop_map(|t| X86::table(t << 12)),
                2 => (0..1u64 << 18, perms, any::<bool>())
                    .prop_map(|(f, p, large)| X86::leaf(f << 12, p, large)),
                1 => any::<u64>().prop_map(|e| e & !(FRAME_MASK & !0x3fff_f000)),
            ]
        }

        fn tables() -> impl Strategy<Value = Vec<u64>> {
            proptest::collection::vec(entry(), (TABLES as usize) * INDICES.len())
        }

        fn address() -> impl Strategy<Value = u64> {
            (proptest::collection::vec(0..INDICES.len(), 5), 0..4096u64).prop_map(|(ix, off)| {
                ix.iter()
                    .enumerate()
                    .fold(off, |a, (l, &i)| a | INDICES[i] << (12 + 9 * l))
            })
        }

        proptest! {
            #[test]
            fn on_random_tables(
                entries in tables(),
                addrs in proptest::collection::vec(address(), 1..16),
                five in any::<bool>(),
                write in any::<bool>(),
            ) {
                let mode = if five { X86_64_5LEVEL } else { X86_64_4LEVEL };
                let mut mem = HostMemory::new(1 << 30);
                for (n, &e) in entries.iter().enumerate() {
                    let (t, i) = (1 + n as u64 / INDICES.len() as u64, INDICES[n % INDICES.len()]);
                    mem.write_u64(Hpa::new((t << 12) | (i * 8)), e);
                }
                for addr in addrs {
                    let read = |t: Hfn, i: usize| {
                        Ok::<_, ()>(mem.read_u64(t.addr_at(mode.entry_offset(i))))
                    };
                    let soft = mode.soft_walk::<X86, _, _>(Hfn::new(1), addr, read).unwrap();
                    let mut refs = 0;
                    let hard = walk::<X86, _>(&mut Direct(&mut mem), None, Dimension::Guest, &mode, WalkRequest { root: 0x1000, addr, tag: 0, write }, &mut refs);
                    match (soft, hard) {
                        (SoftWalk::Leaf { at, size, perms }, Ok(leaf)) => {
                            prop_assert!(perms.allows(write));
                            prop_assert_eq!(leaf.size, size);
                            prop_assert_eq!(leaf.perms(), perms);
                            prop_assert_eq!(leaf.base, PagingMode::leaf_base::<X86>(at.entry, size));
                            prop_assert_eq!(refs, (mode.levels() - at.slot.level + 1) as u64);
                        }
                        (SoftWalk::Leaf { at, perms, .. }, Err(f)) => {
                            prop_assert!(!perms.allows(write));
                            prop_assert_eq!((f.kind, f.level), (FaultKind::Protection, at.slot.level));
                        }
                        (SoftWalk::NotPresent(at), Err(f)) => {
                            prop_assert_eq!((f.kind, f.level), (FaultKind::NotPresent, at.slot.level));
                        }
                        (SoftWalk::Reserved(at), Err(f)) => {
                            prop_assert_eq!((f.kind, f.level), (FaultKind::Protection, at.slot.level));
                        }
                        (soft, hard) => prop_assert!(false, "soft {:?}, hardware {:?}", soft, hard),
                    }
                }
            }
        }
    }
}
