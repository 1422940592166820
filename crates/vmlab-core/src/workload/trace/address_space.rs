//! A recorded process's address space as the program saw it (every region, PROT_NONE ones
//! included), and the kernel-model operations that bring the model's VMAs along when it
//! changes. The model maps only accessible memory, so a PROT_NONE reservation is no VMA and a
//! change to or from PROT_NONE is a map or an unmap there.

use crate::addr::{Gva, PAGE_SIZE};
use crate::workload::Op;
use std::collections::VecDeque;

/// PROT_READ | PROT_WRITE | PROT_EXEC as recorded.
const PROT_WRITE: u8 = 2;
const PROT_ANY: u8 = 7;
/// The end of the user half: QEMU's layout also lists the vsyscall page above it, which the
/// kernel maps, not the program.
pub(super) const USER_END: u64 = 1 << 47;

/// Rounds up to a whole page (saturating at the user half's end).
pub(super) fn page_up(x: u64) -> u64 {
    x.checked_add(PAGE_SIZE - 1)
        .map_or(USER_END, |x| x & !(PAGE_SIZE - 1))
}

/// Rounds down to a page.
pub(super) fn page_down(x: u64) -> u64 {
    x & !(PAGE_SIZE - 1)
}

/// One region `[start, end)` with its recorded protection (0: PROT_NONE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Region {
    start: u64,
    end: u64,
    prot: u8,
}

impl Region {
    fn accessible(&self) -> bool {
        self.prot & PROT_ANY != 0
    }
    fn writable(&self) -> bool {
        self.prot & PROT_WRITE != 0
    }
}

/// The regions of one process, sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub(super) struct AddressSpace {
    regions: Vec<Region>,
}

impl AddressSpace {
    /// The protection at `va`, if mapped at all.
    pub(super) fn prot_at(&self, va: u64) -> Option<u8> {
        let i = self.regions.partition_point(|r| r.end <= va);
        self.regions
            .get(i)
            .filter(|r| r.start <= va)
            .map(|r| r.prot)
    }

    /// Whether every page of `[start, end)` is mapped writable.
    pub(super) fn writable(&self, start: u64, end: u64) -> bool {
        let mut at = start;
        let i = self.regions.partition_point(|r| r.end <= start);
        for r in &self.regions[i..] {
            if r.start > at || !r.writable() {
                return false;
            }
            at = r.end;
            if at >= end {
                return true;
            }
        }
        false
    }

    /// Sets `[start, end)` to `prot` (`None`: unmapped), queueing what the kernel model must
    /// do: unmap accessible pieces that go or become PROT_NONE, map pieces that become
    /// accessible, change the protection of pieces whose write permission flips. With
    /// `replace` (mmap), accessible pieces get new memory: unmapped and mapped again.
    pub(super) fn set(
        &mut self,
        start: u64,
        end: u64,
        prot: Option<u8>,
        replace: bool,
        ops: &mut VecDeque<Op>,
    ) {
        let (start, end) = (page_down(start), page_up(end).min(USER_END));
        if start >= end {
            return;
        }
        let first = self.regions.partition_point(|r| r.end <= start);
        let last = self.regions.partition_point(|r| r.start < end);
        let mut kept = Vec::with_capacity(4);
        let mut covered = start;
        let new_accessible = prot.is_some_and(|p| p & PROT_ANY != 0);
        let new_writable = prot.is_some_and(|p| p & PROT_WRITE != 0);
        for r in &self.regions[first..last] {
            if r.start < start {
                kept.push(Region { end: start, ..*r });
            }
            if r.end > end {
                kept.push(Region { start: end, ..*r });
            }
            // The overlap with the old region, and the gap before it.
            let (lo, hi) = (r.start.max(start), r.end.min(end));
            if covered < lo && new_accessible {
                ops.push_back(map(covered, lo, new_writable));
            }
            covered = hi;
            match (r.accessible(), new_accessible) {
                (true, false) => ops.push_back(Op::Unmap {
                    start: Gva::new(lo),
                    len: hi - lo,
                }),
                (false, true) => ops.push_back(map(lo, hi, new_writable)),
                (true, true) if replace => {
                    ops.push_back(Op::Unmap {
                        start: Gva::new(lo),
                        len: hi - lo,
                    });
                    ops.push_back(map(lo, hi, new_writable));
                }
                (true, true) if r.writable() != new_writable => ops.push_back(Op::Protect {
                    start: Gva::new(lo),
                    len: hi - lo,
                    writable: new_writable,
                }),
                _ => {}
            }
        }
        if covered < end && new_accessible {
            ops.push_back(map(covered, end, new_writable));
        }
        let mut replaced: Vec<Region> = kept;
        if let Some(prot) = prot {
            replaced.push(Region { start, end, prot });
        }
        replaced.sort_by_key(|r| r.start);
        self.regions.splice(first..last, replaced);
    }

    /// Changes the protection of the mapped parts of `[start, end)` (mprotect: unmapped gaps
    /// stay unmapped).
    pub(super) fn protect(&mut self, start: u64, end: u64, prot: u8, ops: &mut VecDeque<Op>) {
        let (start, end) = (page_down(start), page_up(end));
        let pieces: Vec<(u64, u64)> = self
            .regions
            .iter()
            .filter(|r| r.start < end && start < r.end)
            .map(|r| (r.start.max(start), r.end.min(end)))
            .collect();
        for (lo, hi) in pieces {
            self.set(lo, hi, Some(prot), false, ops);
        }
    }

    /// The accessible pieces of `[start, end)`.
    pub(super) fn accessible_pieces(&self, start: u64, end: u64) -> Vec<(u64, u64)> {
        self.regions
            .iter()
            .filter(|r| r.accessible() && r.start < end && start < r.end)
            .map(|r| (r.start.max(start), r.end.min(end)))
            .collect()
    }
}

fn map(start: u64, end: u64, writable: bool) -> Op {
    let (start, len) = (Gva::new(start), end - start);
    if writable {
        Op::Map { start, len }
    } else {
        Op::MapReadOnly { start, len }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops_of(f: impl FnOnce(&mut VecDeque<Op>)) -> Vec<Op> {
        let mut ops = VecDeque::new();
        f(&mut ops);
        ops.into()
    }

    #[test]
    fn reservation_then_mprotect_maps_only_what_becomes_accessible() {
        let mut space = AddressSpace::default();
        let ops = ops_of(|o| space.set(0x10000, 0x20000, Some(0), true, o));
        assert!(ops.is_empty(), "a PROT_NONE reservation is no VMA");
        let ops = ops_of(|o| space.protect(0x12000, 0x14000, 3, o));
        assert_eq!(
            ops,
            vec![Op::Map {
                start: Gva::new(0x12000),
                len: 0x2000
            }]
        );
        let ops = ops_of(|o| space.protect(0x13000, 0x14000, 1, o));
        assert_eq!(
            ops,
            vec![Op::Protect {
                start: Gva::new(0x13000),
                len: 0x1000,
                writable: false
            }]
        );
        assert_eq!(space.prot_at(0x12fff), Some(3));
        assert_eq!(space.prot_at(0x13000), Some(1));
        assert_eq!(space.prot_at(0x1ffff), Some(0));
        assert_eq!(space.prot_at(0x20000), None);
        // munmap over the whole reservation unmaps only the accessible pieces.
        let ops = ops_of(|o| space.set(0x10000, 0x20000, None, false, o));
        assert_eq!(
            ops,
            vec![
                Op::Unmap {
                    start: Gva::new(0x12000),
                    len: 0x1000
                },
                Op::Unmap {
                    start: Gva::new(0x13000),
                    len: 0x1000
                }
            ]
        );
        assert_eq!(space.prot_at(0x10000), None);
    }

    #[test]
    fn mmap_fixed_over_a_mapping_replaces_it_and_fills_gaps() {
        let mut space = AddressSpace::default();
        ops_of(|o| space.set(0x1000, 0x3000, Some(3), true, o));
        let ops = ops_of(|o| space.set(0x2000, 0x5000, Some(1), true, o));
        assert_eq!(
            ops,
            vec![
                Op::Unmap {
                    start: Gva::new(0x2000),
                    len: 0x1000
                },
                Op::MapReadOnly {
                    start: Gva::new(0x2000),
                    len: 0x1000
                },
                Op::MapReadOnly {
                    start: Gva::new(0x3000),
                    len: 0x2000
                }
            ]
        );
        assert!(space.writable(0x1000, 0x2000));
        assert!(!space.writable(0x1000, 0x3000));
        assert_eq!(
            space.accessible_pieces(0, 0x10000),
            vec![(0x1000, 0x2000), (0x2000, 0x5000)]
        );
    }
}
