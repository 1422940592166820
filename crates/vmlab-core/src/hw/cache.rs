//! The data-cache hierarchy (L1D, L2, LLC, DRAM), physically indexed by host address. Data
//! accesses of the program and the page walker's references (guest and EPT tables alike) go
//! through the same caches, so page-table lines compete with data.
//!
//! Simplifications, so readers know what the model is:
//! - Tag-only: no data is stored, only which lines are present.
//! - Reads and writes are treated alike: write-allocate, and no write-backs (dirty evictions
//!   cost nothing and are not modeled).
//! - Non-inclusive fill-on-miss: a line is filled into every level that missed on the way to
//!   the level that served it; levels evict independently and no inclusion (or exclusion) is
//!   enforced between them.
//! - No prefetchers, no MSHRs, no timing: an access returns the level that served it and the
//!   cost model turns levels into cycles.
//!
//! Replacement is per level, a profile parameter ([`Replacement`]):
//! - `lru`: true LRU per set. A set keeps its lines in recency order (most recent first, empty
//!   ways last), so a hit moves the line to the front and a miss pushes the new line in at the
//!   front, dropping the least recent one: no ages to update and no victim to search for.
//! - `srrip`: static re-reference interval prediction with 2-bit RRPVs (Jaleel et al., ISCA
//!   2010, "High Performance Cache Replacement Using Re-Reference Interval Prediction"), in
//!   its hit-priority form: a hit sets RRPV to 0; a fill inserts at RRPV 2 ("long"); the
//!   victim is the first way with RRPV 3, after aging every way of the set until one has.
//!   A line reused once outlives a scan of single-use lines, which is how real LLCs keep
//!   page-table lines alive under streaming or random data.
//! - `drrip`: set dueling between SRRIP and BRRIP. BRRIP inserts at RRPV 3, and at 2 once
//!   every 32 of its insertions, counted by a per-cache counter instead of the paper's random
//!   choice so runs are deterministic. 32 leader sets per policy (fewer in caches with under
//!   64 sets: half the sets each, none with one set), evenly spaced instead of hashed; misses
//!   in leader sets steer a 10-bit PSEL counter, and follower sets use the winning policy.
//!
//! In every policy an empty way is filled before anything is evicted.

use crate::host::hugepages::FixedVec;

/// Replacement policy of one cache level: a modeling decision with large effects (page-table
/// lines vs streaming or random data). See the module documentation for the exact semantics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Replacement {
    /// True LRU per set.
    Lru,
    /// Static RRIP with 2-bit re-reference prediction values.
    Srrip,
    /// Dynamic RRIP: set dueling between SRRIP and BRRIP.
    Drrip,
}

/// Geometry and policy of one cache level.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// Capacity in bytes; 0 disables the level.
    #[serde(deserialize_with = "crate::units::deserialize_size")]
    pub size: u64,
    /// Associativity.
    pub ways: u32,
    /// Replacement policy.
    pub replacement: Replacement,
}

impl CacheConfig {
    /// Checks the geometry for lines of `line_size` bytes. The error message names `name`,
    /// the problem and how to fix it.
    pub fn validate(&self, name: &str, line_size: u32) -> Result<(), String> {
        let (size, ways) = (self.size, self.ways);
        if ways == 0 || ways > MAX_WAYS {
            return Err(format!(
                "{name}: ways must be between 1 and {MAX_WAYS} (set size = 0 to disable the level)"
            ));
        }
        if size == 0 {
            return Ok(());
        }
        if line_size == 0 {
            return Err(format!("{name}: the line size must be non-zero"));
        }
        let set_bytes = u64::from(ways) * u64::from(line_size);
        if size % set_bytes != 0 {
            return Err(format!(
                "{name}: size ({size} bytes) must be a multiple of ways * line size \
                 ({ways} * {line_size} = {set_bytes} bytes); adjust size or ways"
            ));
        }
        let sets = size / set_bytes;
        if !sets.is_power_of_two() {
            return Err(format!(
                "{name}: the set count size / (ways * line size) = {sets} must be a power of \
                 two (sets are indexed by address bits); adjust size or ways"
            ));
        }
        Ok(())
    }
}

/// The cache hierarchy of one core as a single-threaded workload sees it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryConfig {
    /// Bytes per cache line, shared by all levels.
    pub line_size: u32,
    /// The first-level data cache.
    pub l1d: CacheConfig,
    /// The second-level cache.
    pub l2: CacheConfig,
    /// The last-level cache.
    pub llc: CacheConfig,
}

impl MemoryConfig {
    /// Checks the line size (a power of two, at least 8 bytes) and every level.
    pub fn validate(&self) -> Result<(), String> {
        let line = self.line_size;
        if line < 8 || !line.is_power_of_two() {
            return Err(format!(
                "memory.line_size: {line} must be a power of two of at least 8 bytes (typically 64)"
            ));
        }
        self.l1d.validate("memory.l1d", line)?;
        self.l2.validate("memory.l2", line)?;
        self.llc.validate("memory.llc", line)
    }
}

/// Where an access was served.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum MemLevel {
    /// The L1 data cache.
    L1 = 0,
    /// The L2 cache.
    L2 = 1,
    /// The last-level cache.
    Llc = 2,
    /// Memory: every cache missed.
    Dram = 3,
}

impl MemLevel {
    /// All levels, nearest first; `ALL[l as usize] == l`.
    pub const ALL: [MemLevel; 4] = [MemLevel::L1, MemLevel::L2, MemLevel::Llc, MemLevel::Dram];

    /// Short lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            MemLevel::L1 => "l1",
            MemLevel::L2 => "l2",
            MemLevel::Llc => "llc",
            MemLevel::Dram => "dram",
        }
    }
}

/// Who asked: data accesses of the program, the page walker (guest or EPT tables alike), or a
/// tag-table check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Requester {
    /// A load or store of the program.
    Data = 0,
    /// A page-table entry read by the walker (guest, native or EPT tables).
    Walk = 1,
    /// A read of a tag-table entry (TPT).
    Tag = 2,
}

impl Requester {
    /// All requesters; `ALL[r as usize] == r`.
    pub const ALL: [Requester; 3] = [Requester::Data, Requester::Walk, Requester::Tag];

    /// Short lowercase name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Requester::Data => "data",
            Requester::Walk => "walk",
            Requester::Tag => "tag",
        }
    }
}

/// Most ways a level may have: a set's entries fill one 64-byte host line (16 x u32), so a
/// lookup touches one line of the simulator's own memory.
pub const MAX_WAYS: u32 = 16;
/// Bits of replacement state in the low end of each packed entry (RRPV 0..=3; 0 under LRU,
/// where a line's lane is its recency rank).
const STATE_BITS: u32 = 4;
const STATE_MASK: u32 = (1 << STATE_BITS) - 1;
/// Largest 2-bit re-reference prediction value ("distant").
const RRPV_MAX: u32 = 3;
/// SRRIP insertion value ("long").
const RRPV_LONG: u32 = 2;
/// BRRIP inserts at "long" once every this many of its insertions, else at "distant".
const BRRIP_LONG_EVERY: u32 = 32;
/// Leader sets per dueling policy (when the cache has at least twice as many sets).
const DRRIP_LEADERS: u64 = 32;
/// 10-bit saturating policy selector; at or above the midpoint followers use BRRIP.
const PSEL_MAX: u16 = (1 << 10) - 1;
const PSEL_MID: u16 = 1 << 9;

/// Role of a set under DRRIP.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Duel {
    SrripLeader,
    BrripLeader,
    Follower,
}

/// One set's ways, aligned to a host cache line. Each entry packs `tag << 4 | state`, where
/// the tag is the line number above the set-index bits; an empty way (and each unused lane
/// beyond the level's ways) is [`EMPTY`]. Under LRU the lanes are in recency order, lane 0
/// the most recent, with the empty ways after the valid ones; under RRIP a line stays in the
/// way it was filled into.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Set([u32; MAX_WAYS as usize]);

/// An empty way: all ones. Its tag part is one no line has (see [`Cache::max_line`]), and its
/// state 15 one that no RRPV (at most 3) and no LRU entry (state 0) has, so a tag, whole-entry
/// or state compare tells it apart.
const EMPTY: u32 = u32::MAX;

/// One cache level: tags only, no data. A disabled level (size 0) never hits and holds nothing.
#[derive(Clone, Debug)]
pub struct Cache {
    /// Associativity; 0 when disabled.
    ways: usize,
    /// Bit `w` set for each way `w < ways`.
    way_mask: u32,
    /// `sets - 1`: the set index is `line & set_mask`.
    set_mask: u64,
    set_bits: u32,
    policy: Replacement,
    /// The tag array (2 MiB in a typical LLC, read at random: on huge pages, see
    /// [`crate::host::hugepages`]): always `set_mask + 1` sets (one, left empty, when the
    /// level is disabled), so every set index is in range and the lookups of the chunk
    /// passes need no bounds check ([`Self::set`]).
    sets: FixedVec<Set>,
    /// DRRIP: the set index modulo this (a power of two) picks the set's dueling role;
    /// 0 when the cache has no leader sets.
    leader_stride: u64,
    /// DRRIP policy selector.
    psel: u16,
    /// BRRIP insertions so far, for the deterministic 1-in-32 "long" insertion.
    brrip_fills: u32,
}

impl Cache {
    /// Builds an empty level for lines of `1 << line_shift` bytes. Assumes `cfg` passed
    /// [`CacheConfig::validate`] for that line size.
    pub fn new(cfg: &CacheConfig, line_shift: u32) -> Self {
        debug_assert!(cfg.validate("cache", 1 << line_shift).is_ok(), "{cfg:?}");
        let (ways, sets) = if cfg.size == 0 {
            (0, 1)
        } else {
            let ways = cfg.ways as usize;
            (ways, ((cfg.size >> line_shift) as usize) / ways)
        };
        let leaders = DRRIP_LEADERS.min(sets as u64 / 2);
        Self {
            ways,
            way_mask: ((1u64 << ways) - 1) as u32,
            set_mask: sets as u64 - 1,
            set_bits: sets.trailing_zeros(),
            policy: cfg.replacement,
            sets: FixedVec::filled(sets, Set([EMPTY; MAX_WAYS as usize])),
            leader_stride: (sets as u64).checked_div(leaders).unwrap_or(0),
            psel: PSEL_MID,
            brrip_fills: 0,
        }
    }

    /// Whether the level holds any lines at all.
    pub fn is_enabled(&self) -> bool {
        self.ways != 0
    }

    /// Largest line number this level can tag (the packed tag has 28 bits, and all ones is
    /// `EMPTY`'s).
    pub fn max_line(&self) -> u64 {
        ((1u64 << (32 - STATE_BITS)) - 2) << self.set_bits | self.set_mask
    }

    /// The set `line` maps to and its tag in the set's entries.
    #[inline(always)]
    fn set_and_tag(&self, line: u64) -> (usize, u32) {
        ((line & self.set_mask) as usize, self.tag_of(line))
    }

    /// The set at `index` (from [`Self::set_and_tag`]: at most `set_mask`), unchecked.
    #[inline(always)]
    fn set(&self, index: usize) -> &Set {
        debug_assert!(index as u64 <= self.set_mask);
        // SAFETY: `index <= set_mask`, and `new` makes `set_mask + 1` sets, which nothing
        // resizes.
        unsafe { self.sets.get_unchecked(index) }
    }

    /// [`Self::set`], mutable.
    #[inline(always)]
    fn set_mut(&mut self, index: usize) -> &mut Set {
        debug_assert!(index as u64 <= self.set_mask);
        // SAFETY: as in `set`.
        unsafe { self.sets.get_unchecked_mut(index) }
    }

    #[inline]
    fn tag_of(&self, line: u64) -> u32 {
        debug_assert!(
            line <= self.max_line(),
            "line {line:#x} beyond the tag width"
        );
        ((line >> self.set_bits) as u32) << STATE_BITS
    }

    /// Looks up line number `line` (a host address shifted right by the line shift). Returns
    /// true on a hit (and updates replacement state); on a miss inserts the line and returns
    /// false. A disabled level returns false and does nothing.
    #[inline]
    pub fn access(&mut self, line: u64) -> bool {
        match self.ways {
            0 => false,
            // A level of at most 8 ways (a typical L1D) keeps its other lanes empty, so only
            // the first half of a set needs looking at: half the vector work.
            1..=8 => self.access_lanes::<8>(line),
            _ => self.access_lanes::<16>(line),
        }
    }

    /// [`Self::access`] looking at the first `N` lanes of the set (`N >= ways`).
    #[inline(always)]
    fn access_lanes<const N: usize>(&mut self, line: u64) -> bool {
        match self.policy {
            Replacement::Lru => self.access_as::<N, true>(line),
            Replacement::Srrip | Replacement::Drrip => self.access_as::<N, false>(line),
        }
    }

    /// How this level looks a line up, for loops that choose once for many accesses:
    /// `(lanes, lru)` such that [`Self::access_as`]`::<lanes, lru>` is [`Self::access`].
    pub(crate) fn access_kind(&self) -> (usize, bool) {
        let lanes = if self.ways <= 8 { 8 } else { 16 };
        (lanes, self.policy == Replacement::Lru)
    }

    /// [`Self::access`] with the lanes looked at and the policy family (LRU, or SRRIP and
    /// DRRIP) fixed by the caller, as [`Self::access_kind`] says.
    #[inline(always)]
    pub(crate) fn access_as<const N: usize, const LRU: bool>(&mut self, line: u64) -> bool {
        debug_assert_eq!(self.access_kind(), (N, LRU));
        let (set, tag) = self.set_and_tag(line);
        if LRU {
            self.access_lru::<N>(set, tag)
        } else {
            self.access_rrip::<N>(set, tag)
        }
    }

    /// [`Self::access_as`] for an LRU level, with AVX2 set operations.
    ///
    /// # Safety
    /// The host must have AVX2 ([`crate::host::simd::avx2::available`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) unsafe fn access_lru_avx2<const N: usize>(&mut self, line: u64) -> bool {
        debug_assert_eq!(self.access_kind(), (N, true));
        use crate::host::simd::avx2;
        let (set, tag) = self.set_and_tag(line);
        self.access_lru_with::<N>(
            set,
            tag,
            // SAFETY: AVX2 is there (the caller's contract).
            |entries, tag| unsafe { avx2::eq_mask_u32x16::<N>(entries, tag) },
            // SAFETY: as above.
            |entries, way, tag| unsafe { avx2::move_to_front_u32x16::<N>(entries, way, tag) },
        )
    }

    /// [`Self::access_lanes`] under LRU: the set is in recency order, so a hit moves the line
    /// to lane 0, and a miss pushes it in at lane 0 and drops the last valid lane (the least
    /// recent line, or an empty way while the set is not full, as empties come last).
    #[inline(always)]
    fn access_lru<const N: usize>(&mut self, set: usize, tag: u32) -> bool {
        self.access_lru_with::<N>(
            set,
            tag,
            // LRU entries have state 0 and empty ways (and unused lanes) are [`EMPTY`], so
            // whole entries can be compared at once.
            |entries, tag| crate::host::simd::masked_eq_mask_u32x16::<N>(entries, u32::MAX, tag),
            crate::host::simd::move_to_front_u32x16::<N>,
        )
    }

    /// [`Self::access_lru`] with the set operations given: `hit_mask` the lanes holding a
    /// tag, `move_to_front` as [`crate::host::simd::move_to_front_u32x16`].
    #[inline(always)]
    fn access_lru_with<const N: usize>(
        &mut self,
        set: usize,
        tag: u32,
        hit_mask: impl Fn(&[u32; MAX_WAYS as usize], u32) -> u32,
        move_to_front: impl Fn(&mut [u32; MAX_WAYS as usize], usize, u32),
    ) -> bool {
        let ways = self.ways;
        debug_assert!(self.is_enabled(), "a disabled level is never looked up");
        let Set(entries) = self.set_mut(set);
        let hits = hit_mask(entries, tag);
        // A hit and a miss are the same move to the front, from the line's way or from the
        // least recent one (whose line drops off; lanes from `ways` on are unused and stay
        // empty): the hit/miss outcome of random accesses picks an index, not a path. A hit
        // on the most recent line moves nothing.
        let hit = hits != 0;
        let way = if hit {
            hits.trailing_zeros() as usize
        } else {
            ways - 1
        };
        move_to_front(entries, way, tag);
        hit
    }

    /// [`Self::access_as`] for an SRRIP or DRRIP level, with AVX2 set compares: the same
    /// replacement decisions as [`Self::access_rrip`], from the same masks.
    ///
    /// # Safety
    /// The host must have AVX2 ([`crate::host::simd::avx2::available`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub(crate) unsafe fn access_rrip_avx2<const N: usize>(&mut self, line: u64) -> bool {
        debug_assert_eq!(self.access_kind(), (N, false));
        use crate::host::simd::avx2;
        let (set, tag) = self.set_and_tag(line);
        self.access_rrip_with::<N>(
            set,
            tag,
            // SAFETY: AVX2 is there (the caller's contract).
            |entries, tag| unsafe { avx2::masked_eq_mask_u32x16::<N>(entries, !STATE_MASK, tag) },
            // SAFETY: as above.
            |entries| unsafe {
                avx2::masked_eq_masks_u32x16::<N, 4>(entries, STATE_MASK, VICTIM_STATES)
            },
        )
    }

    /// [`Self::access_lanes`] under SRRIP or DRRIP.
    #[inline(always)]
    fn access_rrip<const N: usize>(&mut self, set: usize, tag: u32) -> bool {
        self.access_rrip_with::<N>(set, tag, tag_mask::<N>, |entries| {
            crate::host::simd::masked_eq_masks_u32x16::<N, 4>(entries, STATE_MASK, VICTIM_STATES)
        })
    }

    /// [`Self::access_rrip`] with the set compares given: `tag_mask` as [`tag_mask`], and
    /// `victim_masks` the masks of the lanes whose state is each of [`VICTIM_STATES`].
    #[inline(always)]
    fn access_rrip_with<const N: usize>(
        &mut self,
        set: usize,
        tag: u32,
        tag_mask: impl Fn(&[u32; MAX_WAYS as usize], u32) -> u32,
        victim_masks: impl Fn(&[u32; MAX_WAYS as usize]) -> [u32; 4],
    ) -> bool {
        debug_assert!(self.is_enabled(), "a disabled level is never looked up");
        let Set(entries) = self.set_mut(set);
        // Empty ways and unused lanes have a tag part no line has, so the lanes can be
        // compared at once.
        let hits = tag_mask(entries, tag);
        if hits != 0 {
            entries[hits.trailing_zeros() as usize] &= !STATE_MASK;
            return true;
        }
        let insertion = match self.policy {
            Replacement::Drrip => self.drrip_insertion(set as u64),
            _ => RRPV_LONG,
        };
        let way_mask = self.way_mask;
        let entries = &mut self.set_mut(set).0;
        let way = rrip_victim::<N>(entries, way_mask, victim_masks(entries));
        entries[way] = tag | insertion;
        false
    }

    /// Whether `line` is present; no replacement state changes.
    pub fn contains(&self, line: u64) -> bool {
        let (set, tag) = self.set_and_tag(line);
        // A disabled level's one set stays empty.
        tag_mask::<16>(&self.set(set).0, tag) != 0
    }

    /// Prefetch (in the host) the set `line` maps to; no simulated effect.
    #[inline]
    pub fn prefetch(&self, line: u64) {
        crate::host::prefetch::prefetch(self.set((line & self.set_mask) as usize));
    }

    /// DRRIP's policy selector (0..=1023; at or above 512 the follower sets insert with
    /// BRRIP), read only: `None` under another policy or with no leader sets.
    pub fn policy_selector(&self) -> Option<u16> {
        (self.policy == Replacement::Drrip && self.leader_stride != 0).then_some(self.psel)
    }

    /// Empties the level and resets the replacement state (including DRRIP's selector).
    pub fn flush(&mut self) {
        self.sets
            .iter_mut()
            .for_each(|s| s.0 = [EMPTY; MAX_WAYS as usize]);
        self.psel = PSEL_MID;
        self.brrip_fills = 0;
    }

    /// Role of `set` in the duel: evenly spaced leaders, SRRIP's at offset 0 of each stride
    /// and BRRIP's half a stride later.
    #[inline]
    fn duel_role(&self, set: u64) -> Duel {
        if self.leader_stride == 0 {
            return Duel::Follower;
        }
        match set & (self.leader_stride - 1) {
            0 => Duel::SrripLeader,
            o if o == self.leader_stride / 2 => Duel::BrripLeader,
            _ => Duel::Follower,
        }
    }

    /// RRPV for a line filled into `set` under DRRIP; a miss in a leader set counts against
    /// that leader's policy.
    #[inline(always)]
    fn drrip_insertion(&mut self, set: u64) -> u32 {
        let brrip = match self.duel_role(set) {
            Duel::SrripLeader => {
                self.psel = (self.psel + 1).min(PSEL_MAX);
                false
            }
            Duel::BrripLeader => {
                self.psel = self.psel.saturating_sub(1);
                true
            }
            Duel::Follower => self.psel >= PSEL_MID,
        };
        if !brrip {
            return RRPV_LONG;
        }
        self.brrip_fills = self.brrip_fills.wrapping_add(1);
        if self.brrip_fills.is_multiple_of(BRRIP_LONG_EVERY) {
            RRPV_LONG
        } else {
            RRPV_MAX
        }
    }
}

// The set helpers below look at the first `N` lanes only (8 or 16, at least the level's
// ways): the others are empty and stay so.

/// Bit `w` set for each lane whose tag part equals `tag` (with `tag == 0`: each empty way,
/// and each lane beyond the level's ways).
#[inline]
fn tag_mask<const N: usize>(entries: &[u32; MAX_WAYS as usize], tag: u32) -> u32 {
    crate::host::simd::masked_eq_mask_u32x16::<N>(entries, !STATE_MASK, tag)
}

/// The states [`rrip_victim`] looks for, in its order: empty (state 15, above every RRPV),
/// then RRPV 3, 2 and 1.
const VICTIM_STATES: [u32; 4] = [EMPTY & STATE_MASK, RRPV_MAX, 2, 1];

/// The way a fill takes in a set under RRIP: the first empty way, else the first way with
/// RRPV 3 after aging the set until one has. Adding `3 - max` at once is the same as
/// repeating "age every way by 1" until some way reaches 3. `state_masks[k]` has bit `w` set
/// for each of the first `N` lanes whose state is `VICTIM_STATES[k]`.
#[inline(always)]
fn rrip_victim<const N: usize>(
    entries: &mut [u32; MAX_WAYS as usize],
    way_mask: u32,
    state_masks: [u32; 4],
) -> usize {
    let [empty, at3, at2, at1] = state_masks.map(|m| m & way_mask);
    if empty != 0 {
        return empty.trailing_zeros() as usize;
    }
    // The first way at the largest RRPV, and how far aging takes that RRPV to 3; with every
    // way at 0, the first way (aged by 3 with the others).
    let (at, age) = if at3 != 0 {
        (at3, 0)
    } else if at2 != 0 {
        (at2, 1)
    } else if at1 != 0 {
        (at1, 2)
    } else {
        (way_mask, RRPV_MAX)
    };
    if age > 0 {
        age_ways::<N>(entries, way_mask, age);
    }
    at.trailing_zeros() as usize
}

/// Add `age` to the state of every way in `way_mask` (lanes beyond the level's ways stay
/// [`EMPTY`]). The lanes at once, each lane's addend selected by its bit, so this is a
/// few vector instructions instead of a loop over a run-time number of ways.
#[inline(always)]
fn age_ways<const N: usize>(entries: &mut [u32; MAX_WAYS as usize], way_mask: u32, age: u32) {
    const LANE_BITS: [u32; MAX_WAYS as usize] = {
        let mut bits = [0; MAX_WAYS as usize];
        let mut i = 0;
        while i < bits.len() {
            bits[i] = 1 << i;
            i += 1;
        }
        bits
    };
    for (e, bit) in entries[..N].iter_mut().zip(LANE_BITS) {
        *e += if way_mask & bit != 0 { age } else { 0 };
    }
}

/// Accesses served, by requester and by serving level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// `served[requester as usize][level as usize]`.
    pub served: [[u64; 4]; 3],
}

impl MemoryStats {
    /// Accesses by `r` served at `l`.
    pub fn get(&self, r: Requester, l: MemLevel) -> u64 {
        self.served[r as usize][l as usize]
    }

    /// All accesses by `r`.
    pub fn total(&self, r: Requester) -> u64 {
        self.served[r as usize].iter().sum()
    }

    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &MemoryStats) {
        for (mine, theirs) in self.served.iter_mut().zip(&other.served) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                *m += t;
            }
        }
    }

    /// Every count multiplied by `factor`, rounded (an estimate from a sample).
    pub fn scaled(&self, factor: f64) -> MemoryStats {
        let mut out = *self;
        for row in &mut out.served {
            for x in row {
                *x = (*x as f64 * factor).round() as u64;
            }
        }
        out
    }

    /// Counts accumulated since the snapshot `earlier` of the same counters (clamped at 0
    /// should `earlier` not be earlier).
    pub fn since(&self, earlier: &MemoryStats) -> MemoryStats {
        let mut out = *self;
        for (o, e) in out.served.iter_mut().zip(&earlier.served) {
            for (o, e) in o.iter_mut().zip(e) {
                *o = o.saturating_sub(*e);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Hpa;
    use crate::hw::memory::MemoryHierarchy;

    const LINE: u64 = 64;

    fn level(sets: u64, ways: u32, replacement: Replacement) -> CacheConfig {
        CacheConfig {
            size: sets * u64::from(ways) * LINE,
            ways,
            replacement,
        }
    }

    fn disabled() -> CacheConfig {
        CacheConfig {
            size: 0,
            ways: 1,
            replacement: Replacement::Lru,
        }
    }

    fn hierarchy(l1d: CacheConfig, l2: CacheConfig, llc: CacheConfig) -> MemoryHierarchy {
        let cfg = MemoryConfig {
            line_size: LINE as u32,
            l1d,
            l2,
            llc,
        };
        cfg.validate().unwrap();
        MemoryHierarchy::new(&cfg)
    }

    fn tiny(replacement: Replacement) -> MemoryHierarchy {
        hierarchy(
            level(2, 2, replacement),
            level(4, 2, replacement),
            level(8, 2, replacement),
        )
    }

    fn at(line: u64) -> Hpa {
        // An offset inside the line must not matter.
        Hpa::new(line * LINE + line % LINE)
    }

    #[test]
    fn exact_serving_levels_on_tiny_lru_caches() {
        use MemLevel::*;
        // L1 set = line & 1, L2 set = line & 3, LLC set = line & 7.
        let trace = [
            (0, Dram),
            (0, L1),
            (2, Dram),  // L1 set 0 = {0, 2}
            (4, Dram),  // L1 evicts 0; L2 set 0 = {0, 4}
            (0, L2),    // L1 evicts 2; 0 becomes MRU in L2
            (2, L2),    // L1 evicts 4
            (8, Dram),  // L1 evicts 0; L2 evicts 4 -> {0, 8}; LLC set 0 = {0, 8}
            (4, Llc),   // L1 evicts 2; L2 evicts 0 -> {8, 4}
            (16, Dram), // L2 evicts 8; LLC evicts 0 (never touched since its fill)
            (0, Dram),
            (1, Dram),
            (1, L1),
            (4, Llc),  // L1 and L2 evict 16; LLC set 4 still holds 4
            (8, Dram), // LLC set 0 = {16, 0}: 16 then 0 evicted 8
        ];
        let mut mem = tiny(Replacement::Lru);
        for (i, &(line, want)) in trace.iter().enumerate() {
            assert_eq!(
                mem.access(at(line), Requester::Data),
                want,
                "access {i} (line {line})"
            );
        }
        let s = mem.stats();
        assert_eq!(s.served[Requester::Data as usize], [2, 2, 2, 8]);
        assert_eq!(s.total(Requester::Walk), 0);
    }

    /// Hits of line `hot`, reused after every `scan` single-use lines of the same set.
    fn hot_hits(replacement: Replacement, ways: u32, scan: u64, rounds: u64) -> u64 {
        let mut c = Cache::new(&level(1, ways, replacement), 6);
        let hot = 1_000_000;
        c.access(hot);
        assert!(c.access(hot), "second touch of the hot line hits");
        let mut next = 0;
        let mut hits = 0;
        for _ in 0..rounds {
            for _ in 0..scan {
                assert!(!c.access(next), "scan lines are single-use");
                next += 1;
            }
            hits += u64::from(c.access(hot));
        }
        hits
    }

    #[test]
    fn reused_line_survives_scan_under_srrip_not_lru() {
        // 4 ways, 5 scan lines between reuses: beyond LRU's reach, within SRRIP's.
        assert_eq!(hot_hits(Replacement::Lru, 4, 5, 20), 0);
        assert_eq!(hot_hits(Replacement::Srrip, 4, 5, 20), 20);
        // The same through the hierarchy: a page-table line among random data in the LLC.
        for (replacement, want) in [
            (Replacement::Lru, MemLevel::Dram),
            (Replacement::Srrip, MemLevel::Llc),
        ] {
            let mut mem = hierarchy(disabled(), disabled(), level(1, 4, replacement));
            let pte_line = 0x5000;
            mem.access(at(pte_line), Requester::Walk);
            mem.access(at(pte_line), Requester::Walk);
            for round in 0..10 {
                for data in 0..5 {
                    mem.access(at(round * 5 + data), Requester::Data);
                }
                assert_eq!(
                    mem.access(at(pte_line), Requester::Walk),
                    want,
                    "{replacement:?}"
                );
            }
        }
    }

    #[test]
    fn srrip_victims_are_exact() {
        let mut c = Cache::new(&level(1, 4, Replacement::Srrip), 6);
        c.access(100);
        c.access(100); // RRPV 0
        for line in [1, 2, 3] {
            c.access(line); // fill the empty ways at RRPV 2
        }
        // Full, nothing at 3: age by 1 (100 -> 1, others -> 3), evict the first way at 3.
        c.access(4);
        assert!(!c.contains(1));
        assert!([100, 2, 3, 4].iter().all(|&l| c.contains(l)));
        c.access(5);
        assert!(!c.contains(2));
        c.access(6);
        assert!(!c.contains(3));
        // Now 100 at 1 and 4, 5, 6 at 2: aging makes 4 (way 1) the victim, and 100 reaches 2.
        c.access(7);
        assert!(!c.contains(4));
        assert!(c.contains(100));
    }

    /// One level as the module documentation states it, for LRU and SRRIP: per set, the
    /// lines with their RRPVs, most recent first (LRU) or in way order (SRRIP; nothing is
    /// invalidated, so ways fill in order and the first empty way is the next one).
    struct Model {
        ways: usize,
        lru: bool,
        sets: Vec<Vec<(u64, u32)>>,
    }

    impl Model {
        fn access(&mut self, line: u64) -> bool {
            let sets = self.sets.len() as u64;
            let set = &mut self.sets[(line % sets) as usize];
            if let Some(i) = set.iter().position(|&(l, _)| l == line) {
                if self.lru {
                    let hit = set.remove(i);
                    set.insert(0, hit);
                } else {
                    set[i].1 = 0;
                }
                return true;
            }
            if self.lru {
                set.truncate(self.ways - 1);
                set.insert(0, (line, 0));
            } else if set.len() < self.ways {
                set.push((line, RRPV_LONG));
            } else {
                while set.iter().all(|&(_, rrpv)| rrpv < RRPV_MAX) {
                    set.iter_mut().for_each(|(_, rrpv)| *rrpv += 1);
                }
                let victim = set.iter().position(|&(_, rrpv)| rrpv == RRPV_MAX).unwrap();
                set[victim] = (line, RRPV_LONG);
            }
            false
        }
    }

    #[test]
    fn lru_and_srrip_match_a_plain_model_at_every_associativity() {
        let mut rng = 7;
        for replacement in [Replacement::Lru, Replacement::Srrip] {
            for ways in 1..=MAX_WAYS {
                for sets in [1, 2, 8] {
                    let mut c = Cache::new(&level(sets, ways, replacement), 6);
                    let mut model = Model {
                        ways: ways as usize,
                        lru: replacement == Replacement::Lru,
                        sets: vec![Vec::new(); sets as usize],
                    };
                    // Lines from twice the capacity, half of the accesses to a hot eighth of
                    // them, so that hits land at every recency rank and RRPV.
                    let lines = 2 * sets * u64::from(ways);
                    for i in 0..4000 {
                        let r = lcg(&mut rng);
                        let line = if r.is_multiple_of(2) {
                            r / 2 % lines.div_ceil(8)
                        } else {
                            r / 2 % lines
                        };
                        let want = model.access(line);
                        assert_eq!(
                            c.access(line),
                            want,
                            "{replacement:?} {ways} ways {sets} sets, access {i}"
                        );
                    }
                    for line in 0..lines {
                        let want = model.sets[(line % sets) as usize]
                            .iter()
                            .any(|&(l, _)| l == line);
                        assert_eq!(
                            c.contains(line),
                            want,
                            "{replacement:?} {ways} ways {sets} sets, line {line}"
                        );
                    }
                }
            }
        }
    }

    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    fn mixed_run(replacement: Replacement) -> MemoryStats {
        let mut mem = hierarchy(
            level(4, 2, replacement),
            level(16, 4, replacement),
            level(256, 8, replacement),
        );
        let mut rng = 42;
        for i in 0..200_000u64 {
            // Walk references to a small hot set, data spread over 8x the LLC.
            if i % 4 == 0 {
                mem.access(at(lcg(&mut rng) % 512), Requester::Walk);
            } else {
                mem.access(
                    at((1 << 20) + lcg(&mut rng) % (256 * 8 * 8)),
                    Requester::Data,
                );
            }
        }
        *mem.stats()
    }

    #[test]
    fn drrip_is_deterministic() {
        let a = mixed_run(Replacement::Drrip);
        let b = mixed_run(Replacement::Drrip);
        assert_eq!(a, b);
        assert_eq!(a.total(Requester::Walk), 50_000);
        assert_eq!(a.total(Requester::Data), 150_000);
    }

    #[test]
    fn drrip_resists_thrashing_where_lru_and_srrip_do_not() {
        // A cyclic working set of 1.5x the cache: LRU and SRRIP evict every line before its
        // reuse; BRRIP keeps part of it, and the followers learn to use BRRIP.
        let cyclic_hits = |replacement| {
            let mut c = Cache::new(&level(128, 4, replacement), 6);
            let lines = 128 * 6;
            (0..40 * lines).filter(|&i| c.access(i % lines)).count()
        };
        assert_eq!(cyclic_hits(Replacement::Lru), 0);
        assert_eq!(cyclic_hits(Replacement::Srrip), 0);
        let drrip = cyclic_hits(Replacement::Drrip);
        assert!(drrip > 40 * 128 * 6 / 4, "{drrip}");
    }

    #[test]
    fn the_policy_selector_counts_leader_misses_and_reads_none_without_a_duel() {
        // 128 sets: 32 leaders a side, a stride of 4: set 0 leads for SRRIP, set 2 for BRRIP.
        let mut c = Cache::new(&level(128, 4, Replacement::Drrip), 6);
        assert_eq!(c.policy_selector(), Some(512));
        for line in [0, 128, 256] {
            assert!(!c.access(line));
        }
        assert_eq!(
            c.policy_selector(),
            Some(515),
            "an SRRIP leader's miss counts up"
        );
        assert!(c.access(0));
        assert!(!c.access(1));
        assert_eq!(
            c.policy_selector(),
            Some(515),
            "hits and followers do not count"
        );
        assert!(!c.access(2));
        assert_eq!(
            c.policy_selector(),
            Some(514),
            "a BRRIP leader's miss counts down"
        );
        (0..1100).for_each(|k| {
            c.access(k * 128 + 4);
        });
        assert_eq!(c.policy_selector(), Some(1023), "saturates at its maximum");
        c.flush();
        assert_eq!(c.policy_selector(), Some(512));
        assert_eq!(
            Cache::new(&level(128, 4, Replacement::Srrip), 6).policy_selector(),
            None
        );
        assert_eq!(
            Cache::new(&level(1, 4, Replacement::Drrip), 6).policy_selector(),
            None
        );
        assert_eq!(Cache::new(&disabled(), 6).policy_selector(), None);
    }

    #[test]
    fn disabled_levels_are_skipped() {
        let mut mem = hierarchy(disabled(), disabled(), disabled());
        for line in [0, 0, 1, 0, 1] {
            assert_eq!(mem.access(at(line), Requester::Data), MemLevel::Dram);
        }
        let mut mem = hierarchy(disabled(), level(4, 2, Replacement::Lru), disabled());
        assert_eq!(mem.access(at(3), Requester::Data), MemLevel::Dram);
        assert_eq!(mem.access(at(3), Requester::Data), MemLevel::L2);
        let mut mem = hierarchy(
            level(2, 1, Replacement::Lru),
            disabled(),
            level(8, 1, Replacement::Lru),
        );
        assert_eq!(mem.access(at(0), Requester::Data), MemLevel::Dram);
        assert_eq!(mem.access(at(2), Requester::Data), MemLevel::Dram);
        assert_eq!(mem.access(at(0), Requester::Data), MemLevel::Llc);
        assert!(!Cache::new(&disabled(), 6).is_enabled());
    }

    #[test]
    fn stats_by_requester() {
        let mut mem = tiny(Replacement::Lru);
        mem.access(at(0), Requester::Walk);
        let snapshot = *mem.stats();
        mem.access(at(0), Requester::Data);
        mem.access(at(0), Requester::Tag);
        mem.access(at(1), Requester::Tag);
        let s = *mem.stats();
        assert_eq!(s.get(Requester::Walk, MemLevel::Dram), 1);
        assert_eq!(s.get(Requester::Data, MemLevel::L1), 1);
        assert_eq!(s.get(Requester::Tag, MemLevel::L1), 1);
        assert_eq!(s.get(Requester::Tag, MemLevel::Dram), 1);
        assert_eq!(s.total(Requester::Tag), 2);
        let delta = s.since(&snapshot);
        assert_eq!(delta.total(Requester::Walk), 0);
        assert_eq!(
            delta.total(Requester::Data) + delta.total(Requester::Tag),
            3
        );
        let mut sum = snapshot;
        sum.add(&delta);
        assert_eq!(sum, s);
        // Flushing empties the caches but keeps the counts.
        mem.flush();
        assert_eq!(mem.access(at(0), Requester::Data), MemLevel::Dram);
        assert_eq!(mem.stats().total(Requester::Data), 2);
    }

    #[test]
    fn names_and_indices_agree() {
        for (i, l) in MemLevel::ALL.into_iter().enumerate() {
            assert_eq!(l as usize, i);
        }
        for (i, r) in Requester::ALL.into_iter().enumerate() {
            assert_eq!(r as usize, i);
        }
        let names: Vec<_> = MemLevel::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names, ["l1", "l2", "llc", "dram"]);
        assert_eq!(Requester::Walk.name(), "walk");
    }

    #[test]
    fn validation_names_the_level() {
        let good = MemoryConfig {
            line_size: 64,
            l1d: CacheConfig {
                size: 48 << 10,
                ways: 12,
                replacement: Replacement::Lru,
            },
            l2: CacheConfig {
                size: 2 << 20,
                ways: 16,
                replacement: Replacement::Lru,
            },
            llc: CacheConfig {
                size: 0,
                ways: 1,
                replacement: Replacement::Drrip,
            },
        };
        good.validate().unwrap();
        for bad_line in [0, 4, 48] {
            let err = MemoryConfig {
                line_size: bad_line,
                ..good.clone()
            }
            .validate()
            .unwrap_err();
            assert!(err.contains("line_size"), "{err}");
        }
        let cases = [
            (
                CacheConfig {
                    size: 1 << 20,
                    ways: 0,
                    replacement: Replacement::Srrip,
                },
                "ways",
            ),
            (
                CacheConfig {
                    size: 1000,
                    ways: 4,
                    replacement: Replacement::Srrip,
                },
                "multiple",
            ),
            (
                CacheConfig {
                    size: 3 << 20,
                    ways: 16,
                    replacement: Replacement::Srrip,
                },
                "power of two",
            ),
        ];
        for (llc, problem) in cases {
            let err = MemoryConfig {
                llc,
                ..good.clone()
            }
            .validate()
            .unwrap_err();
            assert!(err.contains("memory.llc"), "{err}");
            assert!(err.contains(problem), "{err}");
        }
    }
}
