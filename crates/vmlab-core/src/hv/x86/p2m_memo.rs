//! A memo of the p2m (guest frame -> host frame) as the hypervisor last read it from the EPT.
//!
//! The hypervisor reads the EPT in software whenever the guest kernel model reads or writes
//! one of its page-table entries (the entry's guest frame must be found in host memory), and a
//! page fault does that several times: a full software walk of the EPT each time, one table
//! page lookup per level. The same few table frames come up again and again, so the last
//! translations are kept here. Host speed only: the software walk has no simulated effect
//! (no exit, no cache, no counter), so answering from the memo changes no result as long as
//! the memo is never stale; [`crate::hv::x86::vm::Vm`] forgets it whenever a present EPT
//! mapping is replaced, the only way an existing translation changes.

use std::cell::Cell;

/// Remembered translations (direct-mapped by guest frame; a power of two).
const SLOTS: usize = 4096;

/// Guest frame -> host frame of recently translated guest frames.
pub struct P2mMemo {
    /// `(gfn + 1, hfn)`; `0` marks an empty slot. Interior mutability, because translation
    /// reads the EPT through `&Vm`.
    slots: Box<[Cell<(u64, u64)>]>,
}

impl Default for P2mMemo {
    fn default() -> Self {
        P2mMemo {
            slots: (0..SLOTS).map(|_| Cell::new((0, 0))).collect(),
        }
    }
}

impl P2mMemo {
    /// The host frame remembered for `gfn`.
    #[inline]
    pub fn get(&self, gfn: u64) -> Option<u64> {
        let (key, hfn) = self.slots[Self::slot(gfn)].get();
        (key == gfn + 1).then_some(hfn)
    }

    /// Remember that `gfn` is backed by `hfn`.
    #[inline]
    pub fn remember(&self, gfn: u64, hfn: u64) {
        self.slots[Self::slot(gfn)].set((gfn + 1, hfn));
    }

    /// Forget every translation (an EPT mapping changed).
    pub fn forget(&self) {
        self.slots.iter().for_each(|s| s.set((0, 0)));
    }

    /// Consecutive frames take consecutive slots: a guest's table frames often come in runs.
    #[inline]
    fn slot(gfn: u64) -> usize {
        gfn as usize & (SLOTS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_by_frame_and_forgets_all() {
        let memo = P2mMemo::default();
        assert_eq!(memo.get(0), None);
        memo.remember(0, 7);
        memo.remember(5, 9);
        assert_eq!(
            (memo.get(0), memo.get(5), memo.get(6)),
            (Some(7), Some(9), None)
        );
        // A frame sharing a slot replaces the one before and is told apart from it.
        memo.remember(5 + SLOTS as u64, 11);
        assert_eq!((memo.get(5), memo.get(5 + SLOTS as u64)), (None, Some(11)));
        memo.forget();
        assert_eq!((memo.get(0), memo.get(5 + SLOTS as u64)), (None, None));
    }
}
