//! Timer ticks: while the workload runs, the guest kernel takes a timer interrupt every
//! 1/HZ of simulated time (the profile's `kernel.hz`), and each costs what it costs under the
//! scheme (`System::timer_tick`: exits under hardware virtualization, an event and a
//! hypercall under PV, KPTI's CR3 writes, the kernel's handler).
//!
//! Simulated time is the cost model's: the cycles of every event since the end of set-up
//! (ticks are not delivered during set-up, whose time no report gives). A tick that falls
//! due during a stretch of accesses is delivered at the next point where the simulator
//! stops for the kernel: an OS operation, or the end of the stretch (a warm-up or measured
//! window, or the whole measured phase). Each tick costs the same wherever it lands; only
//! its effect on the TLB and caches is placed a little late.

use super::{interval_events, Snapshot};
use crate::cost::Profile;
use crate::scheme::{SimError, System};

/// Delivers the ticks that simulated time says are due.
pub(super) struct Ticker<'a> {
    profile: &'a Profile,
    instructions_per_access: f64,
    dependent: bool,
    /// The counters when ticking began.
    origin: Snapshot,
    /// Cycles between two ticks (infinite with `hz = 0`).
    period: f64,
    /// Ticks delivered so far.
    ticks: u64,
    /// Measured accesses run since `origin` (their instructions are time too).
    accesses: u64,
    /// Instructions the workload has retired, when it counts them.
    retired: u64,
}

impl<'a> Ticker<'a> {
    /// Ticking from the state of `sys` now, at the profile's rate.
    pub(super) fn new(
        profile: &'a Profile,
        instructions_per_access: f64,
        dependent: bool,
        sys: &System,
        retired: u64,
    ) -> Ticker<'a> {
        let hz = profile.kernel.hz;
        Ticker {
            profile,
            instructions_per_access,
            dependent,
            origin: Snapshot::take(sys, retired),
            period: if hz > 0.0 {
                profile.machine.frequency_ghz * 1e9 / hz
            } else {
                f64::INFINITY
            },
            ticks: 0,
            accesses: 0,
            retired,
        }
    }

    /// `n` more accesses ran, and the workload has retired `retired` instructions.
    pub(super) fn ran(&mut self, n: u64, retired: u64) {
        self.accesses += n;
        self.retired = retired;
    }

    /// Deliver every tick due by now (a tick's own cost can make the next one due).
    pub(super) fn catch_up(&mut self, sys: &mut System) -> Result<(), SimError> {
        if !self.period.is_finite() {
            return Ok(());
        }
        loop {
            let events = interval_events(
                &self.origin,
                &Snapshot::take(sys, self.retired),
                self.accesses,
                self.instructions_per_access,
            );
            let cycles = self.profile.cycles(&events, self.dependent).total;
            let due = (cycles / self.period) as u64;
            if due <= self.ticks {
                return Ok(());
            }
            for _ in self.ticks..due {
                sys.timer_tick()?;
            }
            self.ticks = due;
        }
    }
}
