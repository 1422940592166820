//! Helpers shared by the translation integration tests: building systems, and walking the
//! guest tables and the EPT in software, independently of the MMU under test.
//!
//! The walks here read `HostMemory` directly and never set A/D bits, so a test can inspect
//! the tables a system built without disturbing them.

#![allow(dead_code)] // each test binary uses its own subset

pub mod invariant;

use vmlab_core::addr::{Gfn, Gva, Hpa, PageSize};
use vmlab_core::cost::Profile;
use vmlab_core::hv::x86::shadow::ShadowConfig;
use vmlab_core::hv::BackingConfig;
use vmlab_core::hw::cache::{CacheConfig, MemoryConfig, Replacement};
use vmlab_core::hw::x86::mmu::TlbConfig;
use vmlab_core::hw::x86::pte::{EntryFormat, Ept, Perms, FRAME_MASK, X86};
use vmlab_core::scheme::{Paging, System, SystemConfig};

pub const GIB: u64 = 1 << 30;
pub const MIB: u64 = 1 << 20;

/// A 1 GiB-aligned user address valid under 4-level (48-bit) paging.
pub const REGION_4LEVEL: u64 = 0x40_0000_0000;
/// A 1 GiB-aligned address that only 5-level (57-bit) paging can map: its level-5 index is
/// non-zero, so a walker that ignored the fifth level would read the wrong entries.
pub const REGION_5LEVEL: u64 = 0x00ab_cd00_0000_0000;

/// What the kernel model gives anonymous writable memory: user, read/write, no-exec.
pub const USER_RW_NX: Perms = Perms {
    read: true,
    write: true,
    user: true,
    exec: false,
};

/// A 4 KiB page.
pub const PAGE: u64 = 4096;

/// Page `page` of the 4-level test region.
pub fn va(page: u64) -> Gva {
    Gva::new(REGION_4LEVEL + page * PAGE)
}

/// The exits `f` causes on `sys`, by name in the counters' order, reasons with none left out.
pub fn exits_of(sys: &mut System, f: impl FnOnce(&mut System)) -> Vec<(&'static str, u64)> {
    let before = sys.exits();
    f(sys);
    sys.exits()
        .since(&before)
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(r, n)| (r.name(), n))
        .collect()
}

/// KVM's shadow MMU as current KVM runs it with EPT off (unsync on, every #PF exits), with
/// the Skylake profile's TLBs and caches and kernel page-table isolation `kpti`.
pub fn kvm_shadow(kpti: bool) -> System {
    Setup {
        kpti,
        shadow: Some(ShadowConfig {
            unsync: true,
            bypass_not_present: false,
            budget_pages: 100_000,
        }),
        ..Setup::skylake(Paging::Shadow)
    }
    .build()
}

/// The built-in Skylake profile: realistic TLB, walk-cache and cache geometry.
pub fn skylake() -> Profile {
    Profile::builtin("skylake").expect("the built-in skylake profile parses")
}

/// A cache hierarchy with every level disabled (size 0): walks and data go to DRAM.
pub fn memory_disabled() -> MemoryConfig {
    let off = CacheConfig {
        size: 0,
        ways: 1,
        replacement: Replacement::Lru,
    };
    MemoryConfig {
        line_size: 64,
        l1d: off.clone(),
        l2: off.clone(),
        llc: off,
    }
}

/// A small, valid cache hierarchy (cheap to build; caches never change reference counts).
pub fn memory_small() -> MemoryConfig {
    MemoryConfig {
        line_size: 64,
        l1d: CacheConfig {
            size: 4096,
            ways: 4,
            replacement: Replacement::Lru,
        },
        l2: CacheConfig {
            size: 16384,
            ways: 4,
            replacement: Replacement::Srrip,
        },
        llc: CacheConfig {
            size: 65536,
            ways: 8,
            replacement: Replacement::Drrip,
        },
    }
}

/// The knobs the tests vary; everything else is fixed.
#[derive(Clone, Debug)]
pub struct Setup {
    pub paging: Paging,
    pub levels: u8,
    pub host_memory: u64,
    pub guest_memory: u64,
    pub guest_pages: PageSize,
    pub host_pages: PageSize,
    pub fragmentation: f64,
    pub seed: u64,
    /// The shadow MMU's options (None: KVM's defaults).
    pub shadow: Option<ShadowConfig>,
    /// Kernel page-table isolation (off unless a test asks).
    pub kpti: bool,
    /// TPT's mark; the first process runs program "test".
    pub tpt_task: Option<&'static str>,
    pub tlb: TlbConfig,
    pub memory: MemoryConfig,
}

impl Setup {
    /// 4-level paging, 16 GiB host, 4 GiB guest, 4K pages in both dimensions, no
    /// fragmentation, and every TLB, walk cache and data cache off.
    pub fn new(paging: Paging) -> Setup {
        Setup {
            paging,
            levels: 4,
            host_memory: 16 * GIB,
            guest_memory: 4 * GIB,
            guest_pages: PageSize::Size4K,
            host_pages: PageSize::Size4K,
            fragmentation: 0.0,
            seed: 1,
            shadow: None,
            kpti: false,
            tpt_task: Some("test"),
            tlb: TlbConfig::all_disabled(),
            memory: memory_disabled(),
        }
    }

    /// As [`Setup::new`], with the Skylake profile's TLBs, walk caches and data caches on.
    pub fn skylake(paging: Paging) -> Setup {
        let profile = skylake();
        Setup {
            tlb: profile.tlb,
            memory: profile.memory,
            ..Setup::new(paging)
        }
    }

    pub fn config(&self) -> SystemConfig {
        SystemConfig {
            paging: self.paging,
            levels: self.levels,
            host_memory: self.host_memory,
            guest_memory: self.guest_memory,
            guest_pages: self.guest_pages,
            pcid: true,
            kpti: self.kpti,
            shadow: self.shadow,
            agile: Default::default(),
            tag_reads: false,
            backing: BackingConfig {
                host_pages: self.host_pages,
                fragmentation: self.fragmentation,
                seed: self.seed,
            },
            program: "test",
            tpt_task: self.tpt_task,
            tlb: self.tlb.clone(),
            memory: self.memory.clone(),
        }
    }

    pub fn build(&self) -> System {
        System::new(&self.config()).unwrap_or_else(|e| panic!("building {self:?}: {e}"))
    }
}

/// The system's GPA -> HPA map, byte for byte: the EPT read in software for a nested system,
/// the identity for a native one (its kernel's physical addresses are host addresses).
pub fn p2m(system: &System, gpa: u64) -> Option<u64> {
    match system.vm() {
        Some(vm) => vm
            .translate(system.host_memory(), Gfn::new(gpa >> 12))
            .map(|hfn| hfn.addr().raw() | (gpa & 0xfff)),
        None => Some(gpa),
    }
}

/// The guest (or native) leaf that maps a virtual address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GuestLeaf {
    /// The guest-physical address `va` maps to (host-physical on a native system).
    pub gpa: u64,
    pub size: PageSize,
    /// Permissions accumulated over every level of the guest walk.
    pub perms: Perms,
    /// The leaf entry's value and where it lives in host memory.
    pub entry: u64,
    pub entry_at: Hpa,
}

/// Walk the kernel's tables for `va` from its PGD, locating each table through the p2m:
/// what the guest maps `va` to, or `None` if it is not mapped (or a table is not backed).
pub fn guest_walk(system: &System, va: Gva) -> Option<GuestLeaf> {
    let mem = system.host_memory();
    let levels = system.kernel().config().levels;
    let mut table = system.kernel().pgd().addr().raw();
    let mut perms = Perms::ALL;
    for level in (1..=levels).rev() {
        let entry_gpa = table + index(va.raw(), level) * 8;
        let entry_at = Hpa::new(p2m(system, entry_gpa)?);
        let entry = mem.read_u64(entry_at);
        if entry & X86::PRESENT == 0 {
            return None;
        }
        perms = perms.and(X86::perms(entry));
        let large = entry & X86::LARGE_PAGE != 0 && (level == 2 || level == 3);
        if level == 1 || large {
            let size = PageSize::at_level(level)?;
            let gpa = (entry & FRAME_MASK & !(size.bytes() - 1)) | (va.raw() & (size.bytes() - 1));
            return Some(GuestLeaf {
                gpa,
                size,
                perms,
                entry,
                entry_at,
            });
        }
        table = entry & FRAME_MASK;
    }
    None
}

/// The EPT leaf entry that maps `gpa` on a nested system, and where it lives.
pub fn ept_leaf(system: &System, gpa: u64) -> Option<(Hpa, u64, PageSize)> {
    let vm = system.vm()?;
    let mem = system.host_memory();
    let mut table = vm.eptp().raw();
    for level in (1..=system.kernel().config().levels).rev() {
        let at = Hpa::new(table + index(gpa, level) * 8);
        let entry = mem.read_u64(at);
        if !Ept::is_present(entry) {
            return None;
        }
        if level == 1 || Ept::is_large(entry) {
            return Some((at, entry, PageSize::at_level(level)?));
        }
        table = entry & FRAME_MASK;
    }
    None
}

/// The 9-bit table index of `addr` at `level` (1 = PT).
pub fn index(addr: u64, level: u8) -> u64 {
    (addr >> (12 + 9 * (level as u32 - 1))) & 0x1ff
}

/// The guest-physical addresses of the guest table pages a walk for `va` visits, top first,
/// as far as the walk gets.
pub fn guest_table_gpas(system: &System, va: Gva) -> Vec<u64> {
    let mem = system.host_memory();
    let mut table = system.kernel().pgd().addr().raw();
    let mut out = Vec::new();
    for level in (1..=system.kernel().config().levels).rev() {
        out.push(table);
        let Some(at) = p2m(system, table + index(va.raw(), level) * 8) else {
            break;
        };
        let entry = mem.read_u64(Hpa::new(at));
        if entry & X86::PRESENT == 0 || level == 1 || entry & X86::LARGE_PAGE != 0 {
            break;
        }
        table = entry & FRAME_MASK;
    }
    out
}

/// A run of `spec` under `paging` on the skylake profile with 4 KiB pages in both dimensions,
/// the whole workload simulated (no sample, no warm-up), seed 1: the engine tests' run.
pub fn whole_run(spec: &str, paging: Paging) -> vmlab_core::engine::RunConfig {
    vmlab_core::engine::RunConfig {
        workload: vmlab_core::workload::WorkloadSpec::parse(spec).unwrap(),
        paging,
        profile: Profile::builtin("skylake").unwrap(),
        guest_pages: PageSize::Size4K,
        host_pages: PageSize::Size4K,
        fragmentation: 0.0,
        accesses: 0,
        warmup: 0,
        tolerance: 0.001,
        fixed_warmup: false,
        seed: 1,
        pretouch: false,
        pipeline: vmlab_core::engine::Pipeline::Staged,
    }
}
