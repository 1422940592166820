//! Lane-parallel compares for set searches: which lanes of a small fixed-size array hold a
//! value, as a bit mask. Every set-associative structure of the machine (cache sets,
//! translation-cache fingerprints, LRU ranks) searches its set this way.
//!
//! On x86-64 these are a handful of SSE2 instructions (a compare and a `pmovmskb`); the
//! compiler does not find that form on its own for a bit-mask result. SSE2 is part of the
//! x86-64 baseline, so this needs no run-time detection. Elsewhere a plain loop does the
//! same.

/// Bit `i` set when `lanes[i] == value`.
#[inline]
pub fn eq_mask_u8x16(lanes: &[u8; 16], value: u8) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the callee only needs SSE2, which every x86-64 processor has.
    unsafe {
        sse2::eq_mask_u8x16(lanes, value)
    }
    #[cfg(not(target_arch = "x86_64"))]
    lanes.iter().enumerate().fold(0, |m, (i, &l)| m | u32::from(l == value) << i)
}

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
    lanes[..N].iter().enumerate().fold(0, |m, (i, &l)| m | u32::from(l & and == value) << i)
}

/// Bit `i` set when `lanes[i] & and >= value`, for the first `N` lanes (8 or 16). `and` and
/// `value` must be below `1 << 31`.
#[inline]
pub fn masked_ge_mask_u32x16<const N: usize>(lanes: &[u32; 16], and: u32, value: u32) -> u32 {
    const { assert!(N == 8 || N == 16) };
    debug_assert!(and < 1 << 31 && value < 1 << 31);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the callee only needs SSE2, which every x86-64 processor has.
    unsafe {
        sse2::masked_ge_mask_u32x16::<N>(lanes, and, value)
    }
    #[cfg(not(target_arch = "x86_64"))]
    lanes[..N].iter().enumerate().fold(0, |m, (i, &l)| m | u32::from(l & and >= value) << i)
}

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use core::arch::x86_64::*;

    /// Lanes `at..at + 16` bytes of `bytes` as one vector (the compiler turns this into one
    /// unaligned load).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn load(bytes: &[u8], at: usize) -> __m128i {
        let lo = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        let hi = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().unwrap());
        _mm_set_epi64x(hi as i64, lo as i64)
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub fn eq_mask_u8x16(lanes: &[u8; 16], value: u8) -> u32 {
        let eq = _mm_cmpeq_epi8(load(lanes, 0), _mm_set1_epi8(value as i8));
        _mm_movemask_epi8(eq) as u32
    }

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
        let hi = if N == 16 { _mm_packs_epi32(eq(8), eq(12)) } else { _mm_setzero_si128() };
        _mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32
    }

    #[inline]
    #[target_feature(enable = "sse2")]
    pub fn masked_ge_mask_u32x16<const N: usize>(lanes: &[u32; 16], and: u32, value: u32) -> u32 {
        let and = _mm_set1_epi32(and as i32);
        let value = _mm_set1_epi32(value as i32);
        // Both sides are below 1 << 31, so the signed compare is the unsigned one.
        let lt = |at| _mm_cmpgt_epi32(value, _mm_and_si128(load_u32x4(lanes, at), and));
        let lo = _mm_packs_epi32(lt(0), lt(4));
        let hi = if N == 16 { _mm_packs_epi32(lt(8), lt(12)) } else { _mm_setzero_si128() };
        !(_mm_movemask_epi8(_mm_packs_epi16(lo, hi)) as u32) & ((1 << N) - 1)
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
                assert_eq!(eq_mask_u8x16(&bytes, v), want);
                let want = (0..16).fold(0, |m, i| m | u32::from(words[i] & 0x1e == u32::from(v) << 1) << i);
                assert_eq!(masked_eq_mask_u32x16::<16>(&words, 0x1e, u32::from(v) << 1), want);
                assert_eq!(masked_eq_mask_u32x16::<8>(&words, 0x1e, u32::from(v) << 1), want & 0xff);
                let want = (0..16).fold(0, |m, i| m | u32::from(words[i] & 0x1e >= u32::from(v) << 2) << i);
                assert_eq!(masked_ge_mask_u32x16::<16>(&words, 0x1e, u32::from(v) << 2), want);
                assert_eq!(masked_ge_mask_u32x16::<8>(&words, 0x1e, u32::from(v) << 2), want & 0xff);
            }
        }
    }
}
