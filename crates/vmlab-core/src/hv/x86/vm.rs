//! A virtual machine's guest-physical memory: backed lazily by host frames, mapped by an EPT
//! that lives in host memory like any other page table.
//!
//! The EPT *is* the p2m: the hypervisor reads it in software to find a guest frame's host
//! frame, so the only bulk state is table pages. First touch of a guest frame is an EPT
//! violation: one exit, after which the frame's backing page (4K, 2M or 1G) is mapped.

use crate::addr::{Gfn, Gpa, Hfn, Hpa, PageSize};
use crate::hv::x86::exits::{ExitCounters, ExitReason};
use crate::hv::x86::p2m_memo::P2mMemo;
use crate::hv::x86::remap::RemapCounters;
use crate::hw::frames::{HostMemory, OutOfMemory};
use crate::hw::x86::paging::{Cursor, PagingMode, SoftWalk};
use crate::hw::x86::pte::{EntryFormat, Ept};

/// How the hypervisor backs guest memory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackingConfig {
    /// The host page size used to back guest memory (KVM with THP or hugetlbfs: 2M/1G).
    pub host_pages: PageSize,
    /// Fraction (0..=1) of large host regions that are fragmented, so a large backing page
    /// cannot be had there and the hypervisor falls back to the next smaller size.
    pub fragmentation: f64,
    /// Seed of the (deterministic) choice of fragmented regions.
    pub seed: u64,
}

/// Errors of the hypervisor model.
#[derive(Debug, thiserror::Error)]
pub enum HvError {
    /// A guest-physical address at or past the end of the VM's memory.
    #[error("guest-physical address {0:?} is outside the VM's memory; raise guest_memory in the machine profile")]
    OutsideGuest(Gpa),
    /// A remap of a guest frame that no host page backs yet.
    #[error(
        "guest-physical address {0:?} is not backed by the host, so there is nothing to remap"
    )]
    NotBacked(Gpa),
    /// Host memory ran out: for a backing page, or an EPT or shadow table page.
    #[error(transparent)]
    OutOfMemory(#[from] OutOfMemory),
}

/// One VM.
pub struct Vm {
    guest_frames: u64,
    eptp: Hfn,
    /// The EPT's paging mode (4 or 5 levels, as the guest's).
    mode: PagingMode,
    backing: BackingConfig,
    exits: ExitCounters,
    ept_table_pages: u64,
    /// Backing pages by size (4K, 2M, 1G: the EPT's leaf levels 1..=3), in 4 KiB frames.
    backed_frames: [u64; 3],
    remaps: RemapCounters,
    /// Translations read from the EPT, so the next read of the same frame needs no walk.
    memo: P2mMemo,
    /// Guest memory counts as populated when the domain was built (Xen PV): the model still
    /// backs a frame when it is first needed, but that is no exit.
    populated_at_build: bool,
}

impl Vm {
    /// A VM with `guest_bytes` of guest-physical memory, nothing backed yet.
    ///
    /// # Panics
    /// If `levels` is neither 4 nor 5 (the machine profile admits no other).
    pub fn new(
        mem: &mut HostMemory,
        guest_bytes: u64,
        levels: u8,
        backing: BackingConfig,
    ) -> Result<Vm, HvError> {
        let eptp = mem.alloc(PageSize::Size4K)?;
        Ok(Vm {
            guest_frames: guest_bytes >> crate::addr::PAGE_SHIFT,
            eptp,
            mode: PagingMode::x86_64_validated(levels),
            backing,
            exits: ExitCounters::default(),
            ept_table_pages: 1,
            backed_frames: [0; 3],
            remaps: RemapCounters::default(),
            memo: P2mMemo::default(),
            populated_at_build: false,
        })
    }

    /// The EPT root (what the EPTP points at).
    pub fn eptp(&self) -> Hpa {
        self.eptp.addr()
    }

    /// Guest-physical memory in 4 KiB frames.
    pub fn guest_frames(&self) -> u64 {
        self.guest_frames
    }

    /// VM exits so far, by reason.
    pub fn exits(&self) -> &ExitCounters {
        &self.exits
    }

    /// EPT table pages allocated so far, the root included (none is freed).
    pub fn ept_table_pages(&self) -> u64 {
        self.ept_table_pages
    }

    /// What host remapping did so far.
    pub fn remap_counters(&self) -> &RemapCounters {
        &self.remaps
    }

    /// [`Self::remap_counters`], for the remapping code to count in.
    pub fn remap_counters_mut(&mut self) -> &mut RemapCounters {
        &mut self.remaps
    }

    /// Host memory backing the guest, in 4 KiB frames, by backing page size (4K, 2M, 1G).
    pub fn backed_frames(&self) -> [u64; 3] {
        self.backed_frames
    }

    /// Host memory backing the guest with pages of `size`, in 4 KiB frames (0 for a size
    /// the EPT cannot map).
    pub fn backed_frames_of(&self, size: PageSize) -> u64 {
        self.mode
            .leaf_level(size)
            .map_or(0, |level| self.backed_frames[level as usize - 1])
    }

    /// The host frame backing `gfn`, read from the EPT in software (no exit, no caches).
    pub fn translate(&self, mem: &HostMemory, gfn: Gfn) -> Option<Hfn> {
        self.lookup(mem, gfn).ok()
    }

    /// [`Self::translate`], or for an unbacked frame where the software walk stopped: the
    /// level and table of the missing entry (`None` if it stopped at a reserved entry).
    fn lookup(&self, mem: &HostMemory, gfn: Gfn) -> Result<Hfn, Option<(u8, Hfn)>> {
        if let Some(hfn) = self.memo.get(gfn.raw()) {
            return Ok(Hfn::new(hfn));
        }
        let read = |table: Hfn, index| Ok::<_, ()>(mem.read_u64(self.entry_addr(table, index)));
        let walk = self
            .mode
            .soft_walk::<Ept, _, _>(self.eptp, gfn.addr().raw(), read)
            .map_err(|()| None)?;
        let (at, size) = match walk {
            SoftWalk::Leaf { at, size, .. } => (at, size),
            SoftWalk::NotPresent(at) => return Err(Some((at.slot.level, at.slot.table))),
            _ => return Err(None),
        };
        let base = PagingMode::leaf_base::<Ept>(at.entry, size);
        let hfn = Hpa::new(base | gfn.addr().offset_in(size)).frame();
        self.memo.remember(gfn.raw(), hfn.raw());
        Ok(hfn)
    }

    /// The size of the host page backing `gfn`, if backed.
    pub fn backing_page(&self, mem: &HostMemory, gfn: Gfn) -> Option<PageSize> {
        self.ept_leaf(mem, gfn).map(|(_, size)| size)
    }

    /// The EPT leaf entry mapping `gfn` and the page size it maps, walked in software.
    fn ept_leaf(&self, mem: &HostMemory, gfn: Gfn) -> Option<(u64, PageSize)> {
        let read = |table: Hfn, index| Ok::<_, ()>(mem.read_u64(self.entry_addr(table, index)));
        let (at, size) = self
            .mode
            .soft_walk::<Ept, _, _>(self.eptp, gfn.addr().raw(), read)
            .ok()?
            .leaf()?;
        Some((at.entry, size))
    }

    /// Treat the guest's memory as populated when the domain was built, as Xen's toolstack
    /// does for a PV guest (tools/libs/guest/xg_dom_x86.c, `meminit_pv`, populates every
    /// pfn): a first touch then costs no exit. The model keeps backing frames when they are
    /// first needed (so the p2m holds only what the guest uses), without counting an exit.
    pub fn populate_at_build(&mut self) {
        self.populated_at_build = true;
    }

    /// The host frame backing `gfn`, backing it first if the guest never touched it: the
    /// guest's first access to the frame traps as an EPT violation (no exit when the memory
    /// was populated at build, [`Vm::populate_at_build`]).
    pub fn touch(&mut self, mem: &mut HostMemory, gfn: Gfn) -> Result<Hfn, HvError> {
        let stop = match self.lookup(mem, gfn) {
            Ok(hfn) => return Ok(hfn),
            Err(stop) => stop,
        };
        if self.populated_at_build {
            return self.back_unbacked_from(mem, gfn, stop);
        }
        if gfn.raw() >= self.guest_frames {
            return Err(HvError::OutsideGuest(gfn.addr()));
        }
        self.exits.record(ExitReason::EptViolation);
        self.back_unbacked_from(mem, gfn, stop)
    }

    /// Count an exit the hypervisor took for another reason than an EPT violation.
    pub fn record_exit(&mut self, reason: ExitReason) {
        self.exits.record(reason);
    }

    /// The host frame backing `gfn`, backing it first if needed, without counting an exit:
    /// for hypervisor work already inside an exit (shadow paging's faults).
    pub fn back(&mut self, mem: &mut HostMemory, gfn: Gfn) -> Result<Hfn, HvError> {
        if let Some(hfn) = self.translate(mem, gfn) {
            return Ok(hfn);
        }
        self.back_unbacked(mem, gfn)
    }

    /// [`Self::back`] of a frame known to be unbacked: returns its new host frame.
    fn back_unbacked(&mut self, mem: &mut HostMemory, gfn: Gfn) -> Result<Hfn, HvError> {
        self.back_unbacked_from(mem, gfn, None)
    }

    /// [`Self::back_unbacked`] after a software walk for `gfn` stopped at a missing entry
    /// of the level-`stop.0` EPT table `stop.1` (`None`: walk from the root), with the EPT
    /// unchanged since: the mapping's walk starts there when the backing page's leaf lies at
    /// or below it (the entries above were just read and reading has no effect).
    fn back_unbacked_from(
        &mut self,
        mem: &mut HostMemory,
        gfn: Gfn,
        stop: Option<(u8, Hfn)>,
    ) -> Result<Hfn, HvError> {
        let gpa = gfn.addr();
        if gfn.raw() >= self.guest_frames {
            return Err(HvError::OutsideGuest(gpa));
        }
        let size = self.backing_size_for(gpa);
        let hfn = mem.alloc(size)?;
        self.map_from(mem, gpa.align_down(size), hfn, size, stop)?;
        // The VM's memory is tagged to it (checked by the hardware under TPT).
        mem.tags_mut().assign(hfn.raw(), size.frames(), true);
        let level = self
            .mode
            .leaf_level(size)
            .expect("backing sizes are EPT leaf sizes");
        self.backed_frames[level as usize - 1] += size.frames();
        // The page at `gpa` aligned to `size` now maps to `hfn`: what a walk would find.
        let hfn = Hfn::new(hfn.raw() + (gfn.raw() & (size.frames() - 1)));
        debug_assert_eq!(self.translate(mem, gfn), Some(hfn));
        Ok(hfn)
    }

    /// Handle an EPT violation at `gpa`: count the exit and back the page holding it.
    /// An EPT violation on a frame that is already mapped (a permission fault) is not
    /// expected under this model's EPT, which maps all guest memory read/write/execute.
    pub fn handle_ept_violation(&mut self, mem: &mut HostMemory, gpa: Gpa) -> Result<(), HvError> {
        if gpa.frame().raw() >= self.guest_frames {
            return Err(HvError::OutsideGuest(gpa));
        }
        self.exits.record(ExitReason::EptViolation);
        self.back(mem, gpa.frame()).map(|_| ())
    }

    /// The largest page size, up to the configured one, that can back the region of `gpa`:
    /// it must lie inside guest memory and not be fragmented.
    fn backing_size_for(&self, gpa: Gpa) -> PageSize {
        let mut size = self.backing.host_pages;
        while size != PageSize::Size4K {
            let start = gpa.align_down(size).frame().raw();
            let fits = start + size.frames() <= self.guest_frames;
            if fits && !self.fragmented(start, size) {
                break;
            }
            size = if size == PageSize::Size1G {
                PageSize::Size2M
            } else {
                PageSize::Size4K
            };
        }
        size
    }

    fn fragmented(&self, region_start: u64, size: PageSize) -> bool {
        if self.backing.fragmentation <= 0.0 {
            return false;
        }
        let h = splitmix64(
            region_start ^ self.backing.seed.rotate_left(17) ^ (size.shift() as u64) << 56,
        );
        let unit = (h >> 11) as f64 / (1u64 << 53) as f64;
        unit < self.backing.fragmentation
    }

    /// Install (or replace) the EPT leaf mapping the page at `gpa` (aligned to `size`) to `hfn`.
    pub(crate) fn map(
        &mut self,
        mem: &mut HostMemory,
        gpa: Gpa,
        hfn: Hfn,
        size: PageSize,
    ) -> Result<(), HvError> {
        self.map_from(mem, gpa, hfn, size, None)
    }

    /// [`Self::map`], its walk starting at the level-`start.0` table `start.1` on the path to
    /// `gpa` when that lies at or above the leaf's level (`None`: at the root).
    fn map_from(
        &mut self,
        mem: &mut HostMemory,
        gpa: Gpa,
        hfn: Hfn,
        size: PageSize,
        start: Option<(u8, Hfn)>,
    ) -> Result<(), HvError> {
        let leaf_level = self
            .mode
            .leaf_level(size)
            .expect("backing sizes are EPT leaf sizes");
        let mut cursor = match start {
            Some((level, table)) if level >= leaf_level => {
                Cursor::at(&self.mode, table, level, gpa.raw())
            }
            _ => Cursor::new(&self.mode, self.eptp, gpa.raw()),
        };
        while cursor.level() > leaf_level {
            let at = self.entry_addr(cursor.table(), cursor.index());
            let entry = mem.read_u64(at);
            let next = if Ept::is_present(entry) {
                Hpa::new(Ept::frame_addr(entry)).frame()
            } else {
                let next = mem.alloc(PageSize::Size4K)?;
                self.ept_table_pages += 1;
                mem.write_u64(at, Ept::table(next.addr().raw()));
                next
            };
            cursor.descend(next);
        }
        let at = self.entry_addr(cursor.table(), cursor.index());
        if Ept::is_present(mem.read_u64(at)) {
            // A mapping is replaced (a remap): translations remembered from it are stale.
            self.memo.forget();
        }
        mem.write_u64(at, Ept::leaf(hfn.addr().raw(), size != PageSize::Size4K));
        Ok(())
    }
}

impl Vm {
    /// The host address of entry `index` of the EPT table in frame `table`.
    fn entry_addr(&self, table: Hfn, index: usize) -> Hpa {
        table.addr_at(self.mode.entry_offset(index))
    }
}

/// A 64-bit mixer (Steele et al., "Fast splittable pseudorandom number generators", 2014).
fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm(mem: &mut HostMemory, host_pages: PageSize, fragmentation: f64) -> Vm {
        Vm::new(
            mem,
            4 << 30,
            4,
            BackingConfig {
                host_pages,
                fragmentation,
                seed: 1,
            },
        )
        .unwrap()
    }

    #[test]
    fn first_touch_exits_once_and_backs_the_frame() {
        let mut mem = HostMemory::new(8 << 30);
        let mut vm = vm(&mut mem, PageSize::Size4K, 0.0);
        assert_eq!(vm.translate(&mem, Gfn::new(5)), None);
        let hfn = vm.touch(&mut mem, Gfn::new(5)).unwrap();
        assert_eq!(vm.touch(&mut mem, Gfn::new(5)).unwrap(), hfn);
        assert_eq!(vm.exits().get(ExitReason::EptViolation), 1);
        assert_eq!(vm.translate(&mem, Gfn::new(6)), None);
        // root + PDPT + PD + PT
        assert_eq!(vm.ept_table_pages(), 4);
    }

    #[test]
    fn large_backing_covers_its_region_with_one_exit() {
        let mut mem = HostMemory::new(8 << 30);
        let mut vm = vm(&mut mem, PageSize::Size2M, 0.0);
        let a = vm.touch(&mut mem, Gfn::new(512 + 3)).unwrap();
        let b = vm.translate(&mem, Gfn::new(512 + 500)).unwrap();
        assert_eq!(b.raw() - a.raw(), 497);
        assert_eq!(a.raw() % 512, 3);
        assert_eq!(vm.exits().total(), 1);
        assert_eq!(vm.backed_frames(), [0, 512, 0]);
        assert_eq!(vm.ept_table_pages(), 3);
    }

    #[test]
    fn full_fragmentation_falls_back_to_4k() {
        let mut mem = HostMemory::new(8 << 30);
        let mut vm = vm(&mut mem, PageSize::Size1G, 1.0);
        vm.touch(&mut mem, Gfn::new(1234)).unwrap();
        assert_eq!(vm.backed_frames(), [1, 0, 0]);
    }

    #[test]
    fn partial_fragmentation_is_deterministic_and_proportional() {
        let mut mem = HostMemory::new(16 << 30);
        let mut vm = vm(&mut mem, PageSize::Size2M, 0.25);
        for region in 0..512u64 {
            vm.touch(&mut mem, Gfn::new(region * 512)).unwrap();
        }
        let huge_regions = vm.backed_frames()[1] / 512;
        assert!(
            (330..=440).contains(&huge_regions),
            "{huge_regions} of 512 regions huge"
        );
    }

    #[test]
    fn memory_populated_at_build_is_backed_on_first_use_without_an_exit() {
        let mut mem = HostMemory::new(8 << 30);
        let mut vm = vm(&mut mem, PageSize::Size4K, 0.0);
        vm.populate_at_build();
        let hfn = vm.touch(&mut mem, Gfn::new(5)).unwrap();
        assert_eq!(vm.touch(&mut mem, Gfn::new(5)).unwrap(), hfn);
        assert_eq!(vm.translate(&mem, Gfn::new(5)), Some(hfn));
        assert_eq!(vm.exits().total(), 0);
        assert_eq!(vm.backed_frames(), [1, 0, 0]);
        assert!(matches!(
            vm.touch(&mut mem, Gfn::new(1 << 20)),
            Err(HvError::OutsideGuest(_))
        ));
    }

    #[test]
    fn outside_guest_memory_is_an_error() {
        let mut mem = HostMemory::new(8 << 30);
        let mut vm = vm(&mut mem, PageSize::Size4K, 0.0);
        assert!(matches!(
            vm.touch(&mut mem, Gfn::new(1 << 20)),
            Err(HvError::OutsideGuest(_))
        ));
    }
}
