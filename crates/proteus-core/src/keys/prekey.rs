use std::fmt;

use rand_core::CryptoRng;
use zeroize::Zeroizing;

use super::{KeyPair, PublicKey};
use crate::cbor::{Decoder, Encoder, Seen, required};
use crate::error::DecodeError;

/// A prekey id. One-time prekeys use 0..=65534; [`PreKeyId::LAST_RESORT`] is never consumed.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, zeroize::Zeroize)]
pub struct PreKeyId(u16);

impl PreKeyId {
    /// The last-resort prekey id (65535): the engine never removes this prekey (docs/protocol.md
    /// §10.1).
    pub const LAST_RESORT: Self = Self(u16::MAX);

    /// A prekey id.
    pub const fn new(id: u16) -> Self {
        Self(id)
    }

    /// The numeric id.
    pub const fn value(self) -> u16 {
        self.0
    }

    /// Whether this is the last-resort id.
    pub const fn is_last_resort(self) -> bool {
        self.0 == u16::MAX
    }
}

impl fmt::Debug for PreKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PreKeyId({})", self.0)
    }
}

impl fmt::Display for PreKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A prekey: an id and a key pair (docs/protocol.md §4.5). The secret is wiped on drop.
#[derive(Clone, zeroize::Zeroize)]
pub struct PreKey {
    id: PreKeyId,
    key_pair: KeyPair,
}

impl PreKey {
    /// The record format version this engine writes.
    pub const VERSION: u8 = 1;

    /// Generates a prekey with the given id.
    pub fn generate<R: CryptoRng + ?Sized>(id: PreKeyId, rng: &mut R) -> Self {
        Self {
            id,
            key_pair: KeyPair::generate(rng),
        }
    }

    /// Generates the last-resort prekey.
    pub fn last_resort<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        Self::generate(PreKeyId::LAST_RESORT, rng)
    }

    /// The prekey whose Ed25519 seed is `seed`.
    pub fn from_seed(id: PreKeyId, seed: &[u8; 32]) -> Self {
        Self {
            id,
            key_pair: KeyPair::from_seed(Zeroizing::new(*seed)),
        }
    }

    /// The id.
    pub fn id(&self) -> PreKeyId {
        self.id
    }

    /// The public key.
    pub fn public_key(&self) -> &PublicKey {
        self.key_pair.public()
    }

    pub(crate) fn key_pair(&self) -> &KeyPair {
        &self.key_pair
    }

    /// `{0: 1, 1: id, 2: KeyPair}`. The result holds the secret key.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut e = Encoder::with_capacity(150);
        e.map(3)
            .key(0)
            .u64(u64::from(Self::VERSION))
            .key(1)
            .u64(u64::from(self.id.0))
            .key(2);
        self.key_pair.encode(&mut e);
        Zeroizing::new(e.into_bytes())
    }

    /// Decodes a prekey.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let mut d = Decoder::new(bytes);
        let (mut id, mut key_pair) = (None, None);
        let mut seen = Seen::default();
        for _ in 0..d.map()? {
            match seen.key(&mut d)? {
                0 => {
                    d.u8()?;
                }
                1 => id = Some(PreKeyId(d.u16()?)),
                2 => key_pair = Some(KeyPair::decode(&mut d)?),
                _ => d.skip()?,
            }
        }
        d.finish()?;
        // The public key is checked against the copy inside the secret key (`KeyPair::decode`),
        // not validated as a curve point: it is our own key, and validation costs a scalar
        // multiplication on every prekey a PreKeyMessage looks up.
        let key_pair = required(key_pair, "prekey key pair")?;
        Ok(Self {
            id: required(id, "prekey id")?,
            key_pair,
        })
    }
}

impl fmt::Debug for PreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreKey")
            .field("id", &self.id)
            .field("public", self.public_key())
            .finish_non_exhaustive()
    }
}
