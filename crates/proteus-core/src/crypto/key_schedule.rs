//! HMAC-SHA256 (RFC 2104) of one-byte messages under a 32-byte key, its key schedule computed
//! once: a chain key's `HMAC(CK, "0")` and `HMAC(CK, "1")` (docs/protocol.md §6.6) for a
//! planned message (session/plan.rs). The schedule is kept as the two chaining values it is
//! (after the ipad and after the opad block), as words, so that the web build's four-lane
//! SHA-256 can finish `HMAC(CK, "0")` from them in a lane (session/plan/lanes.rs), which the
//! `hmac` crate's opaque state does not allow. The compressions are `sha2`'s; only the blocks
//! of these fixed lengths are built here. Checked against the `hmac` crate in the tests.

use sha2::block_api::compress256;
use zeroize::{Zeroize, Zeroizing};

use super::Secret32;

/// The initial hash value H(0) of SHA-256 (FIPS 180-4 §5.3.3).
const IV: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];
const IPAD: u8 = 0x36;
const OPAD: u8 = 0x5c;

/// The last block of a message of `prefix + head` bytes whose first `prefix` bytes (whole
/// blocks) are in the chaining value: `head` zero bytes left for the caller, then the 0x80
/// byte, zeros and the length in bits (FIPS 180-4 §5.1.1). `head` is at most 55.
// Every index is below 64: `head` is one of the constants below.
#[allow(clippy::indexing_slicing)]
const fn padding(prefix: usize, head: usize) -> [u8; 64] {
    let mut block = [0u8; 64];
    block[head] = 0x80;
    let bits = ((prefix + head) as u64 * 8).to_be_bytes();
    let mut i = 0;
    while i < 8 {
        block[56 + i] = bits[i];
        i += 1;
    }
    block
}

/// The inner hash's block of a one-byte message (after the key's ipad block).
const INNER: [u8; 64] = padding(64, 1);
/// The outer hash's block (after the opad block): the inner digest goes in its first 32 bytes.
const OUTER: [u8; 64] = padding(64, 32);

/// `N` blocks of secret bytes, wiped as one flat slice when dropped: `Zeroizing` wipes an array
/// of arrays byte by byte (64 unrolled stores a block in wasm), a slice sixteen bytes at a time.
pub(crate) struct SecretBlocks<const N: usize>(pub(crate) [[u8; 64]; N]);

impl<const N: usize> Drop for SecretBlocks<N> {
    fn drop(&mut self) {
        self.0.as_flattened_mut().zeroize();
    }
}

/// The big-endian bytes of eight words into the first 32 bytes of `out`. Out of line: one copy.
#[inline(never)]
fn put_words(out: &mut [u8], words: &[u32; 8]) {
    for (bytes, word) in out.chunks_exact_mut(4).zip(words) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
}

/// The HMAC-SHA256 key schedule of a 32-byte key, for one-byte messages (the schedule costs two
/// SHA-256 compressions, each message two more).
pub(crate) struct KeySchedule {
    /// The chaining values after `key ⊕ ipad` and after `key ⊕ opad`.
    states: Zeroizing<[[u32; 8]; 2]>,
}

impl KeySchedule {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        let mut block = SecretBlocks([[IPAD; 64]]);
        for (b, k) in block.0.as_flattened_mut().iter_mut().zip(key) {
            *b ^= k;
        }
        let mut states = Zeroizing::new([IV; 2]);
        let [inner, outer] = &mut *states;
        compress256(inner, &block.0);
        // key ⊕ opad from key ⊕ ipad, byte for byte.
        for b in block.0.as_flattened_mut() {
            *b ^= IPAD ^ OPAD;
        }
        compress256(outer, &block.0);
        Self { states }
    }

    /// The chaining values after the ipad block and after the opad block.
    #[cfg(any(
        test,
        feature = "test-support",
        all(target_arch = "wasm32", target_feature = "simd128")
    ))]
    pub(crate) fn states(&self) -> &[[u32; 8]; 2] {
        &self.states
    }

    /// HMAC of the one-byte message `byte`.
    pub(crate) fn mac_byte(&self, byte: u8) -> Secret32 {
        let [inner, outer] = &*self.states;
        let mut block = SecretBlocks([INNER]);
        let [bytes] = &mut block.0;
        bytes[0] = byte;
        let mut state = Zeroizing::new(*inner);
        compress256(&mut state, &block.0);
        let [bytes] = &mut block.0;
        *bytes = OUTER;
        put_words(bytes, &state);
        *state = *outer;
        compress256(&mut state, &block.0);
        let mut out = Zeroizing::new([0u8; 32]);
        put_words(&mut *out, &state);
        out
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::crypto::hmac;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The same MAC as the `hmac` crate for every key and byte.
        #[test]
        fn it_is_the_hmac_crates_hmac(key in any::<[u8; 32]>(), byte in any::<u8>()) {
            let keyed = KeySchedule::new(&key);
            prop_assert_eq!(*keyed.mac_byte(byte), *hmac(&key, &[byte]));
        }
    }
}
