//! The x86 hypervisor: a VM's guest-physical memory, backed through its EPT (which is the
//! p2m, `vm`, with a memo of its translations, `p2m_memo`), VM exits by reason (`exits`) and
//! KVM's shadow MMU (`shadow`).

pub mod exits;
pub mod p2m_memo;
pub mod shadow;
pub mod shadow_work;
pub mod vm;
