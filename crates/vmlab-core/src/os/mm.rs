//! Virtual memory areas of an address space.

use crate::addr::Gva;

/// A mapped range of anonymous memory, `[start, end)`, 4 KiB aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vma {
    pub start: Gva,
    pub end: Gva,
    pub writable: bool,
}

impl Vma {
    pub fn contains(&self, va: Gva) -> bool {
        self.start <= va && va < self.end
    }

    /// Whether the whole aligned region `[base, base + bytes)` lies in this VMA (a huge page
    /// may only back a region the VMA covers completely).
    pub fn covers(&self, base: Gva, bytes: u64) -> bool {
        self.start <= base && base.raw().checked_add(bytes).is_some_and(|end| end <= self.end.raw())
    }

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

    pub fn find(&self, va: Gva) -> Option<&Vma> {
        let at = self.vmas.partition_point(|v| v.end <= va);
        self.vmas.get(at).filter(|v| v.contains(va))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.vmas.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vma(start: u64, end: u64) -> Vma {
        Vma { start: Gva::new(start), end: Gva::new(end), writable: true }
    }

    #[test]
    fn find_and_reject_overlap() {
        let mut list = VmaList::default();
        list.insert(vma(0x10000, 0x20000)).unwrap();
        list.insert(vma(0x40000, 0x50000)).unwrap();
        assert_eq!(list.insert(vma(0x1f000, 0x21000)), Err(vma(0x10000, 0x20000)));
        assert_eq!(list.find(Gva::new(0x1ffff)), Some(&vma(0x10000, 0x20000)));
        assert_eq!(list.find(Gva::new(0x20000)), None);
        assert_eq!(list.find(Gva::new(0x40000)).map(|v| v.end), Some(Gva::new(0x50000)));
        assert!(vma(0, 0x40_0000).covers(Gva::new(0x20_0000), 0x20_0000));
        assert!(!vma(0x1000, 0x40_0000).covers(Gva::new(0), 0x20_0000));
    }
}
