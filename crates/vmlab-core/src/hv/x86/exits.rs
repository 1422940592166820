//! VM exits, counted by reason. Each reason has a cost in the machine profile, under
//! `[exits]`, keyed by the reason's name.
//!
//! The reasons are declared once, in the `named_enum!` list below: adding one is one line
//! there (its doc, variant and name) plus its cost in every profile (`profiles/*.toml`).
//! Reports, JSON (`exits_by_reason`), the profile's `[exits]` table and the cost model all
//! follow the list.

crate::named_enum! {
    /// Why control left the guest for the hypervisor.
    pub enum ExitReason {
        /// A guest access to a guest-physical frame the EPT does not map (first touch).
        EptViolation => "ept_violation",
        /// Shadow paging: a guest write to a write-protected (shadowed) guest page table,
        /// emulated by the hypervisor.
        WriteProtect => "write_protect",
        /// Shadow paging: a fault in the shadow tables; the hypervisor walks the guest tables
        /// and installs shadow entries (or finds the guest's own fault).
        ShadowFault => "shadow_fault",
        /// Shadow paging: a guest page fault the hypervisor reflects into the guest.
        PfReflect => "pf_reflect",
        /// Shadow paging: a CR3 load, trapped to switch shadow roots.
        Cr3Load => "cr3_load",
        /// Shadow paging: a trapped INVLPG.
        Invlpg => "invlpg",
        /// Shadow paging: a trapped INVPCID (with EPT off KVM sets "INVLPG exiting", which makes
        /// INVPCID exit too); Linux under KPTI flushes a user page with it.
        Invpcid => "invpcid",
        /// The TPT prototype: a hypercall switching a TPT process between its host-address
        /// tables and the kernel's nested paging.
        TptSwitch => "tpt_switch",
        /// Paravirtual paging: a hypercall (mmu_update or a multicall of them, a CR3 switch, a
        /// TLB flush).
        Hypercall => "hypercall",
        /// Paravirtual paging: a system call of the guest bouncing through the hypervisor (a
        /// 64-bit PV kernel runs in ring 3).
        PvBounce => "pv_bounce",
        /// Paravirtual paging: a guest page fault, taken by Xen (handle_PF finds nothing of its
        /// own to fix) and bounced to the guest kernel's handler with CR2 saved for it.
        PvPageFault => "pv_page_fault",
        /// Hardware virtualization: the guest's timer tick, an exit when the emulated LAPIC timer
        /// fires (VMX preemption timer or the host's hrtimer) and the interrupt's injection.
        Timer => "timer",
        /// Hardware virtualization: the guest re-arms its LAPIC timer after a tick (WRMSR of
        /// IA32_TSC_DEADLINE, intercepted; KVM's fastpath handles it).
        TscDeadline => "tsc_deadline",
    }
}

/// Exit counts by reason.
pub type ExitCounters = crate::stats::named::Counters<ExitReason, { ExitReason::COUNT }>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_reason() {
        let mut c = ExitCounters::default();
        c.record(ExitReason::EptViolation);
        let snapshot = c;
        c.record(ExitReason::EptViolation);
        assert_eq!(c.get(ExitReason::EptViolation), 2);
        assert_eq!(c.since(&snapshot).total(), 1);
        assert_eq!(c.iter().count(), ExitReason::ALL.len());
        assert!(ExitReason::ALL
            .iter()
            .enumerate()
            .all(|(i, &r)| r as usize == i));
    }

    #[test]
    fn names_are_unique_keys_and_docs_are_one_line() {
        for r in ExitReason::ALL {
            assert_eq!(ExitReason::from_name(r.name()), Some(r));
            let name = r.name();
            assert!(
                !name.is_empty()
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name} is a bare TOML key"
            );
            assert!(
                !r.doc().is_empty() && !r.doc().contains('\n'),
                "{:?}",
                r.doc()
            );
        }
        assert_eq!(ExitReason::from_name("vmcall"), None);
        assert_eq!(
            ExitReason::EptViolation.doc(),
            "A guest access to a guest-physical frame the EPT does not map (first touch)."
        );
    }
}
