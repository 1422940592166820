//! Software prefetch of the simulator's own memory.
//!
//! Simulating a random-access workload means reading the simulator's own tables (table
//! pages, cache tag arrays) at random, and those reads miss the host's caches. The engine
//! looks a few accesses ahead and asks the MMU to prefetch what they will touch (see
//! [`crate::hw::mmu::Mmu::prefetch`]), so the host overlaps those misses. Prefetching is a
//! hint: it changes no simulated state and no result, only the simulator's speed.

/// Ask the host to bring the line holding `ptr` into its caches.
#[inline(always)]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint. It never faults, whatever the address, and changes no
    // architectural state, so any pointer value is fine.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr as *const i8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}
