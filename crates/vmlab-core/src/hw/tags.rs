//! Memory tags: an owner per host frame, checked by the hardware when it fills a TLB entry
//! from guest-built host-address tables (TPT). AMD SEV-SNP's Reverse Map Table is the model:
//! one 16-byte entry per 4 KiB host frame, at a fixed place in host memory, cached in L1D/L2
//! like any data (reference: docs/mechanisms.md, section 1.3).
//!
//! Simplification: the simulator runs one guest VM, so a frame's owner is "this VM" or
//! "someone else" (the host, or another VM); that is all an isolation check needs. The
//! ownership is a bit per host frame (2 MiB for 64 GiB).

/// How the tag check's cost is modeled (the check itself always happens).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TagCheckCost {
    /// Free: an ideal implementation.
    None,
    /// A fixed cost per TLB fill (the profile's `tags.per_fill` cycles).
    PerFill,
    /// One tag-table read through the cache hierarchy per frame the walk touches.
    PerFrame,
}

/// Bytes of one tag-table entry (an RMP entry).
pub const TAG_ENTRY_BYTES: u64 = 16;

/// Which host frames belong to the simulated VM.
pub struct TagTable {
    owned: Vec<u64>,
    /// Host-physical address of the tag table (for tag reads through the caches).
    base: u64,
}

impl TagTable {
    /// Tags for `frames` host frames; the table itself sits at host address `base`.
    pub fn new(frames: u64, base: u64) -> TagTable {
        TagTable {
            owned: vec![0; frames.div_ceil(64) as usize],
            base,
        }
    }

    /// Whether host frame `hfn` belongs to the VM.
    #[inline]
    pub fn owned(&self, hfn: u64) -> bool {
        self.owned
            .get((hfn / 64) as usize)
            .is_some_and(|w| w >> (hfn % 64) & 1 != 0)
    }

    /// Give `count` frames from `hfn` to the VM, or take them back.
    pub fn assign(&mut self, hfn: u64, count: u64, owned: bool) {
        for f in hfn..hfn + count {
            if let Some(w) = self.owned.get_mut((f / 64) as usize) {
                if owned {
                    *w |= 1 << (f % 64);
                } else {
                    *w &= !(1 << (f % 64));
                }
            }
        }
    }

    /// Host address of the tag entry of frame `hfn`.
    pub fn entry_addr(&self, hfn: u64) -> u64 {
        self.base + hfn * TAG_ENTRY_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_is_per_frame() {
        let mut t = TagTable::new(1000, 0x1_0000_0000);
        assert!(!t.owned(5));
        t.assign(4, 3, true);
        assert!((4..7).all(|f| t.owned(f)) && !t.owned(3) && !t.owned(7));
        t.assign(5, 1, false);
        assert!(t.owned(4) && !t.owned(5) && t.owned(6));
        assert!(
            !t.owned(1_000_000),
            "frames beyond the table belong to no VM"
        );
        assert_eq!(t.entry_addr(2), 0x1_0000_0020);
    }
}
