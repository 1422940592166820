//! The shadow MMU, the way KVM builds it (arch/x86/kvm/mmu, "shadow paging").
//!
//! The hardware walks shadow tables (GVA -> HPA, 1D) that the hypervisor composes from the
//! guest's tables (GVA -> GPA) and the p2m (GPA -> HPA):
//! - A **shadow page** caches one guest table page for a role (its level; "direct" pages map
//!   a guest 2 MiB page with 4 KiB entries when the host backs it with small pages). They are
//!   found by (guest frame, role) in a hash, and by host frame from the entries pointing at
//!   them. Each knows the shadow entries (its parents) that point at it.
//! - Every guest frame with a (non-direct) shadow page is **write-protected**: a guest write
//!   to it traps, is emulated, and the affected shadow entry is updated in place (a leaf) or
//!   dropped (an upper level, refilled by the next fault). Three emulated writes in a row to
//!   one page without a fault using it (**write flooding**) unshadow the page.
//! - **Unsync**: with the option on, a write to a guest leaf table (level 1) unsyncs its
//!   shadow pages instead of emulating every write; they are resynchronized at INVLPG (one
//!   entry) or at a TLB flush or CR3 load (every unsync page).
//! - **CR3 loads** trap; the current root and 3 previous ones are cached by guest root frame
//!   (KVM_MMU_NUM_PREV_ROOTS, mmu.c fast_pgd_switch). A load that keeps the TLB (PCID's
//!   no-flush bit) only switches roots; one that flushes makes KVM resynchronise every unsync
//!   page (x86.c kvm_set_cr3 -> kvm_invalidate_pcid -> KVM_REQ_MMU_SYNC).
//! - **INVLPG** syncs the address in every cached root (mmu.c kvm_mmu_invlpg, all roots);
//!   **INVPCID** of one address in the roots of that PCID (kvm_mmu_invpcid_gva).
//! - **The kernel half**: every guest top-level table links the kernel's shared tables; the
//!   shadow pages below are shared by all roots (same guest frames), but each new shadow root
//!   starts empty, so the first kernel use of each top-level entry through it is a shadow
//!   fault that links it ([`ShadowMmu::kernel_access`]).
//! - **Shadow page faults**: the hypervisor walks the guest tables in software (setting the
//!   guest's A and D bits as hardware would), and either installs shadow entries, creating
//!   missing shadow levels, or finds that the guest's own tables deny the access, which is the
//!   guest's fault. Dirty bits are emulated: a leaf is mapped writable only once the guest's D
//!   bit is set, so the first write to a clean page faults.
//! - A **budget** of shadow pages (2% of guest pages, at least 64); past it the least recently
//!   used non-root page is zapped.
//! - A **reverse map** from guest data frames to the shadow entries mapping them, so a frame
//!   that becomes a page table is write-protected everywhere it is mapped.
//!
//! - **Work per unit**: beyond the exits (counted by the VM), the hypervisor's own work is
//!   counted per unit ([`ShadowWork`]: entries a resync looks at and reads, entries and pages
//!   a zap visits and drops, frames protected and unprotected, remote flushes, pages
//!   allocated, roots built), each priced by the profile's `[shadow]` table.
//!
//! Simplifications: any change to a present shadow entry flushes the whole TLB (KVM flushes
//! the VM's translations remotely); a guest page written wholesale (zeroed or copied) while
//! shadowed is unshadowed at once, as flooding would do after three writes.

pub mod agile;

use crate::addr::{Gfn, Gpa, Gva, Hfn, Hpa, PageSize, PAGE_SHIFT};
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow_work::{ShadowWork, ShadowWorkCounters};
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, Root};
use crate::hw::x86::paging::{Cursor, EntryKind, PagingMode, TableFrame};
use crate::hw::x86::pte::{EntryFormat, Perms, X86};
use crate::hw::x86::walker::FaultKind;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Options of the shadow MMU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShadowConfig {
    /// Let guest leaf tables go unsync instead of trapping every write.
    pub unsync: bool,
    /// Guest not-present faults reach the guest without an exit (as VMX allows).
    pub bypass_not_present: bool,
    /// Most shadow pages at once.
    pub budget_pages: usize,
}

impl ShadowConfig {
    /// KVM's defaults for a guest of `guest_frames` 4 KiB frames.
    pub fn kvm_default(guest_frames: u64) -> ShadowConfig {
        ShadowConfig {
            unsync: true,
            // Current KVM with EPT off intercepts every #PF (vmx.c update_exception_bitmap);
            // the error-code filtering (bypass_guest_pf) went in Linux 3.1.
            bypass_not_present: false,
            budget_pages: ((guest_frames / 50) as usize).max(64),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Role {
    level: u8,
    /// Maps a guest large page with 4 KiB entries; nothing to write-protect.
    direct: bool,
}

type SpId = u32;

struct ShadowPage {
    gfn: Gfn,
    role: Role,
    hfn: Hfn,
    /// Shadow entries pointing at this page.
    parents: Vec<Hpa>,
    unsync: bool,
    write_flooding: u8,
    last_used: u64,
    /// The guest frame each leaf entry maps (KVM's `sp->gfns`), to keep the reverse map.
    leaf_gfns: Option<Box<[u64]>>,
}

/// Event counts of the shadow MMU (exits are counted by the VM).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ShadowStats {
    /// Shadow pages created (one 4 KiB host frame each).
    pub pages_created: u64,
    /// Shadow pages zapped, for any reason (flooding, budget, a guest page written wholesale).
    pub pages_zapped: u64,
    /// Trapped guest writes to a shadowed table that the hypervisor emulated.
    pub emulated_writes: u64,
    /// Trapped guest writes to a leaf table that unsynced its shadow pages instead of being
    /// emulated.
    pub unsyncs: u64,
    /// Unsync shadow pages resynchronized whole, at a TLB flush or a flushing CR3 load.
    pub syncs: u64,
    /// Shadow pages zapped for write flooding (three emulated writes in a row, no fault
    /// using the page in between).
    pub flood_unshadows: u64,
    /// Shadow pages zapped to stay within the budget (least recently used first).
    pub budget_zaps: u64,
    /// Kernel-half top-level entries linked into new roots (one shadow fault each).
    pub kernel_links: u64,
}

/// A guest fault found by the hypervisor's walk of the guest tables: the guest handles it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestFault {
    /// Not present or protection, as the hardware walker would have found it.
    pub kind: FaultKind,
}

/// What the shadow MMU works on during one hypervisor entry.
pub struct Ctx<'a> {
    /// Host memory: the shadow tables and the guest's (backed) tables live here.
    pub mem: &'a mut HostMemory,
    /// The VM: its exit counts and its guest-to-host backing.
    pub vm: &'a mut Vm,
    /// The vCPU's MMU: the shadow root it walks and the TLB that flushes flush.
    pub mmu: &'a mut Mmu,
}

/// KVM's shadow MMU for one guest: its shadow pages, cached roots, reverse map and counts.
pub struct ShadowMmu {
    config: ShadowConfig,
    /// The paging mode of the guest's tables and of the shadow tables.
    mode: PagingMode,
    pages: Vec<Option<ShadowPage>>,
    free_ids: Vec<SpId>,
    live: usize,
    by_key: FxHashMap<(u64, Role), SpId>,
    by_hfn: FxHashMap<u64, SpId>,
    /// Non-direct shadow pages of each guest frame: the frame is write-protected.
    by_gfn: FxHashMap<u64, SmallVec<[SpId; 2]>>,
    /// Guest data frame -> addresses of the leaf shadow entries mapping it. Nearly every
    /// frame has one or two (a COW-shared page), kept inline: a 4 GiB guest has a million
    /// entries, and a heap vector each made allocation a quarter of shadow paging's set-up.
    rmap: FxHashMap<u64, SmallVec<[u64; 2]>>,
    /// Cached roots by guest root frame, most recent first (current + 3 previous), with the
    /// PCID each was loaded with.
    roots: Vec<(u64, SpId, u16)>,
    /// The kernel-half top-level entries each root has linked (one bit per entry).
    kernel_links: FxHashMap<SpId, [u64; 8]>,
    /// The guest's current root frame and PCID.
    current: Option<(Gfn, u16)>,
    clock: u64,
    stats: ShadowStats,
    /// The hypervisor's work by unit, priced under the profile's `[shadow]`.
    work: ShadowWorkCounters,
    /// Agile paging: the guest tables walked in nested mode below a switch entry (`None`:
    /// plain shadow paging).
    agile: Option<agile::AgileMode>,
}

const ROOT_CACHE: usize = 4;
/// Emulated writes in a row that unshadow a page (KVM's detect_write_flooding).
const FLOODING_WRITES: u8 = 3;

impl ShadowMmu {
    /// A shadow MMU for guest tables of `levels` levels.
    ///
    /// # Panics
    /// If `levels` is neither 4 nor 5 (the machine profile admits no other).
    pub fn new(config: ShadowConfig, levels: u8) -> ShadowMmu {
        ShadowMmu {
            config,
            mode: PagingMode::x86_64_validated(levels),
            pages: Vec::new(),
            free_ids: Vec::new(),
            live: 0,
            by_key: FxHashMap::default(),
            by_hfn: FxHashMap::default(),
            by_gfn: FxHashMap::default(),
            rmap: FxHashMap::default(),
            roots: Vec::new(),
            kernel_links: FxHashMap::default(),
            current: None,
            clock: 0,
            stats: ShadowStats::default(),
            work: ShadowWorkCounters::default(),
            agile: None,
        }
    }

    /// Event counts so far.
    pub fn stats(&self) -> &ShadowStats {
        &self.stats
    }

    /// The hypervisor's work so far, by unit.
    pub fn work(&self) -> &ShadowWorkCounters {
        &self.work
    }

    /// KVM's kvm_flush_remote_tlbs after a change to present shadow entries: every vCPU's
    /// translations of the VM go (one vCPU here).
    fn remote_flush(&mut self, ctx: &mut Ctx) {
        self.work.add(ShadowWork::RemoteFlush, 1);
        ctx.mmu.flush_all();
    }

    /// Shadow pages alive now.
    pub fn pages(&self) -> usize {
        self.live
    }

    /// Whether guest writes to `gfn` trap (it has a synchronized shadow page).
    pub fn is_write_protected(&self, gfn: Gfn) -> bool {
        self.by_gfn
            .get(&gfn.raw())
            .is_some_and(|ids| ids.iter().any(|&id| !self.sp(id).unsync))
    }

    fn sp(&self, id: SpId) -> &ShadowPage {
        self.pages[id as usize].as_ref().expect("live shadow page")
    }

    fn sp_mut(&mut self, id: SpId) -> &mut ShadowPage {
        self.pages[id as usize].as_mut().expect("live shadow page")
    }

    /// The guest loads CR3: a trapped exit that switches to the root shadowing `pgd`. With
    /// `flush` (no PCID no-flush bit), KVM resynchronises every unsync page and flushes.
    pub fn load_cr3(
        &mut self,
        ctx: &mut Ctx,
        pgd: Gfn,
        pcid: u16,
        flush: bool,
    ) -> Result<(), HvError> {
        ctx.vm.record_exit(ExitReason::Cr3Load);
        self.current = Some((pgd, pcid));
        let root = match self.roots.iter().position(|&(g, _, _)| g == pgd.raw()) {
            Some(at) => self.roots.remove(at).1,
            None => {
                self.work.add(ShadowWork::RootBuild, 1);
                self.get_or_create(
                    ctx,
                    pgd,
                    Role {
                        level: self.mode.levels(),
                        direct: false,
                    },
                )?
            }
        };
        self.roots.insert(0, (pgd.raw(), root, pcid));
        self.roots.truncate(ROOT_CACHE);
        if flush {
            self.sync_all(ctx);
        }
        ctx.mmu
            .set_root(self.hardware_root(ctx, root), pcid as u64, flush);
        Ok(())
    }

    /// A guest TLB flush without a CR3 change: trapped like a CR3 load; syncs every unsync page.
    pub fn flush(&mut self, ctx: &mut Ctx) {
        ctx.vm.record_exit(ExitReason::Cr3Load);
        self.sync_all(ctx);
        ctx.mmu.flush_current();
    }

    /// A trapped INVLPG: sync the shadow entry for `va` in every cached root if its page is
    /// unsync (INVLPG also drops global translations, so KVM syncs all roots).
    pub fn invlpg(&mut self, ctx: &mut Ctx, va: Gva) {
        ctx.vm.record_exit(ExitReason::Invlpg);
        self.sync_addr(ctx, va, None);
        ctx.mmu.invlpg(va);
    }

    /// A trapped INVPCID of one address in `pcid` (Linux's flush of a user page under KPTI):
    /// sync the entry for `va` in the cached roots loaded with that PCID.
    pub fn invpcid_addr(&mut self, ctx: &mut Ctx, pcid: u16, va: Gva) {
        ctx.vm.record_exit(ExitReason::Invpcid);
        self.sync_addr(ctx, va, Some(pcid));
        ctx.mmu.invlpg_tag(va, pcid as u64);
    }

    /// Sync the unsync leaf entries mapping `va` under the cached roots (of `pcid`, if given).
    fn sync_addr(&mut self, ctx: &mut Ctx, va: Gva, pcid: Option<u16>) {
        let roots: SmallVec<[SpId; 4]> = self
            .roots
            .iter()
            .filter(|&&(_, _, p)| pcid.is_none_or(|want| want == p))
            .map(|&(_, id, _)| id)
            .collect();
        let mut done: SmallVec<[SpId; 4]> = SmallVec::new();
        for root in roots {
            if let Some((id, index)) = self.leaf_slot_from(ctx.mem, root, va) {
                if self.sp(id).unsync && !done.contains(&id) {
                    self.sync_entry(ctx, id, index);
                }
                done.push(id);
            }
        }
    }

    /// The guest kernel uses top-level entry `index` (its half of the address space) through
    /// the current root: the first use through a root is a shadow fault that links the entry
    /// to the kernel's shared shadow tables (KVM's FNAME(fetch) finds the lower shadow pages by
    /// guest frame, already built for other roots). Returns whether it faulted.
    pub fn kernel_access(&mut self, ctx: &mut Ctx, index: usize) -> bool {
        let Some((pgd, _)) = self.current else {
            return false;
        };
        let Some(root) = self.root_id(pgd) else {
            return false;
        };
        let links = self.kernel_links.entry(root).or_default();
        let (word, bit) = (index / 64 % 8, 1u64 << (index % 64));
        if links[word] & bit != 0 {
            return false;
        }
        links[word] |= bit;
        ctx.vm.record_exit(ExitReason::ShadowFault);
        self.stats.kernel_links += 1;
        true
    }

    /// The guest stored `entry` at `index` of its table page `table` (already in guest memory).
    pub fn guest_write(
        &mut self,
        ctx: &mut Ctx,
        table: Gfn,
        index: usize,
        entry: u64,
    ) -> Result<(), HvError> {
        let Some(ids) = self.by_gfn.get(&table.raw()).cloned() else {
            // Not shadowed (or, under agile paging, walked in nested mode): a plain store.
            self.agile_untrapped_write(table);
            return Ok(());
        };
        if ids.iter().all(|&id| self.sp(id).unsync) {
            return Ok(()); // unsync: the write went straight to the guest's table
        }
        ctx.vm.record_exit(ExitReason::WriteProtect);
        if self.agile_trapped_write(ctx, table, &ids) {
            // Moved to nested mode: the write needs no emulation in shadow tables.
            return self.ensure_root(ctx);
        }
        if self.config.unsync && ids.iter().all(|&id| self.sp(id).role.level == 1) {
            for &id in &ids {
                self.sp_mut(id).unsync = true;
            }
            self.stats.unsyncs += 1;
            return Ok(());
        }
        self.stats.emulated_writes += 1;
        let mut changed = false;
        for id in ids {
            let sp = self.sp_mut(id);
            sp.write_flooding += 1;
            if sp.write_flooding >= FLOODING_WRITES {
                self.zap(ctx, id);
                self.stats.flood_unshadows += 1;
                changed = true;
                continue;
            }
            changed |= self.update_entry(ctx, id, index, entry)?;
        }
        if changed {
            self.remote_flush(ctx);
        }
        self.ensure_root(ctx)
    }

    /// The guest wrote a whole page (zeroed or copied it): if it was a shadowed page table,
    /// the page is unshadowed (one trapped write, then flooding's verdict at once).
    pub fn guest_page_written(&mut self, ctx: &mut Ctx, gfn: Gfn) -> Result<(), HvError> {
        self.agile_forget(ctx, gfn);
        let Some(ids) = self.by_gfn.get(&gfn.raw()).cloned() else {
            return Ok(());
        };
        if ids.iter().any(|&id| !self.sp(id).unsync) {
            ctx.vm.record_exit(ExitReason::WriteProtect);
        }
        for id in ids {
            self.zap(ctx, id);
        }
        self.remote_flush(ctx);
        self.ensure_root(ctx)
    }

    /// A fault in the shadow tables at `va`. Walks the guest tables from the current root;
    /// installs what is missing, or returns the guest's own fault (the caller injects it).
    pub fn page_fault(
        &mut self,
        ctx: &mut Ctx,
        va: Gva,
        write: bool,
    ) -> Result<Result<(), GuestFault>, HvError> {
        let outcome = self.fix(ctx, va, write)?;
        let reason = match outcome {
            Ok(()) => Some(ExitReason::ShadowFault),
            Err(GuestFault {
                kind: FaultKind::NotPresent,
            }) if self.config.bypass_not_present => None,
            Err(_) => Some(ExitReason::PfReflect),
        };
        if let Some(reason) = reason {
            ctx.vm.record_exit(reason);
        }
        Ok(outcome)
    }

    fn fix(
        &mut self,
        ctx: &mut Ctx,
        va: Gva,
        write: bool,
    ) -> Result<Result<(), GuestFault>, HvError> {
        let Some((pgd, _)) = self.current else {
            return Ok(Err(GuestFault {
                kind: FaultKind::NotPresent,
            }));
        };
        let mut sp = self.root_id(pgd).expect("the current root is cached");
        let mode = self.mode;
        let mut walk = Cursor::new(&mode, pgd, va.raw());
        let mut perms = Perms::ALL;
        loop {
            let level = walk.level();
            self.clock += 1;
            let clock = self.clock;
            let s = self.sp_mut(sp);
            s.write_flooding = 0;
            s.last_used = clock;
            let index = walk.index();
            let guest_at = ctx
                .vm
                .back(ctx.mem, walk.table())?
                .addr_at(mode.entry_offset(index));
            let mut entry = ctx.mem.read_u64(guest_at);
            let kind = mode.classify::<X86>(entry, level);
            if kind == EntryKind::NotPresent {
                return Ok(Err(GuestFault {
                    kind: FaultKind::NotPresent,
                }));
            }
            perms = perms.and(X86::perms(entry));
            let size = match kind {
                EntryKind::Leaf(size) => size,
                // A large bit where no leaf may sit: the hardware walker's protection fault.
                EntryKind::Reserved | EntryKind::NotPresent => {
                    return Ok(Err(GuestFault {
                        kind: FaultKind::Protection,
                    }))
                }
                EntryKind::Table => {
                    if entry & X86::ACCESSED_BIT == 0 {
                        entry |= X86::ACCESSED_BIT;
                        ctx.mem.write_u64(guest_at, entry);
                    }
                    let child_gfn = Gfn::from_table_addr(X86::frame_addr(entry));
                    if self.agile_link_switch(ctx, sp, index, child_gfn, perms)? {
                        // The hardware walks the guest's tables from here down.
                        return Ok(Ok(()));
                    }
                    sp = self.link_child(
                        ctx,
                        sp,
                        index,
                        child_gfn,
                        Role {
                            level: level - 1,
                            direct: false,
                        },
                    )?;
                    walk.descend(child_gfn);
                    continue;
                }
            };
            if !perms.allows(write) {
                return Ok(Err(GuestFault {
                    kind: FaultKind::Protection,
                }));
            }
            let bits = if write {
                X86::ACCESSED_BIT | X86::DIRTY_BIT
            } else {
                X86::ACCESSED_BIT
            };
            if entry & bits != bits {
                entry |= bits;
                ctx.mem.write_u64(guest_at, entry);
            }
            let base_gfn = Gpa::new(PagingMode::leaf_base::<X86>(entry, size)).frame();
            if size != PageSize::Size4K && !self.backed_whole(ctx, base_gfn, size)? {
                // The host backs the guest's large page with smaller pages: map it with a
                // direct shadow page of 4 KiB entries.
                let direct = self.link_child(
                    ctx,
                    sp,
                    index,
                    base_gfn,
                    Role {
                        level: level - 1,
                        direct: true,
                    },
                )?;
                let sub = (va.offset_in(size) >> PAGE_SHIFT) as usize;
                let gfn = Gfn::new(base_gfn.raw() + sub as u64);
                self.install_leaf(ctx, direct, sub, gfn, perms, entry, PageSize::Size4K)?;
            } else {
                self.install_leaf(ctx, sp, index, base_gfn, perms, entry, size)?;
            }
            return Ok(Ok(()));
        }
    }

    /// Whether the host backs the guest page at `gfn` of `size` with one page of that size.
    fn backed_whole(&self, ctx: &mut Ctx, gfn: Gfn, size: PageSize) -> Result<bool, HvError> {
        ctx.vm.back(ctx.mem, gfn)?;
        Ok(ctx.vm.backing_page(ctx.mem, gfn).is_some_and(|s| s >= size))
    }

    /// Install the leaf shadow entry `index` of `sp` for guest frame `gfn`.
    #[allow(clippy::too_many_arguments)]
    fn install_leaf(
        &mut self,
        ctx: &mut Ctx,
        sp: SpId,
        index: usize,
        gfn: Gfn,
        perms: Perms,
        guest_entry: u64,
        size: PageSize,
    ) -> Result<(), HvError> {
        let hfn = ctx.vm.back(ctx.mem, gfn)?;
        // A frame that is also a shadowed page table stays read-only through this mapping;
        // a guest write to it must trap. Dirty bits are emulated: writable once the guest's
        // entry is dirty.
        let mut writable = perms.write && guest_entry & X86::DIRTY_BIT != 0;
        if writable && self.is_write_protected(gfn) {
            writable = false;
        }
        let spte = X86::leaf(
            hfn.addr().raw(),
            Perms {
                write: writable,
                ..perms
            },
            size != PageSize::Size4K,
        ) | X86::ACCESSED_BIT
            | X86::DIRTY_BIT;
        let at = self.spte_addr(sp, index);
        let old = ctx.mem.read_u64(at);
        if X86::is_present(old) {
            self.clear_spte(ctx, at);
            if old != spte {
                self.remote_flush(ctx);
            }
        }
        ctx.mem.write_u64(at, spte);
        let entries = self.mode.entries_per_table();
        self.sp_mut(sp)
            .leaf_gfns
            .get_or_insert_with(|| vec![0; entries].into_boxed_slice())[index] = gfn.raw();
        self.rmap.entry(gfn.raw()).or_default().push(at.raw());
        Ok(())
    }

    /// Point entry `index` of `parent` at the shadow page for (`gfn`, `role`), creating it.
    fn link_child(
        &mut self,
        ctx: &mut Ctx,
        parent: SpId,
        index: usize,
        gfn: Gfn,
        role: Role,
    ) -> Result<SpId, HvError> {
        let at = self.spte_addr(parent, index);
        let spte = ctx.mem.read_u64(at);
        if X86::is_present(spte) && !X86::is_large(spte) {
            if let Some(&child) = self
                .by_hfn
                .get(&Hfn::from_table_addr(X86::frame_addr(spte)).raw())
            {
                let c = self.sp(child);
                if c.gfn == gfn && c.role == role {
                    return Ok(child);
                }
            }
        }
        if X86::is_present(spte) {
            self.clear_spte(ctx, at);
            self.remote_flush(ctx);
        }
        let child = self.get_or_create(ctx, gfn, role)?;
        ctx.mem
            .write_u64(at, X86::table(self.sp(child).hfn.addr().raw()));
        self.sp_mut(child).parents.push(at);
        Ok(child)
    }

    fn get_or_create(&mut self, ctx: &mut Ctx, gfn: Gfn, role: Role) -> Result<SpId, HvError> {
        if let Some(&id) = self.by_key.get(&(gfn.raw(), role)) {
            return Ok(id);
        }
        while self.live >= self.config.budget_pages {
            if !self.zap_oldest(ctx) {
                break;
            }
        }
        let hfn = ctx.mem.alloc(PageSize::Size4K)?;
        self.clock += 1;
        let page = ShadowPage {
            gfn,
            role,
            hfn,
            parents: Vec::new(),
            unsync: false,
            write_flooding: 0,
            last_used: self.clock,
            leaf_gfns: None,
        };
        let id = match self.free_ids.pop() {
            Some(id) => {
                self.pages[id as usize] = Some(page);
                id
            }
            None => {
                self.pages.push(Some(page));
                (self.pages.len() - 1) as SpId
            }
        };
        self.live += 1;
        self.stats.pages_created += 1;
        self.work.add(ShadowWork::PageAlloc, 1);
        self.by_key.insert((gfn.raw(), role), id);
        self.by_hfn.insert(hfn.raw(), id);
        if !role.direct {
            let first = !self.by_gfn.contains_key(&gfn.raw());
            self.by_gfn.entry(gfn.raw()).or_default().push(id);
            if first {
                self.write_protect_mappings(ctx, gfn);
            }
        }
        Ok(id)
    }

    /// `gfn` became a shadowed page table: every writable mapping of it becomes read-only.
    fn write_protect_mappings(&mut self, ctx: &mut Ctx, gfn: Gfn) {
        let Some(sptes) = self.rmap.get(&gfn.raw()) else {
            return;
        };
        self.work.add(ShadowWork::RmapProtect, sptes.len() as u64);
        let mut changed = false;
        for &at in sptes {
            let spte = ctx.mem.read_u64(Hpa::new(at));
            if spte & X86::WRITE != 0 {
                ctx.mem.write_u64(Hpa::new(at), spte & !X86::WRITE);
                changed = true;
            }
        }
        if changed {
            self.remote_flush(ctx);
        }
    }

    /// Recompute entry `index` of `sp` after the guest wrote `entry` there (update-on-write
    /// for leaves, drop for upper levels). Returns whether a present entry changed.
    fn update_entry(
        &mut self,
        ctx: &mut Ctx,
        sp: SpId,
        index: usize,
        entry: u64,
    ) -> Result<bool, HvError> {
        let at = self.spte_addr(sp, index);
        let was_present = X86::is_present(ctx.mem.read_u64(at));
        let level = self.sp(sp).role.level;
        let leaf = X86::is_present(entry) && self.mode.is_leaf::<X86>(entry, level);
        if leaf && level == 1 && entry & X86::ACCESSED_BIT != 0 {
            // Prefetch the new leaf (KVM's mmu_pte_write_new_pte), as the guest will use it.
            let perms = X86::perms(entry);
            self.install_leaf(
                ctx,
                sp,
                index,
                Gpa::new(X86::frame_addr(entry)).frame(),
                perms,
                entry,
                PageSize::Size4K,
            )?;
            return Ok(was_present);
        }
        if was_present {
            self.clear_spte(ctx, at);
        }
        Ok(was_present)
    }

    /// Resynchronize every unsync shadow page with the guest's tables.
    fn sync_all(&mut self, ctx: &mut Ctx) {
        let unsync: Vec<SpId> = (0..self.pages.len() as SpId)
            .filter(|&id| self.pages[id as usize].as_ref().is_some_and(|p| p.unsync))
            .collect();
        let mut changed = false;
        for id in unsync {
            self.work
                .add(ShadowWork::SyncScan, self.mode.entries_per_table() as u64);
            for index in 0..self.mode.entries_per_table() {
                changed |= self.sync_entry_quiet(ctx, id, index);
            }
            self.sp_mut(id).unsync = false;
            self.stats.syncs += 1;
        }
        if changed {
            self.remote_flush(ctx);
        }
    }

    fn sync_entry(&mut self, ctx: &mut Ctx, id: SpId, index: usize) {
        if self.sync_entry_quiet(ctx, id, index) {
            self.remote_flush(ctx);
        }
    }

    /// Drop shadow entry `index` of `id` if the guest's entry no longer matches it (frame or
    /// permissions); returns whether it changed.
    fn sync_entry_quiet(&mut self, ctx: &mut Ctx, id: SpId, index: usize) -> bool {
        let at = self.spte_addr(id, index);
        let spte = ctx.mem.read_u64(at);
        if !X86::is_present(spte) {
            return false;
        }
        self.work.add(ShadowWork::SyncEntry, 1);
        let gfn = self.sp(id).gfn;
        let guest = match ctx.vm.translate(ctx.mem, gfn) {
            Some(hfn) => ctx.mem.read_u64(hfn.addr_at(self.mode.entry_offset(index))),
            None => 0,
        };
        let guest_frame = ctx
            .vm
            .translate(ctx.mem, Gpa::new(X86::frame_addr(guest)).frame());
        let same_frame = X86::is_present(guest)
            && guest_frame.map(|h| h.addr().raw()) == Some(X86::frame_addr(spte));
        let allowed = X86::perms(guest);
        let too_permissive =
            spte & X86::WRITE != 0 && !(allowed.write && guest & X86::DIRTY_BIT != 0);
        if same_frame && !too_permissive && allowed.user {
            return false;
        }
        self.clear_spte(ctx, at);
        true
    }

    /// Clear one shadow entry, unlinking a child page or a reverse-map entry.
    fn clear_spte(&mut self, ctx: &mut Ctx, at: Hpa) {
        let spte = ctx.mem.read_u64(at);
        ctx.mem.write_u64(at, 0);
        if !X86::is_present(spte) {
            return;
        }
        self.work.add(ShadowWork::SpteDrop, 1);
        let Some(&owner) = self.by_hfn.get(&at.frame().raw()) else {
            return;
        };
        let index = self.mode.entry_index(at.offset_in(PageSize::Size4K));
        if self.sp(owner).role.level > 1 && !X86::is_large(spte) {
            if let Some(&child) = self
                .by_hfn
                .get(&Hfn::from_table_addr(X86::frame_addr(spte)).raw())
            {
                self.sp_mut(child).parents.retain(|&p| p != at);
            }
        } else if let Some(gfns) = &self.sp(owner).leaf_gfns {
            let gfn = Gfn::new(gfns[index]);
            self.rmap_remove(gfn, at);
        }
    }

    fn rmap_remove(&mut self, gfn: Gfn, at: Hpa) {
        if let Some(v) = self.rmap.get_mut(&gfn.raw()) {
            v.retain(|a| *a != at.raw());
            if v.is_empty() {
                self.rmap.remove(&gfn.raw());
            }
        }
    }

    /// Remove a shadow page: clear the entries pointing at it, unlink its own entries, free it.
    fn zap(&mut self, ctx: &mut Ctx, id: SpId) {
        let parents = std::mem::take(&mut self.sp_mut(id).parents);
        self.work.add(ShadowWork::SpteDrop, parents.len() as u64);
        for at in parents {
            ctx.mem.write_u64(at, 0);
        }
        self.work.add(ShadowWork::PageZap, 1);
        self.work
            .add(ShadowWork::ZapScan, self.mode.entries_per_table() as u64);
        let (hfn, gfn, role) = {
            let sp = self.sp(id);
            (sp.hfn, sp.gfn, sp.role)
        };
        for index in 0..self.mode.entries_per_table() {
            self.clear_spte(ctx, hfn.addr_at(self.mode.entry_offset(index)));
        }
        ctx.mem.free(hfn, PageSize::Size4K);
        self.by_key.remove(&(gfn.raw(), role));
        self.by_hfn.remove(&hfn.raw());
        if let Some(ids) = self.by_gfn.get_mut(&gfn.raw()) {
            ids.retain(|i| *i != id);
            if ids.is_empty() {
                self.by_gfn.remove(&gfn.raw());
                self.work.add(ShadowWork::Unprotect, 1);
            }
        }
        self.roots.retain(|&(_, r, _)| r != id);
        self.kernel_links.remove(&id);
        self.pages[id as usize] = None;
        self.free_ids.push(id);
        self.live -= 1;
        self.stats.pages_zapped += 1;
    }

    /// Zap the least recently used page that is not a cached root; false if none.
    fn zap_oldest(&mut self, ctx: &mut Ctx) -> bool {
        let roots: Vec<SpId> = self.roots.iter().map(|&(_, r, _)| r).collect();
        let victim = self
            .pages
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.as_ref().map(|p| (i as SpId, p.last_used)))
            .filter(|(i, _)| !roots.contains(i))
            .min_by_key(|&(_, t)| t)
            .map(|(i, _)| i);
        match victim {
            Some(id) => {
                self.zap(ctx, id);
                self.stats.budget_zaps += 1;
                self.remote_flush(ctx);
                true
            }
            None => false,
        }
    }

    fn root_id(&self, pgd: Gfn) -> Option<SpId> {
        self.roots
            .iter()
            .find(|&&(g, _, _)| g == pgd.raw())
            .map(|&(_, id, _)| id)
    }

    /// After zaps: if the current root went, build a new one and load it (KVM reloads the
    /// root on the next entry).
    fn ensure_root(&mut self, ctx: &mut Ctx) -> Result<(), HvError> {
        let Some((pgd, pcid)) = self.current else {
            return Ok(());
        };
        if self.root_id(pgd).is_some() {
            return Ok(());
        }
        self.work.add(ShadowWork::RootBuild, 1);
        let root = self.get_or_create(
            ctx,
            pgd,
            Role {
                level: self.mode.levels(),
                direct: false,
            },
        )?;
        self.roots.insert(0, (pgd.raw(), root, pcid));
        self.roots.truncate(ROOT_CACHE);
        ctx.mmu
            .set_root(self.hardware_root(ctx, root), pcid as u64, true);
        Ok(())
    }

    /// What the hardware walks from the shadow root `root`: a 1D walk, or under agile paging
    /// one that may switch to the guest's tables through the EPT.
    fn hardware_root(&self, ctx: &Ctx, root: SpId) -> Root {
        let cr3 = self.sp(root).hfn.addr();
        match self.agile {
            None => Root::OneD { cr3 },
            Some(_) => Root::Agile {
                cr3,
                eptp: ctx.vm.eptp(),
            },
        }
    }

    /// The level-1 shadow page and index that map `va` under the root `root`, if any.
    fn leaf_slot_from(&self, mem: &HostMemory, root: SpId, va: Gva) -> Option<(SpId, usize)> {
        let mut id = root;
        let mut walk = Cursor::new(&self.mode, self.sp(id).hfn, va.raw());
        while walk.level() > 1 {
            let spte = mem.read_u64(self.spte_addr(id, walk.index()));
            if walk.step::<X86>(spte) != EntryKind::Table {
                return None;
            }
            id = *self.by_hfn.get(&walk.table().raw())?;
        }
        Some((id, walk.index()))
    }

    /// The host address of entry `index` of shadow page `id`.
    fn spte_addr(&self, id: SpId, index: usize) -> Hpa {
        self.sp(id).hfn.addr_at(self.mode.entry_offset(index))
    }
}
