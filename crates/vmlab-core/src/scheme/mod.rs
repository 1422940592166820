//! Paging schemes, and the simulated system that composes them: host memory, the MMU, the
//! kernel model and (for virtualized schemes) the hypervisor.
//!
//! A scheme decides which tables the hardware walks, what the kernel's pv-ops do and cost,
//! how faults reach the guest and what a kernel entry or a host page move costs; the walker,
//! TLBs and caches are shared. Each scheme is one module implementing [`Scheme`] and owning
//! its hypervisor state; [`AnyScheme`] registers them. The system matches the scheme only on
//! the slow path (kernel operations and faults); the access hit path never looks at it.
//!
//! Adding a scheme: a new module with a type implementing [`Scheme`], a [`Paging`] variant
//! (name, summary) and an [`AnyScheme`] variant (see docs/design.md).

pub mod native;
pub mod nested;
pub mod pv;
pub mod shadow;
mod system;
pub mod tpt;

pub use system::System;

use crate::addr::{Gfn, Gva, PageSize};
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::ShadowConfig;
use crate::hv::x86::vm::{BackingConfig, HvError, Vm};
use crate::hw::cache::MemoryConfig;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, TlbConfig};
use crate::hw::x86::walker::Fault;
use crate::os::{BackendError, Kernel, OsError, PvOps, PvResult};

/// How guest-virtual addresses become host-physical ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Paging {
    /// No hypervisor: the OS's tables map VA->PA, a 1D walk.
    Native,
    /// Hardware nested paging (Intel EPT / AMD NPT): a 2D walk.
    Nested,
    /// KVM-style shadow paging: the hypervisor's shadow tables, 1D walks; guest page-table
    /// writes, CR3 loads and flushes trap.
    Shadow,
    /// Translation Pass-Through: the workload's process walks guest-built GVA->HPA tables
    /// (1D) checked by memory tags; everything else runs on nested paging.
    Tpt,
    /// The TPT artifact's Intel prototype: the same tables, walked without tag checks (no
    /// tagging hardware), and about 3 exits per user<->kernel round trip of a TPT process.
    TptPrototype,
    /// Xen-style paravirtual direct paging: guest tables hold machine frames (1D walks);
    /// every update is a validated hypercall, batched in lazy-MMU sections; CR3 loads and
    /// flushes are hypercalls; system calls and faults bounce through the hypervisor.
    Pv,
}

impl Paging {
    /// Every scheme, in the order `vmlab list` and `vmlab bench` use (a scheme's place here
    /// is also its colour in figures).
    pub const ALL: [Paging; 6] = [
        Paging::Native,
        Paging::Nested,
        Paging::Shadow,
        Paging::Pv,
        Paging::Tpt,
        Paging::TptPrototype,
    ];

    /// The scheme's name on the command line and in reports (`--paging`).
    pub fn name(self) -> &'static str {
        match self {
            Paging::Native => "native",
            Paging::Nested => "nested",
            Paging::Shadow => "shadow",
            Paging::Tpt => "tpt",
            Paging::TptPrototype => "tpt-prototype",
            Paging::Pv => "pv",
        }
    }

    /// One line on how the scheme translates, for `--help` and listings.
    pub fn summary(self) -> &'static str {
        match self {
            Paging::Native => "bare metal: the OS's tables, 1D walks (up to 4 references)",
            Paging::Nested => "EPT/NPT: guest tables + host EPT, 2D walks (up to 24 references)",
            Paging::Shadow => "KVM shadow MMU: 1D walks of shadow tables; guest table writes, CR3 loads, INVLPG trap",
            Paging::Tpt => "Translation Pass-Through: guest-built GVA->HPA tables, 1D walks with memory-tag checks",
            Paging::TptPrototype => "TPT's Intel prototype: 1D walks without tags, ~3 exits per kernel entry of a TPT process",
            Paging::Pv => "Xen PV direct paging: 1D walks of machine-frame tables; updates are batched hypercalls",
        }
    }

    /// The scheme called `name`, or a one-line error listing the valid names.
    pub fn parse(name: &str) -> Result<Paging, String> {
        Paging::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| {
                let valid: Vec<_> = Paging::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown paging scheme '{name}'; valid schemes: {}",
                    valid.join(", ")
                )
            })
    }

    /// Whether the scheme runs the kernel in a VM (every scheme but native).
    pub fn is_virtualized(self) -> bool {
        self != Paging::Native
    }

    /// Why this scheme cannot run guest pages of `guest` on host pages of `host`, if it
    /// cannot: pv and the TPT schemes map a guest page with one entry of a table of host
    /// frames (the devirt tree has no split tables), so a guest page may not be larger than
    /// the host page backing it.
    pub fn unsupported_pages(self, guest: PageSize, host: PageSize) -> Option<String> {
        ((self.is_tpt() || self == Paging::Pv) && guest > host).then(|| {
            format!("{} maps a guest page with one entry: guest pages of {} need host pages at least as large", self.name(), guest.name())
        })
    }

    /// Translation Pass-Through, with tags or as the Intel prototype.
    pub fn is_tpt(self) -> bool {
        matches!(self, Paging::Tpt | Paging::TptPrototype)
    }
}

/// Everything needed to build a system.
#[derive(Clone, Debug)]
pub struct SystemConfig {
    /// The paging scheme to build.
    pub paging: Paging,
    /// Paging levels, 4 or 5 (LA57), of every table the system builds (guest, EPT, shadow,
    /// copies).
    pub levels: u8,
    /// Host memory in bytes (the profile's `machine.host_memory`).
    pub host_memory: u64,
    /// Guest RAM (virtualized schemes); the native kernel manages all host memory.
    pub guest_memory: u64,
    /// Guest page size: 2M turns transparent huge pages on in the kernel model.
    pub guest_pages: PageSize,
    /// Give each address space a PCID so context switches need not flush the TLB.
    pub pcid: bool,
    /// Kernel page-table isolation in the (guest) kernel; ignored under PV, where Linux
    /// turns it off.
    pub kpti: bool,
    /// Options of the shadow MMU; `None` is KVM's defaults.
    pub shadow: Option<ShadowConfig>,
    /// TPT: read memory-tag entries through the cache hierarchy on every check.
    pub tag_reads: bool,
    /// How the hypervisor backs guest memory (host page size, fragmentation).
    pub backing: BackingConfig,
    /// The program the first process runs, and TPT's mark (which program's next exec runs
    /// with TPT: see [`KernelConfig::tpt_task`](crate::os::KernelConfig::tpt_task)); the
    /// mark is ignored outside TPT.
    pub program: &'static str,
    /// The program whose next exec runs with TPT (see `program`).
    pub tpt_task: Option<&'static str>,
    /// Geometry of the TLBs, the nested TLB and the walk caches.
    pub tlb: TlbConfig,
    /// The cache hierarchy.
    pub memory: MemoryConfig,
}

/// Errors of a simulated run that are not architectural events.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The kernel model refused one of the workload's operations (the workload crashed).
    #[error("the workload crashed: {0}")]
    Os(OsError),
    /// The hypervisor model failed (e.g. guest memory could not be backed).
    #[error("hypervisor: {0}")]
    Hv(#[from] HvError),
    /// Host memory ran out.
    #[error("{0}")]
    Memory(#[from] crate::hw::frames::OutOfMemory),
    /// An access still faulted after the most fault-handling rounds one access can need.
    #[error("access to {va:?} still faults after {attempts} fault-handling rounds (last fault: {fault:?}); this is a simulator bug")]
    Stuck {
        /// The address accessed.
        va: Gva,
        /// Fault-handling rounds run.
        attempts: u32,
        /// The last fault raised.
        fault: Fault,
    },
    /// The system cannot be built as configured; the message says why.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The hardware refused a translation to a frame tagged to someone else (TPT's isolation).
    #[error("tag violation: the translation of {va:?} reaches a host frame the VM does not own")]
    TagViolation {
        /// The address whose translation was refused.
        va: Gva,
    },
}

impl From<OsError> for SimError {
    /// A backend failure inside kernel code is the hypervisor's, not the workload's.
    fn from(e: OsError) -> SimError {
        match e {
            OsError::Backend(BackendError(inner)) => match inner.downcast::<HvError>() {
                Ok(hv) => SimError::Hv(*hv),
                Err(other) => SimError::Os(OsError::Backend(BackendError(other))),
            },
            other => SimError::Os(other),
        }
    }
}

impl From<HvError> for BackendError {
    fn from(e: HvError) -> BackendError {
        BackendError(Box::new(e))
    }
}

/// The machine every x86 scheme runs on: host memory (with the bytes of every table page)
/// and the MMU (TLBs, walk caches, walker, cache hierarchy).
pub struct Machine {
    /// Host memory: frame allocation, table bytes and memory tags.
    pub mem: HostMemory,
    /// TLBs, walk caches, walker and cache hierarchy.
    pub mmu: Mmu,
}

/// One paging scheme: its hypervisor state (none natively) and how it serves the kernel.
pub trait Scheme: Sized {
    /// Build the scheme's hypervisor state on `machine` (before the kernel boots).
    fn new(machine: &mut Machine, config: &SystemConfig) -> Result<Self, SimError>;

    /// Which scheme this is.
    fn paging(&self) -> Paging;

    /// Run kernel code `f` with this scheme's pv-ops backend.
    fn with_pvops<R>(&mut self, machine: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R;

    /// The VM, under a hypervisor.
    fn vm(&self) -> Option<&Vm> {
        None
    }

    /// The VM, mutably.
    fn vm_mut(&mut self) -> Option<&mut Vm> {
        None
    }

    /// What entering the kernel and returning costs the scheme beyond the kernel's own work
    /// (a system call or a fault of the running process).
    fn kernel_entry(&mut self, _kernel: &Kernel) {}

    /// What a timer tick costs the scheme beyond the kernel's entry: under hardware
    /// virtualization the LAPIC timer is KVM's to emulate, so the tick exits (`timer`: the
    /// VMX preemption timer, KVM injecting the interrupt) and the guest's re-arming of its
    /// TSC deadline exits too (`tsc_deadline`); natively nothing.
    fn timer_interrupt(&mut self) {
        if let Some(vm) = self.vm_mut() {
            vm.record_exit(ExitReason::Timer);
            vm.record_exit(ExitReason::TscDeadline);
        }
    }

    /// A fault in the tables the hardware walks for the guest (not in the EPT): by default
    /// the guest kernel takes it as a page fault.
    fn guest_fault(
        &mut self,
        machine: &mut Machine,
        kernel: &mut Kernel,
        va: Gva,
        write: bool,
    ) -> Result<(), SimError> {
        self.kernel_entry(kernel);
        Ok(self.with_pvops(machine, |pv| kernel.page_fault(pv, va, write))?)
    }

    /// The host moves the page backing guest frame `gfn` (migration, compaction).
    fn host_remap(&mut self, _machine: &mut Machine, _gfn: Gfn) -> Result<(), SimError> {
        let why = match self.paging() {
            Paging::Native => "no hypervisor",
            _ => "its host-frame tables would need their own invalidation",
        };
        Err(SimError::Config(format!(
            "host remapping is modeled under nested and tpt paging, not {} ({why})",
            self.paging().name()
        )))
    }
}

/// Every scheme, registered: the system holds one and dispatches on it outside the hot path.
/// One value per system, never moved on the hot path: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
pub enum AnyScheme {
    /// No hypervisor.
    Native(native::Native),
    /// Nested paging (EPT).
    Nested(nested::Nested),
    /// KVM-style shadow paging.
    Shadow(shadow::Shadow),
    /// Xen-style PV direct paging.
    Pv(pv::Pv),
    /// Translation Pass-Through, tagged or as the Intel prototype.
    Tpt(tpt::Tpt),
}

/// `$body` with `$s` bound to the scheme inside `$any`.
macro_rules! dispatch {
    ($any:expr, $s:ident => $body:expr) => {
        match $any {
            AnyScheme::Native($s) => $body,
            AnyScheme::Nested($s) => $body,
            AnyScheme::Shadow($s) => $body,
            AnyScheme::Pv($s) => $body,
            AnyScheme::Tpt($s) => $body,
        }
    };
}
pub(crate) use dispatch;

impl AnyScheme {
    /// The scheme `config.paging` names, built on `machine`.
    pub fn new(machine: &mut Machine, config: &SystemConfig) -> Result<AnyScheme, SimError> {
        Ok(match config.paging {
            Paging::Native => AnyScheme::Native(native::Native::new(machine, config)?),
            Paging::Nested => AnyScheme::Nested(nested::Nested::new(machine, config)?),
            Paging::Shadow => AnyScheme::Shadow(shadow::Shadow::new(machine, config)?),
            Paging::Pv => AnyScheme::Pv(pv::Pv::new(machine, config)?),
            Paging::Tpt | Paging::TptPrototype => AnyScheme::Tpt(tpt::Tpt::new(machine, config)?),
        })
    }
}

/// A VM with the configured guest memory and backing, on `m`'s host memory.
fn new_vm(m: &mut Machine, config: &SystemConfig) -> Result<Vm, SimError> {
    Ok(Vm::new(
        &mut m.mem,
        config.guest_memory,
        config.levels,
        config.backing,
    )?)
}

/// The guest kernel writes every 4 KiB frame of a page: each frame the host never backed
/// traps once (an EPT violation) and is backed.
fn touch_frames(mem: &mut HostMemory, vm: &mut Vm, frame: Gfn, size: PageSize) -> PvResult {
    for offset in 0..size.frames() {
        vm.touch(mem, Gfn::new(frame.raw() + offset))?;
    }
    Ok(())
}
