//! The guest's MSR as a replay can know it: from the values the trace records (rfi's SRR1,
//! mtmsr's and wrtee's source register, wrteei's immediate) and the architected change at an
//! interrupt (Book E: a base-class interrupt keeps MSR[CE, ME, DE] and clears the rest; a
//! critical one keeps ME only). The paravirtual templates compare against it.

use super::templates::MSR_EE;

/// MSR[CE].
pub const MSR_CE: u32 = 1 << 17;
/// MSR[ME].
pub const MSR_ME: u32 = 1 << 12;
/// MSR[DE].
pub const MSR_DE: u32 = 1 << 9;

/// The tracked MSR; `None` after a write whose value the trace does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GuestMsr {
    value: Option<u32>,
}

impl GuestMsr {
    /// Unknown until the first event that sets it.
    pub fn new() -> Self {
        GuestMsr::default()
    }

    /// The MSR, if known.
    pub fn get(self) -> Option<u32> {
        self.value
    }

    /// A write of a whole value (mtmsr, or rfi's SRR1); `None` when the trace lacks it.
    pub fn set(&mut self, value: Option<u32>) {
        self.value = value;
    }

    /// wrtee/wrteei: only MSR[EE] changes.
    pub fn set_ee(&mut self, on: bool) {
        if let Some(v) = self.value.as_mut() {
            *v = if on { *v | MSR_EE } else { *v & !MSR_EE };
        }
    }

    /// An interrupt was taken with `srr1` the MSR before it; `critical` for the critical
    /// class (critical input, watchdog, debug).
    pub fn interrupt(&mut self, srr1: u32, critical: bool) {
        let kept = if critical {
            MSR_ME
        } else {
            MSR_CE | MSR_ME | MSR_DE
        };
        self.value = Some(srr1 & kept);
    }
}
