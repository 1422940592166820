//! Host remapping of guest memory: the host moves the page backing a guest frame to another
//! host page (migration, compaction), as KVM does through its MMU notifiers.
//!
//! The hypervisor's part lives here: copy the page, point the p2m (the EPT) at the new page,
//! retag both pages (the old one leaves the VM, the new one joins it) and refresh
//! `gfn_to_hfn`, which under this model is read through the p2m and so is current as soon as
//! the EPT is. The global TLB flush and, under TPT, the guest's fix-up of the devirt entries
//! that named the old page are the caller's (`scheme`), which owns the MMU and the guest.
//! Reference: docs/mechanisms.md, section 1.2 (remapping).

use crate::addr::{Gfn, Hfn, PageSize};
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;

crate::count_struct! {
    /// What host remapping did (exact counts).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    pub struct RemapCounters {
        /// Backing pages moved to a new host page.
        pub remaps: u64,
        /// 4 KiB frames copied by those moves (a 2 MiB backing page moves 512).
        pub frames_moved: u64,
        /// Memory-tag (RMP) updates under TPT: one per page that changed owner, old and new.
        pub tag_updates: u64,
        /// Global TLB flushes (every tag update needs one; under nested paging the EPT change
        /// does too).
        pub global_flushes: u64,
        /// `gfn_to_hfn` entries rewritten (one per 4 KiB frame moved; TPT only).
        pub gfn_to_hfn_updates: u64,
        /// Notifications sent to the guest so it fixes its devirt tables (TPT only).
        pub guest_notifications: u64,
        /// Devirt entries the guest rewrote to name the new page (TPT only).
        pub devirt_fixups: u64,
    }
}

/// One completed move: the backing page of `size` at `old` now lives at `new`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Moved {
    /// First guest frame of the backing page.
    pub gfn: Gfn,
    /// First host frame of the page before the move (now freed).
    pub old: Hfn,
    /// First host frame of the page after the move.
    pub new: Hfn,
    /// Size of the backing page that moved.
    pub size: PageSize,
}

impl Moved {
    /// The new host frame of `hfn` if it lay in the old page.
    pub fn relocate(&self, hfn: Hfn) -> Option<Hfn> {
        let offset = hfn.raw().checked_sub(self.old.raw())?;
        (offset < self.size.frames()).then(|| Hfn::new(self.new.raw() + offset))
    }
}

impl Vm {
    /// Move the backing page holding `gfn` to a fresh host page of the same size. The guest
    /// frame must be backed (a never-touched frame has nothing to move). Page-table contents
    /// the page held (a guest page-table page) move with it; data pages have no contents in
    /// the simulator. The old page goes back to the host, untagged.
    pub fn remap(&mut self, mem: &mut HostMemory, gfn: Gfn, tpt: bool) -> Result<Moved, HvError> {
        let size = self
            .backing_page(mem, gfn)
            .ok_or(HvError::NotBacked(gfn.addr()))?;
        let first = Gfn::new(gfn.raw() & !(size.frames() - 1));
        let old = self.translate(mem, first).expect("backed");
        let new = mem.alloc(size)?;
        for offset in 0..size.frames() {
            mem.copy_contents(Hfn::new(old.raw() + offset), Hfn::new(new.raw() + offset));
        }
        self.map(mem, first.addr(), new, size)?;
        mem.tags_mut().assign(new.raw(), size.frames(), true);
        mem.tags_mut().assign(old.raw(), size.frames(), false);
        mem.free(old, size);
        let c = self.remap_counters_mut();
        c.remaps += 1;
        c.frames_moved += size.frames();
        if tpt {
            c.tag_updates += 2;
            c.gfn_to_hfn_updates += size.frames();
        }
        Ok(Moved {
            gfn: first,
            old,
            new,
            size,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hv::x86::vm::BackingConfig;

    fn vm(mem: &mut HostMemory, host_pages: PageSize) -> Vm {
        Vm::new(
            mem,
            1 << 30,
            4,
            BackingConfig {
                host_pages,
                fragmentation: 0.0,
                seed: 1,
            },
        )
        .unwrap()
    }

    #[test]
    fn a_move_changes_the_p2m_the_tags_and_keeps_table_contents() {
        let mut mem = HostMemory::new(4 << 30);
        let mut vm = vm(&mut mem, PageSize::Size4K);
        let old = vm.touch(&mut mem, Gfn::new(7)).unwrap();
        mem.write_u64(old.addr_at(16), 0xabc0_0001);
        let moved = vm.remap(&mut mem, Gfn::new(7), true).unwrap();
        assert_eq!((moved.old, moved.size), (old, PageSize::Size4K));
        assert_eq!(vm.translate(&mem, Gfn::new(7)), Some(moved.new));
        assert_ne!(moved.new, old);
        assert_eq!(mem.read_u64(moved.new.addr_at(16)), 0xabc0_0001);
        assert_eq!(
            mem.read_u64(old.addr_at(16)),
            0,
            "the old page's contents are gone"
        );
        assert!(mem.tags().owned(moved.new.raw()) && !mem.tags().owned(old.raw()));
        let c = vm.remap_counters();
        assert_eq!(
            (
                c.remaps,
                c.frames_moved,
                c.tag_updates,
                c.gfn_to_hfn_updates
            ),
            (1, 1, 2, 1)
        );
        // No exit: the guest never faulted.
        assert_eq!(vm.exits().total(), 1);
    }

    #[test]
    fn a_large_backing_page_moves_whole() {
        let mut mem = HostMemory::new(4 << 30);
        let mut vm = vm(&mut mem, PageSize::Size2M);
        let old = vm.touch(&mut mem, Gfn::new(512 + 9)).unwrap();
        let moved = vm.remap(&mut mem, Gfn::new(512 + 9), false).unwrap();
        assert_eq!((moved.gfn, moved.size), (Gfn::new(512), PageSize::Size2M));
        assert_eq!(moved.relocate(old), Some(Hfn::new(moved.new.raw() + 9)));
        assert_eq!(moved.relocate(Hfn::new(moved.old.raw() + 512)), None);
        assert_eq!(
            vm.translate(&mem, Gfn::new(512 + 100)),
            Some(Hfn::new(moved.new.raw() + 100))
        );
        let c = vm.remap_counters();
        assert_eq!(
            (c.frames_moved, c.tag_updates, c.gfn_to_hfn_updates),
            (512, 0, 0),
            "no tags or gfn_to_hfn outside TPT"
        );
    }

    #[test]
    fn an_unbacked_frame_cannot_move() {
        let mut mem = HostMemory::new(4 << 30);
        let mut vm = vm(&mut mem, PageSize::Size4K);
        assert!(matches!(
            vm.remap(&mut mem, Gfn::new(3), true),
            Err(HvError::NotBacked(_))
        ));
    }
}
