//! The kernel half of every address space: the kernel's own mappings, shared by all
//! processes. Linux links them into each new top-level table by copying the kernel half of
//! `swapper_pg_dir` (arch/x86/mm/pgtable.c, `pgd_ctor` -> `clone_pgd_range`), so every
//! process's table points at the same kernel tables below the top level.
//!
//! The model keeps only what matters for translation: which top-level entries the kernel
//! uses when it runs. Its own accesses are not simulated (their cost is in the profile's
//! kernel costs), but a scheme that builds the tables the hardware walks (shadow paging)
//! must link each entry into every new root before the kernel can use it through that root.
//!
//! The regions and their start addresses are Linux's x86-64 layout without KASLR
//! (Documentation/arch/x86/x86_64/mm.rst); KASLR moves the direct map, vmalloc and vmemmap
//! bases but each still takes its own top-level entries.

use crate::addr::Gva;
use crate::os::tables;

/// A part of the kernel half that the kernel touches on every entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelRegion {
    /// The direct map of all physical memory (`page_offset_base`): per-CPU data, page
    /// tables, page zeroing and copying.
    DirectMap,
    /// vmalloc space: task stacks with CONFIG_VMAP_STACK (default on x86-64).
    Vmalloc,
    /// The `struct page` array (`vmemmap_base`): page allocation, reference counts.
    Vmemmap,
    /// The CPU entry area: GDT, TSS, entry and exception stacks
    /// (arch/x86/include/asm/cpu_entry_area.h), what the CPU and the entry code use first.
    CpuEntryArea,
    /// Kernel text and data (`__START_KERNEL_map`), the entry code included.
    Text,
}

impl KernelRegion {
    /// Every region the kernel uses once it runs on its own tables.
    pub const ALL: [KernelRegion; 5] = [
        KernelRegion::DirectMap,
        KernelRegion::Vmalloc,
        KernelRegion::Vmemmap,
        KernelRegion::CpuEntryArea,
        KernelRegion::Text,
    ];

    /// What page-table isolation keeps in the user tables: the CPU entry area and the entry
    /// text, enough to enter the kernel and switch CR3 (arch/x86/mm/pti.c,
    /// `pti_clone_user_shared`, `pti_clone_entry_text`).
    pub const TRAMPOLINE: [KernelRegion; 2] = [KernelRegion::CpuEntryArea, KernelRegion::Text];

    /// The region's first address with `levels` paging levels.
    pub fn start(self, levels: u8) -> Gva {
        let five = levels == 5;
        Gva::new(match self {
            KernelRegion::DirectMap if five => 0xff11_0000_0000_0000,
            KernelRegion::DirectMap => 0xffff_8880_0000_0000,
            KernelRegion::Vmalloc if five => 0xffa0_0000_0000_0000,
            KernelRegion::Vmalloc => 0xffff_c900_0000_0000,
            KernelRegion::Vmemmap if five => 0xffd4_0000_0000_0000,
            KernelRegion::Vmemmap => 0xffff_ea00_0000_0000,
            KernelRegion::CpuEntryArea => 0xffff_fe00_0000_0000,
            KernelRegion::Text => 0xffff_ffff_8000_0000,
        })
    }

    /// The top-level entry holding the region (with 5 levels the CPU entry area and the
    /// text share the last one).
    pub fn top_index(self, levels: u8) -> usize {
        tables::index_of(self.start(levels), levels)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_sit_in_the_kernel_half_at_linux_indices() {
        let four: Vec<usize> = KernelRegion::ALL.iter().map(|r| r.top_index(4)).collect();
        assert_eq!(four, [273, 402, 468, 508, 511]);
        let five: Vec<usize> = KernelRegion::ALL.iter().map(|r| r.top_index(5)).collect();
        assert_eq!(five, [273, 416, 468, 511, 511]);
    }
}
