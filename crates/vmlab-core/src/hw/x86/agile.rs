//! Agile paging's walk (Gandhi, Hill, Swift, ISCA 2016): a walk that starts in the
//! hypervisor's shadow tables (host-physical, 1D) and, below a shadow entry with the switch
//! bit, continues in the guest's own tables in nested mode.
//!
//! The switch entry holds the host-physical address of the guest's table (the hypervisor
//! knows it when it writes the entry), so that table is read directly; its entries, and every
//! entry below, hold guest-physical addresses, each translated through the nested TLB or an
//! EPT walk, as is the final guest-physical address. A switch below level `s+1` (the guest's
//! table at level `s` read through the switch) costs `(levels - s)` shadow references, one
//! reference to the first guest table, `s - 1` guest references each after a
//! guest-physical translation, and the translation of the data's guest-physical address: at 4
//! levels with no walk or nested-TLB hits, `4 + 4s` references (8 for a switch to the leaf
//! table, 20 for one below the root; 4 without a switch, 24 fully nested).
//!
//! The walker is the same loop as for every other walk: the table space is this
//! [`TableMemory`]'s state, moved by [`TableMemory::descend`] and kept in the walk caches'
//! values, so a walk that starts from a cached prefix starts in the right space.

use super::mmu::Nested;
use super::walker::{Fault, TableMemory};
use crate::addr::Hpa;

/// The switch bit of a shadow entry (one of the bits x86 leaves to software, 52..=58): the
/// table the entry points at is the guest's, walked in nested mode from there down.
pub const SWITCH: u64 = 1 << 52;

/// Where the walk's next table read goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Space {
    /// The shadow tables: host-physical addresses.
    Shadow = 0,
    /// The guest's table a switch entry names: read at its host-physical address, but its
    /// entries hold guest-physical addresses.
    SwitchedTable = 1,
    /// The guest's tables below: guest-physical addresses, each translated first.
    Guest = 2,
}

/// Bit position of the space in walk-cache values (above the packed permissions).
const SPACE_SHIFT: u32 = 4;

impl Space {
    fn from_cached(value: u64) -> Space {
        match (value >> SPACE_SHIFT) & 3 {
            0 => Space::Shadow,
            1 => Space::SwitchedTable,
            _ => Space::Guest,
        }
    }
}

/// The tables of an agile walk: shadow tables in host memory until a switch entry, then the
/// guest's tables through the EPT.
pub(crate) struct AgileTables<'a> {
    pub(crate) nested: Nested<'a>,
    pub(crate) space: Space,
}

impl AgileTables<'_> {
    /// Whether the walk's leaf came from a guest table (its output is guest-physical).
    pub(crate) fn switched(&self) -> bool {
        self.space != Space::Shadow
    }
}

impl TableMemory for AgileTables<'_> {
    #[inline]
    fn locate(&mut self, entry_addr: u64) -> Result<Hpa, Fault> {
        match self.space {
            Space::Shadow | Space::SwitchedTable => Ok(Hpa::new(entry_addr)),
            Space::Guest => self.nested.locate(entry_addr),
        }
    }

    #[inline]
    fn read(&mut self, at: Hpa) -> u64 {
        self.nested.read(at)
    }

    fn set_bits(&mut self, at: Hpa, bits: u64) {
        self.nested.set_bits(at, bits)
    }

    #[inline]
    fn descend(&mut self, entry: u64) {
        self.space = match self.space {
            Space::Shadow if entry & SWITCH != 0 => Space::SwitchedTable,
            Space::Shadow => Space::Shadow,
            Space::SwitchedTable | Space::Guest => Space::Guest,
        };
    }

    #[inline]
    fn space_bits(&self) -> u64 {
        (self.space as u64) << SPACE_SHIFT
    }

    #[inline]
    fn enter_space(&mut self, cached: u64) {
        self.space = Space::from_cached(cached);
    }
}
