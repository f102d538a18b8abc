//! The lanes as a WebAssembly `v128`: four 32-bit lanes per instruction. The intrinsics are
//! safe functions when the build enables simd128 (ffi/web/build.sh does), so no `unsafe`.

use core::arch::wasm32::{
    i8x16_shuffle, i32x4_shuffle, u32x4, u32x4_add, u32x4_extract_lane, u32x4_shl, u32x4_shr,
    u32x4_splat, u64x2, u64x2_extract_lane, v128, v128_and, v128_bitselect, v128_or, v128_xor,
};

use super::Lanes;

/// Four 32-bit lanes in one `v128`.
#[derive(Clone, Copy)]
pub(crate) struct Simd128(v128);

impl Lanes for Simd128 {
    #[inline(always)]
    fn splat(x: u32) -> Self {
        Self(u32x4_splat(x))
    }
    #[inline(always)]
    fn from_lanes([a, b, c, d]: [u32; 4]) -> Self {
        Self(u32x4(a, b, c, d))
    }
    #[inline(always)]
    fn to_lanes(self) -> [u32; 4] {
        [
            u32x4_extract_lane::<0>(self.0),
            u32x4_extract_lane::<1>(self.0),
            u32x4_extract_lane::<2>(self.0),
            u32x4_extract_lane::<3>(self.0),
        ]
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        Self(u32x4_add(self.0, other.0))
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        Self(v128_xor(self.0, other.0))
    }
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        Self(v128_or(self.0, other.0))
    }
    #[inline(always)]
    fn and(self, other: Self) -> Self {
        Self(v128_and(self.0, other.0))
    }
    #[inline(always)]
    fn shr(self, bits: u32) -> Self {
        Self(u32x4_shr(self.0, bits))
    }
    #[inline(always)]
    fn shl(self, bits: u32) -> Self {
        Self(u32x4_shl(self.0, bits))
    }
    #[inline(always)]
    fn select(mask: Self, ones: Self, zeros: Self) -> Self {
        Self(v128_bitselect(ones.0, zeros.0, mask.0))
    }

    /// Each row's words byte-reversed by one shuffle, then a 4 × 4 transpose: a quarter of the
    /// work of word-by-word lane inserts.
    #[inline(always)]
    fn from_rows(rows: [&[u8; 16]; 4]) -> [Self; 4] {
        transpose(rows.map(|r| bswap_words(u128::from_le_bytes(*r))))
    }

    /// The transpose back, then the byte reversal.
    #[inline(always)]
    fn to_rows(words: [Self; 4], rows: [&mut [u8; 16]; 4]) {
        for (row, r) in rows.into_iter().zip(transpose(words.map(|w| w.0))) {
            let r = bswap_words_v(r.0);
            let lo = u128::from(u64x2_extract_lane::<0>(r));
            let hi = u128::from(u64x2_extract_lane::<1>(r));
            *row = (lo | hi << 64).to_le_bytes();
        }
    }
}

/// Sixteen bytes as a vector, each 32-bit word's bytes reversed (big-endian words to lanes).
#[inline(always)]
fn bswap_words(x: u128) -> v128 {
    bswap_words_v(u64x2(x as u64, (x >> 64) as u64))
}

#[inline(always)]
fn bswap_words_v(v: v128) -> v128 {
    i8x16_shuffle::<3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12>(v, v)
}

/// The 4 × 4 transpose of 32-bit lanes: rows become columns (its own inverse).
#[inline(always)]
fn transpose([r0, r1, r2, r3]: [v128; 4]) -> [Simd128; 4] {
    let (lo01, hi01) = (
        i32x4_shuffle::<0, 4, 1, 5>(r0, r1),
        i32x4_shuffle::<2, 6, 3, 7>(r0, r1),
    );
    let (lo23, hi23) = (
        i32x4_shuffle::<0, 4, 1, 5>(r2, r3),
        i32x4_shuffle::<2, 6, 3, 7>(r2, r3),
    );
    [
        Simd128(i32x4_shuffle::<0, 1, 4, 5>(lo01, lo23)),
        Simd128(i32x4_shuffle::<2, 3, 6, 7>(lo01, lo23)),
        Simd128(i32x4_shuffle::<0, 1, 4, 5>(hi01, hi23)),
        Simd128(i32x4_shuffle::<2, 3, 6, 7>(hi01, hi23)),
    ]
}
