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
//! method allocates afterwards. Validity is a per-set bit mask, which keeps every `u64`
//! (including `0` and `u64::MAX`) usable as a key.

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
/// LRU rank of an empty way: older than any valid one, so rank updates skip it.
const EMPTY: u8 = u8::MAX;

/// A set-associative cache of `u64 -> u64` translations with per-set LRU replacement.
///
/// Each way keeps its key, its value, a 16-bit fingerprint of the key (so a lookup compares
/// four fingerprints per word, and full keys only on a fingerprint match) and its
/// LRU rank in the set (0 = most recent; the valid ways' ranks are always 0..valid).
#[derive(Clone, Debug)]
pub struct TranslationCache {
    /// Associativity; 0 when disabled (then all slices are empty).
    ways: usize,
    /// `sets - 1`: the set index is `key & set_mask`.
    set_mask: u64,
    /// Per set: bit `w` set when way `w` holds an entry.
    valid: Box<[u64]>,
    /// Key fingerprints, four 16-bit lanes per word, `words_per_set` words per set.
    prints: Box<[u64]>,
    words_per_set: usize,
    keys: Box<[u64]>,
    values: Box<[u64]>,
    ranks: Box<[u8]>,
    hits: u64,
    misses: u64,
}

#[inline]
fn fingerprint(key: u64) -> u16 {
    // The low key bits index the set and are equal within it: mix in every bit.
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 48) as u16
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
        let entries = ways * sets;
        let words_per_set = ways.div_ceil(4);
        Self {
            ways,
            set_mask: sets as u64 - 1,
            valid: vec![0; sets].into_boxed_slice(),
            prints: vec![0; words_per_set * sets].into_boxed_slice(),
            words_per_set,
            keys: vec![0; entries].into_boxed_slice(),
            values: vec![0; entries].into_boxed_slice(),
            ranks: vec![EMPTY; entries].into_boxed_slice(),
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

    /// Way of `set` holding a valid entry for `key`.
    #[inline]
    fn find(&self, set: usize, key: u64) -> Option<usize> {
        const LOW: u64 = 0x0001_0001_0001_0001;
        const HIGH: u64 = 0x8000_8000_8000_8000;
        let base = set * self.ways;
        let valid = self.valid[set];
        let broadcast = fingerprint(key) as u64 * LOW;
        let words = &self.prints[set * self.words_per_set..(set + 1) * self.words_per_set];
        for (i, &word) in words.iter().enumerate() {
            // Lanes equal to the fingerprint become zero; flag zero lanes (a lane above a
            // zero lane may be flagged falsely, which the full-key compare rejects).
            let x = word ^ broadcast;
            let mut zero_lanes = x.wrapping_sub(LOW) & !x & HIGH;
            while zero_lanes != 0 {
                let w = i * 4 + (zero_lanes.trailing_zeros() / 16) as usize;
                if valid & (1 << w) != 0 && self.keys[base + w] == key {
                    return Some(w);
                }
                zero_lanes &= zero_lanes - 1;
            }
        }
        None
    }

    /// Make `way` of `set` the most recently used: every way more recent than it ages by one
    /// (empty ways, ranked [`EMPTY`], never do).
    #[inline]
    fn touch(&mut self, set: usize, way: usize) {
        let base = set * self.ways;
        let ranks = &mut self.ranks[base..base + self.ways];
        let rank = ranks[way];
        for r in ranks.iter_mut() {
            *r += (*r < rank) as u8;
        }
        ranks[way] = 0;
    }

    /// Remove `way` of `set`: every way older than it gets one rank younger.
    fn remove(&mut self, set: usize, way: usize) {
        let base = set * self.ways;
        let ranks = &mut self.ranks[base..base + self.ways];
        let rank = ranks[way];
        for r in ranks.iter_mut() {
            *r -= (*r > rank && *r != EMPTY) as u8;
        }
        ranks[way] = EMPTY;
        self.valid[set] &= !(1 << way);
    }

    /// Hit: `Some(value)`, makes the entry most recently used and counts a hit.
    /// Miss: `None`, counts a miss. Disabled: `None`, counts nothing.
    #[inline]
    pub fn lookup(&mut self, key: u64) -> Option<u64> {
        if self.ways == 0 {
            return None;
        }
        let set = self.set_of(key);
        match self.find(set, key) {
            Some(way) => {
                self.touch(set, way);
                self.hits += 1;
                Some(self.values[set * self.ways + way])
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Side-effect-free probe (no recency update, no counting), for tests and invariant checks.
    pub fn peek(&self, key: u64) -> Option<u64> {
        if self.ways == 0 {
            return None;
        }
        let set = self.set_of(key);
        self.find(set, key).map(|way| self.values[set * self.ways + way])
    }

    /// Inserts `key -> value` as the most recently used entry of its set, overwriting an
    /// existing entry for `key`, else taking an empty way, else evicting the LRU way.
    pub fn fill(&mut self, key: u64, value: u64) {
        if self.ways == 0 {
            return;
        }
        let set = self.set_of(key);
        let way = self.find(set, key).unwrap_or_else(|| self.victim(set));
        self.put(set, way, key, value);
    }

    /// Inserts `key -> value`, which the caller knows is not cached (it just missed), as the
    /// most recently used entry: [`Self::fill`] without the search for an existing entry.
    pub fn fill_absent(&mut self, key: u64, value: u64) {
        if self.ways == 0 {
            return;
        }
        let set = self.set_of(key);
        debug_assert!(self.find(set, key).is_none(), "fill_absent of a cached key {key:#x}");
        let way = self.victim(set);
        self.put(set, way, key, value);
    }

    /// An empty way of `set`, else its least recently used one.
    #[inline]
    fn victim(&self, set: usize) -> usize {
        let full = if self.ways == 64 { u64::MAX } else { (1u64 << self.ways) - 1 };
        let empty = !self.valid[set] & full;
        if empty != 0 {
            return empty.trailing_zeros() as usize;
        }
        let oldest = (self.ways - 1) as u8;
        let base = set * self.ways;
        self.ranks[base..base + self.ways].iter().position(|&r| r == oldest).unwrap_or(0)
    }

    #[inline]
    fn put(&mut self, set: usize, way: usize, key: u64, value: u64) {
        let i = set * self.ways + way;
        self.keys[i] = key;
        self.values[i] = value;
        let word = &mut self.prints[set * self.words_per_set + way / 4];
        let shift = (way % 4) * 16;
        *word = (*word & !(0xffff << shift)) | (fingerprint(key) as u64) << shift;
        self.valid[set] |= 1 << way;
        self.touch(set, way);
    }

    /// Drops the entry for `key`, if present.
    pub fn invalidate(&mut self, key: u64) {
        if self.ways == 0 {
            return;
        }
        let set = self.set_of(key);
        if let Some(way) = self.find(set, key) {
            self.remove(set, way);
        }
    }

    /// Keeps only the entries for which `f(key, value)` is true (flush by PCID, invlpg of a
    /// large page, ...).
    pub fn retain(&mut self, mut f: impl FnMut(u64, u64) -> bool) {
        for set in 0..self.valid.len() {
            let mut valid = self.valid[set];
            while valid != 0 {
                let way = valid.trailing_zeros() as usize;
                valid &= valid - 1;
                let i = set * self.ways + way;
                if !f(self.keys[i], self.values[i]) {
                    self.remove(set, way);
                }
            }
        }
    }

    /// Drops every entry. Hit and miss counts are kept.
    pub fn flush(&mut self) {
        self.valid.fill(0);
        self.ranks.fill(EMPTY);
    }

    /// Lookups that hit since construction.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    /// Lookups that missed since construction (not counting lookups of a disabled cache).
    pub fn misses(&self) -> u64 {
        self.misses
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        self.valid.iter().map(|v| v.count_ones() as usize).sum()
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
