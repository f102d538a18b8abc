//! SHA-256 four messages at a time, one per lane of a 4 × 32-bit vector: the compression
//! function of FIPS 180-4 §6.2.2 ([`compress4`]), the padding around it ([`hash`]) and HMAC /
//! HKDF built on both ([`hmac`]).
//!
//! A batch opens many messages whose hashes do not depend on each other, and WebAssembly has no
//! threads but 128-bit SIMD: there the lanes are `v128` ([`simd128`]), which runs four
//! compressions in about the time of one and a third. Elsewhere (and in the web build without
//! simd128) the lanes are a plain `[u32; 4]` ([`portable`]); native builds keep `sha2`, which
//! uses SHA-NI, and use this module only in tests and the fuzz target.
//!
//! SHA-256 has no secret-dependent branch or memory index, and neither has this: every index
//! below is a round number, and the only branches are on message lengths, which are public.

pub(crate) mod hash;
pub(crate) mod hmac;
// The plain lanes, the `Fastest` alias and whole-message hashing serve tests and the fuzz
// target; the web build's hot path names `Simd128` and the HMAC functions directly.
#[cfg(any(test, not(all(target_arch = "wasm32", target_feature = "simd128"))))]
mod portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
mod simd128;
#[cfg(feature = "test-support")]
pub mod testing;
#[cfg(test)]
mod tests;

#[cfg(any(test, not(all(target_arch = "wasm32", target_feature = "simd128"))))]
pub(crate) use portable::Portable;
#[cfg(all(target_arch = "wasm32", target_feature = "simd128"))]
pub(crate) use simd128::Simd128;

/// The fastest lanes of the build, for tests: `v128` where it has simd128, a plain array elsewhere.
#[cfg(all(
    any(test, feature = "test-support"),
    all(target_arch = "wasm32", target_feature = "simd128")
))]
pub(crate) type Fastest = Simd128;
/// The fastest lanes of the build, for tests: `v128` where it has simd128, a plain array elsewhere.
#[cfg(all(
    any(test, feature = "test-support"),
    not(all(target_arch = "wasm32", target_feature = "simd128"))
))]
pub(crate) type Fastest = Portable;

/// Four independent 32-bit words and the lane-wise operations SHA-256 needs. Every operation
/// is lane by lane (additions wrap), so lane `i` of a result depends only on lanes `i` of the
/// operands: the four messages never mix.
pub(crate) trait Lanes: Copy {
    fn splat(x: u32) -> Self;
    fn from_lanes(x: [u32; 4]) -> Self;
    fn to_lanes(self) -> [u32; 4];
    fn add(self, other: Self) -> Self;
    fn xor(self, other: Self) -> Self;
    fn or(self, other: Self) -> Self;
    fn and(self, other: Self) -> Self;
    fn shr(self, bits: u32) -> Self;
    fn shl(self, bits: u32) -> Self;
    /// Bit by bit: `ones` where `mask` is 1, `zeros` where it is 0.
    fn select(mask: Self, ones: Self, zeros: Self) -> Self;

    #[inline(always)]
    fn rotr(self, bits: u32) -> Self {
        self.shr(bits).or(self.shl(32 - bits))
    }

    /// Four rows of sixteen bytes, one per lane, as four words: lane `i` of word `j` is the
    /// big-endian word `j` of row `i`.
    #[inline(always)]
    fn from_rows(rows: [&[u8; 16]; 4]) -> [Self; 4] {
        let word = |row: &[u8; 16], j: usize| {
            let (words, _) = row.as_chunks::<4>();
            words.get(j).map_or(0, |w| u32::from_be_bytes(*w))
        };
        core::array::from_fn(|j| Self::from_lanes(rows.map(|r| word(r, j))))
    }

    /// The inverse of [`from_rows`](Self::from_rows): row `i` gets lane `i` of the four words,
    /// big-endian. Written in place, so that no copy of secret bytes is left behind.
    #[inline(always)]
    fn to_rows(words: [Self; 4], rows: [&mut [u8; 16]; 4]) {
        let words = words.map(Self::to_lanes);
        for (i, row) in rows.into_iter().enumerate() {
            for (out, word) in row.chunks_exact_mut(4).zip(&words) {
                out.copy_from_slice(&word.get(i).copied().unwrap_or(0).to_be_bytes());
            }
        }
    }

    /// The sixteen big-endian words of four blocks, word `t` of every block in `words[t]`.
    #[inline(always)]
    fn load_words(blocks: [&[u8; 64]; 4]) -> [Self; 16] {
        let rows = blocks.map(|b| b.as_chunks::<16>().0);
        let mut words = [Self::splat(0); 16];
        for (quarter, out) in words.chunks_exact_mut(4).enumerate() {
            let [r0, r1, r2, r3] = rows.map(|r| r.get(quarter).unwrap_or(&[0; 16]));
            out.copy_from_slice(&Self::from_rows([r0, r1, r2, r3]));
        }
        words
    }
}

/// The initial hash value H(0) (FIPS 180-4 §5.3.3).
pub(crate) const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// The round constants K (FIPS 180-4 §4.2.2).
const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// The chaining values of four messages, word `j` of every lane in `state[j]`.
pub(crate) type State4<L> = [L; 8];

/// Four chaining values side by side: word `j` of `states[i]` goes to lane `i` of word `j`.
#[cfg(test)]
pub(crate) fn interleave<L: Lanes>(states: &[[u32; 8]; 4]) -> State4<L> {
    let [s0, s1, s2, s3] = states;
    core::array::from_fn(|j| {
        let word = |s: &[u32; 8]| s.get(j).copied().unwrap_or(0);
        L::from_lanes([word(s0), word(s1), word(s2), word(s3)])
    })
}

/// The same 32-bit word in every lane, for each word of `words`.
pub(crate) fn splat_words<L: Lanes, const N: usize>(words: [u32; N]) -> [L; N] {
    words.map(L::splat)
}

/// The inverse of [`interleave`].
#[cfg(test)]
pub(crate) fn deinterleave<L: Lanes>(state: &State4<L>) -> [[u32; 8]; 4] {
    let words = state.map(L::to_lanes);
    core::array::from_fn(|i| words.map(|w| w.get(i).copied().unwrap_or(0)))
}

/// One SHA-256 compression per lane (FIPS 180-4 §6.2.2 steps 1–4): lane `i` of `state` absorbs
/// the block whose sixteen big-endian words are lane `i` of `w` (see [`Lanes::load_words`]).
// The message schedule is a ring of 16 words indexed by `t % 16`, always in bounds.
#[allow(clippy::indexing_slicing)]
// Out of line: one copy of the rounds in the web build (inlined, each caller had its own).
#[inline(never)]
pub(crate) fn compress4<L: Lanes>(state: &mut State4<L>, mut w: [L; 16]) {
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    // b XOR c: this round's a XOR b is the next round's, one select fewer a round for Maj.
    let mut b_xor_c = b.xor(c);
    // One round per iteration, the working variables renamed by moves: a loop of 64 rather than
    // unrolled rounds: a fifth of the code, and no slower in wasm (docs/benchmarks.md).
    for (t, k) in K.iter().enumerate() {
        if t >= 16 {
            // Word t of the schedule, computed in place of word t - 16.
            let (w2, w15) = (w[(t + 14) % 16], w[(t + 1) % 16]);
            let s1 = w2.rotr(17).xor(w2.rotr(19)).xor(w2.shr(10));
            let s0 = w15.rotr(7).xor(w15.rotr(18)).xor(w15.shr(3));
            w[t % 16] = w[t % 16].add(s1).add(w[(t + 9) % 16]).add(s0);
        }
        let big_s1 = e.rotr(6).xor(e.rotr(11)).xor(e.rotr(25));
        // Ch(e, f, g): f where e is 1, g where it is 0.
        let ch = L::select(e, f, g);
        let t1 = h.add(big_s1).add(ch).add(L::splat(*k)).add(w[t % 16]);
        let big_s0 = a.rotr(2).xor(a.rotr(13)).xor(a.rotr(22));
        // Maj(a, b, c): where a and b agree, b; where they differ, c (b XOR (b XOR c)).
        let a_xor_b = a.xor(b);
        let maj = b.xor(a_xor_b.and(b_xor_c));
        b_xor_c = a_xor_b;
        (h, g, f, e) = (g, f, e, d.add(t1));
        (d, c, b, a) = (c, b, a, t1.add(big_s0).add(maj));
    }
    for (s, x) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *s = s.add(x);
    }
}
