//! Typed addresses: guest-virtual, guest-physical and host-physical addresses and the
//! frame numbers of the two physical spaces.
//!
//! Each space is its own type with a private field, so that an address of one space can
//! never be used as an address of another by accident: converting between spaces is a
//! translation and lives in the walker, the p2m or the kernel model. A native machine has
//! no guest: its kernel's "guest-physical" space is host-physical memory, and the one place
//! that says so is [`Gpa::identity_host`] / [`Gfn::identity_host`].

use std::fmt;

/// Bits of a 4 KiB page offset.
pub const PAGE_SHIFT: u32 = 12;
/// Bytes in a 4 KiB page.
pub const PAGE_SIZE: u64 = 1 << PAGE_SHIFT;

/// The leaf sizes of x86-64 paging (and of EPT).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum PageSize {
    #[serde(rename = "4k")]
    Size4K,
    #[serde(rename = "2m")]
    Size2M,
    #[serde(rename = "1g")]
    Size1G,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    /// log2 of the size in bytes.
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }

    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// The page-table level whose entry maps a page of this size (1 = PTE, 2 = PDE, 3 = PDPTE).
    pub const fn leaf_level(self) -> u8 {
        match self {
            PageSize::Size4K => 1,
            PageSize::Size2M => 2,
            PageSize::Size1G => 3,
        }
    }

    /// The page size mapped by a leaf at `level`, if a leaf may sit there.
    pub const fn at_level(level: u8) -> Option<PageSize> {
        match level {
            1 => Some(PageSize::Size4K),
            2 => Some(PageSize::Size2M),
            3 => Some(PageSize::Size1G),
            _ => None,
        }
    }

    /// Number of 4 KiB frames in a page of this size.
    pub const fn frames(self) -> u64 {
        self.bytes() >> PAGE_SHIFT
    }

    /// Dense index (4K = 0, 2M = 1, 1G = 2) for per-size arrays.
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            PageSize::Size4K => "4k",
            PageSize::Size2M => "2m",
            PageSize::Size1G => "1g",
        }
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

macro_rules! address_type {
    ($(#[$doc:meta])* $name:ident, $frame:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(u64);

        impl $name {
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }
            pub const fn raw(self) -> u64 {
                self.0
            }
            /// The frame (4 KiB page) holding this address.
            pub const fn frame(self) -> $frame {
                $frame(self.0 >> PAGE_SHIFT)
            }
            /// Offset of this address inside a page of `size`.
            pub const fn offset_in(self, size: PageSize) -> u64 {
                self.0 & (size.bytes() - 1)
            }
            /// Start of the page of `size` holding this address.
            pub const fn align_down(self, size: PageSize) -> Self {
                Self(self.0 & !(size.bytes() - 1))
            }
            pub const fn is_aligned(self, size: PageSize) -> bool {
                self.offset_in(size) == 0
            }
            pub fn checked_add(self, bytes: u64) -> Option<Self> {
                self.0.checked_add(bytes).map(Self)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "({:#x})"), self.0)
            }
        }
    };
}

macro_rules! frame_type {
    ($(#[$doc:meta])* $name:ident, $addr:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(u64);

        impl $name {
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }
            pub const fn raw(self) -> u64 {
                self.0
            }
            /// The address of the first byte of this frame.
            pub const fn addr(self) -> $addr {
                $addr(self.0 << PAGE_SHIFT)
            }
            /// The address `offset` bytes into this frame (or into the page starting here).
            pub const fn addr_at(self, offset: u64) -> $addr {
                $addr((self.0 << PAGE_SHIFT) + offset)
            }
            pub fn checked_add(self, frames: u64) -> Option<Self> {
                self.0.checked_add(frames).map(Self)
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "({:#x})"), self.0)
            }
        }
    };
}

address_type!(
    /// A guest-virtual address (a process's virtual address; on a native machine, the
    /// process's virtual address as well).
    Gva, Gvfn, "Gva"
);
address_type!(
    /// A guest-physical address: what the kernel model calls physical memory.
    Gpa, Gfn, "Gpa"
);
address_type!(
    /// A host-physical address: real memory, what caches and DRAM see.
    Hpa, Hfn, "Hpa"
);
frame_type!(
    /// A guest-virtual page number (in 4 KiB units).
    Gvfn, Gva, "Gvfn"
);
frame_type!(
    /// A guest-physical frame number.
    Gfn, Gpa, "Gfn"
);
frame_type!(
    /// A host-physical frame number.
    Hfn, Hpa, "Hfn"
);

impl Gpa {
    /// On a native machine the kernel's physical addresses are host-physical addresses.
    pub const fn identity_host(self) -> Hpa {
        Hpa(self.0)
    }
}

impl Gfn {
    /// On a native machine the kernel's physical frames are host frames.
    pub const fn identity_host(self) -> Hfn {
        Hfn(self.0)
    }
}

impl Hfn {
    /// The inverse of [`Gfn::identity_host`], for the native machine only.
    pub const fn identity_guest(self) -> Gfn {
        Gfn(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_and_offsets() {
        let a = Gva::new(0x7fff_1234_5678);
        assert_eq!(a.frame(), Gvfn::new(0x7_fff1_2345));
        assert_eq!(a.offset_in(PageSize::Size4K), 0x678);
        assert_eq!(a.offset_in(PageSize::Size2M), 0x14_5678);
        assert_eq!(a.align_down(PageSize::Size1G), Gva::new(0x7fff_0000_0000));
        assert_eq!(Hfn::new(3).addr_at(8), Hpa::new(0x3008));
    }

    #[test]
    fn page_size_levels_round_trip() {
        for size in PageSize::ALL {
            assert_eq!(PageSize::at_level(size.leaf_level()), Some(size));
        }
        assert_eq!(PageSize::Size2M.frames(), 512);
        assert_eq!(PageSize::at_level(4), None);
    }
}
