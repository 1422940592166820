//! The memory-management unit: TLBs, paging-structure caches, nested (GPA->HPA) caches and
//! the walker, in front of the cache hierarchy.
//!
//! The hit path ([`Mmu::access`]) is one probe of the L1 DTLB for each page size in use and a
//! cache-hierarchy access; everything else (STLB, walks, fills) is out of line. Which tables
//! the hardware walks is the [`Root`]: a 1D root (native, and later shadow, PV and TPT) or a
//! 2D root (nested paging). The scheme decides the root once; the MMU does not know schemes.
//!
//! Simplifications, named here so readers know what the model is:
//! - Walks are in order and one at a time; walker parallelism is a cost-model parameter.
//! - TLBs and walk caches use LRU replacement. The STLB holds 4K and 2M entries in one array
//!   (a 2M entry is looked up with its own key, as a second probe); 1G entries have their own.
//! - Guest paging-structure caches hold the guest-physical address of the next guest table;
//!   that address is then translated through the nested TLB (GPA->HPA cache) and the EPT walk
//!   caches, as an EPT-aware walker would (Intel SDM vol. 3, 29.4; Bhargava et al., ASPLOS 2008).
//! - With EPT accessed/dirty flags on, every guest paging-structure access is an EPT write
//!   (Intel SDM vol. 3, 29.3.5), so guest table pages get EPT dirty bits.
//! - The EPT walk caches belong to the cache hierarchy's back end: an EPT walk's result is
//!   taken from the EPT in memory here, and its references from the replay of its path
//!   there, through those caches (`crate::hw::x86::deferred`; the same walks, split for host
//!   speed).
//! - The kernel's own accesses (page zeroing, table edits) do not go through this MMU; their
//!   cost is the kernel model's.

use crate::addr::{Gfn, Gpa, Gva, Hfn, Hpa, PageSize};
use crate::host::prefetch::{prefetch, LeafTable, LeafTables, Lookahead, Tables, LOOKAHEAD_BATCH};
use crate::hw::assoc::{TranslationCache, TranslationCacheConfig};
use crate::hw::cache::{MemoryConfig, Requester};
use crate::hw::frames::HostMemory;
use crate::hw::memory::MemoryHierarchy;
use crate::hw::x86::agile::{AgileTables, Space};
use crate::hw::x86::deferred::{self, EptPaths, EptReplay};
use crate::hw::x86::paging::{EntryKind, PagingMode, SoftWalk, X86_64_4LEVEL, X86_64_5LEVEL};
use crate::hw::x86::pte::{EntryFormat, Ept, Perms, FRAME_MASK, X86};
use crate::hw::x86::walker::{
    walk, walk_fast, Dimension, Fault, Leaf, TableMemory, WalkCaches, WalkRequest, TAG_SHIFT,
};

mod lookahead;
mod tables;

pub(crate) use tables::Nested;
use tables::{HostTables, TaggedTables};

/// Geometry of every translation structure; `entries = 0` disables one.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbConfig {
    /// The L1 DTLB for 4K pages.
    pub l1_4k: TranslationCacheConfig,
    /// The L1 DTLB for 2M pages.
    pub l1_2m: TranslationCacheConfig,
    /// The L1 DTLB for 1G pages.
    pub l1_1g: TranslationCacheConfig,
    /// The unified second-level TLB for 4K and 2M pages.
    pub stlb: TranslationCacheConfig,
    /// The second-level TLB for 1G pages.
    pub stlb_1g: TranslationCacheConfig,
    /// Paging-structure cache of the guest (or native) tables' PDEs (level 2).
    pub pde_cache: TranslationCacheConfig,
    /// Paging-structure cache of the guest (or native) tables' PDPTEs (level 3).
    pub pdpte_cache: TranslationCacheConfig,
    /// Paging-structure cache of the guest (or native) tables' PML4Es (level 4).
    pub pml4e_cache: TranslationCacheConfig,
    /// Cached guest-physical mappings (GPA -> HPA), used by 2D walks.
    pub nested_tlb: TranslationCacheConfig,
    /// Paging-structure cache of the EPT's PDEs (level 2).
    pub ept_pde_cache: TranslationCacheConfig,
    /// Paging-structure cache of the EPT's PDPTEs (level 3).
    pub ept_pdpte_cache: TranslationCacheConfig,
    /// Paging-structure cache of the EPT's PML4Es (level 4).
    pub ept_pml4e_cache: TranslationCacheConfig,
}

impl TlbConfig {
    /// Every structure off: each access walks; used by the exact reference-count tests.
    pub fn all_disabled() -> Self {
        let off = TranslationCacheConfig::DISABLED;
        TlbConfig {
            l1_4k: off.clone(),
            l1_2m: off.clone(),
            l1_1g: off.clone(),
            stlb: off.clone(),
            stlb_1g: off.clone(),
            pde_cache: off.clone(),
            pdpte_cache: off.clone(),
            pml4e_cache: off.clone(),
            nested_tlb: off.clone(),
            ept_pde_cache: off.clone(),
            ept_pdpte_cache: off.clone(),
            ept_pml4e_cache: off,
        }
    }

    /// Checks every structure's geometry; the error names the structure (`tlb.stlb`, ...).
    pub fn validate(&self) -> Result<(), String> {
        for (name, cfg) in self.named() {
            cfg.validate(name)?;
        }
        Ok(())
    }

    fn named(&self) -> [(&'static str, &TranslationCacheConfig); 12] {
        [
            ("tlb.l1_4k", &self.l1_4k),
            ("tlb.l1_2m", &self.l1_2m),
            ("tlb.l1_1g", &self.l1_1g),
            ("tlb.stlb", &self.stlb),
            ("tlb.stlb_1g", &self.stlb_1g),
            ("tlb.pde_cache", &self.pde_cache),
            ("tlb.pdpte_cache", &self.pdpte_cache),
            ("tlb.pml4e_cache", &self.pml4e_cache),
            ("tlb.nested_tlb", &self.nested_tlb),
            ("tlb.ept_pde_cache", &self.ept_pde_cache),
            ("tlb.ept_pdpte_cache", &self.ept_pdpte_cache),
            ("tlb.ept_pml4e_cache", &self.ept_pml4e_cache),
        ]
    }
}

/// The tables the hardware walks on a TLB miss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Root {
    /// No translation yet: every access faults in the guest dimension.
    None,
    /// A 1D walk from a host-physical root: native paging, a shadow page table, a PV guest's
    /// validated tables, and TPT's direct tables without memory tags (`tpt-prototype`) alike.
    OneD {
        /// Host-physical address of the top-level table.
        cr3: Hpa,
    },
    /// A 2D walk: guest tables from a guest-physical root, each reference through the EPT.
    TwoD {
        /// Guest-physical address of the guest's top-level table.
        guest_cr3: Gpa,
        /// Host-physical address of the EPT's top-level table.
        eptp: Hpa,
    },
    /// A 1D walk of guest-built host-address tables (TPT): every table frame the walk
    /// touches and the final frame must be tagged to the VM, checked before use.
    Tagged {
        /// Host-physical address of the top-level table.
        cr3: Hpa,
    },
    /// Agile paging: a walk of shadow tables from a host-physical root that switches to the
    /// guest's tables, through the EPT, below an entry with the switch bit
    /// ([`crate::hw::x86::agile`]).
    Agile {
        /// Host-physical address of the top-level shadow table.
        cr3: Hpa,
        /// Host-physical address of the EPT's top-level table.
        eptp: Hpa,
    },
}

impl Root {
    /// The EPT root the walks from this root use, if they use one.
    fn eptp(self) -> Option<Hpa> {
        match self {
            Root::TwoD { eptp, .. } | Root::Agile { eptp, .. } => Some(eptp),
            Root::None | Root::OneD { .. } | Root::Tagged { .. } => None,
        }
    }
}

crate::count_struct! {
    /// Event counters of the MMU (all exact).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
    pub struct MmuCounters {
        /// User-mode data accesses ([`Mmu::access`] calls), faulting ones included.
        pub accesses: u64,
        /// Accesses that missed every L1 DTLB.
        pub l1_tlb_misses: u64,
        /// L1 misses served by the STLB.
        pub stlb_hits: u64,
        /// Accesses for which no TLB held a usable translation (L1 and STLB miss).
        pub tlb_misses: u64,
        /// Page walks started (TLB misses, plus re-walks to set a dirty bit).
        pub walks: u64,
        /// Entry reads of the guest (or native) tables.
        pub guest_refs: u64,
        /// Entry reads of the EPT.
        pub ept_refs: u64,
        /// GPA->HPA translations served by the nested TLB.
        pub nested_tlb_hits: u64,
        /// GPA->HPA translations that needed an EPT walk.
        pub nested_tlb_misses: u64,
        /// Walks that ended in a fault (either dimension).
        pub faults: u64,
        /// TLB fills checked against the memory tags (walks from a tagged root).
        pub tag_fills: u64,
        /// Frames checked against the memory tags (each table frame and the final frame).
        pub tag_checks: u64,
        /// Tag checks that failed: the frame belongs to someone else.
        pub tag_violations: u64,
    }
}

impl MmuCounters {
    /// Every entry read of a walk, both dimensions.
    pub fn walk_refs(&self) -> u64 {
        self.guest_refs + self.ept_refs
    }

    /// Every count multiplied by `factor`, rounded (an estimate from a sample).
    pub fn scaled(&self, factor: f64) -> MmuCounters {
        let scale = |x: u64| (x as f64 * factor).round() as u64;
        MmuCounters {
            accesses: scale(self.accesses),
            l1_tlb_misses: scale(self.l1_tlb_misses),
            stlb_hits: scale(self.stlb_hits),
            tlb_misses: scale(self.tlb_misses),
            walks: scale(self.walks),
            guest_refs: scale(self.guest_refs),
            ept_refs: scale(self.ept_refs),
            nested_tlb_hits: scale(self.nested_tlb_hits),
            nested_tlb_misses: scale(self.nested_tlb_misses),
            faults: scale(self.faults),
            tag_fills: scale(self.tag_fills),
            tag_checks: scale(self.tag_checks),
            tag_violations: scale(self.tag_violations),
        }
    }
}

// Layout of a cached translation value: output page base in bits 12..=51, permissions in
// bits 0..=3, and a dirty bit (a write may use the entry without a walk).
const VALUE_DIRTY: u64 = 1 << 4;
// Size tag in keys of arrays that hold several page sizes.
const SIZE_TAG_SHIFT: u32 = 62;

/// A page size as the x86 TLBs hold it: the three x86 sizes, whose dense index (4K = 0,
/// 2M = 1, 1G = 2) picks the per-size L1 DTLB, the bit in the sizes in use and the size tag
/// in TLB keys. The MMU's own form of [`PageSize`], converted once per walk, so the hit path
/// keeps constant shifts and indices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TlbSize {
    K4 = 0,
    M2 = 1,
    G1 = 2,
}

impl TlbSize {
    /// Every size, by index.
    const ALL: [TlbSize; 3] = [TlbSize::K4, TlbSize::M2, TlbSize::G1];

    /// The TLB form of a size an x86 walk produced (4K, 2M or 1G).
    #[inline(always)]
    fn of(size: PageSize) -> TlbSize {
        debug_assert!(matches!(size.shift(), 12 | 21 | 30), "{size}");
        match size.shift() {
            12 => TlbSize::K4,
            21 => TlbSize::M2,
            _ => TlbSize::G1,
        }
    }

    #[inline(always)]
    const fn index(self) -> usize {
        self as usize
    }

    #[inline(always)]
    const fn page_size(self) -> PageSize {
        match self {
            TlbSize::K4 => PageSize::Size4K,
            TlbSize::M2 => PageSize::Size2M,
            TlbSize::G1 => PageSize::Size1G,
        }
    }

    #[inline(always)]
    const fn shift(self) -> u32 {
        self.page_size().shift()
    }

    #[inline(always)]
    const fn bytes(self) -> u64 {
        1 << self.shift()
    }
}

#[inline]
fn tlb_key(addr: u64, size: TlbSize, tag: u64) -> u64 {
    (addr >> size.shift()) | (tag << TAG_SHIFT) | ((size.index() as u64) << SIZE_TAG_SHIFT)
}

/// The page sizes whose bit is set in `in_use` (bit [`TlbSize::index`]), smallest first:
/// one step per size in use (usually just 4K) rather than a test of every size.
#[inline(always)]
fn sizes_in(in_use: u8) -> impl Iterator<Item = TlbSize> {
    let mut bits = in_use & 0b111;
    std::iter::from_fn(move || {
        if bits == 0 {
            return None;
        }
        let size = match bits.trailing_zeros() {
            0 => TlbSize::K4,
            1 => TlbSize::M2,
            _ => TlbSize::G1,
        };
        bits &= bits - 1;
        Some(size)
    })
}

/// The first `Some` of `probe(size)` over the page sizes in `in_use`, smallest first (see
/// [`sizes_in`]). With only 4K pages in use, the usual case, `probe` runs once with a
/// constant size, so its key packing and offset masks fold to constants. Callers mark
/// `probe` `#[inline(always)]`: called from two places, it is otherwise kept out of line.
#[inline(always)]
fn first_size<T>(in_use: u8, mut probe: impl FnMut(TlbSize) -> Option<T>) -> Option<T> {
    if in_use == 1 << TlbSize::K4.index() {
        return probe(TlbSize::K4);
    }
    sizes_in(in_use).find_map(probe)
}

#[inline]
fn usable(value: u64, write: bool) -> bool {
    Perms::bits_allow(value, write) && (!write || value & VALUE_DIRTY != 0)
}

fn tlb_value(base: u64, perm_bits: u64, dirty: bool) -> u64 {
    (base & FRAME_MASK) | perm_bits | if dirty { VALUE_DIRTY } else { 0 }
}

/// The MMU of one simulated core.
pub struct Mmu {
    /// L1 DTLBs indexed by [`TlbSize::index`].
    l1: [TranslationCache; 3],
    stlb: TranslationCache,
    stlb_1g: TranslationCache,
    guest_caches: WalkCaches,
    nested_tlb: TranslationCache,
    /// Upper EPT paths the walks found (host speed only; see [`EptPaths`]).
    ept_paths: EptPaths,
    /// The cache hierarchy; its back end owns the EPT paging-structure caches
    /// ([`EptReplay`]).
    memory: MemoryHierarchy,
    root: Root,
    /// Address-space tag of the running context (PCID), part of every TLB key.
    tag: u64,
    /// The paging mode of both dimensions (x86-64 4- or 5-level paging, and EPT of the
    /// same depth).
    mode: &'static PagingMode,
    /// Bit i set once a TLB entry of page size i was filled: other sizes are not probed.
    sizes_in_use: u8,
    nested_sizes_in_use: u8,
    counters: MmuCounters,
    /// Whether tag checks read the tag table through the caches (else they cost nothing
    /// here and the cost model charges per fill).
    tag_reads: bool,
    /// Where the look-ahead of coming accesses stands (prefetching only).
    lookahead: Lookahead,
}

impl Mmu {
    /// A new MMU; `levels` is the paging depth of both dimensions (4 or 5).
    ///
    /// # Panics
    /// If `levels` is neither 4 nor 5 (the machine profile admits no other).
    pub fn new(tlb: &TlbConfig, memory: &MemoryConfig, levels: u8) -> Self {
        let mut memory = MemoryHierarchy::new(memory);
        memory.set_replay(Box::new(EptReplay::new(WalkCaches::new(
            &tlb.ept_pde_cache,
            &tlb.ept_pdpte_cache,
            &tlb.ept_pml4e_cache,
        ))));
        Mmu {
            l1: [
                TranslationCache::new(&tlb.l1_4k),
                TranslationCache::new(&tlb.l1_2m),
                TranslationCache::new(&tlb.l1_1g),
            ],
            stlb: TranslationCache::new(&tlb.stlb),
            stlb_1g: TranslationCache::new(&tlb.stlb_1g),
            guest_caches: WalkCaches::new(&tlb.pde_cache, &tlb.pdpte_cache, &tlb.pml4e_cache),
            nested_tlb: TranslationCache::new(&tlb.nested_tlb),
            ept_paths: EptPaths::default(),
            memory,
            root: Root::None,
            tag: 0,
            mode: PagingMode::x86_64_static(levels)
                .unwrap_or_else(|| panic!("{levels} paging levels: the profile allows 4 or 5")),
            sizes_in_use: 0,
            nested_sizes_in_use: 0,
            counters: MmuCounters::default(),
            tag_reads: false,
            lookahead: Lookahead::default(),
        }
    }

    /// Read tag-table entries through the cache hierarchy on every tag check.
    pub fn set_tag_reads(&mut self, on: bool) {
        self.tag_reads = on;
    }

    /// The MMU's event counters since it was made. Exact with no reference stream open
    /// (EPT entry reads are counted where the stream is served).
    pub fn counters(&self) -> MmuCounters {
        MmuCounters {
            ept_refs: self.ept_replay().map_or(0, EptReplay::refs),
            ..self.counters
        }
    }

    /// The back end's half of EPT walks, with no stream open.
    fn ept_replay(&self) -> Option<&EptReplay> {
        self.memory.replay::<EptReplay>()
    }

    /// The cache hierarchy behind the MMU.
    pub fn memory(&self) -> &MemoryHierarchy {
        &self.memory
    }

    /// The cache hierarchy, to open or close its reference stream (see
    /// [`crate::hw::pipeline`]).
    pub fn memory_mut(&mut self) -> &mut MemoryHierarchy {
        &mut self.memory
    }

    /// The tables walked on a TLB miss.
    pub fn root(&self) -> Root {
        self.root
    }

    /// The paging depth of both dimensions.
    pub fn levels(&self) -> u8 {
        self.mode.levels()
    }

    /// The paging mode the walker follows (both dimensions).
    pub fn paging_mode(&self) -> &PagingMode {
        self.mode
    }

    /// Load a new root (a CR3 write, or a VM entry with a new EPTP). With `flush`, the
    /// translations of the new tag are dropped, as a CR3 load without PCID does.
    pub fn set_root(&mut self, root: Root, tag: u64, flush: bool) {
        if let Some(eptp) = root.eptp() {
            // The EPT walks' back end learns the EPT root here, before any walk from it,
            // unless the root it has is this one: the running root's (records carry none).
            if self.root.eptp() != Some(eptp) {
                self.memory.defer(&EptReplay::root_record(eptp.raw()));
            }
        }
        self.root = root;
        self.tag = tag;
        if flush {
            self.flush_tag(tag);
        }
    }

    /// One user-mode data access: translate `va` and access its line. On a fault nothing is
    /// accessed and the fault is returned for the OS or hypervisor to handle.
    #[inline(always)]
    pub fn access(&mut self, mem: &mut HostMemory, va: Gva, write: bool) -> Result<Hpa, Fault> {
        self.counters.accesses += 1;
        let hpa = match self.l1_lookup(va.raw(), write) {
            Ok(hpa) => hpa,
            // The miss path is compiled apart for 2D roots, so that each kind of walk keeps
            // its code to itself.
            Err(l1_found) if matches!(self.root, Root::TwoD { .. }) => {
                self.l1_miss::<true>(mem, va.raw(), write, l1_found)?
            }
            Err(l1_found) => self.l1_miss::<false>(mem, va.raw(), write, l1_found)?,
        };
        self.memory.reference(hpa, Requester::Data);
        Ok(hpa)
    }

    /// Translate without side effects on caches or counters is not offered: a walk sets A/D
    /// bits. For checks, see [`crate::hw::x86::mmu::reference_translate`].
    /// On a miss, `Err` has bit `i` set for each page size `i` whose L1 DTLB held an entry
    /// for `va` (unusable for this access): the other sizes' L1 DTLBs hold none.
    #[inline]
    fn l1_lookup(&mut self, va: u64, write: bool) -> Result<Hpa, u8> {
        let (l1, tag, mut found) = (&mut self.l1, self.tag, 0);
        let hit = first_size(
            self.sizes_in_use,
            #[inline(always)]
            |size| {
                let value = l1[size.index()].lookup(tlb_key(va, size, tag))?;
                if usable(value, write) {
                    return Some(Hpa::new((value & FRAME_MASK) | (va & (size.bytes() - 1))));
                }
                found |= 1 << size.index();
                None
            },
        );
        hit.ok_or(found)
    }

    /// Fill the L1 DTLB of `size`; `l1_found` is what [`Self::l1_lookup`] reported, so an
    /// entry known to be absent is inserted without searching for it.
    #[inline(always)]
    fn l1_fill(&mut self, size: TlbSize, key: u64, value: u64, l1_found: u8) {
        let l1 = &mut self.l1[size.index()];
        if l1_found & (1 << size.index()) != 0 {
            l1.fill(key, value);
        } else {
            l1.fill_absent(key, value);
        }
    }

    #[cold]
    #[inline(never)]
    fn l1_miss<const TWO_D: bool>(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        write: bool,
        l1_found: u8,
    ) -> Result<Hpa, Fault> {
        self.counters.l1_tlb_misses += 1;
        let mut found_unusable = false;
        let tag = self.tag;
        let hit = first_size(
            self.sizes_in_use,
            #[inline(always)]
            |size| {
                let key = tlb_key(va, size, tag);
                let second_level = if size == TlbSize::G1 {
                    &mut self.stlb_1g
                } else {
                    &mut self.stlb
                };
                let value = second_level.lookup(key)?;
                if usable(value, write) {
                    return Some((size, key, value));
                }
                found_unusable = true;
                None
            },
        );
        if let Some((size, key, value)) = hit {
            self.counters.stlb_hits += 1;
            // The L1 probe of this size missed, or found this same entry unusable.
            self.l1_fill(size, key, value, l1_found);
            return Ok(Hpa::new((value & FRAME_MASK) | (va & (size.bytes() - 1))));
        }
        if !found_unusable {
            self.counters.tlb_misses += 1;
        }
        self.counters.walks += 1;
        let (base, size, perms) = match self.walk::<TWO_D>(mem, va, write) {
            Ok(t) => t,
            Err(fault) => {
                self.counters.faults += 1;
                return Err(fault);
            }
        };
        let size = TlbSize::of(size);
        let key = tlb_key(va, size, self.tag);
        let value = tlb_value(base, perms, write);
        self.sizes_in_use |= 1 << size.index();
        let second_level = if size == TlbSize::G1 {
            &mut self.stlb_1g
        } else {
            &mut self.stlb
        };
        if found_unusable {
            second_level.fill(key, value);
        } else {
            // Nothing at all for this key in the STLB probes.
            second_level.fill_absent(key, value);
        }
        self.l1_fill(size, key, value, l1_found);
        Ok(Hpa::new(base | (va & (size.bytes() - 1))))
    }

    /// Walk the current root for `va`: (host page base, page size, permissions packed as
    /// [`Perms::bits`]). `TWO_D`: whether the root is [`Root::TwoD`] (only that arm is
    /// compiled then, and only the others without it).
    fn walk<const TWO_D: bool>(
        &mut self,
        mem: &mut HostMemory,
        va: u64,
        write: bool,
    ) -> Result<(u64, PageSize, u64), Fault> {
        let mode = self.mode;
        match self.root {
            Root::None => Err(Fault {
                dimension: Dimension::Guest,
                addr: va,
                level: mode.levels(),
                kind: crate::hw::x86::walker::FaultKind::NotPresent,
                write,
            }),
            Root::OneD { cr3 } if !TWO_D => {
                let mut tables = HostTables {
                    mem,
                    memory: &mut self.memory,
                };
                let leaf = walk_fast::<X86, _>(
                    &mut tables,
                    Some(&mut self.guest_caches),
                    Dimension::Guest,
                    mode,
                    WalkRequest {
                        root: cr3.raw(),
                        addr: va,
                        tag: self.tag,
                        write,
                    },
                    &mut self.counters.guest_refs,
                )?;
                Ok((leaf.base, leaf.size, leaf.perm_bits))
            }
            Root::Tagged { cr3 } if !TWO_D => {
                self.counters.tag_fills += 1;
                let host = HostTables {
                    mem,
                    memory: &mut self.memory,
                };
                let mut tables = TaggedTables {
                    host,
                    counters: &mut self.counters,
                    reads: self.tag_reads,
                    va,
                    write,
                };
                let mut refs = 0;
                let leaf = walk::<X86, _>(
                    &mut tables,
                    Some(&mut self.guest_caches),
                    Dimension::Guest,
                    mode,
                    WalkRequest {
                        root: cr3.raw(),
                        addr: va,
                        tag: self.tag,
                        write,
                    },
                    &mut refs,
                );
                tables.counters.guest_refs += refs;
                let leaf = leaf?;
                // The final frame is checked too; nothing is accessed if it fails.
                tables.check(Hpa::new(leaf.output(va)).frame().raw())?;
                Ok((leaf.base, leaf.size, leaf.perm_bits))
            }
            Root::Agile { cr3, eptp } if !TWO_D => {
                let nested = Nested {
                    mem,
                    memory: &mut self.memory,
                    ept_paths: &mut self.ept_paths,
                    nested_tlb: &mut self.nested_tlb,
                    nested_sizes_in_use: &mut self.nested_sizes_in_use,
                    counters: &mut self.counters,
                    eptp,
                    mode,
                };
                let mut tables = AgileTables {
                    nested,
                    space: Space::Shadow,
                };
                let mut refs = 0;
                let leaf = walk::<X86, _>(
                    &mut tables,
                    Some(&mut self.guest_caches),
                    Dimension::Guest,
                    mode,
                    WalkRequest {
                        root: cr3.raw(),
                        addr: va,
                        tag: self.tag,
                        write,
                    },
                    &mut refs,
                );
                tables.nested.counters.guest_refs += refs;
                let leaf = leaf?;
                if !tables.switched() {
                    return Ok((leaf.base, leaf.size, leaf.perm_bits));
                }
                // A leaf of the guest's tables: its output is guest-physical.
                let gpa = leaf.output(va);
                let host = tables.nested.translate(gpa, write)?;
                let size = leaf.size.min(host.size);
                let base = host.output(gpa) & !(size.bytes() - 1);
                Ok((base, size, leaf.perm_bits & host.perm_bits))
            }
            Root::TwoD { guest_cr3, eptp } if TWO_D => {
                let mut nested = Nested {
                    mem,
                    memory: &mut self.memory,
                    ept_paths: &mut self.ept_paths,
                    nested_tlb: &mut self.nested_tlb,
                    nested_sizes_in_use: &mut self.nested_sizes_in_use,
                    counters: &mut self.counters,
                    eptp,
                    mode,
                };
                let mut guest_refs = 0;
                let guest = walk_fast::<X86, _>(
                    &mut nested,
                    Some(&mut self.guest_caches),
                    Dimension::Guest,
                    mode,
                    WalkRequest {
                        root: guest_cr3.raw(),
                        addr: va,
                        tag: self.tag,
                        write,
                    },
                    &mut guest_refs,
                );
                nested.counters.guest_refs += guest_refs;
                let guest = guest?;
                let gpa = guest.output(va);
                let host = nested.translate(gpa, write)?;
                let size = guest.size.min(host.size);
                let base = host.output(gpa) & !(size.bytes() - 1);
                Ok((base, size, guest.perm_bits & host.perm_bits))
            }
            Root::OneD { .. } | Root::Tagged { .. } | Root::TwoD { .. } | Root::Agile { .. } => {
                unreachable!("l1_miss::<TWO_D> is called for the root's kind")
            }
        }
    }

    /// What the TLBs of the running context hold for `va`, without side effects: the host
    /// address and permissions of the first L1 or STLB entry that covers it. For checking
    /// TLB coherence against the page tables.
    pub fn cached_translation(&self, va: Gva) -> Option<(Hpa, Perms)> {
        let va = va.raw();
        TlbSize::ALL.iter().find_map(|&size| {
            let key = tlb_key(va, size, self.tag);
            let second_level = if size == TlbSize::G1 {
                &self.stlb_1g
            } else {
                &self.stlb
            };
            let value = self.l1[size.index()]
                .peek(key)
                .or_else(|| second_level.peek(key))?;
            Some((
                Hpa::new((value & FRAME_MASK) | (va & (size.bytes() - 1))),
                Perms::from_bits(value),
            ))
        })
    }

    /// INVLPG: drop the translations of `va` of the current tag at every page size, and the
    /// paging-structure cache entries covering it.
    pub fn invlpg(&mut self, va: Gva) {
        self.invlpg_tag(va, self.tag);
    }

    /// Invalidate the translation of one page in the address space tagged `tag` (INVPCID
    /// of one address).
    pub fn invlpg_tag(&mut self, va: Gva, tag: u64) {
        self.lookahead.forget_leaf_tables();
        for size in TlbSize::ALL {
            let key = tlb_key(va.raw(), size, tag);
            self.l1[size.index()].invalidate(key);
            if size == TlbSize::G1 {
                &mut self.stlb_1g
            } else {
                &mut self.stlb
            }
            .invalidate(key);
        }
        self.guest_caches.invalidate_addr(va.raw(), tag);
    }

    /// Flush the running context's translations (a full non-global TLB flush).
    pub fn flush_current(&mut self) {
        self.flush_tag(self.tag);
    }

    /// Drop every translation and guest walk-cache entry of one tag (CR3 load without PCID).
    pub fn flush_tag(&mut self, tag: u64) {
        self.lookahead.forget_leaf_tables();
        let keep =
            |key: u64, _| (key >> TAG_SHIFT) & ((1 << (SIZE_TAG_SHIFT - TAG_SHIFT)) - 1) != tag;
        self.l1.iter_mut().for_each(|c| c.retain(keep));
        self.stlb.retain(keep);
        self.stlb_1g.retain(keep);
        self.guest_caches.flush_tag(tag);
    }

    /// Drop every cached translation of every address space: TLBs, paging-structure caches of
    /// both dimensions and GPA->HPA caches (a hypervisor's full flush after it changes tables
    /// the hardware walks: shadow entries, devirt entries).
    pub fn flush_all(&mut self) {
        self.invept();
        self.guest_caches.flush();
    }

    /// Drop everything derived from the EPT (INVEPT, after the hypervisor removes or
    /// downgrades an EPT mapping): GPA->HPA caches, EPT walk caches and combined TLB entries.
    pub fn invept(&mut self) {
        self.lookahead.forget_leaf_tables();
        self.nested_tlb.flush();
        self.ept_paths.forget();
        self.memory.defer(&EptReplay::flush_record());
        self.l1.iter_mut().for_each(TranslationCache::flush);
        self.stlb.flush();
        self.stlb_1g.flush();
    }

    /// Hit and miss counts of the structures, for reports: (name, hits, misses).
    pub fn structure_stats(&self) -> Vec<(&'static str, u64, u64)> {
        let mut out = vec![
            ("l1_4k", self.l1[0].hits(), self.l1[0].misses()),
            ("l1_2m", self.l1[1].hits(), self.l1[1].misses()),
            ("l1_1g", self.l1[2].hits(), self.l1[2].misses()),
            ("stlb", self.stlb.hits(), self.stlb.misses()),
            ("stlb_1g", self.stlb_1g.hits(), self.stlb_1g.misses()),
            (
                "nested_tlb",
                self.nested_tlb.hits(),
                self.nested_tlb.misses(),
            ),
        ];
        for (level, name) in [(2, "pde_cache"), (3, "pdpte_cache"), (4, "pml4e_cache")] {
            let (h, m) = self.guest_caches.stats(level);
            out.push((name, h, m));
        }
        for (level, name) in [
            (2, "ept_pde_cache"),
            (3, "ept_pdpte_cache"),
            (4, "ept_pml4e_cache"),
        ] {
            let (h, m) = self
                .ept_replay()
                .map_or((0, 0), |replay| replay.caches().stats(level));
            out.push((name, h, m));
        }
        out
    }
}

/// A reference translation by software composition, with no caches, no counters and no A/D
/// updates: the guest tables walked by reading memory directly, each table address and the
/// final GPA mapped through `p2m`. Tests compare the MMU against it.
pub fn reference_translate(
    mem: &HostMemory,
    guest_root: u64,
    va: u64,
    levels: u8,
    p2m: &dyn Fn(u64) -> Option<u64>,
) -> Option<(u64, Perms)> {
    let mode = PagingMode::x86_64(levels)?;
    let read = |table: Gfn, index| {
        let at = p2m(table.addr().raw() + mode.entry_offset(index)).ok_or(())?;
        Ok(mem.read_u64(Hpa::new(at)))
    };
    let root = Gpa::new(guest_root & FRAME_MASK).frame();
    match mode.soft_walk::<X86, _, ()>(root, va, read).ok()? {
        SoftWalk::Leaf { at, size, perms } => {
            let gpa = PagingMode::leaf_base::<X86>(at.entry, size) | (va & (size.bytes() - 1));
            Some((p2m(gpa)?, perms))
        }
        _ => None,
    }
}
