//! The simulated system: the machine, the kernel model and one paging scheme.

use super::native::NativePvOps;
use super::nested::NestedPvOps;
use super::{dispatch, AnyScheme, Machine, Paging, Scheme, SimError, SystemConfig};
use crate::addr::{Gfn, Gpa, Gva, Hfn, Hpa, PageSize};
use crate::hv::x86::direct::DirectTables;
use crate::hv::x86::shadow::ShadowMmu;
use crate::hv::x86::vm::Vm;
use crate::hv::{ExitCounters, RemapCounters};
use crate::hw::frames::HostMemory;
use crate::hw::memory::MemoryHierarchy;
use crate::hw::x86::mmu::Mmu;
use crate::hw::x86::walker::{Dimension, Fault, FaultKind};
use crate::os::{EntryKind, Kernel, KernelConfig, OsError, Pid, Program, PvOps, ThpPolicy};

/// The simulated machine with its software stack.
pub struct System {
    machine: Machine,
    kernel: Kernel,
    scheme: AnyScheme,
    /// Probe accesses that reached a frame the VM does not own.
    foreign_accesses: u64,
}

/// A fault the hardware keeps raising after this many handling rounds is a bug, not a
/// workload property (one guest fault, one EPT violation per table level and the data page).
const MAX_FAULT_ROUNDS: u32 = 16;

impl System {
    /// Boots a system as `config` says: the machine, the scheme's hypervisor state and the
    /// kernel; a configuration it cannot model is a [`SimError::Config`].
    pub fn new(config: &SystemConfig) -> Result<System, SimError> {
        if config.guest_pages == PageSize::Size1G {
            return Err(SimError::Config(
                "guest pages of 1G are not modeled (Linux THP maps 2M); use 4k or 2m".into(),
            ));
        }
        let mut machine = Machine {
            mem: HostMemory::new(config.host_memory),
            mmu: Mmu::new(&config.tlb, &config.memory, config.levels),
        };
        if machine.mmu.memory().max_addr() < config.host_memory {
            return Err(SimError::Config(format!(
                "host_memory of {} bytes is beyond what the configured caches can tag; use fewer bytes or more sets",
                config.host_memory
            )));
        }
        if config.paging.is_virtualized() && config.guest_memory > config.host_memory {
            return Err(SimError::Config("guest_memory exceeds host_memory".into()));
        }
        if let Some(why) = config
            .paging
            .unsupported_pages(config.guest_pages, config.backing.host_pages)
        {
            return Err(SimError::Config(why));
        }
        machine.mmu.set_tag_reads(config.tag_reads);
        let kernel_config = KernelConfig {
            memory: if config.paging.is_virtualized() {
                config.guest_memory
            } else {
                config.host_memory
            },
            levels: config.levels,
            thp: if config.guest_pages == PageSize::Size2M {
                ThpPolicy::Always
            } else {
                ThpPolicy::Never
            },
            pcid: config.pcid,
            kpti: config.kpti && config.paging.traits().kpti,
            program: config.program,
            tpt_task: config.tpt_task.filter(|_| config.paging.is_tpt()),
        };
        let mut scheme = AnyScheme::new(&mut machine, config)?;
        let kernel = dispatch!(&mut scheme, s => s.with_pvops(&mut machine, |pv| Kernel::boot(kernel_config, pv)))?;
        Ok(System {
            machine,
            kernel,
            scheme,
            foreign_accesses: 0,
        })
    }

    /// The paging scheme the system runs.
    pub fn paging(&self) -> Paging {
        dispatch!(&self.scheme, s => s.paging())
    }

    /// The MMU, for its counters and structure statistics.
    pub fn mmu(&self) -> &Mmu {
        &self.machine.mmu
    }

    /// The cache hierarchy, to open or close its reference stream (the engine's memory
    /// pipeline).
    pub fn memory_mut(&mut self) -> &mut MemoryHierarchy {
        self.machine.mmu.memory_mut()
    }

    /// The kernel model, for its processes and counters.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The VM, under virtualized schemes (`None` natively).
    pub fn vm(&self) -> Option<&Vm> {
        dispatch!(&self.scheme, s => s.vm())
    }

    /// Host memory: frames, table bytes and memory tags.
    pub fn host_memory(&self) -> &HostMemory {
        &self.machine.mem
    }

    /// The scheme itself, for what only one scheme has.
    pub fn scheme(&self) -> &AnyScheme {
        &self.scheme
    }

    /// The shadow MMU, under schemes that keep shadow tables.
    pub fn shadow(&self) -> Option<&ShadowMmu> {
        dispatch!(&self.scheme, s => s.shadow_mmu())
    }

    /// The host-address tables the guest builds, under PV (machine-frame tables) and TPT
    /// (devirt copies).
    pub fn direct_tables(&self) -> Option<&DirectTables> {
        dispatch!(&self.scheme, s => s.direct_tables())
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
        let direct = self.direct_tables().ok_or(SimError::Config(
            "the isolation probe needs --paging pv, tpt or tpt-prototype".into(),
        ))?;
        // The devirt tables of the running process, walked by the guest in software.
        let pgd = self.kernel.pgd();
        let mut table = direct.copy_of(pgd).ok_or(SimError::Config(
            "the running process is not a TPT process".into(),
        ))?;
        let Machine { mem, mmu } = &mut self.machine;
        let levels = mmu.levels();
        let mut at = None;
        for l in (1..=levels).rev() {
            let slot =
                table.addr_at(((va.raw() >> crate::hw::x86::walker::level_shift(l)) & 0x1ff) * 8);
            let entry = mem.read_u64(slot);
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
        let foreign = mem.alloc(PageSize::Size4K)?;
        mem.write_u64(
            slot,
            (entry & !crate::hw::x86::pte::FRAME_MASK) | foreign.addr().raw(),
        );
        mmu.flush_all();
        let data_before = mmu
            .memory()
            .stats()
            .total(crate::hw::cache::Requester::Data);
        let reached = match mmu.access(mem, va, write) {
            Ok(hpa) => hpa.frame() == foreign || !mem.tags().owned(hpa.frame().raw()),
            Err(_) => {
                mmu.memory()
                    .stats()
                    .total(crate::hw::cache::Requester::Data)
                    != data_before
            }
        };
        mem.write_u64(slot, entry);
        mmu.flush_all();
        mem.free(foreign, PageSize::Size4K);
        self.foreign_accesses += reached as u64;
        Ok(reached)
    }

    /// The host moves the page backing what `va` maps in the running process (migration,
    /// compaction): the hypervisor copies it, updates the p2m and the memory tags, and
    /// flushes every TLB; under TPT it refreshes `gfn_to_hfn` and notifies the guest, which
    /// rewrites the devirt entries that named the old page. Modeled under nested paging and
    /// TPT (see [`Scheme::host_remap`]).
    pub fn host_remap(&mut self, va: Gva) -> Result<(), SimError> {
        let pid = self.kernel.current();
        let (first, size, _) = self.kernel_lookup(pid, va).ok_or_else(|| {
            SimError::Config(format!(
                "host remap of {va:?}: the page is not mapped and touched in process {pid}"
            ))
        })?;
        let gfn =
            Gfn::new(first.raw() + ((va.raw() & (size.bytes() - 1)) >> crate::addr::PAGE_SHIFT));
        let paging = self.paging();
        if !paging.traits().host_remap {
            let able: Vec<&str> = Paging::ALL
                .iter()
                .filter(|p| p.traits().host_remap)
                .map(|p| p.name())
                .collect();
            let list = match able.split_last() {
                Some((last, rest)) if !rest.is_empty() => {
                    format!("{} and {last}", rest.join(", "))
                }
                _ => able.join(""),
            };
            return Err(SimError::Config(format!(
                "host remapping is modeled under {list}, not {}",
                paging.name()
            )));
        }
        dispatch!(&mut self.scheme, s => s.host_remap(&mut self.machine, gfn))
    }

    /// Back all guest memory before the workload runs, as `echo 1 > /sys/kernel/devirt` does
    /// in the TPT artifact (the guest touches every frame, so `gfn_to_hfn` is full and no
    /// devirt entry is copied from an empty slot). Each backing page is one EPT violation.
    /// Without a hypervisor there is nothing to back.
    pub fn pretouch_guest_memory(&mut self) -> Result<(), SimError> {
        let Some(vm) = dispatch!(&mut self.scheme, s => s.vm_mut()) else {
            return Ok(());
        };
        let mem = &mut self.machine.mem;
        let mut gfn = 0;
        while gfn < vm.guest_frames() {
            vm.touch(mem, Gfn::new(gfn))?;
            // Just backed: the page that backs it says how far to skip.
            let size = vm
                .backing_page(mem, Gfn::new(gfn))
                .unwrap_or(PageSize::Size4K);
            gfn = (gfn | (size.frames() - 1)) + 1;
        }
        Ok(())
    }

    /// What host remapping did so far (zero without a hypervisor).
    pub fn remap_counters(&self) -> RemapCounters {
        self.vm().map(|vm| *vm.remap_counters()).unwrap_or_default()
    }

    /// Isolation-probe accesses that reached a frame the VM does not own.
    pub fn foreign_accesses(&self) -> u64 {
        self.foreign_accesses
    }

    /// Exits so far (none on a native machine).
    pub fn exits(&self) -> ExitCounters {
        self.vm().map(|vm| *vm.exits()).unwrap_or_default()
    }

    /// A system call of the running process whose kernel work is not modeled: its entry and
    /// return, as the scheme charges them.
    pub fn plain_syscall(&mut self) -> Result<(), SimError> {
        self.syscall(|_, _| Ok(()))
    }

    /// mmap in the running process.
    pub fn mmap(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), SimError> {
        self.syscall(|k, _| k.mmap(start, len, writable))
    }

    /// munmap in the running process.
    pub fn munmap(&mut self, start: Gva, len: u64) -> Result<(), SimError> {
        self.syscall(|k, pv| k.munmap(pv, start, len))
    }

    /// mprotect in the running process.
    pub fn mprotect(&mut self, start: Gva, len: u64, writable: bool) -> Result<(), SimError> {
        self.syscall(|k, pv| k.mprotect(pv, start, len, writable))
    }

    /// madvise(MADV_DONTNEED) in the running process.
    pub fn madvise_dontneed(&mut self, start: Gva, len: u64) -> Result<(), SimError> {
        self.syscall(|k, pv| k.madvise_dontneed(pv, start, len))
    }

    /// The running process forks; returns the child's pid.
    pub fn fork(&mut self) -> Result<Pid, SimError> {
        self.syscall(|k, pv| k.fork(pv))
    }

    /// Context switch to `pid` (the running process blocks in a system call; `pid` returns
    /// from its own).
    pub fn switch_to(&mut self, pid: Pid) -> Result<(), SimError> {
        self.syscall(|k, pv| k.switch_to(pv, pid))
    }

    /// The running process exits and `next` runs.
    pub fn exit(&mut self, next: Pid) -> Result<(), SimError> {
        self.syscall(|k, pv| k.exit(pv, next))
    }

    /// A timer interrupt while the running process computes: what the scheme pays for the
    /// tick (its exits or hypercalls, the entry's), then entry and return.
    pub fn timer_tick(&mut self) -> Result<(), SimError> {
        dispatch!(&mut self.scheme, s => {
            s.kernel_entry(&self.kernel);
            s.timer_interrupt(&mut self.machine);
        });
        self.with_pvops(|k, pv| {
            k.enter(pv, EntryKind::Interrupt)?;
            k.leave(pv)
        })
    }

    /// The running process execs `program`, then starts: it reads its text and writes its
    /// data and stack, page by page, through the MMU.
    pub fn exec(&mut self, program: &Program) -> Result<(), SimError> {
        self.syscall(|k, pv| k.exec(pv, program))?;
        for region in program.image {
            for offset in (0..region.len).step_by(crate::addr::PAGE_SIZE as usize) {
                self.access(Gva::new(region.start.raw() + offset), region.writable)?;
            }
        }
        Ok(())
    }

    /// The page `va` maps to in process `pid`, as the kernel's tables say: (first guest
    /// frame, page size, writable). Reads the guest's own tables, not through the scheme's
    /// backend, so a lookup never traps into a shadow or PV hypervisor.
    pub fn kernel_lookup(&mut self, pid: Pid, va: Gva) -> Option<(Gfn, PageSize, bool)> {
        let Machine { mem, mmu } = &mut self.machine;
        let found = match dispatch!(&mut self.scheme, s => s.vm_mut()) {
            None => self.kernel.lookup(&mut NativePvOps { mem, mmu }, pid, va),
            Some(vm) => self
                .kernel
                .lookup(&mut NestedPvOps { mem, mmu, vm }, pid, va),
        };
        found.ok().flatten()
    }

    /// The host frame backing the kernel's frame `gfn` (identity without a hypervisor).
    pub fn host_frame(&self, gfn: Gfn) -> Option<Hfn> {
        match self.vm() {
            None => Some(gfn.identity_host()),
            Some(vm) => vm.translate(&self.machine.mem, gfn),
        }
    }

    /// Prefetch, in the host, what the coming accesses `vas` will touch (no simulated
    /// effect; see [`Mmu::prefetch`]).
    pub fn prefetch(&self, vas: &[Gva]) {
        self.machine.mmu.prefetch(&self.machine.mem, vas);
    }

    /// One user-mode data access, with whatever faults it takes handled on the way; returns
    /// the host-physical address accessed. Inlined into the engine's batch loop: its result
    /// is large (a [`SimError`]), so a call would return it through memory on every access.
    #[inline(always)]
    pub fn access(&mut self, va: Gva, write: bool) -> Result<Hpa, SimError> {
        match self.machine.mmu.access(&mut self.machine.mem, va, write) {
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
            match self.machine.mmu.access(&mut self.machine.mem, va, write) {
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
        if fault.kind == FaultKind::TagViolation {
            return Err(SimError::TagViolation {
                va: Gva::new(fault.addr),
            });
        }
        match fault.dimension {
            Dimension::Guest => {
                dispatch!(&mut self.scheme, s => s.guest_fault(&mut self.machine, &mut self.kernel, Gva::new(fault.addr), fault.write))
            }
            Dimension::Ept => {
                let vm = dispatch!(&mut self.scheme, s => s.vm_mut())
                    .ok_or(SimError::Config("EPT fault without a VM".into()))?;
                Ok(vm.handle_ept_violation(&mut self.machine.mem, Gpa::new(fault.addr))?)
            }
        }
    }

    /// A system call of the running process: the scheme's cost of the round trip, then
    /// entry, `f`, and the return to whichever process runs afterwards (`os::entry`).
    fn syscall<R>(
        &mut self,
        f: impl FnOnce(&mut Kernel, &mut dyn PvOps) -> Result<R, OsError>,
    ) -> Result<R, SimError> {
        dispatch!(&mut self.scheme, s => s.kernel_entry(&self.kernel));
        self.with_pvops(|k, pv| {
            k.enter(pv, EntryKind::Syscall)?;
            let out = f(k, pv)?;
            k.leave(pv)?;
            Ok(out)
        })
    }

    /// Run kernel code with this scheme's pv-ops backend.
    fn with_pvops<R>(
        &mut self,
        f: impl FnOnce(&mut Kernel, &mut dyn PvOps) -> Result<R, OsError>,
    ) -> Result<R, SimError> {
        let kernel = &mut self.kernel;
        Ok(dispatch!(&mut self.scheme, s => s.with_pvops(&mut self.machine, |pv| f(kernel, pv)))?)
    }
}
