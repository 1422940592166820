//! Adaptive shadow-TLB resizing: the shadow of a guest mapping that holds patch sites is
//! broken into naturally aligned e500v2 TLB1 entries (sizes 4^k KiB: 4K, 16K, ..., 256M, 1G,
//! 4G) so that only the pieces around the sites are execute-only, and put back together when
//! the sites go away.
//!
//! The policy is one parameter, the execute-only unit: the aligned block of `unit` bytes
//! (a power of two, at least 4 KiB) around each site is execute-only, and the rest of the
//! mapping is covered by the fewest aligned power-of-4 entries. A unit that is a power of 4
//! (256 KiB is: 4^9 bytes, TSIZE 4) is one entry; a unit of 2·4^k bytes (128 KiB, 512 KiB: what
//! a "halving" policy stops at) is two entries of 4^k. Splitting a 256 MiB entry around one
//! site down to a 256 KiB unit leaves 3 entries at each of the five levels 64M..256K plus the
//! unit: 16 entries for one site, which is all of TLB1.

/// A naturally aligned block of guest effective addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Block {
    /// First address.
    pub base: u32,
    /// Size in bytes (up to 4 GiB).
    pub size: u64,
}

impl Block {
    /// One past the last address.
    pub fn end(self) -> u64 {
        self.base as u64 + self.size
    }

    /// True when `ea` is inside.
    pub fn contains(self, ea: u32) -> bool {
        ea as u64 >= self.base as u64 && (ea as u64) < self.end()
    }

    /// True when `other` lies inside this block.
    pub fn covers(self, other: Block) -> bool {
        other.base as u64 >= self.base as u64 && other.end() <= self.end()
    }

    /// True when the size is an e500v2 TLB1 size (4^k KiB, 4 KiB..4 GiB) and the base is
    /// aligned to it.
    pub fn is_tlb1_entry(self) -> bool {
        let s = self.size;
        s.is_power_of_two()
            && s.trailing_zeros().is_multiple_of(2)
            && (4096..=1 << 32).contains(&s)
            && (self.base as u64).is_multiple_of(s)
    }

    fn quarters(self) -> [Block; 4] {
        let q = self.size / 4;
        std::array::from_fn(|i| Block {
            base: (self.base as u64 + i as u64 * q) as u32,
            size: q,
        })
    }
}

/// One shadow entry of a resized mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Piece {
    /// Its range.
    pub block: Block,
    /// Execute-only (holds a patch site): guest reads and writes trap.
    pub exec_only: bool,
}

/// The shadow entries of `mapping` with patch sites at `sites`: without resizing
/// (`unit` `None`) the whole mapping, execute-only as soon as it holds one site; with
/// resizing, the fewest aligned power-of-4 entries in which the `unit`-sized block around
/// every site is execute-only and nothing else is.
pub fn cover(mapping: Block, sites: &[u32], unit: Option<u64>) -> Vec<Piece> {
    let inside: Vec<u32> = sites
        .iter()
        .copied()
        .filter(|&s| mapping.contains(s))
        .collect();
    let Some(unit) = unit else {
        return vec![Piece {
            block: mapping,
            exec_only: !inside.is_empty(),
        }];
    };
    let unit = unit.clamp(4096, mapping.size);
    // The execute-only units, sorted and deduplicated.
    let mut units: Vec<u64> = inside.iter().map(|&s| s as u64 / unit * unit).collect();
    units.sort_unstable();
    units.dedup();
    let mut out = Vec::new();
    split(mapping, &units, unit, &mut out);
    out
}

fn split(b: Block, units: &[u64], unit: u64, out: &mut Vec<Piece>) {
    let lo = units.partition_point(|&u| u + unit <= b.base as u64);
    let hi = units.partition_point(|&u| u < b.end());
    let touching = &units[lo..hi];
    let exec_bytes = touching.len() as u64 * unit.min(b.size);
    if touching.is_empty() || (exec_bytes >= b.size && b.size >= unit) || b.size <= 4096 {
        out.push(Piece {
            block: b,
            exec_only: !touching.is_empty(),
        });
        return;
    }
    // A block of one unit (or a unit inside it) of a non-power-of-4 unit size: the block
    // is exactly execute-only when it lies inside a unit.
    if b.size <= unit {
        out.push(Piece {
            block: b,
            exec_only: true,
        });
        return;
    }
    for q in b.quarters() {
        split(q, touching, unit, out);
    }
}

/// What changed between two covers of the same mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Change {
    /// Old entries broken into several new ones.
    pub splits: u64,
    /// New entries that put several old ones back together.
    pub merges: u64,
    /// Entries with the same range whose execute-only state changed.
    pub reprotects: u64,
}

/// Compares two covers of one mapping.
pub fn diff(old: &[Piece], new: &[Piece]) -> Change {
    let mut c = Change::default();
    for o in old {
        if new.iter().any(|n| n.block == o.block) {
            if new
                .iter()
                .any(|n| n.block == o.block && n.exec_only != o.exec_only)
            {
                c.reprotects += 1;
            }
        } else if new.iter().filter(|n| o.block.covers(n.block)).count() > 1 {
            c.splits += 1;
        }
    }
    for n in new {
        if !old.iter().any(|o| o.block == n.block)
            && old.iter().filter(|o| n.block.covers(o.block)).count() > 1
        {
            c.merges += 1;
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    const M256: u64 = 256 << 20;
    const K256: u64 = 256 << 10;

    fn check_tiling(mapping: Block, pieces: &[Piece]) {
        let mut blocks: Vec<Block> = pieces.iter().map(|p| p.block).collect();
        blocks.sort();
        let mut at = mapping.base as u64;
        for b in &blocks {
            assert!(b.is_tlb1_entry(), "{b:x?} is not an aligned e500v2 size");
            assert_eq!(b.base as u64, at, "gap or overlap at {at:#x}");
            at = b.end();
        }
        assert_eq!(at, mapping.end());
    }

    #[test]
    fn a_256_mib_entry_splits_around_one_site_and_merges_back() {
        let kernel = Block {
            base: 0xC000_0000,
            size: M256,
        };
        let site = 0xC012_3454;
        let whole = cover(kernel, &[], Some(K256));
        assert_eq!(
            whole,
            vec![Piece {
                block: kernel,
                exec_only: false
            }]
        );
        let split = cover(kernel, &[site], Some(K256));
        check_tiling(kernel, &split);
        // 3 entries at each of 64M, 16M, 4M, 1M, 256K, and the execute-only unit.
        assert_eq!(split.len(), 16);
        let exec: Vec<_> = split.iter().filter(|p| p.exec_only).collect();
        assert_eq!(exec.len(), 1);
        assert_eq!(
            exec[0].block,
            Block {
                base: 0xC010_0000,
                size: K256
            }
        );
        for size in [64u64 << 20, 16 << 20, 4 << 20, 1 << 20, K256] {
            let n = split.iter().filter(|p| p.block.size == size).count();
            assert_eq!(n, 3 + (size == K256) as usize, "entries of {size:#x}");
        }
        // One entry broken into 16 is one split; the site going away merges them back.
        assert_eq!(
            diff(&whole, &split),
            Change {
                splits: 1,
                merges: 0,
                reprotects: 0
            }
        );
        let back = cover(kernel, &[], Some(K256));
        assert_eq!(back, whole);
        assert_eq!(
            diff(&split, &back),
            Change {
                splits: 0,
                merges: 1,
                reprotects: 0
            }
        );
    }

    #[test]
    fn without_resizing_the_whole_entry_is_execute_only() {
        let kernel = Block {
            base: 0xC000_0000,
            size: M256,
        };
        let p = cover(kernel, &[0xC000_1000], None);
        assert_eq!(
            p,
            vec![Piece {
                block: kernel,
                exec_only: true
            }]
        );
    }

    #[test]
    fn a_halving_unit_is_two_entries_and_neighbouring_sites_share_entries() {
        let m = Block {
            base: 0,
            size: 1 << 20,
        };
        // 128 KiB unit around 0x2_1000: [0x2_0000, 0x4_0000) as two 64 KiB entries.
        let p = cover(m, &[0x2_1000], Some(128 << 10));
        check_tiling(m, &p);
        let exec: Vec<Block> = p.iter().filter(|p| p.exec_only).map(|p| p.block).collect();
        assert_eq!(
            exec,
            vec![
                Block {
                    base: 0x2_0000,
                    size: 64 << 10
                },
                Block {
                    base: 0x3_0000,
                    size: 64 << 10
                }
            ]
        );
        // Two sites in one 16 KiB unit: one execute-only entry.
        let p = cover(m, &[0x8_0000, 0x8_3FFC], Some(16 << 10));
        check_tiling(m, &p);
        assert_eq!(p.iter().filter(|p| p.exec_only).count(), 1);
    }

    #[test]
    fn a_second_site_splits_further_and_its_removal_merges() {
        let kernel = Block {
            base: 0xC000_0000,
            size: M256,
        };
        let one = cover(kernel, &[0xC000_0000], Some(K256));
        let two = cover(kernel, &[0xC000_0000, 0xC400_0000], Some(K256));
        check_tiling(kernel, &two);
        // The second site is in another 64 MiB quarter: that quarter splits 4 more times.
        let c = diff(&one, &two);
        assert_eq!((c.splits, c.merges), (1, 0));
        assert_eq!(two.len(), one.len() + 12);
        let c = diff(&two, &one);
        assert_eq!((c.splits, c.merges), (0, 1));
    }
}
