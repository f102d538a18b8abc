use ed25519_dalek::{Signature, VerifyingKey};

use super::{IdentityKey, IdentityKeyPair, PreKey, PreKeyId, PublicKey};
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::DecodeError;

/// The signature of a prekey bundle, in one of the two encodings deployed (docs/protocol.md §4.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BundleSignature {
    /// A bare `bstr(64)`, as Wire's JavaScript Proteus writes it.
    Bare([u8; 64]),
    /// `{0: bstr(64)}`, as Wire's Rust Proteus writes it.
    Wrapped([u8; 64]),
}

impl BundleSignature {
    fn bytes(&self) -> &[u8; 64] {
        match self {
            Self::Bare(b) | Self::Wrapped(b) => b,
        }
    }
}

/// The outcome of checking a bundle's signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a bundle whose signature was not checked proves nothing"]
pub enum BundleVerification {
    /// The bundle carries no signature (what Wire's clients publish).
    Unsigned,
    /// The identity key signed the prekey.
    Valid,
    /// The signature does not verify.
    Invalid,
}

/// What a client publishes so that others can start sessions with it (docs/protocol.md §4.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreKeyBundle {
    prekey_id: PreKeyId,
    public_key: PublicKey,
    identity_key: IdentityKey,
    signature: Option<BundleSignature>,
}

impl PreKeyBundle {
    /// The record format version this engine writes.
    pub const VERSION: u8 = 1;

    /// An unsigned bundle for `prekey`, the form Wire's clients publish.
    pub fn new(identity: &IdentityKey, prekey: &PreKey) -> Self {
        Self {
            prekey_id: prekey.id(),
            public_key: *prekey.public_key(),
            identity_key: *identity,
            signature: None,
        }
    }

    /// A bundle signed by the identity key over the prekey's public key, in the bare encoding
    /// of Wire's JavaScript Proteus. Unsigned bundles are what interoperates with every peer.
    pub fn signed(identity: &IdentityKeyPair, prekey: &PreKey) -> Self {
        let signature = identity.sign(prekey.public_key().as_bytes());
        Self {
            signature: Some(BundleSignature::Bare(signature)),
            ..Self::new(identity.public_key(), prekey)
        }
    }

    /// The prekey id.
    pub fn prekey_id(&self) -> PreKeyId {
        self.prekey_id
    }

    /// The prekey's public key.
    pub fn public_key(&self) -> &PublicKey {
        &self.public_key
    }

    /// The owner's identity.
    pub fn identity_key(&self) -> &IdentityKey {
        &self.identity_key
    }

    /// The signature, if any.
    pub fn signature(&self) -> Option<&BundleSignature> {
        self.signature.as_ref()
    }

    /// Checks the signature (strict Ed25519 verification).
    pub fn verify(&self) -> BundleVerification {
        let Some(sig) = &self.signature else {
            return BundleVerification::Unsigned;
        };
        let Ok(vk) = VerifyingKey::from_bytes(self.identity_key.public_key().as_bytes()) else {
            return BundleVerification::Invalid;
        };
        match vk.verify_strict(
            self.public_key.as_bytes(),
            &Signature::from_bytes(sig.bytes()),
        ) {
            Ok(()) => BundleVerification::Valid,
            Err(_) => BundleVerification::Invalid,
        }
    }

    /// `{0: 1, 1: id, 2: PublicKey, 3: IdentityKey, 4: signature or null}`
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut e = Encoder::with_capacity(160);
        e.map(5)
            .key(0)
            .u64(u64::from(Self::VERSION))
            .key(1)
            .u64(u64::from(self.prekey_id.value()))
            .key(2);
        self.public_key.encode(&mut e);
        e.key(3);
        self.identity_key.encode(&mut e);
        e.key(4);
        match &self.signature {
            None => e.null(),
            Some(BundleSignature::Bare(s)) => e.bytes(s),
            Some(BundleSignature::Wrapped(s)) => e.wrapped_bytes(s),
        };
        e.into_bytes()
    }

    /// Decodes a bundle and validates its keys. Both signature encodings are accepted.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let (mut prekey_id, mut public_key, mut identity_key, mut signature) =
            (None, None, None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(&mut d)? {
                0 => {
                    d.u8()?;
                }
                1 => prekey_id = Some(PreKeyId::new(d.u16()?)),
                2 => public_key = Some(PublicKey::decode(&mut d)?),
                3 => identity_key = Some(IdentityKey::decode(&mut d)?),
                4 => signature = decode_signature(&mut d)?,
                _ => d.skip()?,
            }
        }
        d.finish()?;
        let bundle = Self {
            prekey_id: required(prekey_id, "bundle prekey id")?,
            public_key: required(public_key, "bundle public key")?,
            identity_key: required(identity_key, "bundle identity key")?,
            signature,
        };
        bundle.public_key.validate()?;
        bundle.identity_key.public_key().validate()?;
        Ok(bundle)
    }
}

fn decode_signature(d: &mut Decoder<'_>) -> Result<Option<BundleSignature>, DecodeError> {
    if d.null()? {
        return Ok(None);
    }
    // A map is Rust's `{0: sig}`; anything else must be JavaScript's bare byte string.
    let mut probe = Decoder::new(d.remaining());
    if probe.map().is_ok() {
        Ok(Some(BundleSignature::Wrapped(
            d.wrapped::<64>("bundle signature")?,
        )))
    } else {
        Ok(Some(BundleSignature::Bare(
            d.fixed::<64>("bundle signature")?,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::PreKeyId;

    fn pair() -> (IdentityKeyPair, PreKey) {
        (
            IdentityKeyPair::from_seed(&[0x44; 32]),
            PreKey::from_seed(PreKeyId::new(7), &[0x55; 32]),
        )
    }

    #[test]
    fn signed_bundles_verify_in_both_encodings() {
        let (identity, prekey) = pair();
        let signed = PreKeyBundle::signed(&identity, &prekey);
        assert_eq!(signed.verify(), BundleVerification::Valid);
        let bare = signed.to_bytes();
        // JS writes `04 58 40 <sig>`; Rust writes `04 a1 00 58 40 <sig>` (docs/protocol.md §4.7).
        let Some(BundleSignature::Bare(sig)) = signed.signature().copied() else {
            panic!()
        };
        let wrapped = PreKeyBundle {
            signature: Some(BundleSignature::Wrapped(sig)),
            ..signed.clone()
        };
        let wrapped_bytes = wrapped.to_bytes();
        assert_eq!(wrapped_bytes.len(), bare.len() + 2);
        for bytes in [bare, wrapped_bytes] {
            let decoded = PreKeyBundle::from_bytes(&bytes).unwrap();
            assert_eq!(decoded.verify(), BundleVerification::Valid);
            assert_eq!(decoded.to_bytes(), bytes);
        }
    }

    #[test]
    fn a_wrong_signature_is_invalid_and_unsigned_is_unknown() {
        let (identity, prekey) = pair();
        let other = PreKey::from_seed(PreKeyId::new(8), &[0x66; 32]);
        let mut forged = PreKeyBundle::signed(&identity, &other);
        forged.public_key = *prekey.public_key();
        assert_eq!(forged.verify(), BundleVerification::Invalid);
        assert_eq!(
            PreKeyBundle::new(identity.public_key(), &prekey).verify(),
            BundleVerification::Unsigned
        );
    }

    #[test]
    fn bundles_with_degenerate_keys_are_refused() {
        let (identity, prekey) = pair();
        let mut bytes = PreKeyBundle::new(identity.public_key(), &prekey).to_bytes();
        // `a5 00 01 01 07 02 a1 00 58 20` precede the prekey's 32 bytes.
        bytes[10..42].fill(0);
        assert!(matches!(
            PreKeyBundle::from_bytes(&bytes),
            Err(DecodeError::InvalidKey(_))
        ));
    }
}
