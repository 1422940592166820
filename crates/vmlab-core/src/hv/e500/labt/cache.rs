//! The translation cache: host memory mapped into the guest that holds the routines LABT's
//! rewritten instructions branch to. A ring of `capacity` bytes filled in order; when a new
//! routine does not fit, the oldest routines are evicted first-in first-out, and the patch
//! sites that branched to them revert to their original instruction.

use std::collections::VecDeque;

/// One routine in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routine {
    /// The patch site that branches here.
    pub site: u32,
    /// Guest address of the routine's first instruction.
    pub addr: u32,
    /// Its size in bytes.
    pub len: u32,
}

/// The cache: a FIFO ring of routines.
#[derive(Debug, Clone)]
pub struct TranslationCache {
    base: u32,
    capacity: u32,
    next: u32,
    live: VecDeque<Routine>,
}

impl TranslationCache {
    /// An empty cache of `capacity` bytes mapped at guest address `base`.
    pub fn new(base: u32, capacity: u32) -> Self {
        TranslationCache {
            base,
            capacity,
            next: 0,
            live: VecDeque::new(),
        }
    }

    /// Where the cache is mapped.
    pub fn base(&self) -> u32 {
        self.base
    }

    /// Its size in bytes.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Where a routine of `len` bytes would be placed next.
    pub fn next_addr(&self, len: u32) -> Option<u32> {
        if len == 0 || len > self.capacity {
            return None;
        }
        let off = if self.next + len > self.capacity {
            0
        } else {
            self.next
        };
        Some(self.base + off)
    }

    /// Places a routine of `len` bytes for `site`; returns it and the routines evicted to
    /// make room (oldest first). `None` when it can never fit.
    pub fn insert(&mut self, site: u32, len: u32) -> Option<(Routine, Vec<Routine>)> {
        let addr = self.next_addr(len)?;
        let off = addr - self.base;
        let mut evicted = Vec::new();
        // In a FIFO ring the oldest routines are the ones right after the write point.
        while let Some(old) = self.live.front() {
            let o = old.addr - self.base;
            if o < off + len && off < o + old.len {
                evicted.push(self.live.pop_front().expect("front exists"));
            } else {
                break;
            }
        }
        let r = Routine { site, addr, len };
        self.live.push_back(r);
        self.next = off + len;
        Some((r, evicted))
    }

    /// The routine of `site`, if it is in the cache.
    pub fn routine_of(&self, site: u32) -> Option<Routine> {
        self.live.iter().copied().find(|r| r.site == site)
    }

    /// Drops the routine of `site` (its site was reverted by the guest); its space is reused
    /// when the ring comes round.
    pub fn forget(&mut self, site: u32) {
        if let Some(r) = self.live.iter_mut().find(|r| r.site == site) {
            r.site = u32::MAX;
        }
    }

    /// Routines currently in the cache.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// True when no routine is cached.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_in_order_then_evicts_the_oldest() {
        let mut tc = TranslationCache::new(0xC100_0000, 100);
        let (a, ev) = tc.insert(0x10, 40).unwrap();
        assert_eq!((a.addr, ev.len()), (0xC100_0000, 0));
        let (b, _) = tc.insert(0x20, 40).unwrap();
        assert_eq!(b.addr, 0xC100_0028);
        // 40 more bytes do not fit after 80: wrap to 0, evicting the first routine only.
        let (c, ev) = tc.insert(0x30, 40).unwrap();
        assert_eq!(c.addr, 0xC100_0000);
        assert_eq!(ev.iter().map(|r| r.site).collect::<Vec<_>>(), vec![0x10]);
        // The next one overlaps b (bytes 40..80): b is evicted.
        let (_, ev) = tc.insert(0x40, 30).unwrap();
        assert_eq!(ev.iter().map(|r| r.site).collect::<Vec<_>>(), vec![0x20]);
        assert_eq!(tc.len(), 2);
        assert!(tc.routine_of(0x10).is_none());
        assert!(tc.routine_of(0x30).is_some());
        assert!(tc.insert(0x50, 101).is_none());
    }
}
