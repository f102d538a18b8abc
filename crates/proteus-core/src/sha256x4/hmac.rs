//! HMAC-SHA256 (RFC 2104) and the HKDF-SHA256 of docs/protocol.md §2.5 (RFC 5869) for four
//! keys at a time, on [`finish4`]. Every intermediate value is key-equivalent and wiped.

use std::sync::OnceLock;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::hash::{digest_bytes, finish4};
use super::{IV, Lanes};
use crate::crypto::Secret32;

/// Four chaining values, wiped when dropped.
type States = Zeroizing<[[u32; 8]; 4]>;

/// The inner (ipad) and outer (opad) chaining values of four HMAC keys: what an HMAC key
/// schedule computes, two compressions per key.
pub(crate) struct KeyStates4 {
    inner: States,
    outer: States,
}

impl KeyStates4 {
    /// The key schedules of four keys of at most 64 bytes (every key here has 32).
    pub(crate) fn new<L: Lanes>(keys: [&[u8]; 4]) -> Self {
        Self {
            inner: pad_state::<L>(keys, 0x36),
            outer: pad_state::<L>(keys, 0x5c),
        }
    }

    /// The same key in all four lanes.
    fn splat(inner: &[u32; 8], outer: &[u32; 8]) -> Self {
        Self {
            inner: Zeroizing::new([*inner; 4]),
            outer: Zeroizing::new([*outer; 4]),
        }
    }

    /// HMAC of `msgs[i]` under key `i`.
    pub(crate) fn mac<L: Lanes>(&self, msgs: [&[u8]; 4]) -> [Secret32; 4] {
        let mut inner = self.inner.clone();
        finish4::<L>(&mut inner, 64, msgs);
        let digests = inner.each_ref().map(digest_bytes);
        let mut outer = self.outer.clone();
        finish4::<L>(&mut outer, 64, digests.each_ref().map(|d| d.as_slice()));
        outer.each_ref().map(digest_bytes)
    }
}

/// The chaining values after one block of `key ‖ zeros` XOR `pad`.
fn pad_state<L: Lanes>(keys: [&[u8]; 4], pad: u8) -> States {
    let blocks = keys.map(|key| {
        let mut block = Zeroizing::new([pad; 64]);
        for (b, k) in block.iter_mut().zip(key) {
            *b ^= k;
        }
        block
    });
    let mut state = super::interleave::<L>(&[IV; 4]);
    super::compress4(&mut state, blocks.each_ref().map(|b| &**b));
    Zeroizing::new(super::deinterleave(&state))
}

/// HMAC-SHA256 of `msgs[i]` under `keys[i]`.
pub(crate) fn hmac4<L: Lanes>(keys: [&[u8; 32]; 4], msgs: [&[u8]; 4]) -> [Secret32; 4] {
    KeyStates4::new::<L>(keys.map(|k| k.as_slice())).mac::<L>(msgs)
}

/// Whether `tags[i]` is the HMAC-SHA256 of `msgs[i]` under `keys[i]`, each compared in
/// constant time.
pub(crate) fn hmac_verify4<L: Lanes>(
    keys: [&[u8; 32]; 4],
    msgs: [&[u8]; 4],
    tags: [&[u8; 32]; 4],
) -> [bool; 4] {
    let macs = hmac4::<L>(keys, msgs);
    let mut ok = [false; 4];
    for ((o, mac), tag) in ok.iter_mut().zip(&macs).zip(tags) {
        *o = bool::from(mac.ct_eq(tag));
    }
    ok
}

/// The key schedule of HMAC with an empty key (HKDF-Extract with an empty salt), computed once.
fn empty_salt<L: Lanes>() -> KeyStates4 {
    static STATES: OnceLock<([u32; 8], [u32; 8])> = OnceLock::new();
    let (inner, outer) = STATES.get_or_init(|| {
        let states = KeyStates4::new::<L>([&[]; 4]);
        let ([inner, ..], [outer, ..]) = (*states.inner, *states.outer);
        (inner, outer)
    });
    KeyStates4::splat(inner, outer)
}

/// The output of HKDF-SHA256 with an empty salt and 64 bytes of output, split in halves, for
/// four input keys (crypto::kdf with an empty salt: every message key derivation).
pub(crate) fn kdf4_empty_salt<L: Lanes>(
    ikms: [&[u8; 32]; 4],
    info: &[u8],
) -> [(Secret32, Secret32); 4] {
    let prks = empty_salt::<L>().mac::<L>(ikms.map(|k| k.as_slice()));
    let expand = KeyStates4::new::<L>(prks.each_ref().map(|k| k.as_slice()));
    // T(1) = HMAC(PRK, info ‖ 1), T(2) = HMAC(PRK, T(1) ‖ info ‖ 2).
    let mut first_input = Zeroizing::new(Vec::with_capacity(info.len() + 1));
    first_input.extend_from_slice(info);
    first_input.push(1);
    let firsts = expand.mac::<L>([first_input.as_slice(); 4]);
    let second_inputs = firsts.each_ref().map(|t1| {
        let mut input = Zeroizing::new(Vec::with_capacity(32 + info.len() + 1));
        input.extend_from_slice(t1.as_slice());
        input.extend_from_slice(info);
        input.push(2);
        input
    });
    let seconds = expand.mac::<L>(second_inputs.each_ref().map(|v| v.as_slice()));
    let mut out = firsts.into_iter().zip(seconds);
    core::array::from_fn(|_| out.next().unwrap_or_default())
}
