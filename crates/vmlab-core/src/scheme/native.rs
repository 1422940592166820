//! Native paging: the kernel's physical frames are host frames and its tables are the ones
//! the hardware walks (1D).

use crate::addr::{Gfn, Gva, PageSize};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::os::PvOps;

/// The native pv-ops backend: every operation is the plain hardware operation.
pub struct NativePvOps<'a> {
    pub mem: &'a mut HostMemory,
    pub mmu: &'a mut Mmu,
}

impl PvOps for NativePvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> u64 {
        self.mem
            .read_u64(table.identity_host().addr_at(index as u64 * 8))
    }

    fn set_entry(&mut self, _level: u8, table: Gfn, index: usize, entry: u64) {
        self.mem
            .write_u64(table.identity_host().addr_at(index as u64 * 8), entry);
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> u64 {
        let at = table.identity_host().addr_at(index as u64 * 8);
        let old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        old
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) {
        self.mem.drop_contents(table.identity_host());
    }

    fn release_table(&mut self, _level: u8, table: Gfn) {
        self.mem.drop_contents(table.identity_host());
    }

    fn clear_page(&mut self, _frame: Gfn, _size: PageSize) {}

    fn copy_page(&mut self, _from: Gfn, _to: Gfn, _size: PageSize) {}

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) {
        self.mmu.set_root(
            Root::OneD {
                cr3: pgd.identity_host().addr(),
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
