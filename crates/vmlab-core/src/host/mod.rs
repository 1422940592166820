//! The simulator's own speed: code that makes the host run the simulation faster without
//! changing any simulated result. SIMD compares for set lookups (`simd`), the simulator's big
//! arrays on 2 MiB host pages (`hugepages`), and the look-ahead that prefetches, in the host,
//! the tables the next accesses will walk (`prefetch`), and stores that bypass this core's
//! caches for what the other thread reads (`nontemporal`). Nothing here models hardware.

pub(crate) mod hugepages;
pub(crate) mod nontemporal;
pub(crate) mod prefetch;
pub(crate) mod simd;
