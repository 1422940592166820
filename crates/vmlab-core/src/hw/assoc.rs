//! A set-associative translation cache: the one structure behind every TLB, paging-structure
//! cache and nested (GPA->HPA) TLB of the simulated machine.
//!
//! Keys are opaque `u64`s packed by the caller (typically a virtual page number in the low
//! bits and an address-space tag such as a PCID above it). The set index is the low bits of
//! the key, as hardware indexes with the low VPN bits, so keys that differ only above the
//! index bits compete for the same set.
//!
//! Model: true LRU within a set; fills are always allowed (no replacement hints, no
//! partitioning between page sizes or address spaces beyond what the key encodes).
//!
//! Layout: structure-of-arrays in boxed slices sized once in [`TranslationCache::new`]; no
//! method allocates afterwards. Validity is a per-set bit mask plus a zero fingerprint in
//! empty ways, which keeps every `u64` (including `0` and `u64::MAX`) usable as a key. A set
//! is searched sixteen 8-bit key fingerprints at a time (one vector compare, see
//! `crate::host::simd`) and full keys are compared only where a fingerprint matches.
//! Recency is kept as an order of way numbers per set (see `Set`), moved with byte shifts.

/// Geometry of one translation cache. `entries == 0` disables it (lookups always miss, fills
/// do nothing).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranslationCacheConfig {
    /// Total number of entries (sets * ways); 0 disables the cache.
    pub entries: u32,
    /// Associativity: entries per set.
    pub ways: u32,
}

impl TranslationCacheConfig {
    /// A cache that does not exist: every lookup misses and is not counted.
    pub const DISABLED: Self = Self {
        entries: 0,
        ways: 1,
    };

    /// A single set holding `entries` entries (or [`Self::DISABLED`] when `entries == 0`).
    pub fn fully_associative(entries: u32) -> Self {
        if entries == 0 {
            Self::DISABLED
        } else {
            Self {
                entries,
                ways: entries,
            }
        }
    }

    /// Checks the geometry. The error message names `name`, the problem and how to fix it.
    pub fn validate(&self, name: &str) -> Result<(), String> {
        let Self { entries, ways } = *self;
        if ways == 0 || ways > MAX_WAYS {
            return Err(format!(
                "{name}: ways must be between 1 and {MAX_WAYS} (use ways = entries for a fully \
                 associative cache, or entries = 0 to disable it)"
            ));
        }
        if entries == 0 {
            return Ok(());
        }
        if entries % ways != 0 {
            return Err(format!(
                "{name}: entries ({entries}) must be a multiple of ways ({ways}); \
                 set entries = ways * number of sets"
            ));
        }
        let sets = entries / ways;
        if !sets.is_power_of_two() {
            return Err(format!(
                "{name}: the set count entries / ways = {entries} / {ways} = {sets} must be a \
                 power of two (sets are indexed by low key bits); adjust entries or ways"
            ));
        }
        Ok(())
    }
}

/// Most ways a translation cache may have (the valid bits of a set fit one `u64`).
pub const MAX_WAYS: u32 = 64;
/// Ways are searched this many at a time (one vector compare).
const LANES: usize = 16;
type Lanes = [u8; LANES];

/// One set of `G` groups of [`LANES`] ways, in one record: a lookup indexes the set once and
/// then works on fixed-size arrays, with no per-access slice arithmetic or bounds checks.
///
/// For every way: an 8-bit fingerprint of its key (0 when the way is empty, never for a
/// key; padding lanes beyond the cache's ways stay empty), and its key and value. Recency is
/// an order of way numbers: the first `valid.count_ones()` lanes of `order` are the valid
/// ways from most to least recently used, and the lanes after them are unused (any value).
/// So a fill pushes its way in front of all lanes with no search for where the order ends,
/// the least recently used way of a full set is the lane at `ways - 1`, and a hit moves its
/// way's lane to the front.
#[derive(Clone, Copy, Debug)]
struct Set<const G: usize> {
    /// Bit `w` set when way `w` holds an entry.
    valid: u64,
    prints: [Lanes; G],
    order: [Lanes; G],
    entries: [[(u64, u64); LANES]; G],
}

impl<const G: usize> Set<G> {
    /// A set with every way empty.
    const VACANT: Self = Set {
        valid: 0,
        prints: [[0; LANES]; G],
        order: [[0; LANES]; G],
        entries: [[(0, 0); LANES]; G],
    };

    /// Way holding a valid entry for `key`.
    #[inline(always)]
    fn find(&self, key: u64) -> Option<usize> {
        // Empty ways and padding lanes hold 0, which no key's fingerprint is.
        let mut candidates = crate::host::simd::eq_mask_u8x16s(&self.prints, fingerprint(key));
        while candidates != 0 {
            // Below `G * LANES`: the mask shows the compiler, so there is no bounds check.
            let way = candidates.trailing_zeros() as usize & (G * LANES - 1);
            if self.entries.as_flattened()[way].0 == key {
                return Some(way);
            }
            candidates &= candidates - 1;
        }
        None
    }

    /// The value in `way`.
    #[inline(always)]
    fn value(&self, way: usize) -> u64 {
        self.entries.as_flattened()[way & (G * LANES - 1)].1
    }

    /// Replace the value in `way`.
    #[inline(always)]
    fn set_value(&mut self, way: usize, value: u64) {
        self.entries.as_flattened_mut()[way & (G * LANES - 1)].1 = value;
    }

    /// Lane of `order` holding the valid `way`. Unused lanes after the valid ones may hold
    /// its number too; the first match is the valid lane.
    #[inline(always)]
    fn lane_of(&self, way: usize) -> usize {
        let at = crate::host::simd::eq_mask_u8x16s(&self.order, way as u8);
        debug_assert_ne!(at, 0, "valid way {way} is not in the recency order");
        at.trailing_zeros() as usize & (G * LANES - 1)
    }

    /// Make the valid `way` the most recently used.
    #[inline(always)]
    fn touch(&mut self, way: usize) {
        let lane = self.lane_of(way);
        crate::host::simd::move_to_front_u8x16(&mut self.order, lane, way as u8);
    }

    /// Remove the valid `way`: the ways after it in the order move one lane forward.
    fn remove(&mut self, way: usize) {
        let lane = self.lane_of(way);
        let order = self.order.as_flattened_mut();
        order.copy_within(lane + 1.., lane);
        self.prints[way / LANES][way % LANES] = 0;
        self.valid &= !(1 << way);
    }

    /// An empty way among those in `full` (bit `w` for each of the cache's ways), else the
    /// least recently used one, at lane `last` (`ways - 1`) of the order.
    #[inline(always)]
    fn victim(&self, full: u64, last: usize) -> usize {
        let empty = !self.valid & full;
        // Below `ways <= G * LANES`, a power of two: the masks change nothing but show the
        // compiler the way is in range, so `put_new` needs no bounds checks.
        if empty != 0 {
            return empty.trailing_zeros() as usize & (G * LANES - 1);
        }
        let last = last & (G * LANES - 1);
        self.order.as_flattened()[last] as usize & (G * LANES - 1)
    }

    /// Put `key -> value` into `way`, which is empty or the least recently used way of a full
    /// set, as the most recently used entry.
    #[inline(always)]
    fn put_new(&mut self, way: usize, key: u64, value: u64) {
        // Groups are contiguous: the flat index is one scaled offset, not a group and a lane.
        // The mask changes nothing (`way < ways`) but shows the compiler it is in bounds.
        let way = way & (G * LANES - 1);
        self.entries.as_flattened_mut()[way] = (key, value);
        self.prints.as_flattened_mut()[way] = fingerprint(key);
        self.valid |= 1 << way;
        // The order's lanes after the valid ones are unused: the one that falls off the end
        // of a full set is the way now taken.
        crate::host::simd::push_front_u8x16(&mut self.order, way as u8);
    }

    /// Calls `f(way, key, value)` for each valid way.
    fn for_each_valid(&self, mut f: impl FnMut(usize, u64, u64)) {
        let mut valid = self.valid;
        while valid != 0 {
            let way = valid.trailing_zeros() as usize;
            valid &= valid - 1;
            let (key, value) = self.entries[way / LANES][way % LANES];
            f(way, key, value);
        }
    }
}

/// The sets, by group count (1, 2 or 4: the ways rounded up to a power-of-two number of
/// [`LANES`]), so each set's loops have constant bounds and unroll.
#[derive(Clone, Debug)]
enum Sets {
    One(Box<[Set<1>]>),
    Two(Box<[Set<2>]>),
    Four(Box<[Set<4>]>),
}

/// Evaluates `$body` with `$sets` bound to the boxed sets of `$target` (a `&Sets` or
/// `&mut Sets`), whatever their group count: the body is compiled once per count.
macro_rules! with_sets {
    ($target:expr, $sets:ident => $body:expr) => {
        match $target {
            Sets::One($sets) => $body,
            Sets::Two($sets) => $body,
            Sets::Four($sets) => $body,
        }
    };
}

/// A set-associative cache of `u64 -> u64` translations with per-set LRU replacement (see
/// `Set` for what each set keeps). A lookup compares sixteen fingerprints at once and full
/// keys only on a fingerprint match.
///
/// A disabled cache has one set that stays empty (fills skip it), so a lookup needs no
/// test for it: it just never matches.
#[derive(Clone, Debug)]
pub struct TranslationCache {
    /// Associativity; 0 when disabled.
    ways: usize,
    /// Bit `w` set for each way `w < ways`: a set's ways when it is full.
    full: u64,
    /// `sets - 1`: the set index is `key & set_mask`. The number of sets is a power of two
    /// (at least 1) fixed at construction, so every index is in range.
    set_mask: u64,
    sets: Sets,
    hits: u64,
    misses: u64,
}

#[inline]
fn fingerprint(key: u64) -> u8 {
    // The low key bits index the set and are equal within it: mix in every bit. 0 marks an
    // empty way, so it is never a fingerprint: the low bit is always set (seven bits of the
    // mix tell keys apart, one instruction rather than a compare and a select).
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8 | 1
}

impl TranslationCache {
    /// Builds an empty cache. Assumes `cfg` passed [`TranslationCacheConfig::validate`].
    pub fn new(cfg: &TranslationCacheConfig) -> Self {
        debug_assert!(cfg.validate("translation cache").is_ok(), "{cfg:?}");
        let (ways, sets) = if cfg.entries == 0 {
            (0, 1)
        } else {
            (cfg.ways as usize, (cfg.entries / cfg.ways) as usize)
        };
        let sets = match ways.div_ceil(LANES).next_power_of_two() {
            1 => Sets::One(vec![Set::VACANT; sets].into_boxed_slice()),
            2 => Sets::Two(vec![Set::VACANT; sets].into_boxed_slice()),
            _ => Sets::Four(vec![Set::VACANT; sets].into_boxed_slice()),
        };
        Self {
            ways,
            full: if ways == 0 {
                0
            } else {
                u64::MAX >> (64 - ways)
            },
            set_mask: sets_len(&sets) as u64 - 1,
            sets,
            hits: 0,
            misses: 0,
        }
    }

    /// Whether the cache has any entries at all.
    pub fn is_enabled(&self) -> bool {
        self.ways != 0
    }

    #[inline]
    fn set_of(&self, key: u64) -> usize {
        (key & self.set_mask) as usize
    }

    /// Hit: `Some(value)`, makes the entry most recently used and counts a hit.
    /// Miss: `None`, counts a miss. Disabled: `None`, and reports no miss ([`Self::misses`]).
    #[inline(always)]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        let index = self.set_of(key);
        let found = with_sets!(&mut self.sets, sets => {
            debug_assert_eq!(sets.len() as u64, self.set_mask + 1);
            // SAFETY: `index <= set_mask`, and `sets.len() == set_mask + 1` (both fixed in
            // `new`; no method resizes `sets`), so `index < sets.len()`.
            let set = unsafe { sets.get_unchecked_mut(index) };
            set.find(key).map(|way| {
                set.touch(way);
                set.value(way)
            })
        });
        match found {
            Some(_) => self.hits += 1,
            None => self.misses += 1,
        }
        found
    }

    /// Side-effect-free probe (no recency update, no counting), for tests and invariant checks.
    #[inline]
    pub fn peek(&self, key: u64) -> Option<u64> {
        let index = self.set_of(key);
        with_sets!(&self.sets, sets => {
            // SAFETY: as in `lookup`, `index <= set_mask == sets.len() - 1`.
            let set = unsafe { sets.get_unchecked(index) };
            set.find(key).map(|way| set.value(way))
        })
    }

    /// Inserts `key -> value` as the most recently used entry of its set, overwriting an
    /// existing entry for `key`, else taking an empty way, else evicting the LRU way.
    #[inline]
    pub fn fill(&mut self, key: u64, value: u64) {
        self.fill_in(key, value, true)
    }

    /// Inserts `key -> value`, which the caller knows is not cached (it just missed), as the
    /// most recently used entry: [`Self::fill`] without the search for an existing entry.
    #[inline]
    pub fn fill_absent(&mut self, key: u64, value: u64) {
        self.fill_in(key, value, false)
    }

    #[inline(always)]
    fn fill_in(&mut self, key: u64, value: u64, search: bool) {
        if self.ways == 0 {
            return;
        }
        let (index, full, last) = (self.set_of(key), self.full, self.ways - 1);
        with_sets!(&mut self.sets, sets => {
            // SAFETY: as in `lookup`, `index <= set_mask == sets.len() - 1`.
            let set = unsafe { sets.get_unchecked_mut(index) };
            debug_assert!(search || set.find(key).is_none(), "fill_absent of a cached key {key:#x}");
            match if search { set.find(key) } else { None } {
                Some(way) => {
                    set.set_value(way, value);
                    set.touch(way);
                }
                None => {
                    let way = set.victim(full, last);
                    set.put_new(way, key, value);
                }
            }
        })
    }

    /// Drops the entry for `key`, if present.
    pub fn invalidate(&mut self, key: u64) {
        let index = self.set_of(key);
        with_sets!(&mut self.sets, sets => {
            let set = &mut sets[index];
            if let Some(way) = set.find(key) {
                set.remove(way);
            }
        })
    }

    /// Keeps only the entries for which `f(key, value)` is true (flush by PCID, invlpg of a
    /// large page, ...).
    pub fn retain(&mut self, mut f: impl FnMut(u64, u64) -> bool) {
        with_sets!(&mut self.sets, sets => {
            for set in sets.iter_mut() {
                let mut drop = 0u64;
                set.for_each_valid(|way, key, value| {
                    if !f(key, value) {
                        drop |= 1 << way;
                    }
                });
                // Removed in increasing way order, as the valid ways were visited.
                while drop != 0 {
                    set.remove(drop.trailing_zeros() as usize);
                    drop &= drop - 1;
                }
            }
        })
    }

    /// Drops every entry. Hit and miss counts are kept.
    pub fn flush(&mut self) {
        // Keys and values of empty ways are never read (their fingerprints are 0): they stay.
        with_sets!(&mut self.sets, sets => sets.iter_mut().for_each(|set| {
            set.valid = 0;
            set.prints.fill([0; LANES]);
        }))
    }

    /// Lookups that hit since construction.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Lookups that missed since construction (not counting lookups of a disabled cache:
    /// they are counted, as the hot path does not test for it, but not reported).
    pub fn misses(&self) -> u64 {
        if self.ways == 0 {
            0
        } else {
            self.misses
        }
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        with_sets!(&self.sets, sets => sets.iter().map(|s| s.valid.count_ones() as usize).sum())
    }
}

fn sets_len(sets: &Sets) -> usize {
    with_sets!(sets, sets => sets.len())
}

/// The cache against an obviously correct model of true LRU: a `Vec` per set in recency
/// order, over random operation sequences on geometries from direct-mapped to 64 ways.
#[cfg(test)]
mod reference_model {
    use super::*;
    use proptest::prelude::*;

    /// Per set, the entries from most to least recently used.
    struct ReferenceLru {
        ways: usize,
        sets: Vec<Vec<(u64, u64)>>,
        hits: u64,
        misses: u64,
    }

    impl ReferenceLru {
        fn new(cfg: &TranslationCacheConfig) -> Self {
            let (ways, sets) = if cfg.entries == 0 {
                (0, 1)
            } else {
                (cfg.ways as usize, (cfg.entries / cfg.ways) as usize)
            };
            Self {
                ways,
                sets: vec![Vec::new(); sets],
                hits: 0,
                misses: 0,
            }
        }

        fn set(&mut self, key: u64) -> &mut Vec<(u64, u64)> {
            let n = self.sets.len() as u64;
            &mut self.sets[(key % n) as usize]
        }

        fn position(&mut self, key: u64) -> Option<usize> {
            self.set(key).iter().position(|&(k, _)| k == key)
        }

        fn peek(&mut self, key: u64) -> Option<u64> {
            let at = self.position(key)?;
            Some(self.set(key)[at].1)
        }

        fn lookup(&mut self, key: u64) -> Option<u64> {
            if self.ways == 0 {
                return None;
            }
            match self.position(key) {
                Some(at) => {
                    self.hits += 1;
                    let entry = self.set(key).remove(at);
                    self.set(key).insert(0, entry);
                    Some(entry.1)
                }
                None => {
                    self.misses += 1;
                    None
                }
            }
        }

        /// Returns the key evicted to make room, if any.
        fn fill(&mut self, key: u64, value: u64) -> Option<u64> {
            if self.ways == 0 {
                return None;
            }
            if let Some(at) = self.position(key) {
                self.set(key).remove(at);
            }
            let ways = self.ways;
            let set = self.set(key);
            set.insert(0, (key, value));
            let evicted = set.get(ways).map(|&(k, _)| k);
            set.truncate(ways);
            evicted
        }

        fn invalidate(&mut self, key: u64) {
            if let Some(at) = self.position(key) {
                self.set(key).remove(at);
            }
        }

        fn occupancy(&self) -> usize {
            self.sets.iter().map(Vec::len).sum()
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        Lookup(u64),
        Peek(u64),
        Fill(u64, u64),
        /// Applied only when the key is absent (the caller's contract).
        FillAbsent(u64, u64),
        Invalidate(u64),
        /// Keeps the entries whose `(key + value) % modulus != residue`.
        Retain {
            modulus: u64,
            residue: u64,
        },
        Flush,
    }

    /// Geometries from direct-mapped to 64 ways, 1 to 8 sets, and a disabled cache.
    fn geometry() -> impl Strategy<Value = TranslationCacheConfig> {
        let ways = prop::sample::select(vec![1u32, 2, 4, 12, 16, 32, 64]);
        prop_oneof![
            8 => (ways, 0u32..4).prop_map(|(ways, sets_log)| TranslationCacheConfig {
                entries: ways << sets_log,
                ways,
            }),
            1 => Just(TranslationCacheConfig::DISABLED),
        ]
    }

    /// Keys from a range about twice the capacity, some with high "address-space" bits (same
    /// set, different key), and the extremes: sets overflow and keys conflict.
    fn key(span: u64) -> impl Strategy<Value = u64> {
        prop_oneof![
            12 => (0..span, 0u64..3).prop_map(|(low, tag)| low | tag << 48),
            1 => Just(0),
            1 => Just(u64::MAX),
        ]
    }

    fn op(span: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => key(span).prop_map(Op::Lookup),
            2 => key(span).prop_map(Op::Peek),
            4 => (key(span), any::<u64>()).prop_map(|(k, v)| Op::Fill(k, v)),
            3 => (key(span), any::<u64>()).prop_map(|(k, v)| Op::FillAbsent(k, v)),
            2 => key(span).prop_map(Op::Invalidate),
            1 => (2u64..5, 0u64..5).prop_map(|(modulus, residue)| Op::Retain { modulus, residue }),
            1 => Just(Op::Flush),
        ]
    }

    fn case() -> impl Strategy<Value = (TranslationCacheConfig, Vec<Op>)> {
        geometry().prop_flat_map(|cfg| {
            let span = 2 * u64::from(cfg.entries.max(1)) + 3;
            (Just(cfg), prop::collection::vec(op(span), 0..600))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn matches_a_reference_lru((cfg, ops) in case()) {
            let mut cache = TranslationCache::new(&cfg);
            let mut model = ReferenceLru::new(&cfg);
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Op::Lookup(k) => prop_assert_eq!(cache.lookup(k), model.lookup(k), "op {}", i),
                    Op::Peek(k) => prop_assert_eq!(cache.peek(k), model.peek(k), "op {}", i),
                    Op::Fill(k, v) => {
                        cache.fill(k, v);
                        if let Some(evicted) = model.fill(k, v) {
                            prop_assert_eq!(cache.peek(evicted), None, "op {}", i);
                        }
                    }
                    Op::FillAbsent(k, v) => {
                        if model.peek(k).is_none() {
                            cache.fill_absent(k, v);
                            if let Some(evicted) = model.fill(k, v) {
                                prop_assert_eq!(cache.peek(evicted), None, "op {}", i);
                            }
                        }
                    }
                    Op::Invalidate(k) => {
                        cache.invalidate(k);
                        model.invalidate(k);
                    }
                    Op::Retain { modulus, residue } => {
                        let keep = |k: u64, v: u64| k.wrapping_add(v) % modulus != residue;
                        cache.retain(keep);
                        model.sets.iter_mut().for_each(|s| s.retain(|&(k, v)| keep(k, v)));
                    }
                    Op::Flush => {
                        cache.flush();
                        model.sets.iter_mut().for_each(Vec::clear);
                    }
                }
                prop_assert_eq!(cache.occupancy(), model.occupancy(), "op {}", i);
            }
            prop_assert_eq!(cache.hits(), model.hits);
            prop_assert_eq!(cache.misses(), model.misses);
            // Every entry left, with its value; then the whole recency order, through the
            // evictions that filling every set with fresh keys causes.
            for set in model.sets.clone() {
                for (k, v) in set {
                    prop_assert_eq!(cache.peek(k), Some(v));
                }
            }
            let fresh = 1u64 << 40;
            for n in 0..u64::from(cfg.entries) {
                cache.fill_absent(fresh + n, n);
                if let Some(evicted) = model.fill(fresh + n, n) {
                    prop_assert_eq!(cache.peek(evicted), None, "fresh fill {}", n);
                }
                prop_assert_eq!(cache.occupancy(), model.occupancy());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: u32, ways: u32) -> TranslationCache {
        let cfg = TranslationCacheConfig { entries, ways };
        cfg.validate("test").unwrap();
        TranslationCache::new(&cfg)
    }

    #[test]
    fn hit_after_fill() {
        let mut c = cache(8, 2);
        assert_eq!(c.lookup(5), None);
        c.fill(5, 50);
        assert_eq!(c.lookup(5), Some(50));
        c.fill(5, 51);
        assert_eq!(c.lookup(5), Some(51));
        assert_eq!(c.occupancy(), 1);
    }

    #[test]
    fn lru_eviction_order_in_two_way_set() {
        // 4 sets x 2 ways: keys 0, 4, 8, 12 all map to set 0.
        let mut c = cache(8, 2);
        c.fill(0, 100);
        c.fill(4, 104);
        // Touch 0 so 4 becomes the LRU way.
        assert_eq!(c.lookup(0), Some(100));
        c.fill(8, 108);
        assert_eq!(c.peek(4), None);
        assert_eq!(c.peek(0), Some(100));
        assert_eq!(c.peek(8), Some(108));
        // Now 0 is LRU (8 was filled after the touch of 0).
        c.fill(12, 112);
        assert_eq!(c.peek(0), None);
        assert_eq!(c.peek(8), Some(108));
        assert_eq!(c.peek(12), Some(112));
        // Other sets were untouched.
        c.fill(1, 101);
        assert_eq!(c.occupancy(), 3);
    }

    #[test]
    fn peek_does_not_update_recency() {
        let mut c = cache(2, 2);
        c.fill(10, 1);
        c.fill(20, 2);
        assert_eq!(c.peek(10), Some(1));
        c.fill(30, 3);
        assert_eq!(c.peek(10), None, "peek must not have made 10 recent");
        assert_eq!((c.hits(), c.misses()), (0, 0));
    }

    #[test]
    fn keys_differing_above_index_bits_conflict() {
        // 4 sets x 1 way: the set index is key & 3.
        let mut c = cache(4, 1);
        let a = 0x2;
        let b = (7u64 << 48) | 0x2; // same low bits, different "PCID"
        c.fill(a, 1);
        c.fill(b, 2);
        assert_eq!(c.peek(a), None);
        assert_eq!(c.peek(b), Some(2));
        // A key in another set does not disturb it.
        c.fill(0x3, 3);
        assert_eq!(c.peek(b), Some(2));
    }

    #[test]
    fn extreme_keys_are_usable() {
        let mut c = cache(4, 2);
        assert_eq!(c.lookup(0), None);
        assert_eq!(c.lookup(u64::MAX), None);
        c.fill(0, 7);
        c.fill(u64::MAX, 8);
        assert_eq!(c.lookup(0), Some(7));
        assert_eq!(c.lookup(u64::MAX), Some(8));
        c.invalidate(0);
        assert_eq!(c.peek(0), None);
        assert_eq!(c.peek(u64::MAX), Some(8));
        // A fresh cache holds no phantom entry for key 0 with value 0.
        let fresh = cache(4, 2);
        assert_eq!(fresh.peek(0), None);
    }

    #[test]
    fn refill_after_invalidate_leaves_one_entry() {
        let mut c = cache(4, 4);
        c.fill(9, 1);
        c.fill(10, 2);
        c.invalidate(9);
        c.fill(9, 3);
        assert_eq!(c.peek(9), Some(3));
        assert_eq!(c.occupancy(), 2);
        c.invalidate(9);
        assert_eq!(c.peek(9), None);
    }

    #[test]
    fn disabled_cache_never_hits_and_counts_nothing() {
        let mut c = TranslationCache::new(&TranslationCacheConfig::DISABLED);
        assert!(!c.is_enabled());
        c.fill(1, 2);
        assert_eq!(c.lookup(1), None);
        assert_eq!(c.peek(1), None);
        c.invalidate(1);
        c.retain(|_, _| false);
        c.flush();
        assert_eq!((c.hits(), c.misses(), c.occupancy()), (0, 0, 0));
        let fa = TranslationCache::new(&TranslationCacheConfig::fully_associative(0));
        assert!(!fa.is_enabled());
    }

    #[test]
    fn retain_invalidate_flush() {
        let mut c = TranslationCache::new(&TranslationCacheConfig::fully_associative(8));
        for pcid in 0..2u64 {
            for vpn in 0..3u64 {
                c.fill((pcid << 48) | vpn, vpn + 10 * pcid);
            }
        }
        assert_eq!(c.occupancy(), 6);
        c.retain(|key, _| key >> 48 != 1);
        assert_eq!(c.occupancy(), 3);
        assert_eq!(c.peek(1 << 48), None);
        assert_eq!(c.peek(2), Some(2));
        c.retain(|_, value| value != 1);
        assert_eq!(c.peek(1), None);
        c.invalidate(0);
        c.invalidate(0x99); // absent: no effect
        assert_eq!(c.occupancy(), 1);
        c.flush();
        assert_eq!(c.occupancy(), 0);
        assert_eq!(c.peek(2), None);
    }

    #[test]
    fn hit_and_miss_counts_are_exact() {
        let mut c = cache(4, 2);
        c.lookup(1);
        c.fill(1, 1);
        c.lookup(1);
        c.lookup(1);
        c.lookup(2);
        c.peek(1);
        c.flush();
        c.lookup(1);
        assert_eq!((c.hits(), c.misses()), (2, 3));
    }

    #[test]
    fn validate_rejects_bad_geometries() {
        let bad = [(8, 0, "ways"), (12, 8, "multiple"), (12, 4, "power of two")];
        for (entries, ways, problem) in bad {
            let err = TranslationCacheConfig { entries, ways }
                .validate("l2_stlb")
                .unwrap_err();
            assert!(err.contains("l2_stlb"), "{err}");
            assert!(err.contains(problem), "{err}");
        }
        let good = [(0, 1), (0, 4), (64, 4), (1536, 12), (16, 16)];
        for (entries, ways) in good {
            assert_eq!(
                TranslationCacheConfig { entries, ways }.validate("x"),
                Ok(())
            );
        }
        TranslationCacheConfig::DISABLED.validate("x").unwrap();
        TranslationCacheConfig::fully_associative(24)
            .validate("x")
            .unwrap();
    }
}
