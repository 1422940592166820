//! Why the guest left for the host on e500 (no hardware virtualization: the guest kernel
//! runs in the host's user mode, so every privileged instruction, system call and exception
//! traps to the host). The classes are the ones KVM/e500 reports in its exit statistics
//! (Linux `arch/powerpc/kvm/timing.h`: EMULATED_MFMSR, ..., DTLB_REAL_MISS, DTLB_VIRT_MISS,
//! SYSCALL, ...).

crate::named_enum! {
    /// Why control left the e500 guest for the host.
    pub enum E500Exit {
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
}

/// Exit counts by reason.
pub type E500ExitCounts = crate::stats::named::Counters<E500Exit, { E500Exit::COUNT }>;
