use std::fmt;

use ed25519_dalek::SigningKey;
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use super::PublicKey;
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::crypto::{DhPoint, DhScalar, Secret32, concat, halves};
use crate::error::DecodeError;

/// An Ed25519 key pair used for Diffie-Hellman: prekeys, base keys and ratchet keys
/// (docs/protocol.md §2.1).
///
/// Holds the seed (what is stored), the Ed25519 public key (what travels) and the X25519 secret
/// derived once from the seed (what DH uses). Secrets are wiped on drop.
#[derive(Clone, zeroize::Zeroize)]
pub(crate) struct KeyPair {
    seed: Secret32,
    public: PublicKey,
    dh_scalar: DhScalar,
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
        let dh_scalar = DhScalar::from_seed(&seed);
        Self {
            seed,
            public,
            dh_scalar,
        }
    }

    pub(crate) fn public(&self) -> &PublicKey {
        &self.public
    }

    /// DH with a validated public key; `None` for a degenerate result.
    pub(crate) fn dh(&self, their: &DhPoint) -> Option<Secret32> {
        self.dh_scalar.dh(their)
    }

    /// The 64-byte stored form: seed ‖ public key (libsodium's layout).
    pub(crate) fn secret_bytes(&self) -> Zeroizing<[u8; 64]> {
        concat(&[&self.seed, self.public.as_bytes()])
    }

    /// `{0: SecretKey {0: bstr(64)}, 1: PublicKey}` (docs/protocol.md §4.2)
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

    /// Rebuilds a key pair from `seed ‖ pk` and the separately stored public key, which must agree
    /// (Wire's Rust 2.x rejects a mismatch too; docs/protocol.md §2.1). The seed is not re-derived
    /// into a public key here: that costs a scalar multiplication on every session load.
    pub(crate) fn from_secret_and_public(
        secret: &[u8; 64],
        public: PublicKey,
    ) -> Result<Self, DecodeError> {
        let (seed, public_half) = halves(secret);
        let seed = Zeroizing::new(seed);
        if &public_half != public.as_bytes() {
            return Err(DecodeError::InvalidKey(
                "secret key does not match its public key",
            ));
        }
        Ok(Self::with_public(seed, public))
    }
}

impl fmt::Debug for KeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPair")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}
