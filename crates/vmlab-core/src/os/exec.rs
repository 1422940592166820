//! exec: replace the current process's address space with a small program image.

use crate::addr::Gva;
use crate::os::kernel::{Kernel, OsError};
use crate::os::mm::{Vma, VmaList};
use crate::os::pvops::PvOps;

/// One region of a program image, and how a starting program touches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageRegion {
    /// Where the loader maps it (4 KiB aligned).
    pub start: Gva,
    /// Its size in bytes (a multiple of 4 KiB).
    pub len: u64,
    /// Mapped read-write and written page by page at start-up; otherwise read-only and read.
    pub writable: bool,
}

/// A program as exec sees it: its name (what TPT's task_name matches) and its image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    /// The program's name, matched against TPT's mark.
    pub name: &'static str,
    /// The regions exec maps, in order.
    pub image: &'static [ImageRegion],
}

/// lmbench's `/tmp/hello`, which `lat_proc exec` runs: the small image below.
pub const HELLO: Program = Program {
    name: "hello",
    image: &SMALL_IMAGE,
};

/// A small static program as the loader maps it: text (read-only, read at start-up), data and
/// stack (written at start-up). Sizes of a minimal static binary (a few pages each), not
/// measured; the probe's fork+exec cost covers the kernel's work.
pub const SMALL_IMAGE: [ImageRegion; 3] = [
    ImageRegion {
        start: Gva::new(0x40_0000),
        len: 64 << 10,
        writable: false,
    },
    ImageRegion {
        start: Gva::new(0x60_0000),
        len: 16 << 10,
        writable: true,
    },
    ImageRegion {
        start: Gva::new(0x7fff_fff0_0000),
        len: 32 << 10,
        writable: true,
    },
];

impl Kernel {
    /// The current process execs `program`: a new address space replaces the old one, which
    /// is torn down. The new one runs with TPT if TPT's mark names the program. The caller
    /// then touches the image as the starting program does (the touches are the program's
    /// own accesses, through the MMU).
    pub fn exec<P: PvOps + ?Sized>(
        &mut self,
        pv: &mut P,
        program: &Program,
    ) -> Result<(), OsError> {
        let mut vmas = VmaList::default();
        for r in program.image {
            vmas.insert(Vma {
                start: r.start,
                end: Gva::new(r.start.raw() + r.len),
                writable: r.writable,
            })
            .map_err(|existing| OsError::Overlap {
                start: r.start,
                len: r.len,
                existing: existing.start,
            })?;
        }
        let pgd = self.alloc_table(pv, self.config.levels)?;
        let devirt = self.take_tpt_mark(program.name);
        pv.mm_created(pgd, devirt)?;
        self.pti_alloc_user_pgd(pv, pgd, devirt)?;
        let current = self.current;
        let process = self.proc_mut(current)?;
        process.devirt = devirt;
        let old_pgd = std::mem::replace(&mut process.pgd, pgd);
        let old_vmas = std::mem::replace(&mut process.vmas, vmas);
        let pcid = process.pcid;
        pv.write_cr3(pgd, pcid, true)?;
        self.counters.tlb_flushes += 1;
        // A new mm on this PCID: the user side is flushed on the way out (switch_mm's
        // invalidate_user_asid).
        self.invalidate_user_pcid();
        self.use_kernel_half(pv, &crate::os::kernel_half::KernelRegion::ALL)?;
        self.destroy_mm(pv, old_pgd, &old_vmas)?;
        self.counters.execs += 1;
        Ok(())
    }
}
