//! The lanes as a WebAssembly `v128`: four 32-bit lanes per instruction. The intrinsics are
//! safe functions when the build enables simd128 (ffi/web/build.sh does), so no `unsafe`.

use core::arch::wasm32::{
    u32x4, u32x4_add, u32x4_extract_lane, u32x4_shl, u32x4_shr, u32x4_splat, v128, v128_bitselect,
    v128_or, v128_xor,
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
}
