use std::fmt;

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use rand_core::CryptoRng;
use zeroize::Zeroizing;

use super::PublicKey;
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::crypto::{DhPoint, DhScalar, Secret32, concat, halves};
use crate::error::DecodeError;

/// A party's public identity: an Ed25519 public key, `{0: PublicKey}` on the wire (docs/protocol.md
/// §4.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct IdentityKey(PublicKey);

impl IdentityKey {
    /// Wraps a public key.
    pub fn new(key: PublicKey) -> Self {
        Self(key)
    }

    /// The Ed25519 public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.0
    }

    /// Lowercase hex of the public key, as Wire's clients show it (docs/protocol.md §4.8).
    pub fn fingerprint(&self) -> String {
        self.0.fingerprint()
    }

    /// Whether `signature` is this identity's signature of `message` (made by
    /// [`IdentityKeyPair::sign`]). Verification is strict: non-canonical signatures and weak
    /// (small-order) public keys are refused.
    #[must_use]
    pub fn verify(&self, message: &[u8], signature: &[u8; 64]) -> bool {
        VerifyingKey::from_bytes(self.0.as_bytes()).is_ok_and(|key| {
            key.verify_strict(message, &Signature::from_bytes(signature))
                .is_ok()
        })
    }

    /// The CBOR encoding.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Encoder::with_capacity(40);
        self.encode(&mut e);
        e.into_bytes()
    }

    /// Decodes and validates an identity key.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let key = Self::decode(&mut d)?;
        d.finish()?;
        key.0.validate()?;
        Ok(key)
    }

    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.map(1).key(0);
        self.0.encode(e);
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        let mut key = None;
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(d)? {
                0 => key = Some(PublicKey::decode(d)?),
                _ => d.skip()?,
            }
        }
        required(key, "identity key").map(Self)
    }
}

impl fmt::Debug for IdentityKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdentityKey({})", self.fingerprint())
    }
}

/// A party's long-term identity key pair (docs/protocol.md §4.4). The secret is wiped on drop and
/// never shown by `Debug`.
#[derive(Clone)]
pub struct IdentityKeyPair {
    signing: SigningKey,
    public: IdentityKey,
    dh_scalar: DhScalar,
}

impl IdentityKeyPair {
    /// The record format version this engine writes.
    pub const VERSION: u8 = 1;

    /// Generates a new identity from 32 bytes of `rng`.
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut seed = Zeroizing::new([0u8; 32]);
        rng.fill_bytes(seed.as_mut_slice());
        Self::from_seed(&seed)
    }

    /// The identity whose Ed25519 seed is `seed`.
    pub fn from_seed(seed: &[u8; 32]) -> Self {
        let signing = SigningKey::from_bytes(seed);
        let public = IdentityKey(PublicKey::from_bytes(signing.verifying_key().to_bytes()));
        let dh_scalar = DhScalar::from_seed(seed);
        Self {
            signing,
            public,
            dh_scalar,
        }
    }

    /// The public identity.
    pub fn public_key(&self) -> &IdentityKey {
        &self.public
    }

    /// The fingerprint of the public identity.
    pub fn fingerprint(&self) -> String {
        self.public.fingerprint()
    }

    /// Signs `message` with the identity's Ed25519 key (deterministic RFC 8032 signatures).
    ///
    /// Proteus itself signs only prekey bundles, over a bare 32-byte public key. To keep any other
    /// signature (an application's authentication challenge, say) from being mistaken for one,
    /// sign only messages that start with a context string of your own, e.g.
    /// `b"my-app-auth-v1\n" ‖ challenge`. Check a signature with [`IdentityKey::verify`].
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.signing.sign(message).to_bytes()
    }

    pub(crate) fn dh(&self, their: &DhPoint) -> Option<Secret32> {
        self.dh_scalar.dh(their)
    }

    /// `{0: 1, 1: SecretKey {0: seed ‖ pk}, 2: IdentityKey}`. The result holds the secret key:
    /// keep it in protected storage and wipe it after use.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let secret: Zeroizing<[u8; 64]> =
            concat(&[self.signing.as_bytes(), self.public.0.as_bytes()]);
        let mut e = Encoder::with_capacity(120);
        e.map(3)
            .key(0)
            .u64(u64::from(Self::VERSION))
            .key(1)
            .wrapped_bytes(secret.as_slice())
            .key(2);
        self.public.encode(&mut e);
        Zeroizing::new(e.into_bytes())
    }

    /// Decodes an identity key pair, checking that its secret and public halves agree.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let (mut secret, mut public) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(&mut d)? {
                // Version: written as 1, checked by no implementation (docs/protocol.md §4.4).
                0 => {
                    d.u8()?;
                }
                1 => secret = Some(Zeroizing::new(d.wrapped::<64>("identity secret key")?)),
                2 => public = Some(IdentityKey::decode(&mut d)?),
                _ => d.skip()?,
            }
        }
        d.finish()?;
        let secret = required(secret, "identity secret key")?;
        let public = required(public, "identity public key")?;
        let (seed, public_half) = halves(&secret);
        let seed = Zeroizing::new(seed);
        let pair = Self::from_seed(&seed);
        if pair.public != public || &public_half != public.0.as_bytes() {
            return Err(DecodeError::InvalidKey(
                "identity secret key does not match its public key",
            ));
        }
        Ok(pair)
    }
}

impl fmt::Debug for IdentityKeyPair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self { public, .. } = self;
        f.debug_struct("IdentityKeyPair")
            .field("public", public)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{OsRng, PreKey, PreKeyBundle, PreKeyId};

    #[test]
    fn signatures_verify_only_for_their_message_and_key() {
        let alice = IdentityKeyPair::generate(&mut OsRng);
        let bob = IdentityKeyPair::generate(&mut OsRng);
        let message = b"relay-auth-v1\nchallenge";
        let signature = alice.sign(message);
        assert!(alice.public_key().verify(message, &signature));
        assert!(
            !alice
                .public_key()
                .verify(b"relay-auth-v1\nchallengE", &signature)
        );
        assert!(!bob.public_key().verify(message, &signature));
        let mut flipped = signature;
        flipped[0] ^= 1;
        assert!(!alice.public_key().verify(message, &flipped));
        assert!(!alice.public_key().verify(message, &[0; 64]));
        // Deterministic, as Ed25519 is.
        assert_eq!(alice.sign(message), signature);
    }

    #[test]
    fn a_bundle_signature_is_the_identity_signing_the_prekey() {
        let alice = IdentityKeyPair::from_seed(&[7; 32]);
        let prekey = PreKey::from_seed(PreKeyId::new(1), &[9; 32]);
        let bundle = PreKeyBundle::signed(&alice, &prekey);
        let Some(crate::BundleSignature::Bare(signature)) = bundle.signature() else {
            panic!("signed bundles carry a bare signature");
        };
        assert!(
            alice
                .public_key()
                .verify(prekey.public_key().as_bytes(), signature)
        );
    }

    #[test]
    fn an_invalid_public_key_verifies_nothing() {
        let weak = IdentityKey::new(PublicKey::from_bytes([0; 32]));
        assert!(!weak.verify(b"", &[0; 64]));
    }
}
