//! The padding of FIPS 180-4 §5.1.1 around [`compress4`]: four messages of any lengths, each
//! continued from a chaining value of its own (the IV, or an HMAC key's precomputed state).

#[cfg(any(test, feature = "test-support"))]
use zeroize::Zeroizing;

#[cfg(any(test, feature = "test-support"))]
use super::IV;
use super::{Lanes, State4, compress4};
use crate::crypto::SecretBlocks;

/// Writes block `index` of `msg` into `block`, padded as the end of a message of
/// `prefix + msg.len()` bytes whose first `prefix` bytes (whole blocks) are already in the
/// chaining value. Out of line: one copy for the four lanes.
#[inline(never)]
fn padded_block(block: &mut [u8; 64], msg: &[u8], prefix: u64, index: usize) {
    // `None` past the block where the message ended (then only zeros and the length remain).
    let data = msg.get(index * 64..);
    let n = data.map_or(0, |d| d.len().min(64));
    let (head, tail) = block.split_at_mut(n);
    head.copy_from_slice(data.and_then(|d| d.get(..n)).unwrap_or_default());
    tail.fill(0);
    if data.is_some()
        && let Some(marker) = tail.first_mut()
    {
        *marker = 0x80;
    }
    if index + 1 == block_count(msg.len()) {
        let bits = (prefix + msg.len() as u64) * 8;
        if let Some(length) = block.last_chunk_mut::<8>() {
            *length = bits.to_be_bytes();
        }
    }
}

/// Block `index` of `msg` if the message fills it: no padding in it, no copy needed.
fn whole_block(msg: &[u8], index: usize) -> Option<&[u8; 64]> {
    msg.get(index * 64..)?.first_chunk::<64>()
}

/// The number of blocks `len` bytes take once padded: the 0x80 byte and the 8-byte length.
pub(crate) fn block_count(len: usize) -> usize {
    (len + 9).div_ceil(64)
}

/// The lanes where `active` is true all ones, the others all zeros.
fn lane_mask<L: Lanes>(active: [bool; 4]) -> L {
    L::from_lanes(active.map(|a| 0u32.wrapping_sub(u32::from(a))))
}

/// Lane `i` of `state` absorbs `msgs[i]` and its padding, `prefix` bytes having been absorbed
/// before; `state` then holds the four digests' words. Lanes with fewer blocks than the
/// longest keep their state while the others go on (their lengths are public).
#[inline(never)]
pub(crate) fn finish4<L: Lanes>(state: &mut State4<L>, prefix: u64, msgs: [&[u8]; 4]) {
    let counts = msgs.map(|m| block_count(m.len()));
    let longest = counts.iter().copied().max().unwrap_or(0);
    // One buffer for every block, wiped once at the end (the messages may be secret).
    let mut blocks = SecretBlocks([[0u8; 64]; 4]);
    for index in 0..longest {
        // A block wholly within its message is read where it is; only the others are built.
        for (block, msg) in blocks.0.iter_mut().zip(msgs) {
            if whole_block(msg, index).is_none() {
                padded_block(block, msg, prefix, index);
            }
        }
        let mut next = *state;
        let [b0, b1, b2, b3] = &blocks.0;
        let [m0, m1, m2, m3] = msgs;
        let words = L::load_words([
            whole_block(m0, index).unwrap_or(b0),
            whole_block(m1, index).unwrap_or(b1),
            whole_block(m2, index).unwrap_or(b2),
            whole_block(m3, index).unwrap_or(b3),
        ]);
        compress4(&mut next, words);
        let mask = lane_mask::<L>(counts.map(|n| index < n));
        for (s, n) in state.iter_mut().zip(next) {
            *s = L::select(mask, n, *s);
        }
    }
}

/// Writes lane `i` of `words` into `out[i]` as the bytes of its eight big-endian words.
pub(crate) fn store_lanes<L: Lanes>(words: &[L; 8], out: [&mut [u8; 32]; 4]) {
    let [w0, w1, w2, w3, w4, w5, w6, w7] = *words;
    let [o0, o1, o2, o3] = out.map(|o| o.as_chunks_mut::<16>().0);
    if let ([a0, b0], [a1, b1], [a2, b2], [a3, b3]) = (o0, o1, o2, o3) {
        L::to_rows([w0, w1, w2, w3], [a0, a1, a2, a3]);
        L::to_rows([w4, w5, w6, w7], [b0, b1, b2, b3]);
    }
}

/// Four 32-byte strings (digests, keys) as the bytes of each lane's eight big-endian words.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn lane_bytes<L: Lanes>(words: &[L; 8]) -> [Zeroizing<[u8; 32]>; 4] {
    let mut out: [Zeroizing<[u8; 32]>; 4] = Default::default();
    store_lanes(words, out.each_mut().map(|o| &mut **o));
    out
}

/// Four 32-byte strings as eight big-endian words per lane (the inverse of [`lane_bytes`]).
pub(crate) fn lane_words<L: Lanes>(bytes: [&[u8; 32]; 4]) -> [L; 8] {
    let halves = bytes.map(|b| b.as_chunks::<16>().0);
    let half = |h: usize| L::from_rows(halves.map(|r| r.get(h).unwrap_or(&[0; 16])));
    let ([w0, w1, w2, w3], [w4, w5, w6, w7]) = (half(0), half(1));
    [w0, w1, w2, w3, w4, w5, w6, w7]
}

/// SHA-256 of four messages.
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn sha256x4<L: Lanes>(msgs: [&[u8]; 4]) -> [Zeroizing<[u8; 32]>; 4] {
    let mut state = super::splat_words(IV);
    finish4::<L>(&mut state, 0, msgs);
    lane_bytes(&state)
}
