//! The primitives of docs/protocol.md §2, each a thin call into a well-kept crate.

use std::sync::OnceLock;

use chacha20::ChaCha20Legacy;
use chacha20::cipher::{KeyIvInit, StreamCipher};
use curve25519_dalek::edwards::{CompressedEdwardsY, EdwardsPoint};
use curve25519_dalek::scalar::Scalar;
use hkdf::Hkdf;
use hmac::digest::FixedOutput;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};
use subtle::ConstantTimeEq;
use zeroize::Zeroize;
use zeroize::Zeroizing;

mod key_schedule;

pub(crate) use key_schedule::KeySchedule;
// For the four-lane SHA-256's blocks (crate::sha256x4), where it is built.
#[cfg(any(
    test,
    feature = "test-support",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
pub(crate) use key_schedule::SecretBlocks;

type HmacSha256 = Hmac<Sha256>;

/// A 32-byte secret (key material) that is wiped when dropped.
pub(crate) type Secret32 = Zeroizing<[u8; 32]>;

/// HKDF-SHA256 with 64 bytes of output, split into (first 32, last 32) (docs/protocol.md §2.5).
pub(crate) fn kdf(ikm: &[u8], salt: &[u8], info: &[u8]) -> (Secret32, Secret32) {
    let [a, b] = *kdf_pair(ikm, salt, info);
    (Zeroizing::new(a), Zeroizing::new(b))
}

/// [`kdf`] with the two halves kept together in one wiped secret, as they were written: no
/// copy of them to make and wipe (message keys, one per message).
///
/// The extract step with an empty salt (every message key derivation) reuses one precomputed
/// HMAC key schedule, which saves two of its four SHA-256 compressions.
pub(crate) fn kdf_pair(ikm: &[u8], salt: &[u8], info: &[u8]) -> Zeroizing<[[u8; 32]; 2]> {
    static EMPTY_SALT: OnceLock<HmacSha256> = OnceLock::new();
    let extract = if salt.is_empty() {
        EMPTY_SALT.get_or_init(|| mac_with_slice(&[])).clone()
    } else {
        mac_with_slice(salt)
    };
    let prk = extract.mac_last(ikm);
    let mut okm = Zeroizing::new([[0u8; 32]; 2]);
    // A 32-byte PRK is valid and 64 bytes are far below HKDF's limit of 255 * 32, so neither
    // call can fail.
    if let Ok(hk) = Hkdf::<Sha256>::from_prk(prk.as_slice()) {
        let _ = hk.expand(info, okm.as_flattened_mut());
    }
    okm
}

/// `parts[0] ‖ parts[1] ‖ …` into an `N`-byte secret (`N` = 32 × parts).
pub(crate) fn concat<const N: usize>(parts: &[&[u8; 32]]) -> Zeroizing<[u8; N]> {
    let mut out = Zeroizing::new([0u8; N]);
    for (o, i) in out.iter_mut().zip(parts.iter().flat_map(|p| p.iter())) {
        *o = *i;
    }
    out
}

/// The two 32-byte halves of 64 bytes. The caller wipes them if they are secret.
pub(crate) fn halves(x: &[u8; 64]) -> ([u8; 32], [u8; 32]) {
    // Two block copies: the byte loop this replaces was 1.4% of a batch in wasm.
    let (lo, hi) = x.split_at(32);
    let (mut a, mut b) = ([0u8; 32], [0u8; 32]);
    a.copy_from_slice(lo);
    b.copy_from_slice(hi);
    (a, b)
}

fn mac_with(key: &[u8; 32]) -> HmacSha256 {
    mac_with_slice(key)
}

fn mac_with_slice(key: &[u8]) -> HmacSha256 {
    // HMAC keys are padded to the block size; `new_from_slice` accepts any length.
    match <HmacSha256 as KeyInit>::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable_hmac_key(),
    }
}

#[cold]
#[allow(clippy::panic)]
fn unreachable_hmac_key() -> ! {
    panic!("HMAC-SHA256 accepts 32-byte keys")
}

/// HMAC-SHA256 with a key set up once for several messages (its key schedule costs two SHA-256
/// compressions, as much as a short message). A chain step's two HMACs use it; a planned
/// message's keep their schedule as words instead ([`KeySchedule`]).
pub(crate) struct KeyedMac(HmacSha256);

impl KeyedMac {
    pub(crate) fn new(key: &[u8; 32]) -> Self {
        Self(mac_with(key))
    }

    pub(crate) fn mac(&self, data: &[u8]) -> Secret32 {
        self.0.clone().mac_last(data)
    }

    /// [`mac`](Self::mac) for the last use of the key: the schedule itself is finished, one
    /// copy (and wipe) of the HMAC state fewer.
    pub(crate) fn mac_last(self, data: &[u8]) -> Secret32 {
        self.0.mac_last(data)
    }
}

/// Finishing an HMAC over one last piece of data.
trait MacLast {
    fn mac_last(self, data: &[u8]) -> Secret32;
}

impl MacLast for HmacSha256 {
    /// Written straight into the wiped secret: `finalize` would go through a `CtOutput`, one
    /// more copy and one more wipe.
    fn mac_last(mut self, data: &[u8]) -> Secret32 {
        self.update(data);
        let mut out = Zeroizing::new([0u8; 32]);
        FixedOutput::finalize_into(self, (&mut *out).into());
        out
    }
}

/// HMAC-SHA256 (docs/protocol.md §2.6).
pub(crate) fn hmac(key: &[u8; 32], data: &[u8]) -> Secret32 {
    mac_with(key).mac_last(data)
}

/// Verifies an HMAC-SHA256 tag in constant time.
pub(crate) fn hmac_verify(key: &[u8; 32], data: &[u8], tag: &[u8; 32]) -> bool {
    same_bytes(mac_with(key).mac_last(data).as_slice(), tag)
}

/// Whether `a` and `b` hold the same bytes, in constant time for slices of one length: their
/// differences ORed, then one comparison with zero. `subtle`'s comparison of slices puts an
/// optimization barrier on every byte (a call in wasm: 32 for a key or a MAC, every message).
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let differences = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    a.len() == b.len() && bool::from(differences.ct_eq(&0))
}

/// The 8-byte nonce of docs/protocol.md §2.7: the counter big-endian, then four zero bytes.
fn nonce(counter: u32) -> [u8; 8] {
    let [a, b, c, d] = counter.to_be_bytes();
    [a, b, c, d, 0, 0, 0, 0]
}

/// The run of keystream the `chacha20` crate computes at once: four 64-byte blocks with its
/// x86 SIMD backends, one block elsewhere (its portable backend, e.g. on wasm).
const CHACHA_RUN: usize = if cfg!(any(target_arch = "x86", target_arch = "x86_64")) {
    4 * 64
} else {
    64
};

/// Original (djb) ChaCha20 with a 64-bit nonce (docs/protocol.md §2.7): `input` XOR keystream.
///
/// The buffer is processed in whole runs of [`CHACHA_RUN`] and cut afterwards: the AVX2
/// backend is much slower on the blocks left over from a run of four (here 150 bytes took
/// 488 ns, 192 bytes 452 ns, 256 bytes 191 ns). The keystream past the message is wiped before
/// the cut.
pub(crate) fn chacha20(key: &[u8; 32], counter: u32, input: &[u8]) -> Vec<u8> {
    let padded = input.len().div_ceil(CHACHA_RUN) * CHACHA_RUN;
    let mut out = Vec::with_capacity(padded);
    out.extend_from_slice(input);
    out.resize(padded, 0);
    let mut c = ChaCha20Legacy::new(key.into(), (&nonce(counter)).into());
    c.apply_keystream(&mut out);
    out.iter_mut().skip(input.len()).for_each(|b| *b = 0);
    out.truncate(input.len());
    out
}

/// A peer's public key, decompressed and validated, ready for Diffie-Hellman.
#[derive(Clone)]
pub(crate) struct DhPoint(EdwardsPoint);

impl DhPoint {
    /// Decompresses an Ed25519 public key, rejecting what libsodium rejects: encodings that do
    /// not decompress, small-order points and points outside the prime-order subgroup
    /// (docs/protocol.md §2.3).
    pub(crate) fn from_ed25519(public: &[u8; 32]) -> Option<Self> {
        let point = Self::from_stored(public)?;
        in_prime_order_subgroup(&point.0).then_some(point)
    }

    /// A key that passed [`from_ed25519`](Self::from_ed25519) before and was stored by us:
    /// decompressed and refused if of small order, without the subgroup check again. That is
    /// enough for [`DhScalar::dh`] never to fail on it: a clamped scalar is a multiple of 8 and
    /// below 8ℓ, so it maps the point's nonzero prime-order part to a point that is neither the
    /// identity nor of order 2, whose Montgomery u-coordinate is nonzero.
    /// Not inlined: one copy of the decompression serves both.
    #[inline(never)]
    pub(crate) fn from_stored(public: &[u8; 32]) -> Option<Self> {
        let point = CompressedEdwardsY(*public).decompress()?;
        (!point.is_small_order()).then_some(Self(point))
    }
}

/// Whether ℓ·P is the identity: `EdwardsPoint::is_torsion_free`, the same predicate.
///
/// It runs in variable time, which is fine for a public key: natively that saves about an eighth
/// of the check (the multiplication is mostly doublings, which no window saves), in wasm a
/// quarter (no constant-time table lookups); docs/benchmarks.md weighs its 4 KB of wasm. ℓ is
/// not a canonical scalar, so it computes (ℓ − 1)·P, ℓ − 1 being the scalar −1 (0 − 1, a
/// subtraction: negation would multiply), and compares with −P.
fn in_prime_order_subgroup(point: &EdwardsPoint) -> bool {
    let minus_one = Scalar::ZERO - Scalar::ONE;
    let product =
        EdwardsPoint::vartime_double_scalar_mul_basepoint(&minus_one, point, &Scalar::ZERO);
    product == -point
}

/// Our side of Diffie-Hellman: the X25519 secret of an Ed25519 seed, SHA-512(seed)[..32]
/// (libsodium's `crypto_sign_ed25519_sk_to_curve25519`; clamped when used).
#[derive(Clone, Zeroize)]
pub(crate) struct DhScalar(Secret32);

impl DhScalar {
    pub(crate) fn from_seed(seed: &[u8; 32]) -> Self {
        let hash = Zeroizing::new(<[u8; 64]>::from(Sha512::digest(seed)));
        let (scalar, prefix) = halves(&hash);
        let _prefix = Zeroizing::new(prefix);
        Self(Zeroizing::new(scalar))
    }

    /// X25519 with a validated point, rejecting a non-contributory (all-zero) result
    /// (docs/protocol.md §2.4). It is computed on the Edwards form, which curve25519-dalek's
    /// vectorised backend multiplies faster than the Montgomery ladder, and which validation
    /// already decompressed; the Montgomery u-coordinate of the product is the X25519 output.
    pub(crate) fn dh(&self, their: &DhPoint) -> Option<Secret32> {
        let mut product = their.0.mul_clamped(*self.0);
        let mut u = product.to_montgomery();
        let shared = Zeroizing::new(u.to_bytes());
        product.zeroize();
        u.zeroize();
        if bool::from(shared.ct_eq(&[0u8; 32])) {
            return None;
        }
        Some(shared)
    }
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
    use curve25519_dalek::scalar::Scalar;
    use proptest::prelude::*;

    use super::*;

    /// The rule before the variable-time check (libsodium's: decompresses, not of small order,
    /// in the prime-order subgroup), computed with dalek's constant-time `is_torsion_free`.
    fn accepted_by_reference(bytes: &[u8; 32]) -> bool {
        CompressedEdwardsY(*bytes)
            .decompress()
            .is_some_and(|p| !p.is_small_order() && p.is_torsion_free())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Every point of the curve is a prime-order point plus one of the eight torsion
        /// points: each combination is accepted exactly when the reference accepts it (only
        /// with the zero torsion point, and never the identity).
        #[test]
        fn the_key_check_accepts_exactly_what_the_reference_does(
            scalar in any::<[u8; 32]>(),
            torsion in 0usize..8,
            zero_scalar in proptest::bool::weighted(0.05),
        ) {
            let k = if zero_scalar { Scalar::ZERO } else { Scalar::from_bytes_mod_order(scalar) };
            let point = ED25519_BASEPOINT_POINT * k + EIGHT_TORSION[torsion];
            let bytes = point.compress().to_bytes();
            let accepted = DhPoint::from_ed25519(&bytes).is_some();
            prop_assert_eq!(accepted, accepted_by_reference(&bytes));
            prop_assert_eq!(accepted, torsion == 0 && k != Scalar::ZERO);
        }

        /// Arbitrary bytes, mostly no point at all or a point with a torsion component.
        #[test]
        fn the_key_check_agrees_on_arbitrary_bytes(bytes in any::<[u8; 32]>()) {
            prop_assert_eq!(DhPoint::from_ed25519(&bytes).is_some(), accepted_by_reference(&bytes));
        }
    }

    /// Equal slices compare equal, and a difference in any one bit of any byte, or in the
    /// lengths, does not.
    #[test]
    fn same_bytes_sees_every_difference() {
        let a: Vec<u8> = (0..32u8).map(|i| i.wrapping_mul(37)).collect();
        assert!(same_bytes(&a, &a.clone()));
        assert!(same_bytes(&[], &[]));
        for i in 0..a.len() {
            for bit in 0..8 {
                let mut b = a.clone();
                b[i] ^= 1 << bit;
                assert!(!same_bytes(&a, &b));
            }
        }
        assert!(!same_bytes(&a, &a[..31]));
        assert!(!same_bytes(&a[..31], &a));
    }

    /// The crates' own states hold key-equivalent material (an HMAC's ipad/opad hash states, the
    /// ChaCha20 key schedule and keystream, a hash of a seed): built with their `zeroize`
    /// features, they wipe themselves when dropped. Without those features this does not compile.
    #[test]
    fn the_primitive_states_wipe_themselves() {
        fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>() {}
        // `Hmac<Sha256>` keeps its ipad and opad states as two of these.
        wiped_on_drop::<<Sha256 as hmac::digest::block_api::CoreProxy>::Core>();
        wiped_on_drop::<Sha256>();
        wiped_on_drop::<Sha512>();
        wiped_on_drop::<ChaCha20Legacy>();
    }
}
