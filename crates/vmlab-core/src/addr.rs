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

/// The size of a page: a power of two from 4 KiB up, kept as its log2.
///
/// Which sizes a machine can map is the architecture's business (the x86-64 paging modes
/// declare 4 KiB, 2 MiB and 1 GiB, see `hw::x86::paging`); this type only guarantees a
/// power of two of at least 4 KiB. Values are made through [`PageSize::from_shift`],
/// [`PageSize::from_bytes`] or [`PageSize::from_name`], or taken from the named constants.
/// Sizes order by bytes; they (de)serialize as their [`PageSize::name`] (`"4k"`, `"2m"`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PageSize {
    /// log2 of the size in bytes, in `MIN_SHIFT..=MAX_SHIFT`.
    shift: u8,
}

/// Names of every page size, indexed by `shift - PageSize::MIN_SHIFT`.
const PAGE_SIZE_NAMES: [&str; (PageSize::MAX_SHIFT - PageSize::MIN_SHIFT + 1) as usize] = [
    "4k", "8k", "16k", "32k", "64k", "128k", "256k", "512k", //
    "1m", "2m", "4m", "8m", "16m", "32m", "64m", "128m", "256m", "512m", //
    "1g", "2g", "4g", "8g", "16g", "32g", "64g", "128g", "256g", "512g", //
    "1t", "2t", "4t", "8t", "16t", "32t", "64t", "128t", "256t", "512t", //
    "1p", "2p", "4p", "8p", "16p", "32p", "64p", "128p", "256p", "512p", //
    "1e", "2e", "4e", "8e",
];

impl PageSize {
    /// The smallest page size's shift: 4 KiB.
    pub const MIN_SHIFT: u32 = PAGE_SHIFT;
    /// The largest shift a size can have (8 EiB, the whole 64-bit space over two).
    pub const MAX_SHIFT: u32 = 63;

    /// 4 KiB.
    #[allow(non_upper_case_globals)]
    pub const Size4K: PageSize = PageSize { shift: 12 };
    /// 2 MiB.
    #[allow(non_upper_case_globals)]
    pub const Size2M: PageSize = PageSize { shift: 21 };
    /// 1 GiB.
    #[allow(non_upper_case_globals)]
    pub const Size1G: PageSize = PageSize { shift: 30 };

    /// The leaf sizes of x86-64 paging (and of EPT), smallest first. The architecture's own
    /// list is `hw::x86::paging::PagingMode::page_sizes`; this one stays for callers that
    /// have not picked an architecture.
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

    /// The page size of `1 << shift` bytes, if `shift` is from 12 (4 KiB) to 63.
    pub const fn from_shift(shift: u32) -> Option<PageSize> {
        if shift >= Self::MIN_SHIFT && shift <= Self::MAX_SHIFT {
            Some(PageSize { shift: shift as u8 })
        } else {
            None
        }
    }

    /// The page size of `bytes`, if it is a power of two of at least 4 KiB.
    pub const fn from_bytes(bytes: u64) -> Option<PageSize> {
        if bytes.is_power_of_two() {
            Self::from_shift(bytes.trailing_zeros())
        } else {
            None
        }
    }

    /// The page size named `name` as [`PageSize::name`] writes it (`4k`, `2m`, `1g`, ...),
    /// in either case.
    pub fn from_name(name: &str) -> Option<PageSize> {
        let at = PAGE_SIZE_NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))?;
        Self::from_shift(Self::MIN_SHIFT + at as u32)
    }

    /// The page mapped by a leaf whose level starts at address bit `shift`, for walkers
    /// whose paging mode was validated when it was made (every leaf level's shift is a page
    /// size). Not checked in release builds.
    #[inline(always)]
    pub(crate) const fn from_level_shift(shift: u32) -> PageSize {
        debug_assert!(shift >= Self::MIN_SHIFT && shift <= Self::MAX_SHIFT);
        PageSize { shift: shift as u8 }
    }

    /// log2 of the size in bytes.
    #[inline(always)]
    pub const fn shift(self) -> u32 {
        self.shift as u32
    }

    /// The size in bytes.
    #[inline(always)]
    pub const fn bytes(self) -> u64 {
        1 << self.shift()
    }

    /// Number of 4 KiB frames in a page of this size.
    #[inline(always)]
    pub const fn frames(self) -> u64 {
        self.bytes() >> PAGE_SHIFT
    }

    /// The page size mapped by an x86-64 leaf at `level` (1 = PTE, 2 = PDE, 3 = PDPTE).
    ///
    /// x86-64's rule, kept here for callers that have not moved to
    /// `hw::x86::paging::PagingMode::leaf_size`, which is where it lives now.
    pub const fn at_level(level: u8) -> Option<PageSize> {
        match level {
            1 => Some(PageSize::Size4K),
            2 => Some(PageSize::Size2M),
            3 => Some(PageSize::Size1G),
            _ => None,
        }
    }

    /// The short name: a number and a unit letter, `4k`, `2m`, `1g`, `512g`, `1t`, ...
    pub const fn name(self) -> &'static str {
        PAGE_SIZE_NAMES[(self.shift() - Self::MIN_SHIFT) as usize]
    }
}

impl fmt::Display for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Debug for PageSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PageSize({})", self.name())
    }
}

impl serde::Serialize for PageSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for PageSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        PageSize::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "invalid page size '{name}': a power of two from 4k up, e.g. 4k, 2m, 1g"
            ))
        })
    }
}

macro_rules! address_type {
    ($(#[$doc:meta])* $name:ident, $frame:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(u64);

        impl $name {
            /// Wraps a raw byte address; no translation or check happens here.
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }
            /// The address as a plain byte number, e.g. to form a page-table index.
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
            /// Whether this address starts a page of `size`.
            pub const fn is_aligned(self, size: PageSize) -> bool {
                self.offset_in(size) == 0
            }
            /// The address `bytes` further on, or `None` past the top of the 64-bit space.
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
            /// Wraps a raw frame number (address >> 12); no translation or check happens here.
            pub const fn new(raw: u64) -> Self {
                Self(raw)
            }
            /// The frame number as a plain integer (in 4 KiB frames).
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
            /// The frame `frames` 4 KiB frames further on, or `None` on overflow.
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
        for (level, size) in (1..).zip(PageSize::ALL) {
            assert_eq!(PageSize::at_level(level), Some(size));
        }
        assert_eq!(PageSize::Size2M.frames(), 512);
        assert_eq!(PageSize::at_level(4), None);
    }

    #[test]
    fn page_sizes_are_values() {
        assert_eq!(PageSize::from_shift(21), Some(PageSize::Size2M));
        assert_eq!(PageSize::from_bytes(64 << 10).unwrap().name(), "64k");
        assert_eq!(PageSize::from_name("1G"), Some(PageSize::Size1G));
        assert_eq!(PageSize::from_name("512g").unwrap().bytes(), 512 << 30);
        assert_eq!(PageSize::from_bytes(1 << 11), None);
        assert_eq!(PageSize::from_bytes(6 << 10), None);
        assert!(PageSize::Size4K < PageSize::Size2M && PageSize::Size2M < PageSize::Size1G);
        for shift in PageSize::MIN_SHIFT..=PageSize::MAX_SHIFT {
            let size = PageSize::from_shift(shift).unwrap();
            assert_eq!(PageSize::from_name(size.name()), Some(size));
            assert_eq!(size.shift(), shift);
        }
        // Named constants work in patterns.
        let name = match PageSize::Size2M {
            PageSize::Size4K => "small",
            PageSize::Size2M => "large",
            _ => "other",
        };
        assert_eq!(name, "large");
        assert_eq!(format!("{:?}", PageSize::Size1G), "PageSize(1g)");
    }

    #[test]
    fn page_sizes_serialize_by_name() {
        #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
        struct Pages {
            host: PageSize,
        }
        let text = toml::to_string(&Pages {
            host: PageSize::Size2M,
        })
        .unwrap();
        assert_eq!(text.trim(), r#"host = "2m""#);
        let back: Pages = toml::from_str(r#"host = "16k""#).unwrap();
        assert_eq!(back.host.bytes(), 16 << 10);
        let err = toml::from_str::<Pages>(r#"host = "3m""#).unwrap_err();
        assert!(err.to_string().contains("invalid page size '3m'"), "{err}");
    }
}
