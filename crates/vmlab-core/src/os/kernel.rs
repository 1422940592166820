//! The kernel: physical-frame allocation, one address space with anonymous VMAs, and
//! demand paging with optional transparent huge pages.
//!
//! Page faults are handled the way Linux's `handle_mm_fault` does for anonymous memory:
//! allocate missing table levels (zeroed), then a zeroed data page, then set the leaf entry
//! with the VMA's permissions, accessed, and dirty on a write fault. With THP `always`, a
//! fault in a 2 MiB-aligned region the VMA covers completely gets a 2 MiB page (a PMD leaf).

use crate::addr::{Gfn, Gva, PageSize};
use crate::hw::frames::FrameAllocator;
use crate::hw::pte::{EntryFormat, Perms, X86, FRAME_MASK};
use crate::hw::walker::level_shift;
use crate::os::mm::{Vma, VmaList};
use crate::os::pvops::PvOps;

/// Transparent huge pages for anonymous memory (`/sys/kernel/mm/transparent_hugepage/enabled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpPolicy {
    Never,
    Always,
}

#[derive(Clone, Copy, Debug)]
pub struct KernelConfig {
    /// Physical memory the kernel manages, in bytes (the guest's RAM, or the machine's).
    pub memory: u64,
    /// Paging levels (4 or 5).
    pub levels: u8,
    pub thp: ThpPolicy,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OsError {
    #[error("segmentation fault: {} access to {va:?} outside any mapping with that permission", if *write { "write" } else { "read" })]
    SegFault { va: Gva, write: bool },
    #[error("mapping {start:?}+{len:#x} overlaps an existing mapping at {existing:?}")]
    Overlap { start: Gva, len: u64, existing: Gva },
    #[error("mapping {start:?}+{len:#x} is not 4 KiB aligned or is empty")]
    BadMapping { start: Gva, len: u64 },
    #[error("the kernel ran out of physical memory ({frames} frames of 4 KiB); raise guest_memory in the machine profile")]
    OutOfMemory { frames: u64 },
}

/// Kernel event counters (exact).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelCounters {
    /// Page faults handled (each a #PF taken by the kernel).
    pub page_faults: u64,
    /// Faults that mapped a 2 MiB page.
    pub huge_page_faults: u64,
    /// 4 KiB frames the kernel zeroed for new anonymous pages.
    pub frames_cleared: u64,
    /// Page-table pages in use now, and the most ever.
    pub table_pages: u64,
    pub table_pages_peak: u64,
}

impl KernelCounters {
    /// Counters accumulated since `earlier`; gauges (table pages) keep their current value.
    pub fn since(&self, earlier: &KernelCounters) -> KernelCounters {
        KernelCounters {
            page_faults: self.page_faults - earlier.page_faults,
            huge_page_faults: self.huge_page_faults - earlier.huge_page_faults,
            frames_cleared: self.frames_cleared - earlier.frames_cleared,
            ..*self
        }
    }
}

pub struct Kernel {
    config: KernelConfig,
    frames: FrameAllocator,
    pgd: Gfn,
    vmas: VmaList,
    counters: KernelCounters,
}

impl Kernel {
    /// Boot: allocate the first process's top-level table and load it.
    pub fn boot<P: PvOps + ?Sized>(config: KernelConfig, pv: &mut P) -> Result<Kernel, OsError> {
        let mut kernel = Kernel {
            config,
            frames: FrameAllocator::new(config.memory >> crate::addr::PAGE_SHIFT),
            pgd: Gfn::new(0),
            vmas: VmaList::default(),
            counters: KernelCounters::default(),
        };
        kernel.pgd = kernel.alloc_table(pv, config.levels)?;
        pv.write_cr3(kernel.pgd, 0, true);
        Ok(kernel)
    }

    pub fn pgd(&self) -> Gfn {
        self.pgd
    }

    pub fn counters(&self) -> &KernelCounters {
        &self.counters
    }

    pub fn config(&self) -> &KernelConfig {
        &self.config
    }

    /// Physical frames allocated (data and tables), in 4 KiB units.
    pub fn frames_in_use(&self) -> u64 {
        self.frames.in_use()
    }

    pub fn vmas(&self) -> &VmaList {
        &self.vmas
    }

    /// mmap(start, len, PROT_READ|PROT_WRITE?, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE).
    pub fn mmap(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), OsError> {
        let end = start.checked_add(len).filter(|_| len > 0 && start.is_aligned(PageSize::Size4K) && len % 4096 == 0);
        let end = end.ok_or(OsError::BadMapping { start, len })?;
        self.vmas
            .insert(Vma { start, end, writable })
            .map_err(|existing| OsError::Overlap { start, len, existing: existing.start })
    }

    /// Handle a page fault at `va`: map the page if the VMA allows the access.
    pub fn handle_page_fault<P: PvOps + ?Sized>(&mut self, pv: &mut P, va: Gva, write: bool) -> Result<(), OsError> {
        let vma = *self.vmas.find(va).filter(|v| v.writable || !write).ok_or(OsError::SegFault { va, write })?;
        self.counters.page_faults += 1;
        let perms = Perms { write: vma.writable, exec: false, ..Perms::ALL };
        let levels = self.config.levels;
        let mut table = self.pgd;
        for level in (2..=levels).rev() {
            let index = table_index(va, level);
            let entry = pv.read_entry(table, index);
            if X86::is_present(entry) {
                if X86::is_large(entry) {
                    return self.spurious_or_protection(va, write, entry);
                }
                table = Gfn::new((entry & FRAME_MASK) >> 12);
                continue;
            }
            if level == 2 && self.config.thp == ThpPolicy::Always && vma.covers(va.align_down(PageSize::Size2M), PageSize::Size2M.bytes()) {
                if let Some(frame) = self.frames.alloc(PageSize::Size2M) {
                    let frame = Gfn::new(frame);
                    pv.clear_page(frame, PageSize::Size2M);
                    self.counters.frames_cleared += PageSize::Size2M.frames();
                    pv.set_entry(2, table, index, leaf_entry(frame, perms, write, true));
                    self.counters.huge_page_faults += 1;
                    return Ok(());
                }
                // No aligned 2 MiB frame left: fall back to 4 KiB pages, as THP does.
            }
            let next = self.alloc_table(pv, level - 1)?;
            pv.set_entry(level, table, index, X86::table(next.addr().raw()));
            table = next;
        }
        let index = table_index(va, 1);
        let entry = pv.read_entry(table, index);
        if X86::is_present(entry) {
            return self.spurious_or_protection(va, write, entry);
        }
        let frame = self.alloc_frame(PageSize::Size4K)?;
        pv.clear_page(frame, PageSize::Size4K);
        self.counters.frames_cleared += 1;
        pv.set_entry(1, table, index, leaf_entry(frame, perms, write, false));
        Ok(())
    }

    /// A fault on a present leaf: the translation raced with a fill (spurious), or a write to a
    /// read-only page that copy-on-write does not cover yet.
    fn spurious_or_protection(&self, va: Gva, write: bool, entry: u64) -> Result<(), OsError> {
        if X86::perms(entry).allows(write) {
            Ok(())
        } else {
            Err(OsError::SegFault { va, write })
        }
    }

    fn alloc_frame(&mut self, size: PageSize) -> Result<Gfn, OsError> {
        self.frames.alloc(size).map(Gfn::new).ok_or(OsError::OutOfMemory { frames: self.frames.total() })
    }

    fn alloc_table<P: PvOps + ?Sized>(&mut self, pv: &mut P, level: u8) -> Result<Gfn, OsError> {
        let table = self.alloc_frame(PageSize::Size4K)?;
        pv.alloc_table(level, table);
        self.counters.table_pages += 1;
        self.counters.table_pages_peak = self.counters.table_pages_peak.max(self.counters.table_pages);
        Ok(table)
    }
}

fn table_index(va: Gva, level: u8) -> usize {
    ((va.raw() >> level_shift(level)) & 0x1ff) as usize
}

/// A user leaf entry as Linux builds it for anonymous memory: accessed set (part of the
/// user page protections), dirty on a write fault.
fn leaf_entry(frame: Gfn, perms: Perms, write: bool, large: bool) -> u64 {
    let mut entry = X86::leaf(frame.addr().raw(), perms, large) | X86::ACCESSED_BIT;
    if write {
        entry |= X86::DIRTY_BIT;
    }
    entry
}
