use std::fmt;

use ed25519_dalek::SigningKey;
use rand_core::CryptoRng;
use x25519_dalek::StaticSecret;
use zeroize::Zeroizing;

use super::PublicKey;
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::crypto::{Secret32, concat, dh, halves};
use crate::error::DecodeError;

/// An Ed25519 key pair used for Diffie-Hellman: prekeys, base keys and ratchet keys (spec §1.1).
///
/// Holds the seed (what is stored), the Ed25519 public key (what travels) and the X25519 secret
/// derived once from the seed (what DH uses). Secrets are wiped on drop.
#[derive(Clone)]
pub(crate) struct KeyPair {
    seed: Secret32,
    public: PublicKey,
    dh_secret: StaticSecret,
}

impl KeyPair {
    pub(crate) fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed.as_mut_slice());
        Self::from_seed(seed)
    }

    pub(crate) fn from_seed(seed: Secret32) -> Self {
        let public =
            PublicKey::from_bytes(SigningKey::from_bytes(&seed).verifying_key().to_bytes());
        Self::with_public(seed, public)
    }

    fn with_public(seed: Secret32, public: PublicKey) -> Self {
        let dh_secret = x25519_secret(&seed);
        Self {
            seed,
            public,
            dh_secret,
        }
    }

    pub(crate) fn public(&self) -> &PublicKey {
        &self.public
    }

    /// DH with an Ed25519 public key, validating it; `None` for degenerate keys or results.
    pub(crate) fn dh(&self, their: &PublicKey) -> Option<Secret32> {
        let their_x = their.to_x25519().ok()?;
        dh(&self.dh_secret, &their_x)
    }

    /// The 64-byte stored form: seed ‖ public key (libsodium's layout).
    pub(crate) fn secret_bytes(&self) -> Zeroizing<[u8; 64]> {
        concat(&[&self.seed, self.public.as_bytes()])
    }

    /// `{0: SecretKey {0: bstr(64)}, 1: PublicKey}` (spec §3.3)
    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(2)
            .key(0)
            .wrapped_bytes(self.secret_bytes().as_slice())
            .key(1);
        self.public.encode(e);
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let (mut secret, mut public) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => secret = Some(Zeroizing::new(d.wrapped::<64>("secret key")?)),
                1 => public = Some(PublicKey::decode(d)?),
                _ => d.skip()?,
            }
        }
        let secret = required(secret, "key pair secret key")?;
        let public = required(public, "key pair public key")?;
        Self::from_secret_and_public(&secret, public)
    }

    /// Rebuilds a key pair from `seed ‖ pk` and the separately stored public key, which must
    /// agree (Wire's Rust 2.x rejects a mismatch too; spec §1.1). The seed is not re-derived
    /// into a public key here: that costs a scalar multiplication on every session load.
    pub(crate) fn from_secret_and_public(
        secret: &[u8; 64],
        public: PublicKey,
    ) -> Result<Self, DecodeError> {
        let (seed, pk_half) = secret.split_at(32);
        if pk_half != public.as_bytes().as_slice() {
            return Err(DecodeError::InvalidKey(
                "secret key does not match its public key",
            ));
        }
        let mut s = Zeroizing::new([0u8; 32]);
        s.copy_from_slice(seed);
        Ok(Self::with_public(s, public))
    }
}

/// The X25519 secret of an Ed25519 seed: SHA-512(seed)[..32], which `StaticSecret` clamps when
/// used. This is libsodium's `crypto_sign_ed25519_sk_to_curve25519` (spec §1.2).
pub(crate) fn x25519_secret(seed: &[u8; 32]) -> StaticSecret {
    use sha2::Digest;
    let hash = Zeroizing::new(<[u8; 64]>::from(sha2::Sha512::digest(seed)));
    let (scalar, prefix) = halves(&hash);
    let (scalar, _prefix) = (Zeroizing::new(scalar), Zeroizing::new(prefix));
    StaticSecret::from(*scalar)
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPair")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}
