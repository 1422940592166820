//! The x86 hypervisor: a VM's guest-physical memory, backed through its EPT (which is the
//! p2m, `vm`), VM exits by reason (`exits`) and KVM's shadow MMU (`shadow`).

pub mod exits;
pub mod shadow;
pub mod shadow_work;
pub mod vm;
