//! How long a cache line takes to travel from one thread to another and back. The memory
//! pipeline's two threads hand their chunks over through memory, and under a hypervisor
//! this moves while the VM runs: where the host puts the two vCPUs (on cores that share a
//! cache or not) is invisible from inside but for this. On one host, a build that wrote its
//! chunks with plain stores ran nested at 3.8 M accesses/s with a round trip of 70 ns and
//! at 3.0 M/s with one of 500 ns, minutes apart; written around the caches they run at the
//! same speed at either (docs/model.md, "How it got here").

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Round trips per batch, and batches: the fastest batch's mean is the figure, since noise
/// only ever slows a batch down.
const ROUND_TRIPS: u64 = 1_000;
const BATCHES: usize = 3;
/// A bound on the whole probe, for a host too busy to run both threads at once (then each
/// round trip waits for a scheduler tick): it gives up rather than hold the bench up.
const DEADLINE: Duration = Duration::from_millis(200);
/// The value that tells the responder to stop.
const STOP: u64 = u64::MAX;

/// A line of its own, so that nothing else shares its traffic.
#[repr(align(128))]
struct Line(AtomicU64);

/// The mean time of a round trip of a cache line between this thread and a second one
/// (the fastest of a few batches); `None` with fewer than two CPUs or on a host too busy to
/// finish in time.
pub fn thread_round_trip() -> Option<Duration> {
    if std::thread::available_parallelism().map_or(1, |n| n.get()) < 2 {
        return None;
    }
    let line = Line(AtomicU64::new(0));
    let deadline = Instant::now() + DEADLINE;
    std::thread::scope(|scope| {
        // The responder turns each odd value into the next even one, until told to stop. A
        // compare-exchange, so that a stop written meanwhile is never overwritten.
        scope.spawn(|| loop {
            let value = line.0.load(Ordering::Acquire);
            if value == STOP {
                break;
            }
            if value & 1 == 1 {
                let _ =
                    line.0
                        .compare_exchange(value, value + 1, Ordering::AcqRel, Ordering::Acquire);
            } else {
                std::hint::spin_loop();
            }
        });
        let mut fastest: Option<Duration> = None;
        let mut value = 0;
        'batches: for _ in 0..BATCHES {
            let start = Instant::now();
            for _ in 0..ROUND_TRIPS {
                line.0.store(value + 1, Ordering::Release);
                let mut spins = 0u32;
                while line.0.load(Ordering::Acquire) != value + 2 {
                    std::hint::spin_loop();
                    spins = spins.wrapping_add(1);
                    if spins.is_multiple_of(1024) && Instant::now() > deadline {
                        fastest = None;
                        break 'batches;
                    }
                }
                value += 2;
            }
            let mean = start.elapsed() / ROUND_TRIPS as u32;
            fastest = Some(fastest.map_or(mean, |f| f.min(mean)));
        }
        line.0.store(STOP, Ordering::Release);
        fastest
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_trip_takes_time_but_not_long_with_two_cpus() {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        match thread_round_trip() {
            // Between the caches of two cores (tens to hundreds of nanoseconds), never the
            // zero of a loop that did not wait, nor a scheduler tick's milliseconds per trip
            // that the deadline must cut short.
            Some(trip) => {
                assert!(cpus >= 2);
                assert!(trip > Duration::from_nanos(5), "{trip:?}");
                assert!(trip < Duration::from_micros(200), "{trip:?}");
            }
            // A one-CPU host has no second thread to meet; a busy one may give up.
            None => eprintln!("no round trip measured on {cpus} CPU(s)"),
        }
    }
}
