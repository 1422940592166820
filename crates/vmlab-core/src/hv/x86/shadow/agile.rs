//! Agile paging's hypervisor half (Gandhi, Hill, Swift, ISCA 2016): the shadow MMU shadows
//! the guest's tables as KVM does, except for guest tables it has moved to **nested mode**,
//! where the shadow entry above holds the switch bit and the table's host address
//! (`crate::hw::x86::agile`), so the hardware walks the guest's own table from there down,
//! through the EPT, and the guest writes it without traps.
//!
//! The policy is the paper's, in its two moves:
//! - **Shadow to nested**: a guest table (below the root) whose writes keep trapping is moved
//!   to nested mode: its shadow pages, and the shadow pages only they pointed at, are zapped;
//!   the next shadow fault through its parent links a switch entry instead.
//! - **Nested to shadow**: every `revert_ticks` timer ticks the hypervisor scans the
//!   nested-mode tables' dirty state (the EPT dirty bit of each table page, read and
//!   cleared: one [`ShadowWork::SyncEntry`] each); a table not written since the last scan
//!   goes back to shadow mode: its switch entries are dropped and the next fault shadows it
//!   again.
//!
//! The root stays shadowed (a switch in the root pointer itself would be nested paging's
//! whole 2D walk). Faults below a switch entry are the guest's own and reach it without an
//! exit, as under nested paging ([`ShadowMmu::agile_switched_at`] tells the scheme which).

use super::{Ctx, ShadowMmu, SpId};
use crate::addr::{Gfn, Gva, Hpa};
use crate::hv::x86::shadow_work::ShadowWork;
use crate::hv::x86::vm::HvError;
use crate::hw::x86::agile::SWITCH;
use crate::hw::x86::paging::{Cursor, EntryKind, TableFrame};
use crate::hw::x86::pte::{EntryFormat, Perms, FRAME_MASK, X86};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// Agile paging's policy: when a table moves to nested mode and when it comes back. Both are
/// assumptions, settable in the profile (`[virt] agile_writes_to_nested`,
/// `agile_revert_s`): the paper's policy moves a table "written frequently" to nested mode
/// and back once it goes quiet, without numbers reachable here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AgileConfig {
    /// Trapped writes to one guest table, within one scan interval, that move it to nested
    /// mode (2 by default: the smallest count that tells a table being edited from one
    /// written once and left alone).
    pub writes_to_nested: u32,
    /// Timer ticks between the scans that move quiet nested-mode tables back to shadow mode
    /// (250 by default: one second at the guest's HZ of 250).
    pub revert_ticks: u32,
}

impl Default for AgileConfig {
    fn default() -> AgileConfig {
        AgileConfig {
            writes_to_nested: 2,
            revert_ticks: 250,
        }
    }
}

/// Counts of agile paging's moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AgileStats {
    /// Guest tables moved from shadow to nested mode.
    pub to_nested: u64,
    /// Guest tables moved back from nested to shadow mode.
    pub to_shadow: u64,
    /// Switch entries written into shadow tables (one per shadow fault that links one).
    pub switch_links: u64,
}

/// A guest table in nested mode.
#[derive(Default)]
struct NestedTable {
    /// Written since the last scan (the EPT dirty bit of its page).
    written: bool,
    /// The shadow entries holding a switch to it.
    switches: SmallVec<[Hpa; 2]>,
}

/// Agile paging's state in the shadow MMU.
pub(super) struct AgileMode {
    config: AgileConfig,
    nested: FxHashMap<u64, NestedTable>,
    /// Trapped writes per guest table in the current interval.
    trapped: FxHashMap<u64, u32>,
    ticks: u32,
    stats: AgileStats,
}

impl ShadowMmu {
    /// A shadow MMU with agile paging's nested mode under `config`'s policy (see the
    /// module's documentation).
    pub fn with_agile(mut self, config: AgileConfig) -> ShadowMmu {
        self.agile = Some(AgileMode {
            config,
            nested: FxHashMap::default(),
            trapped: FxHashMap::default(),
            ticks: 0,
            stats: AgileStats::default(),
        });
        self
    }

    /// Agile paging's counts, if it is on.
    pub fn agile_stats(&self) -> Option<&AgileStats> {
        self.agile.as_ref().map(|a| &a.stats)
    }

    /// Guest tables in nested mode now (zero without agile paging).
    pub fn nested_tables(&self) -> usize {
        self.agile.as_ref().map_or(0, |a| a.nested.len())
    }

    /// Whether the shadow path of `va` under the current root reaches a switch entry: a
    /// fault of `va` was then raised in the guest's own tables (or by the switch entry's
    /// permissions, which are the guest's), and is the guest's.
    pub fn agile_switched_at(&self, ctx: &Ctx, va: Gva) -> bool {
        if self.agile.is_none() {
            return false;
        }
        let Some(root) = self.current.and_then(|(pgd, _)| self.root_id(pgd)) else {
            return false;
        };
        let mut walk = Cursor::new(&self.mode, self.sp(root).hfn, va.raw());
        loop {
            let spte = ctx
                .mem
                .read_u64(self.spte_addr_in(walk.table(), walk.index()));
            if X86::is_present(spte) && spte & SWITCH != 0 {
                return true;
            }
            if walk.level() == 1 || walk.step::<X86>(spte) != EntryKind::Table {
                return false;
            }
        }
    }

    /// A timer tick reached the hypervisor: every `revert_ticks` ([`AgileConfig`]), scan the nested-mode
    /// tables and move those not written since the last scan back to shadow mode.
    pub fn agile_tick(&mut self, ctx: &mut Ctx) {
        let Some(agile) = &mut self.agile else {
            return;
        };
        agile.ticks += 1;
        if agile.ticks % agile.config.revert_ticks.max(1) != 0 {
            return;
        }
        agile.trapped.clear();
        let scanned = agile.nested.len() as u64;
        let quiet: Vec<u64> = agile
            .nested
            .iter_mut()
            .filter_map(|(&gfn, table)| (!std::mem::take(&mut table.written)).then_some(gfn))
            .collect();
        self.work.add(ShadowWork::SyncEntry, scanned);
        let mut changed = false;
        for gfn in quiet {
            changed |= self.drop_switches(ctx, Gfn::new(gfn));
            if let Some(agile) = &mut self.agile {
                agile.stats.to_shadow += 1;
            }
        }
        if changed {
            self.remote_flush(ctx);
        }
    }

    /// A guest write to `table` that did not trap: a nested-mode table is now dirty.
    pub(super) fn agile_untrapped_write(&mut self, table: Gfn) {
        if let Some(t) = self
            .agile
            .as_mut()
            .and_then(|a| a.nested.get_mut(&table.raw()))
        {
            t.written = true;
        }
    }

    /// A trapped write to the shadowed guest table `table` (shadow pages `ids`): counts it,
    /// and moves the table to nested mode when it keeps trapping. Returns whether it moved.
    pub(super) fn agile_trapped_write(&mut self, ctx: &mut Ctx, table: Gfn, ids: &[SpId]) -> bool {
        let top = self.mode.levels();
        let Some(agile) = &mut self.agile else {
            return false;
        };
        if ids.iter().any(|&id| {
            self.pages[id as usize]
                .as_ref()
                .is_some_and(|p| p.role.level == top)
        }) {
            return false; // the root stays shadowed
        }
        let count = agile.trapped.entry(table.raw()).or_default();
        *count += 1;
        if *count < agile.config.writes_to_nested {
            return false;
        }
        agile.trapped.remove(&table.raw());
        agile.nested.insert(
            table.raw(),
            NestedTable {
                written: true,
                switches: SmallVec::new(),
            },
        );
        agile.stats.to_nested += 1;
        for &id in ids {
            self.zap_subtree(ctx, id);
        }
        self.remote_flush(ctx);
        true
    }

    /// The guest rewrote `gfn` whole (a page reused): it is no nested-mode table any more.
    pub(super) fn agile_forget(&mut self, ctx: &mut Ctx, gfn: Gfn) {
        if self.drop_switches(ctx, gfn) {
            self.remote_flush(ctx);
        }
    }

    /// In a shadow fault's walk, entry `index` of shadow page `sp` leads to the guest table
    /// `child`, the guest's entries above allowing `perms`: if `child` is in nested mode,
    /// write the switch entry there and return true (the hardware walks on in the guest's
    /// tables).
    pub(super) fn agile_link_switch(
        &mut self,
        ctx: &mut Ctx,
        sp: SpId,
        index: usize,
        child: Gfn,
        perms: Perms,
    ) -> Result<bool, HvError> {
        if !self
            .agile
            .as_ref()
            .is_some_and(|a| a.nested.contains_key(&child.raw()))
        {
            return Ok(false);
        }
        let hfn = ctx.vm.back(ctx.mem, child)?;
        // The switch entry carries what the guest's entries above allow: the shadow entries
        // above it allow everything.
        let mut entry = (hfn.addr().raw() & FRAME_MASK) | X86::PRESENT | X86::ACCESSED_BIT | SWITCH;
        if perms.write {
            entry |= X86::WRITE;
        }
        if perms.user {
            entry |= X86::USER;
        }
        if !perms.exec {
            entry |= X86::NO_EXEC;
        }
        let at = self.spte_addr(sp, index);
        let old = ctx.mem.read_u64(at);
        if old == entry {
            return Ok(true);
        }
        if X86::is_present(old) {
            self.clear_spte(ctx, at);
            self.remote_flush(ctx);
        }
        ctx.mem.write_u64(at, entry);
        let agile = self.agile.as_mut().expect("checked above");
        let table = agile.nested.get_mut(&child.raw()).expect("checked above");
        if !table.switches.contains(&at) {
            table.switches.push(at);
        }
        agile.stats.switch_links += 1;
        Ok(true)
    }

    /// Move `gfn` out of nested mode: clear the switch entries that still name it. Returns
    /// whether a present entry changed.
    fn drop_switches(&mut self, ctx: &mut Ctx, gfn: Gfn) -> bool {
        let Some(table) = self
            .agile
            .as_mut()
            .and_then(|a| a.nested.remove(&gfn.raw()))
        else {
            return false;
        };
        let Some(hfn) = ctx.vm.translate(ctx.mem, gfn) else {
            return false;
        };
        let mut changed = false;
        for at in table.switches {
            let spte = ctx.mem.read_u64(at);
            let still = X86::is_present(spte)
                && spte & SWITCH != 0
                && X86::frame_addr(spte) == hfn.addr().raw();
            if still {
                self.work.add(ShadowWork::SpteDrop, 1);
                ctx.mem.write_u64(at, 0);
                changed = true;
            }
        }
        changed
    }

    /// Zap `id` and the shadow pages below it that nothing else points at (a table moved to
    /// nested mode takes its subtree with it: those guest tables are walked nested now).
    fn zap_subtree(&mut self, ctx: &mut Ctx, id: SpId) {
        let Some(page) = self.pages[id as usize].as_ref() else {
            return;
        };
        let mut children: SmallVec<[SpId; 8]> = SmallVec::new();
        if page.role.level > 1 {
            for index in 0..self.mode.entries_per_table() {
                let spte = ctx
                    .mem
                    .read_u64(page.hfn.addr_at(self.mode.entry_offset(index)));
                if X86::is_present(spte) && !X86::is_large(spte) && spte & SWITCH == 0 {
                    let frame = crate::addr::Hfn::from_table_addr(X86::frame_addr(spte));
                    if let Some(&child) = self.by_hfn.get(&frame.raw()) {
                        children.push(child);
                    }
                }
            }
        }
        self.zap(ctx, id);
        let roots: SmallVec<[SpId; 4]> = self.roots.iter().map(|&(_, r, _)| r).collect();
        for child in children {
            let orphan = self.pages[child as usize]
                .as_ref()
                .is_some_and(|p| p.parents.is_empty());
            if orphan && !roots.contains(&child) {
                self.zap_subtree(ctx, child);
            }
        }
    }

    /// The host address of entry `index` of the shadow table in host frame `hfn`.
    fn spte_addr_in(&self, hfn: crate::addr::Hfn, index: usize) -> Hpa {
        hfn.addr_at(self.mode.entry_offset(index))
    }
}
