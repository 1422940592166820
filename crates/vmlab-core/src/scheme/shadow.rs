//! Shadow paging (KVM's shadow MMU): the guest's tables map GVA->GPA in guest memory, and
//! the hypervisor keeps shadow tables (GVA->HPA) that the hardware walks (1D). The guest's
//! page-table writes, CR3 loads and TLB flushes reach the hypervisor (see `hv::x86::shadow`).

use crate::addr::{Gfn, Gva, Hpa, PageSize};
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::{Ctx, ShadowMmu};
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::Mmu;
use crate::os::PvOps;

/// The shadow-paging pv-ops backend: the guest's own operations, as the hypervisor sees them.
pub struct ShadowPvOps<'a> {
    pub mem: &'a mut HostMemory,
    pub mmu: &'a mut Mmu,
    pub vm: &'a mut Vm,
    pub shadow: &'a mut ShadowMmu,
    /// The first hypervisor error met (pv-ops cannot fail; the caller checks this after).
    pub error: Option<HvError>,
}

impl ShadowPvOps<'_> {
    fn ctx(&mut self) -> (Ctx<'_>, &mut ShadowMmu) {
        (
            Ctx {
                mem: self.mem,
                vm: self.vm,
                mmu: self.mmu,
            },
            self.shadow,
        )
    }

    fn note(&mut self, result: Result<(), HvError>) {
        super::stash(&mut self.error, result);
    }

    /// The guest's first touch of a frame faults in the shadow tables (its direct map) and
    /// the hypervisor backs it.
    fn host_frame(&mut self, gfn: Gfn) -> Option<crate::addr::Hfn> {
        if let Some(hfn) = self.vm.translate(self.mem, gfn) {
            return Some(hfn);
        }
        self.vm.record_exit(ExitReason::ShadowFault);
        let backed = self.vm.back(self.mem, gfn);
        super::stash(&mut self.error, backed)
    }

    fn entry_addr(&mut self, table: Gfn, index: usize) -> Option<Hpa> {
        self.host_frame(table)
            .map(|hfn| hfn.addr_at(index as u64 * 8))
    }

    /// The guest wrote whole frames: back them, and unshadow any that was a page table.
    fn wrote_frames(&mut self, frame: Gfn, size: PageSize) {
        for offset in 0..size.frames() {
            let gfn = Gfn::new(frame.raw() + offset);
            if self.host_frame(gfn).is_none() {
                return;
            }
            let (mut ctx, shadow) = self.ctx();
            let result = shadow.guest_page_written(&mut ctx, gfn);
            self.note(result);
        }
    }
}

impl PvOps for ShadowPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> u64 {
        self.entry_addr(table, index)
            .map_or(0, |at| self.mem.read_u64(at))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) {
        let Some(at) = self.entry_addr(table, index) else {
            return;
        };
        self.mem.write_u64(at, entry);
        let (mut ctx, shadow) = self.ctx();
        let result = shadow.guest_write(&mut ctx, table, index, entry);
        self.note(result);
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> u64 {
        let Some(at) = self.entry_addr(table, index) else {
            return 0;
        };
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        let (mut ctx, shadow) = self.ctx();
        let result = shadow.guest_write(&mut ctx, table, index, 0);
        self.note(result);
        old
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) {
        if let Some(hfn) = self.host_frame(table) {
            self.mem.drop_contents(hfn);
            let (mut ctx, shadow) = self.ctx();
            let result = shadow.guest_page_written(&mut ctx, table);
            self.note(result);
        }
    }

    fn release_table(&mut self, _level: u8, table: Gfn) {
        if let Some(hfn) = self.vm.translate(self.mem, table) {
            self.mem.drop_contents(hfn);
        }
    }

    fn clear_page(&mut self, frame: Gfn, size: PageSize) {
        self.wrote_frames(frame, size);
    }

    fn copy_page(&mut self, _from: Gfn, to: Gfn, size: PageSize) {
        self.wrote_frames(to, size);
    }

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) {
        if self.host_frame(pgd).is_none() {
            return;
        }
        let (mut ctx, shadow) = self.ctx();
        let result = shadow.load_cr3(&mut ctx, pgd, pcid, flush);
        self.note(result);
    }

    fn invlpg(&mut self, va: Gva) {
        let (mut ctx, shadow) = self.ctx();
        shadow.invlpg(&mut ctx, va);
    }

    fn flush_tlb(&mut self) {
        let (mut ctx, shadow) = self.ctx();
        shadow.flush(&mut ctx);
    }
}
