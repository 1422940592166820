//! Lane-parallel compares for set searches: which lanes of a small fixed-size array hold a
//! value, as a bit mask. Every set-associative structure of the machine (cache sets,
//! translation-cache fingerprints and recency orders) searches its set this way. Sets kept in
//! recency order (the caches' LRU levels, the translation caches) also move their lanes here.
//!
//! On x86-64 these are a handful of SSE2 instructions (a compare and a `pmovmskb`); the
//! compiler does not find that form on its own for a bit-mask result. SSE2 is part of the
//! x86-64 baseline, so this needs no run-time detection. Elsewhere a plain loop does the
//! same. The cache levels' loops (LRU, SRRIP and DRRIP) also have AVX2 forms ([`avx2`]),
//! chosen at run time once per pass over a chunk where the host has AVX2.

/// Bit `i` set when `lanes[i] & and == value`, for the first `N` lanes (`N` is 8 or 16: a
/// set with at most 8 ways compares half the vectors; the other bits are 0).
#[inline]
pub fn masked_eq_mask_u32x16<const N: usize>(lanes: &[u32; 16], and: u32, value: u32) -> u32 {
    const { assert!(N == 8 || N == 16) };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the callee only needs SSE2, which every x86-64 processor has.
    unsafe {
        sse2::masked_eq_mask_u32x16::<N>(lanes, and, value)
    }
    #[cfg(not(target_arch = "x86_64"))]
    lanes[..N]
        .iter()
        .enumerate()
        .fold(0, |m, (i, &l)| m | u32::from(l & and == value) << i)
}

/// For each `values[k]`, bit `i` of the `k`-th mask set when `lanes[i] & and == values[k]`,
/// for the first `N` lanes (8 or 16). Cheaper than one [`masked_eq_mask_u32x16`] per value:
/// the masked lanes are narrowed to bytes once. `and` must be below 128, so they fit a byte.
#[inline]
pub fn masked_eq_masks_u32x16<const N: usize, const K: usize>(
    lanes: &[u32; 16],
    and: u32,
    values: [u32; K],
) -> [u32; K] {
    const { assert!(N == 8 || N == 16) };
    debug_assert!(and < 128);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the callee only needs SSE2, which every x86-64 processor has.
    unsafe {
        sse2::masked_eq_masks_u32x16::<N, K>(lanes, and, values)
    }
    #[cfg(not(target_arch = "x86_64"))]
    values.map(|v| {
        lanes[..N]
            .iter()
            .enumerate()
            .fold(0, |m, (i, &l)| m | u32::from(l & and == v) << i)
    })
}

/// Moves lanes `0..last` one lane up (what lane `last` held is dropped) and puts `value` in
/// lane 0; lanes after `last` keep theirs (`last < N`, with `N` 8 or 16 as above). On lanes in
/// recency order this makes `value` the most recent: `last` is its old lane on a hit, or the
/// least recent lane on a miss.
#[inline]
pub fn move_to_front_u32x16<const N: usize>(lanes: &mut [u32; 16], last: usize, value: u32) {
    const { assert!(N == 8 || N == 16) };
    debug_assert!(last < N);
    #[cfg(target_arch = "x86_64")]
    sse2::move_to_front_u32x16::<N>(lanes, last, value);
    #[cfg(not(target_arch = "x86_64"))]
    {
        lanes.copy_within(0..last, 1);
        lanes[0] = value;
    }
}

/// Bit `16 * g + i` set when lane `i` of group `g` holds `value`, for `G` groups of 16 lanes
/// (`G` at most 4): one mask for a whole set, so a search tests it once.
#[inline(always)]
pub fn eq_mask_u8x16s<const G: usize>(groups: &[[u8; 16]; G], value: u8) -> u64 {
    const { assert!(G <= 4) };
    #[cfg(target_arch = "x86_64")]
    {
        sse2::eq_mask_u8x16s::<G>(groups, value)
    }
    #[cfg(not(target_arch = "x86_64"))]
    groups
        .as_flattened()
        .iter()
        .enumerate()
        .fold(0, |m, (i, &l)| m | u64::from(l == value) << i)
}

/// Moves every lane of the `G` groups one lane up, in order across the groups (the last
/// lane of group `g` enters group `g + 1`; the very last lane is dropped) and puts `value` in
/// lane 0. On lanes in recency order whose tail is unused, this makes `value` the most recent
/// without a blend: a translation cache's fill.
#[inline(always)]
pub fn push_front_u8x16<const G: usize>(lanes: &mut [[u8; 16]; G], value: u8) {
    #[cfg(target_arch = "x86_64")]
    sse2::push_front_u8x16::<G>(lanes, value);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let flat = lanes.as_flattened_mut();
        flat.copy_within(0..flat.len() - 1, 1);
        flat[0] = value;
    }
}

/// [`push_front_u8x16`] for lanes `0..=last` only (across the groups; `last < 16 * G`): what
/// lane `last` held is dropped and lanes after it keep theirs. On lanes in recency order this
/// makes `value` the most recent when `last` is its old lane.
#[inline(always)]
pub fn move_to_front_u8x16<const G: usize>(lanes: &mut [[u8; 16]; G], last: usize, value: u8) {
    debug_assert!(last < 16 * G);
    #[cfg(target_arch = "x86_64")]
    sse2::move_to_front_u8x16::<G>(lanes, last, value);
    #[cfg(not(target_arch = "x86_64"))]
    {
        let flat = lanes.as_flattened_mut();
        flat.copy_within(0..last, 1);
        flat[0] = value;
    }
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use core::arch::x86_64::*;

    /// Lanes `at..at + 4` of `lanes` as one vector.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn load_u32x4(lanes: &[u32; 16], at: usize) -> __m128i {
        let four: &[u32; 4] = lanes[at..at + 4].try_into().unwrap();
        // SAFETY: `four` is 16 readable bytes, and an unaligned load has no alignment
        // requirement.
        unsafe { _mm_loadu_si128(four.as_ptr().cast()) }
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub fn masked_eq_mask_u32x16<const N: usize>(lanes: &[u32; 16], and: u32, value: u32) -> u32 {
        let and = _mm_set1_epi32(and as i32);
        let value = _mm_set1_epi32(value as i32);
        let eq = |at| _mm_cmpeq_epi32(_mm_and_si128(load_u32x4(lanes, at), and), value);
        // Each compare gives 0 or -1 per lane; signed packing keeps that, one byte per lane.
        let lo = _mm_packs_epi32(eq(0), eq(4));
        let hi = if N == 16 {
            _mm_packs_epi32(eq(8), eq(12))
        } else {
            _mm_setzero_si128()
        };
        _mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub fn masked_eq_masks_u32x16<const N: usize, const K: usize>(
        lanes: &[u32; 16],
        and: u32,
        values: [u32; K],
    ) -> [u32; K] {
        let and = _mm_set1_epi32(and as i32);
        let masked = |at| _mm_and_si128(load_u32x4(lanes, at), and);
        // The masked lanes are below 128, so signed packing keeps them: one byte per lane.
        let lo = _mm_packs_epi32(masked(0), masked(4));
        let hi = if N == 16 {
            _mm_packs_epi32(masked(8), masked(12))
        } else {
            _mm_setzero_si128()
        };
        let bytes = _mm_packs_epi16(lo, hi);
        let lanes_mask = (1u32 << N) - 1;
        values.map(|v| {
            _mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(v as i8))) as u32 & lanes_mask
        })
    }

    /// Stores `v` into lanes `at..at + 4` of `lanes`.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn store_u32x4(lanes: &mut [u32; 16], at: usize, v: __m128i) {
        let four: &mut [u32; 4] = (&mut lanes[at..at + 4]).try_into().unwrap();
        // SAFETY: `four` is 16 writable bytes, and an unaligned store has no alignment
        // requirement.
        unsafe { _mm_storeu_si128(four.as_mut_ptr().cast(), v) }
    }

    /// Lanes `at..at + 4` moved up by one lane, lane `at - 1` (of `prev`, the lanes
    /// `at - 4..at`) entering at the bottom.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn shift_up(v: __m128i, prev: __m128i) -> __m128i {
        _mm_or_si128(_mm_slli_si128::<4>(v), _mm_srli_si128::<12>(prev))
    }

    // The one below must inline into the cache's access path, where a call would cost as much
    // as its work, and the compiler declines to inline its 16-lane form there.
    // `#[inline(always)]` cannot go with `#[target_feature]`, so it carries no `target_feature`
    // and calls the intrinsics in `unsafe` blocks instead: all those calls need is SSE2, which
    // every x86-64 target enables (asserted here).
    const _: () = assert!(cfg!(target_feature = "sse2"));

    #[inline(always)]
    pub fn move_to_front_u32x16<const N: usize>(lanes: &mut [u32; 16], last: usize, value: u32) {
        // SAFETY: SSE2 is enabled (see above), and the loads and stores are in bounds.
        unsafe {
            let last = _mm_set1_epi32(last as i32);
            // Lanes after `last` keep their value, the others take the one from the lane below.
            let step = |at: usize, v, prev| {
                let at = at as i32;
                let keep = _mm_cmpgt_epi32(_mm_setr_epi32(at, at + 1, at + 2, at + 3), last);
                _mm_or_si128(
                    _mm_and_si128(keep, v),
                    _mm_andnot_si128(keep, shift_up(v, prev)),
                )
            };
            // `value` in lane 3, so that it enters lane 0 as if it were lane -1.
            let first = _mm_set_epi32(value as i32, 0, 0, 0);
            let (v0, v1) = (load_u32x4(lanes, 0), load_u32x4(lanes, 4));
            store_u32x4(lanes, 0, step(0, v0, first));
            store_u32x4(lanes, 4, step(4, v1, v0));
            if N == 16 {
                let (v2, v3) = (load_u32x4(lanes, 8), load_u32x4(lanes, 12));
                store_u32x4(lanes, 8, step(8, v2, v1));
                store_u32x4(lanes, 12, step(12, v3, v2));
            }
        }
    }

    #[inline(always)]
    pub fn eq_mask_u8x16s<const G: usize>(groups: &[[u8; 16]; G], value: u8) -> u64 {
        // SAFETY: SSE2 is enabled (asserted above); each load reads one 16-byte group, in
        // bounds, and unaligned loads have no alignment requirement.
        unsafe {
            // A multiply spreads the byte over a word: shorter than SSE2's byte broadcast.
            let splat = u64::from(value).wrapping_mul(0x0101_0101_0101_0101);
            let value = _mm_set1_epi64x(splat as i64);
            let mut mask = 0u64;
            for (g, group) in groups.iter().enumerate() {
                let eq = _mm_cmpeq_epi8(_mm_loadu_si128(group.as_ptr().cast()), value);
                mask |= u64::from(_mm_movemask_epi8(eq) as u32) << (16 * g);
            }
            mask
        }
    }

    /// `value` in lane 0 of a vector, the other lanes 0: what enters the first group.
    #[inline(always)]
    fn first_carry(value: u8) -> __m128i {
        // SAFETY: SSE2 is enabled (asserted above).
        unsafe { _mm_cvtsi32_si128(i32::from(value)) }
    }

    /// Group `v` moved up one lane, `carry` (the lane below it, in lane 0) entering.
    #[inline(always)]
    fn shifted_in(v: __m128i, carry: __m128i) -> __m128i {
        // SAFETY: SSE2 is enabled (asserted above).
        unsafe { _mm_or_si128(_mm_slli_si128::<1>(v), carry) }
    }

    /// The last lane of group `v`, moved to lane 0 (the carry into the next group).
    #[inline(always)]
    fn carry_out(v: __m128i) -> __m128i {
        // SAFETY: SSE2 is enabled (asserted above).
        unsafe { _mm_srli_si128::<15>(v) }
    }

    // Inlined into the translation cache's fill and hit paths for the same reason as
    // `move_to_front_u32x16`.
    #[inline(always)]
    pub fn push_front_u8x16<const G: usize>(lanes: &mut [[u8; 16]; G], value: u8) {
        let mut carry = first_carry(value);
        for group in lanes.iter_mut() {
            // SAFETY: SSE2 is enabled; the group is 16 bytes, in bounds, and unaligned loads
            // and stores have no alignment requirement.
            unsafe {
                let v = _mm_loadu_si128(group.as_ptr().cast());
                _mm_storeu_si128(group.as_mut_ptr().cast(), shifted_in(v, carry));
                carry = carry_out(v);
            }
        }
    }

    #[inline(always)]
    pub fn move_to_front_u8x16<const G: usize>(lanes: &mut [[u8; 16]; G], last: usize, value: u8) {
        // SAFETY: SSE2 is enabled; the loads and stores are as in `push_front_u8x16`.
        unsafe {
            // Lane numbers fit a signed byte: at most 64 lanes.
            let last = _mm_set1_epi8(last as i8);
            let mut carry = first_carry(value);
            for (g, group) in lanes.iter_mut().enumerate() {
                let v = _mm_loadu_si128(group.as_ptr().cast());
                let at = _mm_add_epi8(
                    _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                    _mm_set1_epi8((16 * g) as i8),
                );
                // Lanes after `last` keep their value, the others take the one below.
                let keep = _mm_cmpgt_epi8(at, last);
                let moved = _mm_or_si128(
                    _mm_and_si128(keep, v),
                    _mm_andnot_si128(keep, shifted_in(v, carry)),
                );
                _mm_storeu_si128(group.as_mut_ptr().cast(), moved);
                carry = carry_out(v);
            }
        }
    }
}

/// AVX2 forms of the compares and the move to front, for loops that check
/// [`avx2::available`] once and run many lookups (a cache level's pass over a chunk): two
/// 8-lane vectors per set instead of four 4-lane ones. x86-64 only.
#[cfg(target_arch = "x86_64")]
pub mod avx2 {
    use core::arch::x86_64::*;

    /// Whether the host has AVX2 (std caches the answer after the first check).
    #[inline]
    pub fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
    }

    /// Bit `i` set when `lanes[i] == value`, for the first `N` lanes (8 or 16).
    ///
    /// # Safety
    /// The host must have AVX2 ([`available`]).
    #[inline(always)]
    pub unsafe fn eq_mask_u32x16<const N: usize>(lanes: &[u32; 16], value: u32) -> u32 {
        const { assert!(N == 8 || N == 16) };
        // SAFETY: AVX2 is there (the caller's contract); the loads read lanes 0..16 of
        // `lanes`, in bounds, and unaligned loads have no alignment requirement.
        unsafe {
            let value = _mm256_set1_epi32(value as i32);
            let at = |i: usize| _mm256_loadu_si256(lanes[i..i + 8].as_ptr().cast());
            let lo = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(at(0), value)));
            if N == 8 {
                return lo as u32;
            }
            let hi = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(at(8), value)));
            lo as u32 | (hi as u32) << 8
        }
    }

    /// [`super::masked_eq_mask_u32x16`] with AVX2: bit `i` set when `lanes[i] & and ==
    /// value`, for the first `N` lanes (8 or 16).
    ///
    /// # Safety
    /// The host must have AVX2 ([`available`]).
    #[inline(always)]
    pub unsafe fn masked_eq_mask_u32x16<const N: usize>(
        lanes: &[u32; 16],
        and: u32,
        value: u32,
    ) -> u32 {
        const { assert!(N == 8 || N == 16) };
        // SAFETY: AVX2 is there (the caller's contract); the loads read lanes 0..16 of
        // `lanes`, in bounds, and unaligned loads have no alignment requirement.
        unsafe {
            let and = _mm256_set1_epi32(and as i32);
            let value = _mm256_set1_epi32(value as i32);
            let eq = |i: usize| {
                let v = _mm256_loadu_si256(lanes[i..i + 8].as_ptr().cast());
                let eq = _mm256_cmpeq_epi32(_mm256_and_si256(v, and), value);
                _mm256_movemask_ps(_mm256_castsi256_ps(eq)) as u32
            };
            if N == 8 {
                return eq(0);
            }
            eq(0) | eq(8) << 8
        }
    }

    /// [`super::masked_eq_masks_u32x16`] with AVX2: for each `values[k]`, bit `i` of the
    /// `k`-th mask set when `lanes[i] & and == values[k]`, for the first `N` lanes (8 or 16).
    ///
    /// # Safety
    /// The host must have AVX2 ([`available`]).
    #[inline(always)]
    pub unsafe fn masked_eq_masks_u32x16<const N: usize, const K: usize>(
        lanes: &[u32; 16],
        and: u32,
        values: [u32; K],
    ) -> [u32; K] {
        const { assert!(N == 8 || N == 16) };
        // SAFETY: AVX2 is there (the caller's contract); the loads read lanes 0..16 of
        // `lanes`, in bounds, and unaligned loads have no alignment requirement.
        unsafe {
            let and = _mm256_set1_epi32(and as i32);
            let masked = |i: usize| {
                _mm256_and_si256(_mm256_loadu_si256(lanes[i..i + 8].as_ptr().cast()), and)
            };
            // One compare per value and 8 lanes, not a pack to bytes first: packing across
            // the 128-bit halves takes a slow permute, and the masks feed branches, so their
            // latency is what counts.
            let lo = masked(0);
            let hi = if N == 16 { masked(8) } else { lo };
            values.map(|v| {
                let v = _mm256_set1_epi32(v as i32);
                let mask = |x| _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, v)));
                if N == 8 {
                    mask(lo) as u32
                } else {
                    mask(lo) as u32 | (mask(hi) as u32) << 8
                }
            })
        }
    }

    /// [`super::move_to_front_u32x16`] with AVX2.
    ///
    /// # Safety
    /// The host must have AVX2 ([`available`]).
    #[inline(always)]
    pub unsafe fn move_to_front_u32x16<const N: usize>(
        lanes: &mut [u32; 16],
        last: usize,
        value: u32,
    ) {
        const { assert!(N == 8 || N == 16) };
        debug_assert!(last < N);
        // SAFETY: AVX2 is there (the caller's contract); the loads and stores touch lanes
        // 0..16 of `lanes`, in bounds, and unaligned ones have no alignment requirement.
        unsafe {
            let last = _mm256_set1_epi32(last as i32);
            // Each lane takes the one below it (lane 0 its own, replaced next).
            let up = _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6);
            let ptr = lanes.as_mut_ptr();
            let lo = _mm256_loadu_si256(ptr.cast());
            // Lanes after `last` keep their value, the others take the one from the lane
            // below, and lane 0 takes `value`.
            let keep_lo = _mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), last);
            let moved = _mm256_blend_epi32::<1>(
                _mm256_permutevar8x32_epi32(lo, up),
                _mm256_set1_epi32(value as i32),
            );
            _mm256_storeu_si256(ptr.cast(), _mm256_blendv_epi8(moved, lo, keep_lo));
            if N == 16 {
                let hi = _mm256_loadu_si256(ptr.add(8).cast());
                let keep_hi =
                    _mm256_cmpgt_epi32(_mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15), last);
                // Lane 8 takes lane 7, from the low half as it was.
                let moved = _mm256_blend_epi32::<1>(
                    _mm256_permutevar8x32_epi32(hi, up),
                    _mm256_permutevar8x32_epi32(lo, _mm256_set1_epi32(7)),
                );
                _mm256_storeu_si256(ptr.add(8).cast(), _mm256_blendv_epi8(moved, hi, keep_hi));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_match_a_plain_loop() {
        let mut bytes = [0u8; 16];
        let mut words = [0u32; 16];
        let mut x = 0x1234_5678_u32;
        for round in 0..200 {
            for i in 0..16 {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                bytes[i] = (x >> 29) as u8;
                words[i] = (x >> 27) | if round % 2 == 0 { 0 } else { 0xffff_0000 };
            }
            for v in 0..8u8 {
                let want = (0..16).fold(0, |m, i| m | u32::from(bytes[i] == v) << i);
                assert_eq!(eq_mask_u8x16s::<1>(&[bytes], v), u64::from(want));
                let want = (0..16).fold(0, |m, i| {
                    m | u32::from(words[i] & 0x1e == u32::from(v) << 1) << i
                });
                assert_eq!(
                    masked_eq_mask_u32x16::<16>(&words, 0x1e, u32::from(v) << 1),
                    want
                );
                assert_eq!(
                    masked_eq_mask_u32x16::<8>(&words, 0x1e, u32::from(v) << 1),
                    want & 0xff
                );
            }
        }
    }

    #[test]
    fn byte_moves_match_a_plain_loop() {
        fn check<const G: usize>(seed: u32) {
            let mut x = seed;
            let mut lanes = [[0u8; 16]; G];
            for round in 0..100u8 {
                for l in lanes.as_flattened_mut() {
                    x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                    *l = (x >> 24) as u8;
                }
                let value = round.wrapping_mul(37);
                let mut want = lanes;
                let flat = want.as_flattened_mut();
                flat.copy_within(0..16 * G - 1, 1);
                flat[0] = value;
                let mut got = lanes;
                push_front_u8x16::<G>(&mut got, value);
                assert_eq!(got, want, "push front, {G} groups");
                for last in 0..16 * G {
                    let mut want = lanes;
                    let flat = want.as_flattened_mut();
                    flat.copy_within(0..last, 1);
                    flat[0] = value;
                    let mut got = lanes;
                    move_to_front_u8x16::<G>(&mut got, last, value);
                    assert_eq!(got, want, "last {last}, {G} groups");
                }
            }
        }
        check::<1>(1);
        check::<2>(2);
        check::<4>(3);
    }

    #[test]
    fn group_masks_match_a_plain_loop() {
        let mut x = 0x2545_f491_u32;
        let mut groups = [[0u8; 16]; 4];
        for _ in 0..200 {
            for l in groups.as_flattened_mut() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *l = (x >> 29) as u8;
            }
            for v in 0..8u8 {
                let want = |n: usize| {
                    (0..n).fold(0u64, |m, i| {
                        m | u64::from(groups.as_flattened()[i] == v) << i
                    })
                };
                assert_eq!(eq_mask_u8x16s::<4>(&groups, v), want(64));
                let two: &[[u8; 16]; 2] = groups[..2].try_into().unwrap();
                assert_eq!(eq_mask_u8x16s::<2>(two, v), want(32));
                let one: &[[u8; 16]; 1] = groups[..1].try_into().unwrap();
                assert_eq!(eq_mask_u8x16s::<1>(one, v), want(16));
            }
        }
    }

    /// The AVX2 masked compares against a plain loop, on lanes shaped like a cache set's
    /// packed entries (a tag above 4 state bits, some lanes all ones), where the host has
    /// AVX2.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_masked_compares_match_a_plain_loop() {
        if !avx2::available() {
            return;
        }
        let plain = |lanes: &[u32; 16], n: usize, and: u32, value: u32| {
            (0..n).fold(0, |m, i| m | u32::from(lanes[i] & and == value) << i)
        };
        let mut x = 0x85eb_ca6b_u32;
        let mut lanes = [0u32; 16];
        for _ in 0..2000 {
            for l in lanes.iter_mut() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                // Few distinct tags (so that several lanes match), any state, and now and
                // then an empty way.
                *l = if x >> 28 == 0 {
                    u32::MAX
                } else {
                    (x >> 29) << 4 | (x >> 8) & 0xf
                };
            }
            for probe in [lanes[0], lanes[7], lanes[8], lanes[15], 5 << 4, u32::MAX] {
                let tag = probe & !0xf;
                // SAFETY: AVX2 is there (checked above).
                let (all, half) = unsafe {
                    (
                        avx2::masked_eq_mask_u32x16::<16>(&lanes, !0xf, tag),
                        avx2::masked_eq_mask_u32x16::<8>(&lanes, !0xf, tag),
                    )
                };
                assert_eq!(all, plain(&lanes, 16, !0xf, tag), "{lanes:x?} {tag:x}");
                assert_eq!(half, plain(&lanes, 8, !0xf, tag), "{lanes:x?} {tag:x}");
            }
            let values = [15, 3, 2, 1, 0];
            for n in [8, 16] {
                let want = values.map(|v| plain(&lanes, n, 0xf, v));
                // SAFETY: AVX2 is there (checked above).
                let got = unsafe {
                    if n == 8 {
                        avx2::masked_eq_masks_u32x16::<8, 5>(&lanes, 0xf, values)
                    } else {
                        avx2::masked_eq_masks_u32x16::<16, 5>(&lanes, 0xf, values)
                    }
                };
                assert_eq!(got, want, "{lanes:x?}, {n} lanes");
            }
        }
    }

    #[test]
    fn moves_match_a_plain_loop() {
        let mut x = 0x9e37_79b9_u32;
        let mut lanes = [0u32; 16];
        for round in 0..500 {
            for l in lanes.iter_mut() {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                *l = x >> 8;
            }
            let value = round;
            for last in 0..16 {
                let mut want = lanes;
                want.copy_within(0..last, 1);
                want[0] = value;
                let mut got = lanes;
                move_to_front_u32x16::<16>(&mut got, last, value);
                assert_eq!(got, want, "last {last}");
                if last < 8 {
                    let mut got = lanes;
                    move_to_front_u32x16::<8>(&mut got, last, value);
                    assert_eq!(got, want, "last {last}, 8 lanes");
                }
            }
            #[cfg(target_arch = "x86_64")]
            if avx2::available() {
                for last in 0..16 {
                    let mut want = lanes;
                    want.copy_within(0..last, 1);
                    want[0] = value;
                    let mut got = lanes;
                    // SAFETY: AVX2 is there (checked above).
                    unsafe { avx2::move_to_front_u32x16::<16>(&mut got, last, value) };
                    assert_eq!(got, want, "avx2, last {last}");
                    if last < 8 {
                        let mut got = lanes;
                        // SAFETY: AVX2 is there (checked above).
                        unsafe { avx2::move_to_front_u32x16::<8>(&mut got, last, value) };
                        assert_eq!(got, want, "avx2, last {last}, 8 lanes");
                    }
                }
                for probe in [lanes[0], lanes[5], lanes[9], lanes[15], u32::MAX] {
                    let want = (0..16).fold(0, |m, i| m | u32::from(lanes[i] == probe) << i);
                    // SAFETY: AVX2 is there (checked above).
                    let (all, half) = unsafe {
                        (
                            avx2::eq_mask_u32x16::<16>(&lanes, probe),
                            avx2::eq_mask_u32x16::<8>(&lanes, probe),
                        )
                    };
                    assert_eq!(all, want);
                    assert_eq!(half, want & 0xff);
                }
            }
            let values = [0, 3, 7, 15];
            for n in [8, 16] {
                let want =
                    values.map(|v| (0..n).fold(0, |m, i| m | u32::from(lanes[i] & 0xf == v) << i));
                let got = if n == 8 {
                    masked_eq_masks_u32x16::<8, 4>(&lanes, 0xf, values)
                } else {
                    masked_eq_masks_u32x16::<16, 4>(&lanes, 0xf, values)
                };
                assert_eq!(got, want);
            }
        }
    }
}
