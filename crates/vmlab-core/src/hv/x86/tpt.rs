//! Translation Pass-Through, the hypervisor's side (USENIX ATC 2023; docs/mechanisms.md, section 1): the TPT
//! device that exposes `gfn_to_hfn` to the guest (read through the p2m here, see
//! `hv::x86::direct`), the memory tags that mark every host frame of the VM (`hw::tags`, set when
//! the VM's memory is backed and when a copy table is allocated), and the host's moves of
//! guest pages, which retag both pages and notify the guest so it fixes its copies.

use crate::addr::Gfn;
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::vm::{HvError, Vm};
use crate::hw::frames::HostMemory;

/// The host moves the page backing `gfn` (migration, compaction): copy, p2m and tag
/// updates, then the guest's notification and its fix-up of the copy entries that named
/// the old page. The global TLB flush that must follow is the caller's (it owns the MMU).
pub fn move_guest_page(
    mem: &mut HostMemory,
    vm: &mut Vm,
    direct: &mut DirectTables,
    gfn: Gfn,
) -> Result<(), HvError> {
    let moved = vm.remap(mem, gfn, true)?;
    let counters = vm.remap_counters_mut();
    counters.global_flushes += 1;
    counters.guest_notifications += 1;
    counters.devirt_fixups += direct.fix_up(mem, &moved);
    Ok(())
}
