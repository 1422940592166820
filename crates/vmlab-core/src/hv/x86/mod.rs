//! The x86 hypervisor: a VM's guest-physical memory, backed through its EPT (which is the
//! p2m, `vm`, with a memo of its translations, `p2m_memo`), VM exits by reason (`exits`),
//! KVM's shadow MMU and agile paging's nested mode (`shadow`), host remapping of guest pages
//! (`remap`), direct paging's host-address copies of guest tables shared by PV and TPT
//! (`direct`), PV's hypercall batching (`pv`) and TPT's device and page moves (`tpt`).

pub mod direct;
pub mod exits;
pub mod p2m_memo;
pub mod pv;
pub mod remap;
pub mod shadow;
pub mod shadow_work;
pub mod tpt;
pub mod vm;
