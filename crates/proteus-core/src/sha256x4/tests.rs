//! The four-lane SHA-256, HMAC and HKDF against the `sha2`, `hmac` and `hkdf` crates and the
//! NIST example vectors, for both kinds of lanes (in a simd128 wasm build `Fastest` is the
//! `v128` one: scripts/test.sh wasm runs these tests there too).

use hkdf::Hkdf;
use hmac::{Hmac, KeyInit, Mac};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

use super::hash::{lane_bytes, sha256x4};
use super::hmac::{KdfInfo, KeyStates4, empty_salt, hmac_verify4, hmac4, kdf4_empty_salt};
use super::{Fastest, IV, Lanes, Portable, compress4, deinterleave, interleave};

/// Loads four blocks and compresses them.
fn compress_blocks<L: Lanes>(state: &mut [L; 8], blocks: [&[u8; 64]; 4]) {
    compress4(state, L::load_words(blocks));
}

/// Whether `Fastest` is the `v128` lanes (otherwise it is `Portable`, tested once).
const SIMD: bool = cfg!(all(target_arch = "wasm32", target_feature = "simd128"));

fn sha2(msg: &[u8]) -> [u8; 32] {
    Sha256::digest(msg).into()
}

fn digests<L: Lanes>(msgs: [&[u8]; 4]) -> [[u8; 32]; 4] {
    sha256x4::<L>(msgs).map(|d| *d)
}

/// The examples of NIST's "SHA-256" example document (FIPS 180-4 examples): one block, two
/// blocks, the empty message and a million times "a".
fn nist_vectors<L: Lanes>() {
    let one_block = b"abc".as_slice();
    let two_blocks = b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".as_slice();
    let long = b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu".as_slice();
    let million = vec![b'a'; 1_000_000];
    let expected = |hex_digest: &str| {
        let mut out = [0u8; 32];
        out.copy_from_slice(&hex::decode(hex_digest).unwrap_or_default());
        out
    };
    let abc = expected("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    let two = expected("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    let empty = expected("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    let mil = expected("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    let long_digest = expected("cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
    assert_eq!(
        digests::<L>([one_block, two_blocks, b"", long]),
        [abc, two, empty, long_digest]
    );
    assert_eq!(
        digests::<L>([&million, one_block, &million, b""]),
        [mil, abc, mil, empty]
    );
}

#[test]
fn the_nist_examples_hash_right_in_every_lane() {
    nist_vectors::<Portable>();
    nist_vectors::<Fastest>();
}

/// Four messages: independent lengths up to five blocks, and sometimes the same length or the
/// same message in several lanes (the lane mixes).
fn four_messages() -> impl Strategy<Value = [Vec<u8>; 4]> {
    let msg = || prop::collection::vec(any::<u8>(), 0..300);
    prop_oneof![
        [msg(), msg(), msg(), msg()],
        (msg(), 0usize..4).prop_map(|(m, same)| {
            core::array::from_fn(|i| {
                if i <= same {
                    m.clone()
                } else {
                    m.iter().rev().copied().collect()
                }
            })
        }),
        (0usize..200, any::<[u8; 4]>()).prop_map(|(len, fill)| fill.map(|b| vec![b; len])),
    ]
}

fn refs(msgs: &[Vec<u8>; 4]) -> [&[u8]; 4] {
    msgs.each_ref().map(|m| m.as_slice())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100_000))]

    /// 100,000 sets of four messages (400,000 digests per kind of lanes) against `sha2`.
    #[test]
    fn every_lane_hashes_as_sha2_does(msgs in four_messages()) {
        let expected = refs(&msgs).map(sha2);
        prop_assert_eq!(digests::<Fastest>(refs(&msgs)), expected);
        if SIMD {
            prop_assert_eq!(digests::<Portable>(refs(&msgs)), expected);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// The bare compression from arbitrary chaining values, against `sha2`'s.
    #[test]
    fn the_compression_is_sha2s(states in any::<[[u32; 8]; 4]>(), blocks in any::<[[u8; 64]; 4]>()) {
        let mut expected = states;
        for (s, b) in expected.iter_mut().zip(&blocks) {
            sha2::block_api::compress256(s, core::slice::from_ref(b));
        }
        let [b0, b1, b2, b3] = &blocks;
        let mut portable = interleave::<Portable>(&states);
        compress_blocks(&mut portable, [b0, b1, b2, b3]);
        prop_assert_eq!(deinterleave(&portable), expected);
        let mut fastest = interleave::<Fastest>(&states);
        compress_blocks(&mut fastest, [b0, b1, b2, b3]);
        prop_assert_eq!(deinterleave(&fastest), expected);
    }

    /// A one-byte HMAC finished in lanes from four keys' scalar key schedules (a planned
    /// message's `HMAC(CK, "0")`) against the `hmac` crate.
    #[test]
    fn a_scalar_key_schedule_finishes_in_its_lane(keys in any::<[[u8; 32]; 4]>(), byte in any::<u8>()) {
        let expected: [[u8; 32]; 4] = core::array::from_fn(|i| *crate::crypto::hmac(&keys[i], &[byte]));
        let schedules = keys.each_ref().map(crate::crypto::KeySchedule::new);
        let states = schedules.each_ref().map(crate::crypto::KeySchedule::states);
        let portable = KeyStates4::<Portable>::from_states(states).mac_byte(byte);
        let fastest = KeyStates4::<Fastest>::from_states(states).mac_byte(byte);
        prop_assert_eq!(lane_bytes(&portable).map(|m| *m), expected);
        prop_assert_eq!(lane_bytes(&fastest).map(|m| *m), expected);
    }

    /// HMAC-SHA256 and its constant-time check against the `hmac` crate.
    #[test]
    fn every_lane_macs_as_the_hmac_crate_does(
        keys in any::<[[u8; 32]; 4]>(),
        msgs in four_messages(),
        flip in (0usize..4, 0usize..32, 1u8..=255),
    ) {
        let expected: [[u8; 32]; 4] = core::array::from_fn(|i| {
            let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&keys[i]).unwrap();
            m.update(&msgs[i]);
            m.finalize().into_bytes().into()
        });
        let key_refs = keys.each_ref();
        prop_assert_eq!(hmac4::<Portable>(key_refs, refs(&msgs)).map(|m| *m), expected);
        prop_assert_eq!(hmac4::<Fastest>(key_refs, refs(&msgs)).map(|m| *m), expected);
        prop_assert_eq!(hmac_verify4::<Fastest>(key_refs, refs(&msgs), expected.each_ref()), [true; 4]);
        let mut forged = expected;
        forged[flip.0][flip.1] ^= flip.2;
        let verdicts = hmac_verify4::<Fastest>(key_refs, refs(&msgs), forged.each_ref());
        prop_assert_eq!(verdicts, core::array::from_fn(|i| i != flip.0));
    }

    /// The message-key HKDF (empty salt, 64 bytes) against the `hkdf` crate: the engine's
    /// info, an empty one and the longest the lanes take (22 bytes).
    #[test]
    fn every_lane_derives_as_the_hkdf_crate_does(ikms in any::<[[u8; 32]; 4]>(), long in any::<[u8; 22]>()) {
        check_kdf(&ikms, b"hash_ratchet")?;
        check_kdf(&ikms, &[])?;
        check_kdf(&ikms, &long)?;
    }
}

fn check_kdf<const N: usize>(ikms: &[[u8; 32]; 4], info: &[u8; N]) -> Result<(), TestCaseError> {
    let info_bytes = info.as_slice();
    let expected: [[u8; 64]; 4] = ikms.map(|ikm| {
        let mut okm = [0u8; 64];
        Hkdf::<Sha256>::new(Some(&[]), &ikm)
            .expand(info_bytes, &mut okm)
            .unwrap();
        okm
    });
    let info = KdfInfo::new(info);
    for got in [
        kdf4_empty_salt::<Portable>(ikms.each_ref(), &info),
        kdf4_empty_salt::<Fastest>(ikms.each_ref(), &info),
    ] {
        for ((first, second), want) in got.iter().zip(&expected) {
            prop_assert_eq!(first.as_slice(), &want[..32]);
            prop_assert_eq!(second.as_slice(), &want[32..]);
        }
    }
    // And with the scalar derivation the engine uses natively.
    let scalar = crate::crypto::kdf(&ikms[0], &[], info_bytes);
    prop_assert_eq!(
        (scalar.0.as_slice(), scalar.1.as_slice()),
        (&expected[0][..32], &expected[0][32..])
    );
    Ok(())
}

/// The chaining values a lane starts from are its own: the IV in one lane, others elsewhere.
#[test]
fn lanes_start_from_their_own_chaining_values() {
    let block = [7u8; 64];
    let mut other = IV;
    other[3] ^= 1;
    let states = [IV, other, IV, other];
    let mut lanes = interleave::<Fastest>(&states);
    compress_blocks(&mut lanes, [&block; 4]);
    let out = deinterleave(&lanes);
    assert_eq!(out[0], out[2]);
    assert_eq!(out[1], out[3]);
    assert_ne!(out[0], out[1]);
}

/// The empty key's schedule is a constant: the one computed from the key.
#[test]
fn the_empty_key_schedule_is_the_computed_one() {
    fn check<L: Lanes>() {
        let (constant, computed) = (empty_salt::<L>(), KeyStates4::<L>::new(&[L::splat(0); 8]));
        assert_eq!(
            [deinterleave(&constant.inner), deinterleave(&constant.outer)],
            [deinterleave(&computed.inner), deinterleave(&computed.outer)]
        );
    }
    check::<Portable>();
    check::<Fastest>();
}

/// Rows to words and back, against the portable definition (`from_rows` / `to_rows`).
#[test]
fn rows_transpose_into_lanes_and_back() {
    let rows: [[u8; 16]; 4] =
        core::array::from_fn(|i| core::array::from_fn(|j| (16 * i + j) as u8));
    let words = Fastest::from_rows(rows.each_ref());
    let expected: [[u32; 4]; 4] = core::array::from_fn(|j| {
        core::array::from_fn(|i| u32::from_be_bytes(rows[i][4 * j..4 * j + 4].try_into().unwrap()))
    });
    assert_eq!(words.map(Lanes::to_lanes), expected);
    fn back<L: Lanes>(words: [L; 4]) -> [[u8; 16]; 4] {
        let mut rows = [[0u8; 16]; 4];
        L::to_rows(words, rows.each_mut());
        rows
    }
    assert_eq!(back(words), rows);
    assert_eq!(back(Portable::from_rows(rows.each_ref())), rows);
}
