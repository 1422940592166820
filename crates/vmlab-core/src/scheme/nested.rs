//! Nested paging (EPT/NPT): the guest kernel's tables map GVA->GPA, the hypervisor's EPT maps
//! GPA->HPA, and the hardware walks both (2D). Guest page-table updates are plain stores;
//! the only hypervisor work is backing guest frames on first touch (EPT violations).

use crate::addr::{Gfn, Gva, Hpa, PageSize};
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::os::PvOps;

/// The nested-paging pv-ops backend: the guest writes its own memory; a write to a guest frame
/// the host never backed traps first (EPT violation) and is backed.
pub struct NestedPvOps<'a> {
    pub mem: &'a mut HostMemory,
    pub mmu: &'a mut Mmu,
    pub vm: &'a mut Vm,
    /// The first hypervisor error met (pv-ops cannot fail; the caller checks this after).
    pub error: Option<HvError>,
}

impl NestedPvOps<'_> {
    fn host_addr(&mut self, table: Gfn, index: usize) -> Option<Hpa> {
        let hfn = self.vm.touch(self.mem, table);
        super::stash(&mut self.error, hfn).map(|hfn| hfn.addr_at(index as u64 * 8))
    }
}

impl NestedPvOps<'_> {
    /// The guest kernel writes every 4 KiB frame of a page: each unbacked one traps once.
    fn write_frames(&mut self, frame: Gfn, size: PageSize) {
        for offset in 0..size.frames() {
            let touched = self.vm.touch(self.mem, Gfn::new(frame.raw() + offset));
            if super::stash(&mut self.error, touched).is_none() {
                return;
            }
        }
    }
}

impl PvOps for NestedPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> u64 {
        self.host_addr(table, index)
            .map_or(0, |at| self.mem.read_u64(at))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) {
        if let Some(at) = self.host_addr(table, index) {
            self.mem.write_u64(at, entry);
        }
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> u64 {
        let Some(at) = self.host_addr(table, index) else {
            return 0;
        };
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        old
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) {
        // Zeroing the new table is the guest's first touch of the frame if it is new.
        if let Some(at) = self.host_addr(table, 0) {
            self.mem.drop_contents(at.frame());
        }
    }

    fn release_table(&mut self, _level: u8, table: Gfn) {
        if let Some(hfn) = self.vm.translate(self.mem, table) {
            self.mem.drop_contents(hfn);
        }
    }

    fn clear_page(&mut self, frame: Gfn, size: PageSize) {
        self.write_frames(frame, size);
    }

    fn copy_page(&mut self, _from: Gfn, to: Gfn, size: PageSize) {
        self.write_frames(to, size);
    }

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) {
        self.mmu.set_root(
            Root::TwoD {
                guest_cr3: pgd.addr(),
                eptp: self.vm.eptp(),
            },
            pcid as u64,
            flush,
        );
    }

    fn invlpg(&mut self, va: Gva) {
        self.mmu.invlpg(va);
    }

    fn flush_tlb(&mut self) {
        self.mmu.flush_current();
    }
}
