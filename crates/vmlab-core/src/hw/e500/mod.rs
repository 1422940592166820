//! The PowerPC e500v2 MMU (e500 Core Family Reference Manual, chapter 12; EREF): a
//! software-managed TLB with two arrays the operating system fills itself with `tlbwe`.
//!
//! - [`tlb`]: the entry format: page sizes (powers of four, 4 KiB to 4 GiB, naturally
//!   aligned), permissions (UX/SX/UW/SW/UR/SR), TID/TS matching, IPROT, and the MAS registers
//!   `tlbwe`/`tlbre`/`tlbsx` exchange entries through.
//! - [`mmu`]: the arrays: TLB0 (512 entries, 4-way set-associative, 4 KiB pages), TLB1 (16
//!   entries, fully associative, variable sizes), translation and the TLB instructions.

pub mod mmu;
pub mod tlb;

pub use mmu::{Fault, Mmu, MmuError, Tlb0, Tlb1, TlbSlot};
pub use tlb::{Access, Mas, PageSize, Perms, TlbEntry, TlbSel};
