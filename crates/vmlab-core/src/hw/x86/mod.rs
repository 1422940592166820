//! The x86-64 machine: page-table entry layouts (`pte`), paging modes as data and the
//! software-walk helpers (`paging`), the hardware walker for 1D and 2D (EPT) walks
//! (`walker`), agile paging's walk that switches from shadow to guest tables (`agile`), and
//! the MMU that puts TLBs and paging-structure caches in front of it (`mmu`).

pub mod agile;
pub mod deferred;
pub mod mmu;
pub mod paging;
pub mod pte;
pub mod walker;
