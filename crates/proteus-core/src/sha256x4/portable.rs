//! The lanes as a plain `[u32; 4]`: the same compression as the SIMD lanes, on any target.

use super::Lanes;

/// Four 32-bit lanes computed one after the other.
#[derive(Clone, Copy)]
pub(crate) struct Portable([u32; 4]);

impl Portable {
    #[inline(always)]
    fn zip(self, other: Self, f: impl Fn(u32, u32) -> u32) -> Self {
        let [a0, a1, a2, a3] = self.0;
        let [b0, b1, b2, b3] = other.0;
        Self([f(a0, b0), f(a1, b1), f(a2, b2), f(a3, b3)])
    }
}

impl Lanes for Portable {
    #[inline(always)]
    fn splat(x: u32) -> Self {
        Self([x; 4])
    }
    #[inline(always)]
    fn from_lanes(x: [u32; 4]) -> Self {
        Self(x)
    }
    #[inline(always)]
    fn to_lanes(self) -> [u32; 4] {
        self.0
    }
    #[inline(always)]
    fn add(self, other: Self) -> Self {
        self.zip(other, u32::wrapping_add)
    }
    #[inline(always)]
    fn xor(self, other: Self) -> Self {
        self.zip(other, |a, b| a ^ b)
    }
    #[inline(always)]
    fn or(self, other: Self) -> Self {
        self.zip(other, |a, b| a | b)
    }
    #[inline(always)]
    fn and(self, other: Self) -> Self {
        self.zip(other, |a, b| a & b)
    }
    #[inline(always)]
    fn shr(self, bits: u32) -> Self {
        Self(self.0.map(|x| x >> bits))
    }
    #[inline(always)]
    fn shl(self, bits: u32) -> Self {
        Self(self.0.map(|x| x << bits))
    }
    #[inline(always)]
    fn select(mask: Self, ones: Self, zeros: Self) -> Self {
        mask.zip(ones, |m, o| m & o)
            .or(mask.zip(zeros, |m, z| !m & z))
    }
    #[inline(always)]
    fn rotr(self, bits: u32) -> Self {
        Self(self.0.map(|x| x.rotate_right(bits)))
    }
}
