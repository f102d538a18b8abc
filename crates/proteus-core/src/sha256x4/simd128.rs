//! The lanes as a WebAssembly `v128`: four 32-bit lanes per instruction. The intrinsics are
//! safe functions when the build enables simd128 (ffi/web/build.sh does), so no `unsafe`.

use core::arch::wasm32::{
    i8x16_shuffle, i32x4_shuffle, u32x4, u32x4_add, u32x4_extract_lane, u32x4_shl, u32x4_shr,
    u32x4_splat, u64x2, v128, v128_bitselect, v128_or, v128_xor,
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

    /// Sixteen bytes of each block at a time, each word's bytes reversed by
    /// one shuffle, then a 4 × 4 transpose: a quarter of the work of word-by-word lane inserts.
    #[inline(always)]
    fn load_words(blocks: [&[u8; 64]; 4]) -> [Self; 16] {
        let rows = blocks.map(|b| b.as_chunks::<16>().0);
        let row = |rows: &[[u8; 16]], quarter: usize| {
            let x = rows.get(quarter).map_or(0, |r| u128::from_le_bytes(*r));
            let v = u64x2(x as u64, (x >> 64) as u64);
            i8x16_shuffle::<3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12>(v, v)
        };
        let mut words = [Self(u32x4_splat(0)); 16];
        for (quarter, out) in words.chunks_exact_mut(4).enumerate() {
            let [r0, r1, r2, r3] = rows.map(|r| row(r, quarter));
            // Rows are blocks, columns words: transpose so that rows are words.
            let (lo01, hi01) = (
                i32x4_shuffle::<0, 4, 1, 5>(r0, r1),
                i32x4_shuffle::<2, 6, 3, 7>(r0, r1),
            );
            let (lo23, hi23) = (
                i32x4_shuffle::<0, 4, 1, 5>(r2, r3),
                i32x4_shuffle::<2, 6, 3, 7>(r2, r3),
            );
            let columns = [
                i32x4_shuffle::<0, 1, 4, 5>(lo01, lo23),
                i32x4_shuffle::<2, 3, 6, 7>(lo01, lo23),
                i32x4_shuffle::<0, 1, 4, 5>(hi01, hi23),
                i32x4_shuffle::<2, 3, 6, 7>(hi01, hi23),
            ];
            for (o, c) in out.iter_mut().zip(columns) {
                *o = Self(c);
            }
        }
        words
    }
}
