//! The four-lane SHA-256, HMAC and HKDF for the fuzz target that compares them with `sha2`,
//! `hmac` and `hkdf` (tests/src/fuzzing.rs). Never for applications. The lanes are the ones
//! the build uses (`Fastest`): `v128` in a simd128 wasm build, `[u32; 4]` elsewhere.

use super::Fastest;

/// SHA-256 of four messages.
pub fn sha256x4(msgs: [&[u8]; 4]) -> [[u8; 32]; 4] {
    super::hash::sha256x4::<Fastest>(msgs).map(|d| *d)
}

/// HMAC-SHA256 of `msgs[i]` under `keys[i]`.
pub fn hmac_sha256x4(keys: [&[u8; 32]; 4], msgs: [&[u8]; 4]) -> [[u8; 32]; 4] {
    super::hmac::hmac4::<Fastest>(keys, msgs).map(|d| *d)
}

/// Whether `tags[i]` is the HMAC-SHA256 of `msgs[i]` under `keys[i]`.
pub fn hmac_sha256x4_verify(
    keys: [&[u8; 32]; 4],
    msgs: [&[u8]; 4],
    tags: [&[u8; 32]; 4],
) -> [bool; 4] {
    super::hmac::hmac_verify4::<Fastest>(keys, msgs, tags)
}

/// HKDF-SHA256 with an empty salt and 64 bytes of output, for four input keys (`info` of at
/// most 22 bytes: larger ones do not compile).
pub fn hkdf_empty_salt_x4<const N: usize>(ikms: [&[u8; 32]; 4], info: &[u8; N]) -> [[u8; 64]; 4] {
    super::hmac::kdf4_empty_salt::<Fastest>(ikms, &super::hmac::KdfInfo::new(info)).map(|(a, b)| {
        let mut out = [0u8; 64];
        for (o, i) in out.iter_mut().zip(a.iter().chain(b.iter())) {
            *o = *i;
        }
        out
    })
}
