//! The kernel's physical memory: frame allocation and reference counts of shared frames.
//!
//! A data frame mapped by one page-table entry has a count of 1 and no entry here; fork's
//! copy-on-write sharing raises it. Only shared frames cost memory in the simulator.

use crate::addr::{Gfn, PageSize};
use crate::hw::frames::FrameAllocator;
use rustc_hash::FxHashMap;

/// The frames the kernel manages: an allocator and the reference counts of shared frames.
pub struct PhysMemory {
    allocator: FrameAllocator,
    /// Reference count of each frame mapped more than once (keyed by first 4 KiB frame).
    shared: FxHashMap<u64, u32>,
}

impl PhysMemory {
    /// `frames` free 4 KiB frames, none shared.
    pub fn new(frames: u64) -> Self {
        PhysMemory {
            allocator: FrameAllocator::new(frames),
            shared: FxHashMap::default(),
        }
    }

    /// A new page of `size`, referenced once.
    pub fn alloc(&mut self, size: PageSize) -> Option<Gfn> {
        self.allocator.alloc(size).map(Gfn::new)
    }

    /// One more mapping of `frame`.
    pub fn get(&mut self, frame: Gfn) {
        *self.shared.entry(frame.raw()).or_insert(1) += 1;
    }

    /// One mapping of `frame` fewer; frees the page when it was the last. Returns whether
    /// the page was freed.
    pub fn put(&mut self, frame: Gfn, size: PageSize) -> bool {
        match self.shared.get_mut(&frame.raw()) {
            Some(count) => {
                *count -= 1;
                if *count == 1 {
                    self.shared.remove(&frame.raw());
                }
                false
            }
            None => {
                self.allocator.free(frame.raw(), size);
                true
            }
        }
    }

    /// How many mappings reference `frame`.
    pub fn refcount(&self, frame: Gfn) -> u32 {
        self.shared.get(&frame.raw()).copied().unwrap_or(1)
    }

    /// Frames allocated (4 KiB units), data and tables.
    pub fn in_use(&self) -> u64 {
        self.allocator.in_use()
    }

    /// Frames managed in all (4 KiB units).
    pub fn total(&self) -> u64 {
        self.allocator.total()
    }

    /// Frames shared by more than one mapping.
    pub fn shared_frames(&self) -> usize {
        self.shared.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_frees_on_last_put() {
        let mut mem = PhysMemory::new(64);
        let f = mem.alloc(PageSize::Size4K).unwrap();
        assert_eq!(mem.refcount(f), 1);
        mem.get(f);
        mem.get(f);
        assert_eq!(mem.refcount(f), 3);
        assert!(!mem.put(f, PageSize::Size4K));
        assert!(!mem.put(f, PageSize::Size4K));
        assert_eq!(
            (mem.refcount(f), mem.in_use(), mem.shared_frames()),
            (1, 1, 0)
        );
        assert!(mem.put(f, PageSize::Size4K));
        assert_eq!(mem.in_use(), 0);
    }
}
