//! Stores that go around the host's caches, for what one thread writes and another reads.
//!
//! The memory pipeline's chunks (`crate::hw::pipeline`) are written on the translating
//! thread, read and rewritten on the cache thread, and then written again by translation. A
//! plain store into a line another core last wrote must first take the line back from
//! that core; where the two cores share no cache (on one host, a round trip of about 500 ns
//! against 70 ns, docs/model.md, "Speed of the simulator") those ownership requests slowed
//! translation by about 12%, prefetched or not. A non-temporal store (MOVNTI) asks for no
//! line: the words gather in a write-combining buffer and go to memory as whole lines,
//! whatever other caches held them. Nothing here changes a simulated result.

/// Store `value` into `slot` without taking its line into this core's caches. Until
/// [`fence`], other threads (and the memory model) may not see it: fence before handing the
/// memory to another thread or reading it back.
#[inline(always)]
pub fn store(slot: &mut u64, value: u64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `slot` is a valid, aligned, exclusively borrowed `u64`, and MOVNTI is in the
    // x86-64 baseline (SSE2). Its weaker ordering is what `fence` is for.
    unsafe {
        core::arch::x86_64::_mm_stream_si64((slot as *mut u64).cast::<i64>(), value as i64)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        *slot = value;
    }
}

/// Order every earlier [`store`] of this thread before the stores after it (SFENCE), such as
/// the release that hands the memory to another thread.
#[inline(always)]
pub fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SFENCE has no preconditions (SSE, in the x86-64 baseline).
    unsafe {
        core::arch::x86_64::_mm_sfence()
    }
}

#[cfg(test)]
mod tests {
    /// Words stored around the caches read back, after the fence, as plain stores would,
    /// from this thread and from another one.
    #[test]
    fn streamed_words_read_back_after_the_fence() {
        let mut words = vec![0u64; 1024];
        for (i, word) in words.iter_mut().enumerate() {
            super::store(word, i as u64 * 3 + 1);
        }
        super::fence();
        let expected: Vec<u64> = (0..1024).map(|i| i * 3 + 1).collect();
        assert_eq!(words, expected);
        let seen = std::thread::spawn(move || words).join().unwrap();
        assert_eq!(seen, expected);
    }
}
