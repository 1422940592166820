//! LABT's state machine, independent of how a replay feeds it: which instructions are
//! rewritten and how, the translation cache, the execute-only shadow pieces that read/write
//! tracing needs, and the hot loads avoid-read-faults redirects. A replay (or a test) tells it
//! each privileged instruction and each kernel data access; it answers what the guest paid.

use super::cache::TranslationCache;
use super::reach;
use super::resize::{self, Block, Piece};
use super::rewrite::{rewrite, Rewrite};
use crate::hv::e500::pv::{self, TemplateInput, TemplateRun};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeSet;

/// How LABT is configured: which optimizations are on and where its cache lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LabtConfig {
    /// Adaptive shadow-TLB resizing with this execute-only unit in bytes (a power of two,
    /// at least 4 KiB); `None`: a patch site makes its whole shadow entry execute-only.
    pub resize_unit: Option<u64>,
    /// Avoid read faults: after this many tracing faults by one load instruction, its reads
    /// go through the data cache on the shared page. `None`: off.
    pub read_fault_threshold: Option<u32>,
    /// Guest address the translation cache is mapped at.
    pub tc_base: u32,
    /// Its size in bytes.
    pub tc_bytes: u32,
}

/// Words of the routine a hot load is rewritten into: save a scratch register, compare the
/// address with the cached one, load from the copy or do the original load, restore, branch
/// back. An assumption (the study gives no listing); the profile charges its execution.
pub const HOT_LOAD_ROUTINE_WORDS: u32 = 10;

/// What one rewritten site is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteKind {
    /// A privileged instruction rewritten in place or into a routine.
    Priv(Rewrite),
    /// A hot load redirected to the data cache (avoid read faults).
    HotLoad,
}

/// A patch site: what it was and what it became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Site {
    /// The original instruction (a hot load's encoding is not in the trace: 0).
    pub original: u32,
    /// What it is now.
    pub kind: SiteKind,
    /// The shadow mapping it lies in.
    pub mapping: Block,
}

/// What executing a privileged instruction cost under LABT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrivOutcome {
    /// It exited to the host; `translated` when the host rewrote it on this exit.
    Exit {
        /// The host rewrote the site during this exit.
        translated: bool,
    },
    /// A rewritten single instruction ran in the guest (a load, store or nop).
    InPlace,
    /// A routine in the translation cache ran.
    Routine(TemplateRun),
}

/// What a group of kernel data accesses cost under LABT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DataOutcome {
    /// Accesses that trapped for read/write tracing.
    pub faults: u64,
    /// Reads served from the shared page's data cache.
    pub cached_reads: u64,
    /// Instructions the hot-load routine executed.
    pub routine_insns: u64,
    /// The group wrote to a patch site, which was undone.
    pub undid_site: bool,
}

/// Counters of LABT's own work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LabtStats {
    /// Sites rewritten into one instruction.
    pub rewrites_in_place: u64,
    /// Sites rewritten into a branch to a routine.
    pub rewrites_routine: u64,
    /// Privileged instructions that cannot be rewritten (they keep exiting).
    pub untranslatable: u64,
    /// Sites whose routine no single branch reaches (they keep exiting).
    pub out_of_reach: u64,
    /// Routines evicted from the translation cache (their sites reverted).
    pub evictions: u64,
    /// Sites undone by a guest write.
    pub undone_by_write: u64,
    /// Tracing faults by reads.
    pub read_faults: u64,
    /// Tracing faults by writes.
    pub write_faults: u64,
    /// Shadow entries split.
    pub splits: u64,
    /// Shadow entries merged back.
    pub merges: u64,
    /// Most shadow entries the resized mappings needed at once.
    pub max_pieces: u64,
    /// Loads redirected to the data cache.
    pub hot_loads: u64,
}

#[derive(Debug, Clone)]
struct Mapping {
    block: Block,
    sites: Vec<u32>,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, Copy, Default)]
struct LoadHistory {
    faults: u32,
    cached_page: Option<u32>,
}

/// The translator.
#[derive(Debug, Clone)]
pub struct Translator {
    cfg: LabtConfig,
    sites: FxHashMap<u32, Site>,
    site_addrs: BTreeSet<u32>,
    never: FxHashSet<u32>,
    tc: TranslationCache,
    mappings: Vec<Mapping>,
    exec_pages: Vec<u64>,
    loads: FxHashMap<u32, LoadHistory>,
    stats: LabtStats,
}

impl Translator {
    /// A translator with nothing rewritten yet.
    pub fn new(cfg: LabtConfig) -> Self {
        Translator {
            cfg,
            sites: FxHashMap::default(),
            site_addrs: BTreeSet::new(),
            never: FxHashSet::default(),
            tc: TranslationCache::new(cfg.tc_base, cfg.tc_bytes),
            mappings: Vec::new(),
            exec_pages: vec![0; (1 << 20) / 64],
            loads: FxHashMap::default(),
            stats: LabtStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LabtConfig {
        &self.cfg
    }

    /// The counters.
    pub fn stats(&self) -> &LabtStats {
        &self.stats
    }

    /// The rewritten site at `pc`.
    pub fn site(&self, pc: u32) -> Option<&Site> {
        self.sites.get(&pc)
    }

    /// The shadow entries of the mapping `block`, if it holds or held sites.
    pub fn pieces(&self, block: Block) -> Option<&[Piece]> {
        self.mappings
            .iter()
            .find(|m| m.block == block)
            .map(|m| m.pieces.as_slice())
    }

    /// The bases of the mappings that hold or held sites.
    pub fn mapping_bases(&self) -> impl Iterator<Item = u32> + '_ {
        self.mappings.iter().map(|m| m.block.base)
    }

    /// The shadow piece `ea` falls in, when resizing is on and it lies in a mapping that
    /// holds or held sites.
    pub fn piece_of(&self, ea: u32) -> Option<Piece> {
        self.cfg.resize_unit?;
        let m = self.mappings.iter().find(|m| m.block.contains(ea))?;
        // Pieces are in address order (the cover walks quarters in order).
        let i = m.pieces.partition_point(|p| p.block.end() <= ea as u64);
        m.pieces.get(i).copied()
    }

    /// True when the shadow of the page of `ea` is execute-only.
    #[inline]
    pub fn exec_only(&self, ea: u32) -> bool {
        let page = (ea >> 12) as usize;
        ((self.exec_pages[page / 64] >> (page % 64)) & 1) != 0
    }

    /// The privileged instruction `word` at `pc` executes; `mapping` is the shadow mapping
    /// that holds `pc`, `input` what a routine would read (MSR, value, pending interrupt).
    pub fn on_priv(
        &mut self,
        pc: u32,
        word: u32,
        mapping: Block,
        input: TemplateInput,
    ) -> PrivOutcome {
        if let Some(site) = self.sites.get(&pc) {
            return match site.kind {
                SiteKind::Priv(Rewrite::Routine(t)) => PrivOutcome::Routine(pv::run(t, input)),
                _ => PrivOutcome::InPlace,
            };
        }
        if self.never.contains(&pc) {
            return PrivOutcome::Exit { translated: false };
        }
        let rw = rewrite(word);
        let translated = match rw {
            Rewrite::Exit => {
                self.stats.untranslatable += 1;
                self.never.insert(pc);
                false
            }
            Rewrite::Routine(t) => self.place_routine(pc, t.words() * 4),
            _ => {
                self.stats.rewrites_in_place += 1;
                true
            }
        };
        if translated {
            if let Rewrite::Routine(_) = rw {
                self.stats.rewrites_routine += 1;
            }
            self.add_site(
                pc,
                Site {
                    original: word,
                    kind: SiteKind::Priv(rw),
                    mapping,
                },
            );
        }
        PrivOutcome::Exit { translated }
    }

    /// Places a routine of `len` bytes for `pc` if single branches reach it both ways;
    /// evicted routines' sites revert.
    fn place_routine(&mut self, pc: u32, len: u32) -> bool {
        let Some(addr) = self.tc.next_addr(len) else {
            self.stats.out_of_reach += 1;
            self.never.insert(pc);
            return false;
        };
        let back_from = addr + len - 4;
        if reach::branch(pc, addr).is_none() || reach::branch(back_from, pc + 4).is_none() {
            self.stats.out_of_reach += 1;
            self.never.insert(pc);
            return false;
        }
        let (_, evicted) = self.tc.insert(pc, len).expect("next_addr said it fits");
        for r in evicted {
            if self.sites.contains_key(&r.site) {
                self.stats.evictions += 1;
                self.remove_site(r.site);
            }
        }
        true
    }

    fn add_site(&mut self, pc: u32, site: Site) {
        self.sites.insert(pc, site);
        self.site_addrs.insert(pc);
        let i = match self.mappings.iter().position(|m| m.block == site.mapping) {
            Some(i) => i,
            None => {
                self.mappings.push(Mapping {
                    block: site.mapping,
                    sites: Vec::new(),
                    pieces: vec![Piece {
                        block: site.mapping,
                        exec_only: false,
                    }],
                });
                self.mappings.len() - 1
            }
        };
        self.mappings[i].sites.push(pc);
        self.relayout(i);
    }

    fn remove_site(&mut self, pc: u32) {
        let Some(site) = self.sites.remove(&pc) else {
            return;
        };
        self.site_addrs.remove(&pc);
        self.tc.forget(pc);
        if let Some(i) = self.mappings.iter().position(|m| m.block == site.mapping) {
            self.mappings[i].sites.retain(|&s| s != pc);
            self.relayout(i);
        }
    }

    /// Recomputes mapping `i`'s shadow entries and the execute-only pages.
    fn relayout(&mut self, i: usize) {
        let m = &mut self.mappings[i];
        let new = resize::cover(m.block, &m.sites, self.cfg.resize_unit);
        let change = resize::diff(&m.pieces, &new);
        self.stats.splits += change.splits;
        self.stats.merges += change.merges;
        m.pieces = new;
        let block = m.block;
        let pieces = m.pieces.clone();
        self.set_pages(block, false);
        for p in pieces.iter().filter(|p| p.exec_only) {
            self.set_pages(p.block, true);
        }
        let total: u64 = self.mappings.iter().map(|m| m.pieces.len() as u64).sum();
        self.stats.max_pieces = self.stats.max_pieces.max(total);
    }

    fn set_pages(&mut self, b: Block, on: bool) {
        let first = (b.base >> 12) as usize;
        for page in first..first + (b.size >> 12) as usize {
            let (w, bit) = (page / 64, page % 64);
            if on {
                self.exec_pages[w] |= 1 << bit;
            } else {
                self.exec_pages[w] &= !(1 << bit);
            }
        }
    }

    /// The guest changed its mappings: every site moves to the mapping `mapping_of` now
    /// gives for it (layouts are rebuilt; a mapping that changed is a new shadow, not a
    /// split or merge of the old one).
    pub fn remap(&mut self, mapping_of: impl Fn(u32) -> Block) {
        for m in std::mem::take(&mut self.mappings) {
            self.set_pages(m.block, false);
        }
        let mut pcs: Vec<u32> = self.sites.keys().copied().collect();
        pcs.sort_unstable();
        for pc in pcs {
            let block = mapping_of(pc);
            let site = self.sites.get_mut(&pc).expect("listed");
            site.mapping = block;
            match self.mappings.iter_mut().find(|m| m.block == block) {
                Some(m) => m.sites.push(pc),
                None => self.mappings.push(Mapping {
                    block,
                    sites: vec![pc],
                    pieces: Vec::new(),
                }),
            }
        }
        for i in 0..self.mappings.len() {
            let m = &mut self.mappings[i];
            m.pieces = resize::cover(m.block, &m.sites, self.cfg.resize_unit);
            let pieces = m.pieces.clone();
            for p in pieces.iter().filter(|p| p.exec_only) {
                self.set_pages(p.block, true);
            }
        }
    }

    /// `count` kernel accesses of `1 << size_log2` bytes by the instruction at `pc` to the
    /// page of `vaddr` (the trace's grouping: all in one 4 KiB page, the first at `vaddr`);
    /// `pc_mapping` is the shadow mapping holding `pc`, should it become a hot-load site.
    /// A store group is taken to write `[vaddr, vaddr + count << size_log2)` within the page
    /// (a sequential writer, such as the memset that poisons freed init memory): every site
    /// in that range is undone.
    pub fn on_data(
        &mut self,
        pc: u32,
        vaddr: u32,
        store: bool,
        size_log2: u8,
        count: u32,
        pc_mapping: Block,
    ) -> DataOutcome {
        let mut out = DataOutcome::default();
        let hot = matches!(self.sites.get(&pc), Some(s) if s.kind == SiteKind::HotLoad);
        if hot && !store {
            out.routine_insns = HOT_LOAD_ROUTINE_WORDS as u64 * count as u64;
        }
        if !self.exec_only(vaddr) {
            return out;
        }
        let count = count as u64;
        if store {
            out.faults = count;
            self.stats.write_faults += count;
            let page_end = (vaddr as u64 | 0xFFF) + 1;
            let end = (vaddr as u64 + (count << size_log2)).min(page_end);
            let hit: Vec<u32> = self
                .site_addrs
                .range(vaddr & !3..end as u32)
                .copied()
                .collect();
            for s in hit {
                self.stats.undone_by_write += 1;
                self.remove_site(s);
                out.undid_site = true;
            }
            return out;
        }
        let page = vaddr >> 12;
        let history = self.loads.entry(pc).or_default();
        if hot {
            // The routine reads the copy when it holds this page's data; otherwise it does
            // the original load, which faults once and refills the copy.
            let missed = history.cached_page != Some(page);
            history.cached_page = Some(page);
            out.faults = missed as u64;
            out.cached_reads = count - missed as u64;
        } else {
            out.faults = count;
            history.faults = history
                .faults
                .saturating_add(count.min(u32::MAX as u64) as u32);
            let over = self
                .cfg
                .read_fault_threshold
                .is_some_and(|t| history.faults > t);
            if over {
                history.cached_page = Some(page);
                self.make_hot(pc, pc_mapping);
            }
        }
        self.stats.read_faults += out.faults;
        out
    }

    fn make_hot(&mut self, pc: u32, mapping: Block) {
        if self.sites.contains_key(&pc) || self.never.contains(&pc) {
            return;
        }
        if self.place_routine(pc, HOT_LOAD_ROUTINE_WORDS * 4) {
            self.stats.hot_loads += 1;
            self.add_site(
                pc,
                Site {
                    original: 0,
                    kind: SiteKind::HotLoad,
                    mapping,
                },
            );
        }
    }

    /// The guest reads the word at `addr` (4-aligned) from a page whose shadow is
    /// execute-only: the access traps and the host answers from `memory` with every patch
    /// site's original instruction in place of its rewrite. Returns the word and whether it
    /// trapped.
    pub fn read_word(&mut self, addr: u32, memory: impl Fn(u32) -> u32) -> (u32, bool) {
        let trapped = self.exec_only(addr);
        if trapped {
            self.stats.read_faults += 1;
        }
        let word = match self.sites.get(&addr) {
            Some(s) if s.kind != SiteKind::HotLoad => s.original,
            _ => memory(addr),
        };
        (word, trapped)
    }
}
