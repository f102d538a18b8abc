//! HMAC-SHA256 (RFC 2104) and the HKDF-SHA256 of docs/protocol.md §2.5 (RFC 5869) for four
//! 32-byte keys at a time, on [`compress4`] and [`finish4`]. Keys, chaining values and digests
//! stay in lanes from one step to the next: a 32-byte digest is already the first half of the
//! next block, so most blocks are built from words, not bytes. Byte buffers of secrets are
//! wiped; values in lanes are not wipeable (nor are `sha2`'s own working variables).

use subtle::ConstantTimeEq;

#[cfg(any(test, feature = "test-support"))]
use super::hash::lane_bytes;
use super::hash::{finish4, lane_words};
use super::{IV, Lanes, State4, compress4, splat_words};
#[cfg(any(test, feature = "test-support"))]
use crate::crypto::Secret32;

const IPAD: u32 = 0x3636_3636;
const OPAD: u32 = 0x5c5c_5c5c;

/// Words 8 to 15 of the last block of a 96-byte message (a 64-byte pad block, then 32 bytes):
/// the 0x80 byte, zeros and the length in bits. HMAC's outer hash and the extract step hash such
/// messages.
const AFTER_32_OF_96: [u32; 8] = [0x8000_0000, 0, 0, 0, 0, 0, 0, 96 * 8];

/// The inner (ipad) and outer (opad) chaining values of four HMAC keys: what an HMAC key
/// schedule computes, two compressions per key.
#[derive(Clone, Copy)]
pub(crate) struct KeyStates4<L> {
    pub(super) inner: State4<L>,
    pub(super) outer: State4<L>,
}

impl<L: Lanes> KeyStates4<L> {
    /// The key schedules of four 32-byte keys, as words.
    pub(crate) fn new(key: &[L; 8]) -> Self {
        Self {
            inner: pad_state(key, IPAD),
            outer: pad_state(key, OPAD),
        }
    }

    /// The key schedules four keys already have: lane `i` gets `states[i]`, its chaining values
    /// after the ipad and after the opad block (a chain key's, crate::crypto::KeySchedule).
    pub(crate) fn from_states(states: [&[[u32; 8]; 2]; 4]) -> Self {
        let lanes = |half: usize| -> State4<L> {
            core::array::from_fn(|j| {
                L::from_lanes(states.map(|s| {
                    s.get(half)
                        .and_then(|words| words.get(j))
                        .copied()
                        .unwrap_or(0)
                }))
            })
        };
        Self {
            inner: lanes(0),
            outer: lanes(1),
        }
    }

    /// HMAC of the one-byte message `byte` under every key (a chain key's `HMAC(CK, "0")`).
    pub(crate) fn mac_byte(&self, byte: u8) -> [L; 8] {
        self.mac_block(splat_words(last_block(0, [&[byte], &[]], 64 + 1)))
    }

    /// HMAC of `msgs[i]` under key `i`.
    #[inline(never)]
    pub(crate) fn mac(&self, msgs: [&[u8]; 4]) -> [L; 8] {
        let mut inner = self.inner;
        finish4(&mut inner, 64, msgs);
        self.outer(&inner)
    }

    /// HMAC of a one-block message whose padded words are `block` (after the pad block).
    fn mac_block(&self, block: [L; 16]) -> [L; 8] {
        let mut inner = self.inner;
        compress4(&mut inner, block);
        self.outer(&inner)
    }

    /// The outer hash of HMAC over the inner digests.
    fn outer(&self, inner: &[L; 8]) -> [L; 8] {
        let mut state = self.outer;
        compress4(&mut state, join(inner, AFTER_32_OF_96));
        state
    }
}

/// The sixteen words of a block: `head` in every lane, then `tail` in every lane.
fn join<L: Lanes>(head: &[L; 8], tail: [u32; 8]) -> [L; 16] {
    let [h0, h1, h2, h3, h4, h5, h6, h7] = *head;
    let [t0, t1, t2, t3, t4, t5, t6, t7] = splat_words::<L, 8>(tail);
    [
        h0, h1, h2, h3, h4, h5, h6, h7, t0, t1, t2, t3, t4, t5, t6, t7,
    ]
}

/// The chaining values after one block of `key ‖ zeros` XOR `pad`.
fn pad_state<L: Lanes>(key: &[L; 8], pad: u32) -> State4<L> {
    let padded = key.map(|k| k.xor(L::splat(pad)));
    let mut state = splat_words(IV);
    compress4(&mut state, join(&padded, [pad; 8]));
    state
}

/// A public last block as words: `parts` one after the other from byte `at`, then the 0x80
/// byte, zeros and the length in bits of a message of `total` bytes. The parts must end at
/// least 9 bytes before the block does. A `const fn`: the engine's blocks are constants.
// Every index is below 64 (the callers' sizes are checked when they compile).
#[allow(clippy::indexing_slicing)]
const fn last_block(at: usize, parts: [&[u8]; 2], total: usize) -> [u32; 16] {
    let mut block = [0u8; 64];
    let mut at = at;
    let mut p = 0;
    while p < parts.len() {
        let mut i = 0;
        while i < parts[p].len() {
            block[at] = parts[p][i];
            at += 1;
            i += 1;
        }
        p += 1;
    }
    block[at] = 0x80;
    let bits = (total as u64 * 8).to_be_bytes();
    let mut i = 0;
    while i < 8 {
        block[56 + i] = bits[i];
        i += 1;
    }
    let mut words = [0u32; 16];
    let mut t = 0;
    while t < 16 {
        let b = [
            block[4 * t],
            block[4 * t + 1],
            block[4 * t + 2],
            block[4 * t + 3],
        ];
        words[t] = u32::from_be_bytes(b);
        t += 1;
    }
    words
}

/// The key schedule of HMAC with an empty key (HKDF-Extract with an empty salt): the chaining
/// values after a block of 0x36 bytes and after one of 0x5c bytes (checked in the tests).
const EMPTY_KEY_INNER: [u32; 8] = [
    0xf454_dead,
    0x9725_214f,
    0x90da_f2a0,
    0xdf12_28ea,
    0x64e5_750f,
    0xa392_4181,
    0x824a_932b,
    0xf8e0_4e32,
];
const EMPTY_KEY_OUTER: [u32; 8] = [
    0xd385_480f,
    0x7abb_6477,
    0x37c9_c538,
    0x5dd8_2467,
    0x8e04_3a72,
    0x7534_34b0,
    0xdeb8_2818,
    0x361d_45a6,
];

/// [`KeyStates4`] of the empty key in every lane.
pub(crate) fn empty_salt<L: Lanes>() -> KeyStates4<L> {
    KeyStates4 {
        inner: splat_words(EMPTY_KEY_INNER),
        outer: splat_words(EMPTY_KEY_OUTER),
    }
}

/// The public blocks of an HKDF expansion to 64 bytes with `info` (at most 22 bytes, so that
/// `T(1) ‖ info ‖ 2` fits one block with its padding): computed once per `info`, at compile
/// time for the engine's.
pub(crate) struct KdfInfo {
    /// The padded block of `info ‖ 1` (after the key's pad block): T(1)'s message.
    first: [u32; 16],
    /// The second half of the padded block of `T(1) ‖ info ‖ 2`.
    second_tail: [u32; 8],
}

impl KdfInfo {
    pub(crate) const fn new<const N: usize>(info: &[u8; N]) -> Self {
        const { assert!(N <= 22, "info too long for one block") };
        let [.., t8, t9, t10, t11, t12, t13, t14, t15] =
            last_block(32, [info, &[2]], 64 + 32 + N + 1);
        Self {
            first: last_block(0, [info, &[1]], 64 + N + 1),
            second_tail: [t8, t9, t10, t11, t12, t13, t14, t15],
        }
    }
}

/// HKDF-SHA256 with an empty salt and 64 bytes of output for four 32-byte input keys, in lanes:
/// (T(1), T(2)), the first and last 32 bytes.
pub(crate) fn kdf4_words<L: Lanes>(ikm: &[L; 8], info: &KdfInfo) -> ([L; 8], [L; 8]) {
    let prk = empty_salt::<L>().mac_block(join(ikm, AFTER_32_OF_96));
    let expand = KeyStates4::new(&prk);
    // T(1) = HMAC(PRK, info ‖ 1), T(2) = HMAC(PRK, T(1) ‖ info ‖ 2).
    let first = expand.mac_block(splat_words(info.first));
    let second = expand.mac_block(join(&first, info.second_tail));
    (first, second)
}

/// The output of HKDF-SHA256 with an empty salt and 64 bytes of output, split in halves, for
/// four input keys (crypto::kdf with an empty salt: every message key derivation).
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn kdf4_empty_salt<L: Lanes>(
    ikms: [&[u8; 32]; 4],
    info: &KdfInfo,
) -> [(Secret32, Secret32); 4] {
    let (first, second) = kdf4_words(&lane_words::<L>(ikms), info);
    let mut seconds = lane_bytes(&second).into_iter();
    lane_bytes(&first).map(|t1| (t1, seconds.next().unwrap_or_default()))
}

/// HMAC-SHA256 of `msgs[i]` under `keys[i]`.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn hmac4<L: Lanes>(keys: [&[u8; 32]; 4], msgs: [&[u8]; 4]) -> [Secret32; 4] {
    lane_bytes(&KeyStates4::new(&lane_words::<L>(keys)).mac(msgs))
}

/// Whether `tags[i]` is the HMAC-SHA256 of `msgs[i]` under `keys[i]`, each compared in
/// constant time (in lanes: the differences of all eight words ORed, then compared with 0).
pub(crate) fn hmac_verify4<L: Lanes>(
    keys: [&[u8; 32]; 4],
    msgs: [&[u8]; 4],
    tags: [&[u8; 32]; 4],
) -> [bool; 4] {
    let macs = KeyStates4::new(&lane_words::<L>(keys)).mac(msgs);
    let tags = lane_words::<L>(tags);
    let differences = macs
        .iter()
        .zip(&tags)
        .fold(L::splat(0), |acc, (m, t)| acc.or(m.xor(*t)));
    differences.to_lanes().map(|d| bool::from(d.ct_eq(&0)))
}
