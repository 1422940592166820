//! Why the guest left for the host on e500 (no hardware virtualization: the guest kernel
//! runs in the host's user mode, so every privileged instruction, system call and exception
//! traps to the host). The classes are the ones KVM/e500 reports in its exit statistics
//! (Linux `arch/powerpc/kvm/timing.h`: EMULATED_MFMSR, ..., DTLB_REAL_MISS, DTLB_VIRT_MISS,
//! SYSCALL, ...).

macro_rules! e500_exits {
    ($( $(#[doc = $doc:literal])+ $variant:ident => $name:literal, )+) => {
        /// Why control left the e500 guest for the host.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum E500Exit {
            $( $(#[doc = $doc])+ $variant, )+
        }

        impl E500Exit {
            /// How many reasons there are.
            pub const COUNT: usize = [$($name),+].len();
            /// Every reason, in report order; `ALL[r as usize] == r`.
            pub const ALL: [E500Exit; Self::COUNT] = [$(E500Exit::$variant),+];

            /// The name in reports, JSON (`exits_by_reason`) and profile keys.
            pub fn name(self) -> &'static str {
                match self { $( E500Exit::$variant => $name, )+ }
            }

            /// The reason called `name`.
            pub fn from_name(name: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|r| r.name() == name)
            }
        }
    };
}

e500_exits! {
    /// mfmsr, emulated.
    Mfmsr => "mfmsr",
    /// mtmsr, emulated.
    Mtmsr => "mtmsr",
    /// mfspr of a privileged SPR, emulated.
    Mfspr => "mfspr",
    /// mtspr of a privileged SPR, emulated.
    Mtspr => "mtspr",
    /// wrtee or wrteei, emulated.
    Wrtee => "wrtee",
    /// rfi (and rfci/rfmci/rfdi), emulated.
    Rfi => "rfi",
    /// tlbwe: KVM updates its copy of the guest TLB (and the shadow).
    Tlbwe => "tlbwe",
    /// tlbsx, emulated on KVM's copy of the guest TLB.
    Tlbsx => "tlbsx",
    /// tlbre, emulated on KVM's copy of the guest TLB.
    Tlbre => "tlbre",
    /// tlbivax (and tlbsync): KVM invalidates its copy and the shadows.
    Tlbivax => "tlbivax",
    /// Another privileged instruction (dcbi, mfpmr, mtpmr).
    OtherPriv => "other_priv",
    /// A TLB miss the guest's own TLB cannot translate either: reflected to the guest's
    /// miss handler (KVM: DTLB_REAL_MISS / ITLB_REAL_MISS, booke.c `kvmppc_handle_exit`).
    GuestTlbMiss => "guest_tlb_miss",
    /// A host TLB miss where the guest's TLB has the mapping and only the shadow is
    /// missing: the host installs a shadow entry (KVM: DTLB_VIRT_MISS / ITLB_VIRT_MISS).
    HostTlbMiss => "host_tlb_miss",
    /// A guest load or store to a device register: the guest TLB maps it, but the
    /// guest-physical page is no RAM (`kvm_is_visible_gfn` false), so KVM never shadows it
    /// and emulates every access (`kvmppc_emulate_mmio`; KVM: MMIO_EXITS).
    Mmio => "mmio",
    /// A data or instruction storage interrupt (permission), reflected to the guest.
    Storage => "dsi_isi",
    /// `sc` from guest user mode, reflected to the guest kernel.
    Syscall => "syscall",
    /// Another exception reflected to the guest (program, decrementer, external, ...).
    OtherException => "other_exception",
    /// A paravirtual hypercall (`sc 1` with the ePAPR hypercall token).
    Hypercall => "hypercall",
    /// LABT's read/write tracing: a guest data access to a page whose shadow is
    /// execute-only, emulated from the original bytes.
    Tracing => "tracing",
}

/// Exit counts by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct E500ExitCounts(pub [u64; E500Exit::COUNT]);

impl E500ExitCounts {
    /// Counts one exit.
    pub fn add(&mut self, reason: E500Exit, n: u64) {
        self.0[reason as usize] += n;
    }

    /// The count of one reason.
    pub fn get(&self, reason: E500Exit) -> u64 {
        self.0[reason as usize]
    }

    /// All exits.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// `(name, count)` for every reason with a nonzero count.
    pub fn nonzero(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        E500Exit::ALL
            .into_iter()
            .map(|r| (r.name(), self.get(r)))
            .filter(|&(_, n)| n > 0)
    }
}

impl std::ops::Sub for E500ExitCounts {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        let mut out = self;
        for (a, b) in out.0.iter_mut().zip(o.0) {
            *a -= b;
        }
        out
    }
}
