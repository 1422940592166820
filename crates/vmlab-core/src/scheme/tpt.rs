//! Translation Pass-Through (USENIX ATC 2023): for chosen processes the guest keeps
//! one-dimensional GVA->HPA page tables ("devirt" copies of its own tables), the hardware
//! walks them in user mode, and memory tags keep the guest inside its own frames. Other
//! processes, and the guest kernel, run on nested paging. Reference: tpt-mechanism.md,
//! section 1; the mechanism follows the artifact's guest pv-ops backend.
//!
//! - Every page-table page of a TPT address space has a zeroed **devirt copy**.
//!   `set_pte/pmd/pud/p4d` **dual-write**: the guest's entry (a GPA), then the copy's, with
//!   the same flags and the frame replaced by the host frame: for a leaf, the data frame's
//!   `gfn_to_hfn` entry; for an upper level, the host frame of the next table's copy.
//! - An entry copied while `gfn_to_hfn` still has 0 for its frame first touches the page, so
//!   the host backs it (an EPT violation) and fills the table.
//! - The hardware sets A/D bits in the copy; get-and-clear merges them back.
//! - Simplifications: the `gfn_to_hfn` table is read through the p2m (the hypervisor keeps it
//!   coherent with every backing change, so its content is the p2m's); devirt copies take
//!   host frames of the VM's memory directly (tagged to the VM) rather than guest frames from
//!   the guest's allocator; a guest 2 MiB page needs a host page at least as large (the devirt
//!   tree has no split tables).

use crate::addr::{Gfn, Gva, Hfn, Hpa, PageSize};
use crate::hv::remap::Moved;
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::hw::x86::pte::{EntryFormat, FRAME_MASK, X86};
use crate::os::PvOps;
use rustc_hash::{FxHashMap, FxHashSet};

/// Which scheme keeps host-address copies of the guest's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DevirtMode {
    /// TPT with memory tags: the chosen process walks its copies with tag checks.
    #[default]
    Tpt,
    /// The TPT Intel prototype: no tagging hardware, plain 1D walks of the copies.
    Prototype,
    /// Xen-style paravirtual direct paging: every address space's tables hold machine
    /// frames, and every update is a validated hypercall (batched in lazy-MMU sections).
    /// The copies are those machine-frame tables; the guest-physical view the kernel reads
    /// stands in for Xen's machine-to-physical table.
    Pv,
}

/// Updates one PV multicall carries (Linux's lazy-MMU batching of mmu_update).
pub const PV_BATCH: u32 = 32;

/// The guest's TPT (or PV) state: which address spaces have copies, and the copies.
#[derive(Default)]
pub struct Devirt {
    mode: DevirtMode,
    /// PV: inside a lazy-MMU section, and updates queued for the next multicall.
    lazy: bool,
    pending: u32,
    /// Guest table frame -> the host frame of its devirt copy.
    copies: FxHashMap<u64, Hfn>,
    /// Top-level tables of TPT address spaces.
    pgds: FxHashSet<u64>,
    stats: DevirtStats,
}

/// What the TPT backend did (exact counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DevirtStats {
    /// Entry writes applied to both the guest table and its devirt copy.
    pub dual_writes: u64,
    /// `gfn_to_hfn` reads (one per leaf entry copied).
    pub gfn_to_hfn_reads: u64,
    /// Devirt copies allocated and freed.
    pub copies_allocated: u64,
    pub copies_freed: u64,
    /// Pages the guest touched so the host would back them before copying an entry.
    pub touched_for_backing: u64,
}

impl Devirt {
    pub fn new(mode: DevirtMode) -> Devirt {
        Devirt {
            mode,
            ..Devirt::default()
        }
    }

    pub fn stats(&self) -> &DevirtStats {
        &self.stats
    }

    /// The devirt copy of guest table `table`, if it has one.
    pub fn copy_of(&self, table: Gfn) -> Option<Hfn> {
        self.copies.get(&table.raw()).copied()
    }

    /// The guest's answer to the host's notification that a backing page moved: every
    /// devirt entry naming a frame of the old page is rewritten to name the new one (flags
    /// and hardware-set A/D bits kept). Returns how many entries changed. Linux would find
    /// them through its reverse map of the guest frame; the simulator scans the copies,
    /// which finds the same entries (only leaf entries can name a guest page's host frame;
    /// upper-level entries name other copies).
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

    /// Whether the address space with top-level table `pgd` runs with TPT.
    pub fn is_tpt(&self, pgd: Gfn) -> bool {
        self.pgds.contains(&pgd.raw())
    }
}

/// The TPT pv-ops backend: nested paging's, plus the devirt copies of TPT address spaces.
pub struct TptPvOps<'a> {
    pub mem: &'a mut HostMemory,
    pub mmu: &'a mut Mmu,
    pub vm: &'a mut Vm,
    pub devirt: &'a mut Devirt,
    /// The first hypervisor error met (pv-ops cannot fail; the caller checks this after).
    pub error: Option<HvError>,
}

impl TptPvOps<'_> {
    fn hypercall(&mut self) {
        self.vm.record_exit(crate::hv::ExitReason::Hypercall);
    }

    /// PV: one validated table update: its own hypercall, or a place in the next multicall.
    fn pv_update(&mut self) {
        if self.devirt.mode != DevirtMode::Pv {
            return;
        }
        if self.devirt.lazy {
            self.devirt.pending += 1;
            if self.devirt.pending == PV_BATCH {
                self.hypercall();
                self.devirt.pending = 0;
            }
        } else {
            self.hypercall();
        }
    }

    fn note<T>(&mut self, result: Result<T, HvError>) -> Option<T> {
        super::stash(&mut self.error, result)
    }

    fn guest_addr(&mut self, table: Gfn, index: usize) -> Option<Hpa> {
        let hfn = self.vm.touch(self.mem, table);
        self.note(hfn).map(|hfn| hfn.addr_at(index as u64 * 8))
    }

    /// A zeroed devirt copy for guest table `table`.
    fn new_copy(&mut self, table: Gfn) -> Option<Hfn> {
        let hfn = self.mem.alloc(PageSize::Size4K).map_err(HvError::from);
        let hfn = self.note(hfn)?;
        self.mem.tags_mut().assign(hfn.raw(), 1, true);
        self.devirt.copies.insert(table.raw(), hfn);
        self.devirt.stats.copies_allocated += 1;
        Some(hfn)
    }

    /// `gfn_to_hfn[gfn]`, touching the page first if the host has not backed it yet.
    fn gfn_to_hfn(&mut self, gfn: Gfn) -> Option<Hfn> {
        self.devirt.stats.gfn_to_hfn_reads += 1;
        if let Some(hfn) = self.vm.translate(self.mem, gfn) {
            return Some(hfn);
        }
        self.devirt.stats.touched_for_backing += 1;
        let hfn = self.vm.touch(self.mem, gfn);
        self.note(hfn)
    }

    /// The devirt copy's version of guest entry `entry` at `level`.
    fn host_entry(&mut self, level: u8, entry: u64) -> Option<u64> {
        if !X86::is_present(entry) {
            return Some(entry);
        }
        let frame = Gfn::new((entry & FRAME_MASK) >> 12);
        let leaf = level == 1 || (X86::is_large(entry) && level <= 3);
        let host = if leaf {
            self.gfn_to_hfn(frame)?
        } else {
            match self.devirt.copy_of(frame) {
                Some(copy) => copy,
                None => self.new_copy(frame)?,
            }
        };
        Some((entry & !FRAME_MASK) | host.addr().raw())
    }

    fn write_frames(&mut self, frame: Gfn, size: PageSize) {
        for offset in 0..size.frames() {
            let r = self.vm.touch(self.mem, Gfn::new(frame.raw() + offset));
            if self.note(r).is_none() {
                return;
            }
        }
    }
}

impl PvOps for TptPvOps<'_> {
    fn read_entry(&mut self, table: Gfn, index: usize) -> u64 {
        self.guest_addr(table, index)
            .map_or(0, |at| self.mem.read_u64(at))
    }

    fn set_entry(&mut self, level: u8, table: Gfn, index: usize, entry: u64) {
        let Some(at) = self.guest_addr(table, index) else {
            return;
        };
        self.mem.write_u64(at, entry);
        let Some(copy) = self.devirt.copy_of(table) else {
            return;
        };
        if let Some(host) = self.host_entry(level, entry) {
            self.mem.write_u64(copy.addr_at(index as u64 * 8), host);
            self.devirt.stats.dual_writes += 1;
            self.pv_update();
        }
    }

    fn get_and_clear(&mut self, _level: u8, table: Gfn, index: usize) -> u64 {
        let Some(at) = self.guest_addr(table, index) else {
            return 0;
        };
        let mut old = self.mem.read_u64(at);
        self.mem.write_u64(at, 0);
        if let Some(copy) = self.devirt.copy_of(table) {
            // The hardware set A/D in the copy: merge them into what the kernel sees.
            let copy_at = copy.addr_at(index as u64 * 8);
            old |= self.mem.read_u64(copy_at) & (X86::ACCESSED_BIT | X86::DIRTY_BIT);
            self.mem.write_u64(copy_at, 0);
            self.devirt.stats.dual_writes += 1;
            self.pv_update();
        }
        old
    }

    fn alloc_table(&mut self, _level: u8, table: Gfn) {
        if let Some(at) = self.guest_addr(table, 0) {
            self.mem.drop_contents(at.frame());
        }
    }

    fn release_table(&mut self, _level: u8, table: Gfn) {
        if let Some(hfn) = self.vm.translate(self.mem, table) {
            self.mem.drop_contents(hfn);
        }
        if let Some(copy) = self.devirt.copies.remove(&table.raw()) {
            self.mem.tags_mut().assign(copy.raw(), 1, false);
            self.mem.free(copy, PageSize::Size4K);
            self.devirt.stats.copies_freed += 1;
        }
        self.devirt.pgds.remove(&table.raw());
    }

    fn clear_page(&mut self, frame: Gfn, size: PageSize) {
        self.write_frames(frame, size);
    }

    fn copy_page(&mut self, _from: Gfn, to: Gfn, size: PageSize) {
        self.write_frames(to, size);
    }

    fn write_cr3(&mut self, pgd: Gfn, pcid: u16, flush: bool) {
        let root = match (self.devirt.is_tpt(pgd), self.devirt.copy_of(pgd)) {
            (true, Some(copy)) if self.devirt.mode != DevirtMode::Tpt => {
                Root::OneD { cr3: copy.addr() }
            }
            (true, Some(copy)) => Root::Tagged { cr3: copy.addr() },
            _ => Root::TwoD {
                guest_cr3: pgd.addr(),
                eptp: self.vm.eptp(),
            },
        };
        self.mmu.set_root(root, pcid as u64, flush);
        if self.devirt.mode == DevirtMode::Pv {
            self.hypercall(); // the CR3 switch (mmuext_op new_baseptr)
        }
    }

    fn invlpg(&mut self, va: Gva) {
        self.mmu.invlpg(va);
        if self.devirt.mode == DevirtMode::Pv {
            self.hypercall();
        }
    }

    fn flush_tlb(&mut self) {
        self.mmu.flush_current();
        if self.devirt.mode == DevirtMode::Pv {
            self.hypercall();
        }
    }

    fn lazy_mmu_begin(&mut self) {
        self.devirt.lazy = true;
    }

    fn lazy_mmu_end(&mut self) {
        self.devirt.lazy = false;
        if self.devirt.pending > 0 {
            self.devirt.pending = 0;
            if self.devirt.mode == DevirtMode::Pv {
                self.hypercall();
            }
        }
    }

    fn mm_created(&mut self, pgd: Gfn, devirt: bool) {
        // Under PV every address space is paravirtualized.
        if devirt || self.devirt.mode == DevirtMode::Pv {
            self.devirt.pgds.insert(pgd.raw());
            if self.devirt.copy_of(pgd).is_none() {
                self.new_copy(pgd);
            }
        }
    }
}
