//! Paging schemes, and the simulated system that composes them: host memory, the MMU, the
//! kernel model and (for virtualized schemes) the hypervisor.
//!
//! A scheme decides which tables the hardware walks and what the kernel's pv-ops cost; the
//! walker, TLBs and caches are shared. The scheme is matched once per fault (the slow path);
//! the access hit path does not look at it.

pub mod native;
pub mod nested;
pub mod shadow;
pub mod tpt;

use crate::addr::{Gfn, Gpa, Gva, Hfn, Hpa, PageSize};
use crate::hv::x86::shadow::{Ctx as ShadowCtx, ShadowConfig, ShadowMmu};
use crate::hv::x86::vm::{BackingConfig, HvError, Vm};
use crate::hv::ExitCounters;
use crate::hw::cache::MemoryConfig;
use crate::hw::frames::HostMemory;
use crate::hw::x86::mmu::{Mmu, TlbConfig};
use crate::hw::x86::walker::{Dimension, Fault};
use crate::os::{Kernel, KernelConfig, OsError, Pid, Program, PvOps, ThpPolicy};
use native::NativePvOps;
use nested::NestedPvOps;
use shadow::ShadowPvOps;
use tpt::{Devirt, DevirtMode, TptPvOps};

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
    pub const ALL: [Paging; 6] = [
        Paging::Native,
        Paging::Nested,
        Paging::Shadow,
        Paging::Pv,
        Paging::Tpt,
        Paging::TptPrototype,
    ];

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
    pub paging: Paging,
    pub levels: u8,
    pub host_memory: u64,
    /// Guest RAM (virtualized schemes); the native kernel manages all host memory.
    pub guest_memory: u64,
    /// Guest page size: 2M turns transparent huge pages on in the kernel model.
    pub guest_pages: PageSize,
    /// Give each address space a PCID so context switches need not flush the TLB.
    pub pcid: bool,
    /// Options of the shadow MMU; `None` is KVM's defaults.
    pub shadow: Option<ShadowConfig>,
    /// TPT: read memory-tag entries through the cache hierarchy on every check.
    pub tag_reads: bool,
    pub backing: BackingConfig,
    /// The program the first process runs, and TPT's mark (which program's next exec runs
    /// with TPT: see [`KernelConfig::tpt_task`]); the mark is ignored outside TPT.
    pub program: &'static str,
    pub tpt_task: Option<&'static str>,
    pub tlb: TlbConfig,
    pub memory: MemoryConfig,
}

/// Errors of a simulated run that are not architectural events.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("the workload crashed: {0}")]
    Os(#[from] OsError),
    #[error("hypervisor: {0}")]
    Hv(#[from] HvError),
    #[error("{0}")]
    Memory(#[from] crate::hw::frames::OutOfMemory),
    #[error("access to {va:?} still faults after {attempts} fault-handling rounds (last fault: {fault:?}); this is a simulator bug")]
    Stuck {
        va: Gva,
        attempts: u32,
        fault: Fault,
    },
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The hardware refused a translation to a frame tagged to someone else (TPT's isolation).
    #[error("tag violation: the translation of {va:?} reaches a host frame the VM does not own")]
    TagViolation { va: Gva },
}

/// The simulated machine with its software stack.
pub struct System {
    paging: Paging,
    mem: HostMemory,
    mmu: Mmu,
    vm: Option<Vm>,
    shadow: Option<ShadowMmu>,
    devirt: Option<Devirt>,
    kernel: Kernel,
    /// Probe accesses that reached a frame the VM does not own.
    foreign_accesses: u64,
}

/// Keep the first hypervisor error a pv-ops backend meets (pv-ops cannot fail; the caller
/// checks the slot afterwards) and hand back the value of a success.
fn stash<T>(slot: &mut Option<HvError>, result: Result<T, HvError>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(e) => {
            slot.get_or_insert(e);
            None
        }
    }
}

/// Exits per user<->kernel round trip of a TPT process in the Intel prototype (about 3:
/// tpt-mechanism.md, section 1).
const TPT_PROTOTYPE_EXITS_PER_ROUND_TRIP: u32 = 3;

/// A fault the hardware keeps raising after this many handling rounds is a bug, not a
/// workload property (one guest fault, one EPT violation per table level and the data page).
const MAX_FAULT_ROUNDS: u32 = 16;

impl System {
    pub fn new(config: &SystemConfig) -> Result<System, SimError> {
        if config.guest_pages == PageSize::Size1G {
            return Err(SimError::Config(
                "guest pages of 1G are not modeled (Linux THP maps 2M); use 4k or 2m".into(),
            ));
        }
        let mut mem = HostMemory::new(config.host_memory);
        let mut mmu = Mmu::new(&config.tlb, &config.memory, config.levels);
        if mmu.memory().max_addr() < config.host_memory {
            return Err(SimError::Config(format!(
                "host_memory of {} bytes is beyond what the configured caches can tag; use fewer bytes or more sets",
                config.host_memory
            )));
        }
        let thp = if config.guest_pages == PageSize::Size2M {
            ThpPolicy::Always
        } else {
            ThpPolicy::Never
        };
        let mut kernel_config = KernelConfig {
            memory: config.host_memory,
            levels: config.levels,
            thp,
            pcid: config.pcid,
            program: config.program,
            tpt_task: config.tpt_task.filter(|_| config.paging.is_tpt()),
        };
        if config.paging.is_virtualized() && config.guest_memory > config.host_memory {
            return Err(SimError::Config("guest_memory exceeds host_memory".into()));
        }
        if let Some(why) = config
            .paging
            .unsupported_pages(config.guest_pages, config.backing.host_pages)
        {
            return Err(SimError::Config(why));
        }
        mmu.set_tag_reads(config.tag_reads);
        let mut devirt = None;
        let (vm, shadow, kernel) = match config.paging {
            Paging::Native => {
                let kernel = Kernel::boot(
                    kernel_config,
                    &mut NativePvOps {
                        mem: &mut mem,
                        mmu: &mut mmu,
                    },
                )?;
                (None, None, kernel)
            }
            Paging::Tpt | Paging::TptPrototype | Paging::Pv => {
                kernel_config.memory = config.guest_memory;
                let mut vm = Vm::new(&mut mem, config.guest_memory, config.levels, config.backing)?;
                let mode = match config.paging {
                    Paging::Tpt => DevirtMode::Tpt,
                    Paging::TptPrototype => DevirtMode::Prototype,
                    _ => DevirtMode::Pv,
                };
                let mut state = Devirt::new(mode);
                let mut pv = TptPvOps {
                    mem: &mut mem,
                    mmu: &mut mmu,
                    vm: &mut vm,
                    devirt: &mut state,
                    error: None,
                };
                let kernel = Kernel::boot(kernel_config, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                devirt = Some(state);
                (Some(vm), None, kernel?)
            }
            Paging::Nested => {
                kernel_config.memory = config.guest_memory;
                let mut vm = Vm::new(&mut mem, config.guest_memory, config.levels, config.backing)?;
                let mut pv = NestedPvOps {
                    mem: &mut mem,
                    mmu: &mut mmu,
                    vm: &mut vm,
                    error: None,
                };
                let kernel = Kernel::boot(kernel_config, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                (Some(vm), None, kernel?)
            }
            Paging::Shadow => {
                kernel_config.memory = config.guest_memory;
                let mut vm = Vm::new(&mut mem, config.guest_memory, config.levels, config.backing)?;
                let options = config
                    .shadow
                    .unwrap_or(ShadowConfig::kvm_default(vm.guest_frames()));
                let mut shadow = ShadowMmu::new(options, config.levels);
                let mut pv = ShadowPvOps {
                    mem: &mut mem,
                    mmu: &mut mmu,
                    vm: &mut vm,
                    shadow: &mut shadow,
                    error: None,
                };
                let kernel = Kernel::boot(kernel_config, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                (Some(vm), Some(shadow), kernel?)
            }
        };
        Ok(System {
            paging: config.paging,
            mem,
            mmu,
            vm,
            shadow,
            devirt,
            kernel,
            foreign_accesses: 0,
        })
    }

    pub fn paging(&self) -> Paging {
        self.paging
    }

    pub fn mmu(&self) -> &Mmu {
        &self.mmu
    }

    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    pub fn vm(&self) -> Option<&Vm> {
        self.vm.as_ref()
    }

    pub fn host_memory(&self) -> &HostMemory {
        &self.mem
    }

    /// The shadow MMU, under shadow paging.
    pub fn shadow(&self) -> Option<&ShadowMmu> {
        self.shadow.as_ref()
    }

    /// TPT's devirt state, under TPT.
    pub fn devirt(&self) -> Option<&Devirt> {
        self.devirt.as_ref()
    }

    /// The probe of TPT's isolation: a malicious guest kernel points the devirt entry at
    /// `level` on the path of `va` (level 1 = the leaf) at a host frame of someone else (a
    /// fresh frame the VM does not own), then the process accesses `va`. Returns whether the
    /// access reached the foreign frame (it must not); the entry is restored afterwards.
    pub fn tpt_foreign_access(
        &mut self,
        va: Gva,
        level: u8,
        write: bool,
    ) -> Result<bool, SimError> {
        let devirt = self.devirt.as_ref().ok_or(SimError::Config(
            "the isolation probe needs --paging tpt".into(),
        ))?;
        // The devirt tables of the running process, walked by the guest in software.
        let pgd = self.kernel.pgd();
        let mut table = devirt.copy_of(pgd).ok_or(SimError::Config(
            "the running process is not a TPT process".into(),
        ))?;
        let levels = self.mmu.levels();
        let mut at = None;
        for l in (1..=levels).rev() {
            let slot =
                table.addr_at(((va.raw() >> crate::hw::x86::walker::level_shift(l)) & 0x1ff) * 8);
            let entry = self.mem.read_u64(slot);
            if l == level {
                at = Some((slot, entry));
                break;
            }
            if entry & crate::hw::x86::pte::X86::PRESENT == 0
                || entry & crate::hw::x86::pte::X86::LARGE_PAGE != 0
            {
                break;
            }
            table = Hpa::new(entry & crate::hw::x86::pte::FRAME_MASK).frame();
        }
        let (slot, entry) = at.ok_or(SimError::Config(format!(
            "no devirt entry at level {level} for {va:?}; touch the page first"
        )))?;
        let foreign = self.mem.alloc(PageSize::Size4K)?;
        self.mem.write_u64(
            slot,
            (entry & !crate::hw::x86::pte::FRAME_MASK) | foreign.addr().raw(),
        );
        self.mmu.flush_all();
        let data_before = self
            .mmu
            .memory()
            .stats()
            .total(crate::hw::cache::Requester::Data);
        let result = self.mmu.access(&mut self.mem, va, write);
        let reached = match result {
            Ok(hpa) => hpa.frame() == foreign || !self.mem.tags().owned(hpa.frame().raw()),
            Err(_) => {
                self.mmu
                    .memory()
                    .stats()
                    .total(crate::hw::cache::Requester::Data)
                    != data_before
            }
        };
        self.mem.write_u64(slot, entry);
        self.mmu.flush_all();
        self.mem.free(foreign, PageSize::Size4K);
        self.foreign_accesses += reached as u64;
        Ok(reached)
    }

    /// The host moves the page backing what `va` maps in the running process (migration,
    /// compaction): the hypervisor copies it, updates the p2m and the memory tags, and
    /// flushes every TLB; under TPT it refreshes `gfn_to_hfn` and notifies the guest, which
    /// rewrites the devirt entries that named the old page. Modeled under nested paging and
    /// TPT; the TPT prototype pins guest memory (tpt-mechanism.md, section 1), and shadow
    /// and PV tables would need their own invalidation, which is not modeled.
    pub fn host_remap(&mut self, va: Gva) -> Result<(), SimError> {
        if !matches!(self.paging, Paging::Nested | Paging::Tpt) {
            return Err(SimError::Config(format!(
                "host remapping is modeled under nested and tpt paging, not {} ({})",
                self.paging.name(),
                match self.paging {
                    Paging::Native => "no hypervisor",
                    Paging::TptPrototype => "the prototype pins guest memory",
                    _ => "its host-frame tables would need their own invalidation",
                }
            )));
        }
        let pid = self.kernel.current();
        let (first, size, _) = self.kernel_lookup(pid, va).ok_or_else(|| {
            SimError::Config(format!(
                "host remap of {va:?}: the page is not mapped and touched in process {pid}"
            ))
        })?;
        let gfn =
            Gfn::new(first.raw() + ((va.raw() & (size.bytes() - 1)) >> crate::addr::PAGE_SHIFT));
        let tpt = self.paging == Paging::Tpt;
        let vm = self.vm.as_mut().expect("virtualized schemes have a VM");
        let moved = vm.remap(&mut self.mem, gfn, tpt)?;
        // A tag (or EPT) change is visible to every CPU only after a global flush.
        self.mmu.flush_all();
        let counters = vm.remap_counters_mut();
        counters.global_flushes += 1;
        if let (true, Some(devirt)) = (tpt, self.devirt.as_mut()) {
            counters.guest_notifications += 1;
            counters.devirt_fixups += devirt.fix_up(&mut self.mem, &moved);
        }
        Ok(())
    }

    /// Back all guest memory before the workload runs, as `echo 1 > /sys/kernel/devirt` does
    /// in the TPT artifact (the guest touches every frame, so `gfn_to_hfn` is full and no
    /// devirt entry is copied from an empty slot). Each backing page is one EPT violation.
    /// Without a hypervisor there is nothing to back.
    pub fn pretouch_guest_memory(&mut self) -> Result<(), SimError> {
        let Some(vm) = self.vm.as_mut() else {
            return Ok(());
        };
        let mut gfn = 0;
        while gfn < vm.guest_frames() {
            vm.touch(&mut self.mem, Gfn::new(gfn))?;
            let size = vm
                .backing_page(&self.mem, Gfn::new(gfn))
                .expect("just backed");
            gfn = (gfn | (size.frames() - 1)) + 1;
        }
        Ok(())
    }

    /// What host remapping did so far (zero without a hypervisor).
    pub fn remap_counters(&self) -> crate::hv::RemapCounters {
        self.vm
            .as_ref()
            .map(|vm| *vm.remap_counters())
            .unwrap_or_default()
    }

    /// Isolation-probe accesses that reached a frame the VM does not own.
    pub fn foreign_accesses(&self) -> u64 {
        self.foreign_accesses
    }

    /// Exits so far (none on a native machine).
    pub fn exits(&self) -> ExitCounters {
        self.vm.as_ref().map(|vm| *vm.exits()).unwrap_or_default()
    }

    /// mmap in the running process.
    pub fn mmap(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), SimError> {
        self.kernel_round_trip();
        Ok(self.kernel.mmap(start, len, writable)?)
    }

    /// munmap in the running process.
    pub fn munmap(&mut self, start: Gva, len: u64) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.munmap(pv, start, len))
    }

    /// mprotect in the running process.
    pub fn mprotect(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.mprotect(pv, start, len, writable))
    }

    /// madvise(MADV_DONTNEED) in the running process.
    pub fn madvise_dontneed(&mut self, start: Gva, len: u64) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.madvise_dontneed(pv, start, len))
    }

    /// The running process forks; returns the child's pid.
    pub fn fork(&mut self) -> Result<Pid, SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.fork(pv))
    }

    /// Context switch to `pid`.
    pub fn switch_to(&mut self, pid: Pid) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.switch_to(pv, pid))
    }

    /// The running process exits and `next` runs.
    pub fn exit(&mut self, next: Pid) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.exit(pv, next))
    }

    /// The running process execs `program`, then starts: it reads its text and writes its
    /// data and stack, page by page, through the MMU.
    pub fn exec(&mut self, program: &Program) -> Result<(), SimError> {
        self.kernel_round_trip();
        self.with_pvops(|k, pv| k.exec(pv, program))?;
        for region in program.image {
            for offset in (0..region.len).step_by(crate::addr::PAGE_SIZE as usize) {
                self.access(Gva::new(region.start.raw() + offset), region.writable)?;
            }
        }
        Ok(())
    }

    /// The page `va` maps to in process `pid`, as the kernel's tables say: (first guest
    /// frame, page size, writable). Side-effect free.
    pub fn kernel_lookup(&mut self, pid: Pid, va: Gva) -> Option<(Gfn, PageSize, bool)> {
        let kernel = &self.kernel;
        match self.paging {
            Paging::Native => kernel.lookup(
                &mut NativePvOps {
                    mem: &mut self.mem,
                    mmu: &mut self.mmu,
                },
                pid,
                va,
            ),
            Paging::Nested => {
                let vm = self.vm.as_mut()?;
                kernel.lookup(
                    &mut NestedPvOps {
                        mem: &mut self.mem,
                        mmu: &mut self.mmu,
                        vm,
                        error: None,
                    },
                    pid,
                    va,
                )
            }
            Paging::Shadow | Paging::Tpt | Paging::TptPrototype | Paging::Pv => {
                // Read the guest's tables directly: a lookup must not trap or back memory.
                let vm = self.vm.as_mut()?;
                kernel.lookup(
                    &mut NestedPvOps {
                        mem: &mut self.mem,
                        mmu: &mut self.mmu,
                        vm,
                        error: None,
                    },
                    pid,
                    va,
                )
            }
        }
    }

    /// The host frame backing the kernel's frame `gfn` (identity without a hypervisor).
    pub fn host_frame(&self, gfn: Gfn) -> Option<Hfn> {
        match &self.vm {
            None => Some(gfn.identity_host()),
            Some(vm) => vm.translate(&self.mem, gfn),
        }
    }

    /// Prefetch, in the host, what the coming accesses `vas` will touch (no simulated
    /// effect; see [`Mmu::prefetch`]).
    pub fn prefetch(&self, vas: &[Gva]) {
        self.mmu.prefetch(&self.mem, vas);
    }

    /// One user-mode data access, with whatever faults it takes handled on the way; returns
    /// the host-physical address accessed.
    #[inline]
    pub fn access(&mut self, va: Gva, write: bool) -> Result<Hpa, SimError> {
        match self.mmu.access(&mut self.mem, va, write) {
            Ok(hpa) => Ok(hpa),
            Err(fault) => self.access_after_fault(va, write, fault),
        }
    }

    #[cold]
    #[inline(never)]
    fn access_after_fault(
        &mut self,
        va: Gva,
        write: bool,
        mut fault: Fault,
    ) -> Result<Hpa, SimError> {
        for _ in 0..MAX_FAULT_ROUNDS {
            self.handle_fault(fault)?;
            match self.mmu.access(&mut self.mem, va, write) {
                Ok(hpa) => return Ok(hpa),
                Err(next) => fault = next,
            }
        }
        Err(SimError::Stuck {
            va,
            attempts: MAX_FAULT_ROUNDS,
            fault,
        })
    }

    fn handle_fault(&mut self, fault: Fault) -> Result<(), SimError> {
        // (Kernel page faults go through the scheme's pv-ops; EPT violations to the VM.)
        if fault.kind == crate::hw::x86::walker::FaultKind::TagViolation {
            return Err(SimError::TagViolation {
                va: Gva::new(fault.addr),
            });
        }
        match fault.dimension {
            Dimension::Guest if self.paging == Paging::Shadow => {
                // A fault in the shadow tables exits to the hypervisor first.
                let va = Gva::new(fault.addr);
                let (vm, shadow) = (
                    self.vm.as_mut().expect("VM"),
                    self.shadow.as_mut().expect("shadow MMU"),
                );
                let mut ctx = ShadowCtx {
                    mem: &mut self.mem,
                    vm,
                    mmu: &mut self.mmu,
                };
                match shadow.page_fault(&mut ctx, va, fault.write)? {
                    Ok(()) => Ok(()),
                    Err(_) => {
                        self.with_pvops(|kernel, pv| kernel.handle_page_fault(pv, va, fault.write))
                    }
                }
            }
            Dimension::Guest => {
                self.kernel_round_trip();
                self.with_pvops(|kernel, pv| {
                    kernel.handle_page_fault(pv, Gva::new(fault.addr), fault.write)
                })
            }
            Dimension::Ept => {
                let vm = self
                    .vm
                    .as_mut()
                    .ok_or(SimError::Config("EPT fault without a VM".into()))?;
                Ok(vm.handle_ept_violation(&mut self.mem, Gpa::new(fault.addr))?)
            }
        }
    }

    /// Under the TPT prototype, a TPT process entering the kernel (a fault or a system call)
    /// and returning costs about 3 exits: the switches between its host-address tables and
    /// the kernel's nested paging are hypercalls (tpt-mechanism.md, section 1).
    fn kernel_round_trip(&mut self) {
        if self.paging == Paging::Pv {
            // A 64-bit PV kernel runs in ring 3: system calls and faults enter Xen first.
            if let Some(vm) = self.vm.as_mut() {
                vm.record_exit(crate::hv::ExitReason::PvBounce);
            }
            return;
        }
        if self.paging != Paging::TptPrototype {
            return;
        }
        let tpt = self
            .kernel
            .process(self.kernel.current())
            .is_some_and(|p| p.devirt);
        if let (true, Some(vm)) = (tpt, self.vm.as_mut()) {
            for _ in 0..TPT_PROTOTYPE_EXITS_PER_ROUND_TRIP {
                vm.record_exit(crate::hv::ExitReason::TptSwitch);
            }
        }
    }

    /// Run kernel code with this scheme's pv-ops backend.
    fn with_pvops<R>(
        &mut self,
        f: impl FnOnce(&mut Kernel, &mut dyn PvOps) -> Result<R, OsError>,
    ) -> Result<R, SimError> {
        match self.paging {
            Paging::Native => Ok(f(
                &mut self.kernel,
                &mut NativePvOps {
                    mem: &mut self.mem,
                    mmu: &mut self.mmu,
                },
            )?),
            Paging::Nested => {
                let vm = self.vm.as_mut().expect("nested paging has a VM");
                let mut pv = NestedPvOps {
                    mem: &mut self.mem,
                    mmu: &mut self.mmu,
                    vm,
                    error: None,
                };
                let result = f(&mut self.kernel, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                Ok(result?)
            }
            Paging::Tpt | Paging::TptPrototype | Paging::Pv => {
                let vm = self.vm.as_mut().expect("TPT has a VM");
                let devirt = self.devirt.as_mut().expect("TPT has devirt state");
                let mut pv = TptPvOps {
                    mem: &mut self.mem,
                    mmu: &mut self.mmu,
                    vm,
                    devirt,
                    error: None,
                };
                let result = f(&mut self.kernel, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                Ok(result?)
            }
            Paging::Shadow => {
                let vm = self.vm.as_mut().expect("shadow paging has a VM");
                let shadow = self
                    .shadow
                    .as_mut()
                    .expect("shadow paging has a shadow MMU");
                let mut pv = ShadowPvOps {
                    mem: &mut self.mem,
                    mmu: &mut self.mmu,
                    vm,
                    shadow,
                    error: None,
                };
                let result = f(&mut self.kernel, &mut pv);
                if let Some(e) = pv.error {
                    return Err(e.into());
                }
                Ok(result?)
            }
        }
    }
}
