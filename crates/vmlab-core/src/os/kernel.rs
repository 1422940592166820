//! The kernel: processes with their own address spaces, a scheduler that switches between
//! them, and the memory system calls (mmap, munmap, mprotect, madvise). Page faults, fork,
//! exec and exit live beside this file (`fault.rs`, `fork.rs`, `exec.rs`, `teardown.rs`).
//!
//! Every page-table edit goes through [`PvOps`]; the kernel never knows which scheme runs it.

use crate::addr::{Gfn, Gva, PageSize};
use crate::hw::x86::pte::{EntryFormat, X86};
use crate::os::frames::PhysMemory;
use crate::os::mm::{Vma, VmaList};
use crate::os::pvops::PvOps;
use crate::os::tables::{self, LeafEntry};
use rustc_hash::{FxHashMap, FxHashSet};

/// Transparent huge pages for anonymous memory (`/sys/kernel/mm/transparent_hugepage/enabled`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThpPolicy {
    /// Anonymous memory is mapped with 4 KiB pages only.
    Never,
    /// A fault maps a 2 MiB page when its VMA covers the aligned 2 MiB around it and a
    /// free 2 MiB block exists.
    Always,
}

/// What the kernel is booted with: its memory, paging mode and options.
#[derive(Clone, Copy, Debug)]
pub struct KernelConfig {
    /// Physical memory the kernel manages, in bytes (the guest's RAM, or the machine's).
    pub memory: u64,
    /// Paging levels (4 or 5).
    pub levels: u8,
    /// Transparent huge pages for anonymous memory.
    pub thp: ThpPolicy,
    /// Tag TLB entries with a PCID per address space, so a context switch need not flush.
    pub pcid: bool,
    /// Kernel page-table isolation: a user top-level table per address space, switched to
    /// and from on every kernel entry and exit (see `os::pti`, `os::entry`).
    pub kpti: bool,
    /// The program the first process runs (as if exec'd at boot).
    pub program: &'static str,
    /// Translation Pass-Through's mark (the artifact's `/sys/kernel/mm/devirt/task_name`):
    /// the next exec of a program of this name, the first process's included, runs with
    /// TPT, and the mark is used up. Forked children do not inherit TPT; threads would share
    /// it with their address space (the model has no threads). `None` outside TPT.
    pub tpt_task: Option<&'static str>,
}

/// A process identifier. The first process is 0; every fork takes the next number.
pub type Pid = u32;

/// Why the kernel refused an operation of the workload.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum OsError {
    /// A fault at an address no VMA maps with the needed permission (SIGSEGV).
    #[error("segmentation fault: {} access to {va:?} outside any mapping with that permission", if *write { "write" } else { "read" })]
    SegFault {
        /// The faulting address.
        va: Gva,
        /// The access was a write.
        write: bool,
    },
    /// A new mapping would overlap an existing VMA (the model has no MAP_FIXED replace).
    #[error("mapping {start:?}+{len:#x} overlaps an existing mapping at {existing:?}")]
    Overlap {
        /// Start of the requested mapping.
        start: Gva,
        /// Bytes requested.
        len: u64,
        /// Start of the VMA it overlaps.
        existing: Gva,
    },
    /// A range that is not 4 KiB aligned, is empty or wraps around the address space.
    #[error("range {start:?}+{len:#x} is not 4 KiB aligned, is empty, or wraps")]
    BadRange {
        /// Start of the range given.
        start: Gva,
        /// Bytes given.
        len: u64,
    },
    /// The kernel's frame allocator has no free block of the size needed.
    #[error("the kernel ran out of physical memory ({frames} frames of 4 KiB); raise guest_memory in the machine profile")]
    OutOfMemory {
        /// Frames the kernel manages in all (4 KiB each).
        frames: u64,
    },
    /// An operation named a process that does not exist or has exited.
    #[error("no process {0}")]
    NoProcess(Pid),
    /// The only live process tried to exit.
    #[error("process {0} cannot exit: it is the last one")]
    LastProcess(Pid),
    /// munmap, madvise or mprotect (the call named) would split a 2 MiB page.
    #[error(
        "{0} splits a 2 MiB page, which the kernel model does not do; align the range to 2 MiB"
    )]
    SplitsHugePage(&'static str),
    /// The paging backend (the hypervisor) failed; see [`BackendError`](crate::os::BackendError).
    #[error(transparent)]
    Backend(#[from] crate::os::pvops::BackendError),
}

crate::count_struct! {
    /// Kernel event counters (exact). Gauges (`table_pages`) hold current values.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
    pub struct KernelCounters {
        /// Page faults handled (each a #PF taken by the kernel), including copy-on-write ones.
        pub page_faults: u64,
        /// Faults that mapped a 2 MiB page.
        pub huge_page_faults: u64,
        /// Write faults on a shared copy-on-write page: the page was copied.
        pub cow_faults: u64,
        /// Write faults on a copy-on-write page the process was the last user of: reused.
        pub cow_reuses: u64,
        /// 4 KiB frames the kernel zeroed for new anonymous pages.
        pub frames_cleared: u64,
        /// 4 KiB frames the kernel copied (copy-on-write).
        pub frames_copied: u64,
        /// Data frames (4 KiB units) freed by munmap, madvise, exec and exit.
        pub frames_freed: u64,
        /// Forks: children created.
        pub forks: u64,
        /// Leaf entries fork copied into a child.
        pub ptes_copied: u64,
        /// Page-table pages fork allocated for children.
        pub fork_table_pages: u64,
        /// Execs: address spaces replaced by a new program's image.
        pub execs: u64,
        /// Processes that exited.
        pub exits: u64,
        /// Switches to another process's page tables.
        pub context_switches: u64,
        /// munmap calls.
        pub munmaps: u64,
        /// mprotect calls.
        pub mprotects: u64,
        /// madvise(MADV_DONTNEED) calls.
        pub madvises: u64,
        /// Single-page TLB invalidations the kernel issued.
        pub invlpgs: u64,
        /// Full TLB flushes the kernel issued (CR3 loads without PCIDs, ranges past the flush
        /// ceiling, fork, exec and address-space teardown).
        pub tlb_flushes: u64,
        /// INVPCIDs of one user page (page-table isolation with PCIDs).
        #[serde(default)]
        pub invpcids: u64,
        /// Kernel entries (system calls, exceptions, interrupts), each with a return.
        #[serde(default)]
        pub kernel_entries: u64,
        /// Of which interrupts (timer ticks).
        #[serde(default)]
        pub interrupts: u64,
        /// CR3 writes of kernel entries and exits (page-table isolation).
        #[serde(default)]
        pub cr3_writes: u64,
        gauges:
        /// Page-table pages in use now (a gauge).
        pub table_pages: u64,
        /// The most page-table pages in use at once so far (a gauge).
        pub table_pages_peak: u64,
    }
}

/// A process: an address space (top-level table and VMAs) and its PCID.
#[derive(Clone, Debug)]
pub struct Process {
    /// Its identifier.
    pub pid: Pid,
    /// The process that forked it (`None` for process 0).
    pub parent: Option<Pid>,
    /// Its (kernel) top-level page table.
    pub pgd: Gfn,
    /// Its mappings.
    pub vmas: VmaList,
    /// The PCID tagging its TLB entries (0 without PCIDs).
    pub pcid: u16,
    /// Runs with Translation Pass-Through.
    pub devirt: bool,
}

/// Linux flushes the whole TLB instead of invalidating page by page past this many pages
/// (`tlb_single_page_flush_ceiling`, arch/x86/mm/tlb.c).
pub const FLUSH_CEILING_PAGES: u64 = 33;

/// The guest (or native) kernel: its processes, physical memory allocator and counters.
pub struct Kernel {
    pub(super) config: KernelConfig,
    pub(super) phys: PhysMemory,
    /// Indexed by pid; `None` once a process exited.
    pub(super) procs: Vec<Option<Process>>,
    pub(super) current: Pid,
    pub(super) counters: KernelCounters,
    /// TPT's mark, until an exec of that program uses it.
    pub(super) tpt_task: Option<&'static str>,
    /// Page-table isolation: the user top-level table of each address space, by kernel table.
    pub(super) user_pgds: FxHashMap<u64, Gfn>,
    /// Page-table isolation: user PCIDs to flush at the next return to user mode
    /// (Linux's per-CPU `user_pcid_flush_mask`).
    pub(super) user_pcid_flush: FxHashSet<u16>,
}

impl Kernel {
    /// Boot: create process 0 with an empty address space and run it.
    pub fn boot<P: PvOps + ?Sized>(config: KernelConfig, pv: &mut P) -> Result<Kernel, OsError> {
        let mut kernel = Kernel {
            config,
            phys: PhysMemory::new(config.memory >> crate::addr::PAGE_SHIFT),
            procs: Vec::new(),
            current: 0,
            counters: KernelCounters::default(),
            tpt_task: config.tpt_task,
            user_pgds: FxHashMap::default(),
            user_pcid_flush: FxHashSet::default(),
        };
        let pgd = kernel.alloc_table(pv, config.levels)?;
        let devirt = kernel.take_tpt_mark(config.program);
        pv.mm_created(pgd, devirt)?;
        kernel.pti_alloc_user_pgd(pv, pgd, devirt)?;
        kernel.procs.push(Some(Process {
            pid: 0,
            parent: None,
            pgd,
            vmas: VmaList::default(),
            pcid: kernel.pcid_for(0),
            devirt,
        }));
        pv.write_cr3(pgd, kernel.pcid_for(0), true)?;
        // Process 0 starts in user mode.
        kernel.leave(pv)?;
        Ok(kernel)
    }

    /// The mark, if an exec has not used it yet.
    pub fn tpt_task(&self) -> Option<&'static str> {
        self.tpt_task
    }

    /// Whether an exec of `program` runs with TPT; if so the mark is used up.
    pub(super) fn take_tpt_mark(&mut self, program: &'static str) -> bool {
        let marked = self.tpt_task == Some(program);
        if marked {
            self.tpt_task = None;
        }
        marked
    }

    /// What the kernel was booted with.
    pub fn config(&self) -> &KernelConfig {
        &self.config
    }

    /// What the kernel has done since boot.
    pub fn counters(&self) -> &KernelCounters {
        &self.counters
    }

    /// The running process.
    pub fn current(&self) -> Pid {
        self.current
    }

    /// The running process's top-level table.
    pub fn pgd(&self) -> Gfn {
        self.proc(self.current)
            .expect("the current process exists")
            .pgd
    }

    /// Process `pid`, if it exists and has not exited.
    pub fn process(&self, pid: Pid) -> Option<&Process> {
        self.procs.get(pid as usize).and_then(Option::as_ref)
    }

    /// Every live process, by pid.
    pub fn processes(&self) -> impl Iterator<Item = &Process> {
        self.procs.iter().flatten()
    }

    /// The current process's VMAs.
    pub fn vmas(&self) -> &VmaList {
        &self
            .proc(self.current)
            .expect("the current process exists")
            .vmas
    }

    /// Physical frames allocated (data and tables), in 4 KiB units.
    pub fn frames_in_use(&self) -> u64 {
        self.phys.in_use()
    }

    /// How many mappings share the physical page starting at `frame`.
    pub fn refcount(&self, frame: Gfn) -> u32 {
        self.phys.refcount(frame)
    }

    pub(super) fn proc(&self, pid: Pid) -> Result<&Process, OsError> {
        self.process(pid).ok_or(OsError::NoProcess(pid))
    }

    pub(super) fn proc_mut(&mut self, pid: Pid) -> Result<&mut Process, OsError> {
        self.procs
            .get_mut(pid as usize)
            .and_then(Option::as_mut)
            .ok_or(OsError::NoProcess(pid))
    }

    pub(super) fn pcid_for(&self, pid: Pid) -> u16 {
        // PCIDs are 12 bits and 0 means "none"; wrap-around reuse is flushed at exit. Under
        // page-table isolation bit 11 tells the user PCID from the kernel's.
        if self.config.pcid && self.config.kpti {
            (pid % 2047) as u16 + 1
        } else if self.config.pcid {
            (pid % 4095) as u16 + 1
        } else {
            0
        }
    }

    /// Run `pid`: load its page tables (a context switch).
    pub fn switch_to<P: PvOps + ?Sized>(&mut self, pv: &mut P, pid: Pid) -> Result<(), OsError> {
        let p = self.proc(pid)?;
        if pid == self.current {
            return Ok(());
        }
        let (pgd, pcid) = (p.pgd, p.pcid);
        pv.write_cr3(pgd, pcid, !self.config.pcid)?;
        if !self.config.pcid {
            self.counters.tlb_flushes += 1;
        }
        // The scheduler goes on in the kernel, on the next process's tables.
        self.use_kernel_half(pv, &crate::os::kernel_half::KernelRegion::ALL)?;
        self.current = pid;
        self.counters.context_switches += 1;
        Ok(())
    }

    /// The page `va` maps to in process `pid`: (first frame, page size, writable); `None`
    /// when `pid` does not exist or `va` is not mapped.
    pub fn lookup<P: PvOps + ?Sized>(
        &self,
        pv: &mut P,
        pid: Pid,
        va: Gva,
    ) -> Result<Option<(Gfn, PageSize, bool)>, OsError> {
        let Some(p) = self.process(pid) else {
            return Ok(None);
        };
        let leaf = tables::find_leaf(pv, p.pgd, self.config.levels, va)?;
        Ok(leaf.map(|leaf| (leaf.frame(), leaf.size(), X86::perms(leaf.entry).write)))
    }

    /// mmap(start, len, PROT_READ | (writable ? PROT_WRITE : 0), MAP_PRIVATE | MAP_ANONYMOUS |
    /// MAP_FIXED_NOREPLACE) in the current process. Pages are mapped on first touch.
    pub fn mmap(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), OsError> {
        let end = checked_range(start, len)?;
        let current = self.current;
        self.proc_mut(current)?
            .vmas
            .insert(Vma {
                start,
                end,
                writable,
            })
            .map_err(|existing| OsError::Overlap {
                start,
                len,
                existing: existing.start,
            })
    }

    /// munmap: drop the range's pages and mappings, and the page tables left empty.
    pub fn munmap<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        start: Gva,
        len: u64,
    ) -> Result<(), OsError> {
        let end = checked_range(start, len)?;
        self.check_no_huge_split(pv, start, end, "munmap")?;
        let current = self.current;
        self.proc_mut(current)?.vmas.remove_range(start, end);
        if self.zap_range(pv, current, start, end)? {
            self.flush_range(pv, start, len / crate::addr::PAGE_SIZE)?;
        }
        self.free_empty_tables(pv, current, start, end)?;
        self.counters.munmaps += 1;
        Ok(())
    }

    /// madvise(MADV_DONTNEED): drop the range's pages; the mapping stays, and the next touch
    /// maps a new zeroed page.
    pub fn madvise_dontneed<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        start: Gva,
        len: u64,
    ) -> Result<(), OsError> {
        let end = checked_range(start, len)?;
        self.check_no_huge_split(pv, start, end, "madvise")?;
        if self.zap_range(pv, self.current, start, end)? {
            self.flush_range(pv, start, len / crate::addr::PAGE_SIZE)?;
        }
        self.counters.madvises += 1;
        Ok(())
    }

    /// mprotect: change the range's protection. Removing write permission write-protects the
    /// present entries; granting it changes no entry (the next write faults and is resolved
    /// like a copy-on-write fault, reusing the page when no one else maps it).
    pub fn mprotect<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        start: Gva,
        len: u64,
        writable: bool,
    ) -> Result<(), OsError> {
        let end = checked_range(start, len)?;
        self.check_no_huge_split(pv, start, end, "mprotect")?;
        let current = self.current;
        let pgd = self.proc(current)?.pgd;
        self.proc_mut(current)?
            .vmas
            .protect_range(start, end, writable);
        let mut changed = false;
        if !writable {
            pv.lazy_mmu_begin()?;
            tables::for_each_leaf(
                pv,
                pgd,
                self.config.levels,
                start,
                end,
                &mut |pv, leaf: LeafEntry| {
                    if leaf.entry & X86::WRITE != 0 {
                        pv.set_entry(
                            leaf.slot.level,
                            leaf.slot.table,
                            leaf.slot.index,
                            leaf.entry & !X86::WRITE,
                        )?;
                        changed = true;
                    }
                    Ok(())
                },
            )?;
            pv.lazy_mmu_end()?;
        }
        if changed {
            self.flush_range(pv, start, len / crate::addr::PAGE_SIZE)?;
        }
        self.counters.mprotects += 1;
        Ok(())
    }

    /// Invalidate the `pages` pages from `start` in the current address space, or flush all
    /// of it past [`FLUSH_CEILING_PAGES`], as Linux's flush_tlb_mm_range does.
    pub(super) fn flush_range<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        start: Gva,
        pages: u64,
    ) -> Result<(), OsError> {
        if pages == 0 {
            return Ok(());
        }
        if pages > FLUSH_CEILING_PAGES {
            self.flush_tlb_local(pv)?;
        } else {
            for page in 0..pages {
                self.flush_tlb_one_user(pv, Gva::new(start.raw() + page * crate::addr::PAGE_SIZE))?;
            }
        }
        Ok(())
    }

    /// Refuse ranges whose ends fall inside a 2 MiB page (Linux would split it).
    fn check_no_huge_split<P: PvOps + ?Sized>(
        &self,
        pv: &mut P,
        start: Gva,
        end: Gva,
        what: &'static str,
    ) -> Result<(), OsError> {
        let pgd = self.proc(self.current)?.pgd;
        for edge in [start, end] {
            if let Some(leaf) = tables::find_leaf(pv, pgd, self.config.levels, edge)? {
                if leaf.size() != PageSize::Size4K && leaf.va != edge {
                    return Err(OsError::SplitsHugePage(what));
                }
            }
        }
        Ok(())
    }

    pub(super) fn alloc_frame(&mut self, size: PageSize) -> Result<Gfn, OsError> {
        self.phys.alloc(size).ok_or(OsError::OutOfMemory {
            frames: self.phys.total(),
        })
    }

    pub(super) fn alloc_table<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        level: u8,
    ) -> Result<Gfn, OsError> {
        let table = self.alloc_frame(PageSize::Size4K)?;
        pv.alloc_table(level, table)?;
        self.counters.table_pages += 1;
        self.counters.table_pages_peak = self
            .counters
            .table_pages_peak
            .max(self.counters.table_pages);
        Ok(table)
    }

    pub(super) fn free_table<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        level: u8,
        table: Gfn,
    ) -> Result<(), OsError> {
        pv.release_table(level, table)?;
        self.phys.put(table, PageSize::Size4K);
        self.counters.table_pages -= 1;
        Ok(())
    }
}

/// The end of `[start, start + len)`, if the range is 4 KiB aligned, non-empty and in range.
fn checked_range(start: Gva, len: u64) -> Result<Gva, OsError> {
    start
        .checked_add(len)
        .filter(|_| {
            len > 0
                && start.is_aligned(PageSize::Size4K)
                && len.is_multiple_of(crate::addr::PAGE_SIZE)
        })
        .ok_or(OsError::BadRange { start, len })
}
