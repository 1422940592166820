//! Virtual memory areas of an address space.

use crate::addr::Gva;

/// A mapped range of anonymous memory, `[start, end)`, 4 KiB aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    /// First address of the range.
    pub start: Gva,
    /// First address past the range.
    pub end: Gva,
    /// Mapped with PROT_WRITE; otherwise read-only.
    pub writable: bool,
}

impl Vma {
    /// Whether `va` lies in `[start, end)`.
    pub fn contains(&self, va: Gva) -> bool {
        self.start <= va && va < self.end
    }

    /// Whether the whole aligned region `[base, base + bytes)` lies in this VMA (a huge page
    /// may only back a region the VMA covers completely).
    pub fn covers(&self, base: Gva, bytes: u64) -> bool {
        self.start <= base
            && base
                .raw()
                .checked_add(bytes)
                .is_some_and(|end| end <= self.end.raw())
    }

    /// Whether the two ranges share at least one address.
    pub fn overlaps(&self, other: &Vma) -> bool {
        self.start < other.end && other.start < self.end
    }
}

/// The VMAs of one process, kept sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub struct VmaList {
    vmas: Vec<Vma>,
}

impl VmaList {
    /// Insert a VMA; `Err(existing)` if it overlaps one.
    pub fn insert(&mut self, vma: Vma) -> Result<(), Vma> {
        if let Some(existing) = self.vmas.iter().find(|v| v.overlaps(&vma)) {
            return Err(*existing);
        }
        let at = self.vmas.partition_point(|v| v.start < vma.start);
        self.vmas.insert(at, vma);
        Ok(())
    }

    /// The VMA containing `va`, if any.
    pub fn find(&self, va: Gva) -> Option<&Vma> {
        let at = self.vmas.partition_point(|v| v.end <= va);
        self.vmas.get(at).filter(|v| v.contains(va))
    }

    /// The VMAs in address order.
    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.iter()
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.vmas.is_empty()
    }

    /// Whether any VMA overlaps `[start, end)`.
    pub fn overlaps(&self, start: Gva, end: Gva) -> bool {
        let probe = Vma {
            start,
            end,
            writable: false,
        };
        self.vmas.iter().any(|v| v.overlaps(&probe))
    }

    /// Split VMAs at `start` and `end` so that no VMA straddles either boundary.
    fn split_at(&mut self, start: Gva, end: Gva) {
        let mut out = Vec::with_capacity(self.vmas.len() + 2);
        for v in self.vmas.drain(..) {
            let mut cuts = vec![v.start];
            for at in [start, end] {
                if v.start < at && at < v.end {
                    cuts.push(at);
                }
            }
            cuts.push(v.end);
            out.extend(cuts.windows(2).map(|w| Vma {
                start: w[0],
                end: w[1],
                ..v
            }));
        }
        self.vmas = out;
    }

    /// Remove `[start, end)` from the mappings; returns the pieces removed.
    pub fn remove_range(&mut self, start: Gva, end: Gva) -> Vec<Vma> {
        self.split_at(start, end);
        let (removed, kept) = self
            .vmas
            .drain(..)
            .partition(|v| start <= v.start && v.end <= end);
        self.vmas = kept;
        removed
    }

    /// Set the protection of `[start, end)`; returns the pieces that lie in the range.
    pub fn protect_range(&mut self, start: Gva, end: Gva, writable: bool) -> Vec<Vma> {
        self.split_at(start, end);
        let mut changed = Vec::new();
        for v in self
            .vmas
            .iter_mut()
            .filter(|v| start <= v.start && v.end <= end)
        {
            v.writable = writable;
            changed.push(*v);
        }
        self.merge();
        changed
    }

    /// Merge adjacent VMAs with equal protection, as Linux's vma_merge does.
    fn merge(&mut self) {
        let mut out: Vec<Vma> = Vec::with_capacity(self.vmas.len());
        for v in self.vmas.drain(..) {
            match out.last_mut() {
                Some(last) if last.end == v.start && last.writable == v.writable => {
                    last.end = v.end
                }
                _ => out.push(v),
            }
        }
        self.vmas = out;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(start: u64, end: u64) -> Vma {
        Vma {
            start: Gva::new(start),
            end: Gva::new(end),
            writable: true,
        }
    }

    #[test]
    fn find_and_reject_overlap() {
        let mut list = VmaList::default();
        list.insert(vma(0x10000, 0x20000)).unwrap();
        list.insert(vma(0x40000, 0x50000)).unwrap();
        assert_eq!(
            list.insert(vma(0x1f000, 0x21000)),
            Err(vma(0x10000, 0x20000))
        );
        assert_eq!(list.find(Gva::new(0x1ffff)), Some(&vma(0x10000, 0x20000)));
        assert_eq!(list.find(Gva::new(0x20000)), None);
        assert_eq!(
            list.find(Gva::new(0x40000)).map(|v| v.end),
            Some(Gva::new(0x50000))
        );
        assert!(vma(0, 0x40_0000).covers(Gva::new(0x20_0000), 0x20_0000));
        assert!(!vma(0x1000, 0x40_0000).covers(Gva::new(0), 0x20_0000));
    }

    #[test]
    fn remove_and_protect_split_vmas() {
        let mut list = VmaList::default();
        list.insert(vma(0x10000, 0x20000)).unwrap();
        let removed = list.remove_range(Gva::new(0x14000), Gva::new(0x16000));
        assert_eq!(removed, vec![vma(0x14000, 0x16000)]);
        assert_eq!(
            list.iter().copied().collect::<Vec<_>>(),
            vec![vma(0x10000, 0x14000), vma(0x16000, 0x20000)]
        );
        let changed = list.protect_range(Gva::new(0x12000), Gva::new(0x18000), false);
        assert_eq!(changed.len(), 2);
        assert!(!list.find(Gva::new(0x12000)).unwrap().writable);
        assert!(list.find(Gva::new(0x11000)).unwrap().writable);
        list.protect_range(Gva::new(0x10000), Gva::new(0x20000), true);
        assert_eq!(
            list.iter().copied().collect::<Vec<_>>(),
            vec![vma(0x10000, 0x14000), vma(0x16000, 0x20000)]
        );
        assert!(list.overlaps(Gva::new(0x13000), Gva::new(0x15000)));
        assert!(!list.overlaps(Gva::new(0x14000), Gva::new(0x16000)));
    }
}
