//! VM exits, counted by reason. Each reason has a cost in the machine profile.

/// Why control left the guest for the hypervisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExitReason {
    /// A guest access to a guest-physical frame the EPT does not map (first touch).
    EptViolation,
    /// Shadow paging: a guest write to a write-protected (shadowed) guest page table,
    /// emulated by the hypervisor.
    WriteProtect,
    /// Shadow paging: a fault in the shadow tables; the hypervisor walks the guest tables
    /// and installs shadow entries (or finds the guest's own fault).
    ShadowFault,
    /// Shadow paging: a guest page fault the hypervisor reflects into the guest.
    PfReflect,
    /// Shadow paging: a CR3 load, trapped to switch shadow roots.
    Cr3Load,
    /// Shadow paging: a trapped INVLPG.
    Invlpg,
    /// The TPT prototype: a hypercall switching a TPT process between its host-address
    /// tables and the kernel's nested paging.
    TptSwitch,
    /// Paravirtual paging: a hypercall (mmu_update or a multicall of them, a CR3 switch, a
    /// TLB flush).
    Hypercall,
    /// Paravirtual paging: a system call or fault of the guest bouncing through the
    /// hypervisor (a 64-bit PV kernel runs in ring 3).
    PvBounce,
}

impl ExitReason {
    pub const ALL: [ExitReason; 9] = [
        ExitReason::EptViolation,
        ExitReason::WriteProtect,
        ExitReason::ShadowFault,
        ExitReason::PfReflect,
        ExitReason::Cr3Load,
        ExitReason::Invlpg,
        ExitReason::TptSwitch,
        ExitReason::Hypercall,
        ExitReason::PvBounce,
    ];

    /// The name used in reports and JSON (`exits_by_reason`).
    pub fn name(self) -> &'static str {
        match self {
            ExitReason::EptViolation => "ept_violation",
            ExitReason::WriteProtect => "write_protect",
            ExitReason::ShadowFault => "shadow_fault",
            ExitReason::PfReflect => "pf_reflect",
            ExitReason::Cr3Load => "cr3_load",
            ExitReason::Invlpg => "invlpg",
            ExitReason::TptSwitch => "tpt_switch",
            ExitReason::Hypercall => "hypercall",
            ExitReason::PvBounce => "pv_bounce",
        }
    }
}

/// Exit counts by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExitCounters {
    counts: [u64; ExitReason::ALL.len()],
}

impl ExitCounters {
    pub fn record(&mut self, reason: ExitReason) {
        self.counts[reason as usize] += 1;
    }

    pub fn get(&self, reason: ExitReason) -> u64 {
        self.counts[reason as usize]
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// (reason, count) for every reason, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = (ExitReason, u64)> + '_ {
        ExitReason::ALL.iter().map(|&r| (r, self.get(r)))
    }

    pub fn since(&self, earlier: &ExitCounters) -> ExitCounters {
        let mut out = *self;
        for (o, e) in out.counts.iter_mut().zip(earlier.counts) {
            *o -= e;
        }
        out
    }
}

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
}
