//! Paging schemes, and the simulated system that composes them: host memory, the MMU, the
//! kernel model and (for virtualized schemes) the hypervisor.
//!
//! A scheme decides which tables the hardware walks, what the kernel's pv-ops do and cost,
//! how faults reach the guest and what a kernel entry or a host page move costs; the walker,
//! TLBs and caches are shared. Each scheme is one module implementing [`Scheme`] and owning
//! its hypervisor state; [`AnyScheme`] registers them. The system matches the scheme only on
//! the slow path (kernel operations and faults); the access hit path never looks at it.
//!
//! Adding a scheme: a new module with a type implementing [`Scheme`] (whose required methods
//! and traits say everything the rest of the tree asks of it), and its line in `registry.rs`
//! (see docs/design.md).

#[macro_use]
mod pvops_common;
pub mod agile;
pub mod native;
pub mod nested;
pub mod pv;
mod registry;
pub mod shadow;
mod system;
pub mod tpt;

pub(crate) use registry::dispatch;
pub use registry::{AnyScheme, Paging};
pub use system::System;

use crate::addr::{Gfn, Gva, PageSize};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::exits::ExitReason;
use crate::hv::x86::shadow::agile::AgileConfig;
use crate::hv::x86::shadow::{ShadowConfig, ShadowMmu};
use crate::hv::x86::vm::{BackingConfig, HvError, Vm};
use crate::hw::cache::MemoryConfig;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, TlbConfig};
use crate::hw::x86::walker::Fault;
use crate::os::{BackendError, Kernel, OsError, PvOps, PvResult};

impl Paging {
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
        self.traits().virtualized
    }

    /// Why this scheme cannot run guest pages of `guest` on host pages of `host`, if it
    /// cannot: a scheme that maps a guest page with one entry of a table of host frames (pv
    /// and the TPT schemes: the devirt tree has no split tables) needs host pages at least
    /// as large as the guest's.
    pub fn unsupported_pages(self, guest: PageSize, host: PageSize) -> Option<String> {
        (self.traits().guest_page_in_one_entry && guest > host).then(|| {
            format!("{} maps a guest page with one entry: guest pages of {} need host pages at least as large", self.name(), guest.name())
        })
    }

    /// Translation Pass-Through, with tags or as the Intel prototype.
    pub fn is_tpt(self) -> bool {
        self.traits().tpt_processes
    }
}

/// What a scheme is and can run, decided before it is built: the checks of a run, the guest
/// kernel's boot options and the workloads that need a particular mechanism ask this, never
/// a list of scheme names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchemeTraits {
    /// The kernel runs in a VM.
    pub virtualized: bool,
    /// A guest page is mapped by one entry of a table of host frames, so it may not be
    /// larger than the host page backing it.
    pub guest_page_in_one_entry: bool,
    /// The guest kernel may isolate its page tables (KPTI); Linux turns it off in Xen PV
    /// guests (arch/x86/mm/pti.c, pti_check_boottime_disable).
    pub kpti: bool,
    /// The workload's process runs with TPT (the kernel marks the program's next exec).
    pub tpt_processes: bool,
    /// The guest builds tables of host frames that the hardware walks (the isolation probe
    /// rewrites them).
    pub guest_built_host_tables: bool,
    /// The host can move guest pages under a running workload ([`Scheme::host_remap`]).
    pub host_remap: bool,
}

impl SchemeTraits {
    /// A scheme under a hypervisor with no special mechanism: nested paging's traits.
    pub const HARDWARE_ASSISTED: SchemeTraits = SchemeTraits {
        virtualized: true,
        guest_page_in_one_entry: false,
        kpti: true,
        tpt_processes: false,
        guest_built_host_tables: false,
        host_remap: false,
    };
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
    /// Agile paging's policy (ignored by other schemes).
    pub agile: AgileConfig,
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

    /// What the scheme built for `paging` (one of the variants it is registered for) is and
    /// can run.
    fn traits(paging: Paging) -> SchemeTraits;

    /// Which scheme this is.
    fn paging(&self) -> Paging;

    /// Run kernel code `f` with this scheme's pv-ops backend.
    fn with_pvops<R>(&mut self, machine: &mut Machine, f: impl FnOnce(&mut dyn PvOps) -> R) -> R;

    /// The VM, under a hypervisor (its exits are the run's).
    fn vm(&self) -> Option<&Vm>;

    /// The VM, mutably.
    fn vm_mut(&mut self) -> Option<&mut Vm>;

    /// The shadow MMU, if the scheme keeps shadow tables: its work is priced by the
    /// profile's `[shadow]` table.
    fn shadow_mmu(&self) -> Option<&ShadowMmu>;

    /// The host-address tables the guest builds, if the scheme has them (pv's machine-frame
    /// tables, TPT's devirt copies).
    fn direct_tables(&self) -> Option<&DirectTables>;

    /// What entering the kernel and returning costs the scheme beyond the kernel's own work
    /// (a system call or a fault of the running process).
    fn kernel_entry(&mut self, _kernel: &Kernel) {}

    /// What a timer tick costs the scheme beyond the kernel's entry: under hardware
    /// virtualization the LAPIC timer is KVM's to emulate, so the tick exits (`timer`: the
    /// VMX preemption timer, KVM injecting the interrupt) and the guest's re-arming of its
    /// TSC deadline exits too (`tsc_deadline`); natively nothing.
    fn timer_interrupt(&mut self, _machine: &mut Machine) {
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

    /// The host moves the page backing guest frame `gfn` (migration, compaction); called
    /// only for schemes whose traits say `host_remap`.
    fn host_remap(&mut self, _machine: &mut Machine, _gfn: Gfn) -> Result<(), SimError> {
        Err(SimError::Config(format!(
            "{} says it can remap host pages but does not implement Scheme::host_remap",
            self.paging().name()
        )))
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
