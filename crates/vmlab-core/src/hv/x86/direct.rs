//! Direct paging: the hypervisor-visible machinery shared by Xen-style PV paging and
//! Translation Pass-Through. The guest keeps, beside each of its page-table pages, a copy
//! whose entries hold host frames instead of guest frames, and writes both on every update
//! ("dual writes"); the hardware walks the copies in one dimension.
//!
//! - Leaf entries name the host frame of the guest's data frame (TPT's `gfn_to_hfn` table,
//!   Xen's machine frame); upper-level entries name the next table's copy.
//! - An entry copied while the guest frame has no host frame yet first touches the page,
//!   so the host backs it (an EPT violation) and the copy can name it.
//! - The hardware sets A/D bits in the copy; get-and-clear merges them back.
//! - Simplifications: the host-frame table is read through the p2m (the hypervisor keeps it
//!   coherent with every backing change, so its content is the p2m's); copies take host
//!   frames of the VM's memory directly (tagged to the VM) rather than guest frames from the
//!   guest's allocator; a guest 2 MiB page needs a host page at least as large (the copies
//!   have no split tables).
//!
//! What differs between PV and TPT (hypercalls per update, which root the hardware walks,
//! tag checks) is the schemes' (`scheme::pv`, `scheme::tpt`).

use crate::addr::{Gfn, Hfn, Hpa, PageSize};
use crate::hv::x86::remap::Moved;
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::Root;
use crate::hw::x86::pte::{EntryFormat, FRAME_MASK, X86};
use rustc_hash::{FxHashMap, FxHashSet};

/// The guest's host-address copies of its page tables, and which address spaces have them.
#[derive(Default)]
pub struct DirectTables {
    /// Guest table frame -> the host frame of its copy.
    copies: FxHashMap<u64, Hfn>,
    /// Top-level tables of address spaces that run on their copies.
    roots: FxHashSet<u64>,
    stats: DirectStats,
}

/// What direct paging did (exact counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DirectStats {
    /// Entry writes applied to both the guest table and its copy.
    pub dual_writes: u64,
    /// Host-frame table reads (`gfn_to_hfn`; one per leaf entry copied).
    pub gfn_to_hfn_reads: u64,
    /// Copies allocated (one 4 KiB host frame each).
    pub copies_allocated: u64,
    /// Copies freed, with their guest table, back to the host.
    pub copies_freed: u64,
    /// Pages the guest touched so the host would back them before copying an entry.
    pub touched_for_backing: u64,
}

/// The host address of entry `index` of guest table `table`, backing the table if needed.
fn guest_entry_addr(
    mem: &mut HostMemory,
    vm: &mut Vm,
    table: Gfn,
    index: usize,
) -> Result<Hpa, HvError> {
    Ok(vm.touch(mem, table)?.addr_at(index as u64 * 8))
}

impl DirectTables {
    /// What direct paging has done so far (cumulative counts).
    pub fn stats(&self) -> &DirectStats {
        &self.stats
    }

    /// The copy of guest table `table`, if it has one.
    pub fn copy_of(&self, table: Gfn) -> Option<Hfn> {
        self.copies.get(&table.raw()).copied()
    }

    /// Whether the address space with top-level table `pgd` runs on its copies.
    pub fn is_direct(&self, pgd: Gfn) -> bool {
        self.roots.contains(&pgd.raw())
    }

    /// The root a CR3 load of `pgd` gives the MMU: its copy, one-dimensional (with `tagged`,
    /// checked against the memory tags, as TPT's), if the address space runs on copies; else
    /// the guest's own tables under the EPT at `eptp`.
    pub fn root(&self, pgd: Gfn, eptp: Hpa, tagged: bool) -> Root {
        match (self.is_direct(pgd), self.copy_of(pgd)) {
            (true, Some(copy)) if tagged => Root::Tagged { cr3: copy.addr() },
            (true, Some(copy)) => Root::OneD { cr3: copy.addr() },
            _ => Root::TwoD {
                guest_cr3: pgd.addr(),
                eptp,
            },
        }
    }

    /// A new address space with top-level table `pgd` runs on copies from now on.
    pub fn add_root(&mut self, mem: &mut HostMemory, pgd: Gfn) -> Result<(), HvError> {
        self.roots.insert(pgd.raw());
        if self.copy_of(pgd).is_none() {
            self.new_copy(mem, pgd)?;
        }
        Ok(())
    }

    /// Xen's unpin of the address space with top-level table `pgd` (`__xen_pgd_unpin`): its
    /// tables stop being validated page tables and become ordinary guest memory, so their
    /// copies go and later writes to them are plain stores. Walks the user half of the
    /// guest's tables (`__xen_pgd_walk` up to `USER_LIMIT`) from `pgd`, `levels` deep.
    /// Returns the table pages unpinned: (last-level pages, other pages with `pgd`).
    pub fn unpin(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        pgd: Gfn,
        levels: u8,
    ) -> Result<(u64, u64), HvError> {
        let mut pages = (0, 0);
        self.unpin_table(mem, vm, pgd, levels, 256, &mut pages)?;
        self.roots.remove(&pgd.raw());
        Ok(pages)
    }

    fn unpin_table(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        table: Gfn,
        level: u8,
        entries: usize,
        pages: &mut (u64, u64),
    ) -> Result<(), HvError> {
        if level == 1 {
            pages.0 += 1;
        } else {
            pages.1 += 1;
            for index in 0..entries {
                let entry = self.read_entry(mem, vm, table, index)?;
                if X86::is_present(entry) && !(level <= 3 && X86::is_large(entry)) {
                    let child = Gfn::new((entry & FRAME_MASK) >> 12);
                    self.unpin_table(mem, vm, child, level - 1, 512, pages)?;
                }
            }
        }
        if let Some(copy) = self.copies.remove(&table.raw()) {
            mem.tags_mut().assign(copy.raw(), 1, false);
            mem.free(copy, PageSize::Size4K);
            self.stats.copies_freed += 1;
        }
        Ok(())
    }

    /// The guest reads entry `index` of its table `table`.
    pub fn read_entry(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        table: Gfn,
        index: usize,
    ) -> Result<u64, HvError> {
        let at = guest_entry_addr(mem, vm, table, index)?;
        Ok(mem.read_u64(at))
    }

    /// The guest writes `entry` at `index` of its level-`level` table `table`, and the copy's
    /// version of it into the copy. Returns whether a copy was written (a dual write).
    pub fn set_entry(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        level: u8,
        table: Gfn,
        index: usize,
        entry: u64,
    ) -> Result<bool, HvError> {
        let at = guest_entry_addr(mem, vm, table, index)?;
        mem.write_u64(at, entry);
        let Some(copy) = self.copy_of(table) else {
            return Ok(false);
        };
        let host = self.host_entry(mem, vm, level, entry)?;
        mem.write_u64(copy.addr_at(index as u64 * 8), host);
        self.stats.dual_writes += 1;
        Ok(true)
    }

    /// The guest reads and clears entry `index` of `table`, and the copy's; the hardware's
    /// A/D bits in the copy are merged into the value returned. Returns the old entry and
    /// whether a copy was written.
    pub fn get_and_clear(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        table: Gfn,
        index: usize,
    ) -> Result<(u64, bool), HvError> {
        let at = guest_entry_addr(mem, vm, table, index)?;
        let mut old = mem.read_u64(at);
        mem.write_u64(at, 0);
        let Some(copy) = self.copy_of(table) else {
            return Ok((old, false));
        };
        let copy_at = copy.addr_at(index as u64 * 8);
        old |= mem.read_u64(copy_at) & (X86::ACCESSED_BIT | X86::DIRTY_BIT);
        mem.write_u64(copy_at, 0);
        self.stats.dual_writes += 1;
        Ok((old, true))
    }

    /// The guest zeroes a new table page (its first touch if the frame is new).
    pub fn alloc_table(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        table: Gfn,
    ) -> Result<(), HvError> {
        let at = guest_entry_addr(mem, vm, table, 0)?;
        mem.drop_contents(at.frame());
        Ok(())
    }

    /// The guest frees table page `table`: its contents, its copy and its root mark go.
    pub fn release_table(&mut self, mem: &mut HostMemory, vm: &mut Vm, table: Gfn) {
        if let Some(hfn) = vm.translate(mem, table) {
            mem.drop_contents(hfn);
        }
        if let Some(copy) = self.copies.remove(&table.raw()) {
            mem.tags_mut().assign(copy.raw(), 1, false);
            mem.free(copy, PageSize::Size4K);
            self.stats.copies_freed += 1;
        }
        self.roots.remove(&table.raw());
    }

    /// The guest's answer to the host's notification that a backing page moved: every copy
    /// entry naming a frame of the old page is rewritten to name the new one (flags and
    /// hardware-set A/D bits kept). Returns how many entries changed. Linux would find them
    /// through its reverse map of the guest frame; the simulator scans the copies, which finds
    /// the same entries (only leaf entries can name a guest page's host frame; upper-level
    /// entries name other copies).
    pub fn fix_up(&mut self, mem: &mut HostMemory, moved: &Moved) -> u64 {
        let mut fixed = Vec::new();
        for &copy in self.copies.values() {
            let Some(entries) = mem.table_entries(copy) else {
                continue;
            };
            for (index, &entry) in entries.iter().enumerate() {
                if !X86::is_present(entry) {
                    continue;
                }
                if let Some(new) = moved.relocate(Hpa::new(entry & FRAME_MASK).frame()) {
                    fixed.push((
                        copy.addr_at(index as u64 * 8),
                        (entry & !FRAME_MASK) | new.addr().raw(),
                    ));
                }
            }
        }
        for &(at, entry) in &fixed {
            mem.write_u64(at, entry);
        }
        fixed.len() as u64
    }

    /// A zeroed copy for guest table `table`, on a host frame tagged to the VM.
    fn new_copy(&mut self, mem: &mut HostMemory, table: Gfn) -> Result<Hfn, HvError> {
        let hfn = mem.alloc(PageSize::Size4K)?;
        mem.tags_mut().assign(hfn.raw(), 1, true);
        self.copies.insert(table.raw(), hfn);
        self.stats.copies_allocated += 1;
        Ok(hfn)
    }

    /// `gfn_to_hfn[gfn]`, touching the page first if the host has not backed it yet.
    fn gfn_to_hfn(&mut self, mem: &mut HostMemory, vm: &mut Vm, gfn: Gfn) -> Result<Hfn, HvError> {
        self.stats.gfn_to_hfn_reads += 1;
        if let Some(hfn) = vm.translate(mem, gfn) {
            return Ok(hfn);
        }
        self.stats.touched_for_backing += 1;
        vm.touch(mem, gfn)
    }

    /// The copy's version of guest entry `entry` at `level`.
    fn host_entry(
        &mut self,
        mem: &mut HostMemory,
        vm: &mut Vm,
        level: u8,
        entry: u64,
    ) -> Result<u64, HvError> {
        if !X86::is_present(entry) {
            return Ok(entry);
        }
        let frame = Gfn::new((entry & FRAME_MASK) >> 12);
        let leaf = level == 1 || (X86::is_large(entry) && level <= 3);
        let host = if leaf {
            self.gfn_to_hfn(mem, vm, frame)?
        } else {
            match self.copy_of(frame) {
                Some(copy) => copy,
                None => self.new_copy(mem, frame)?,
            }
        };
        Ok((entry & !FRAME_MASK) | host.addr().raw())
    }
}
