//! What the platform is asked to compute: the cipher and MAC operations of a step of a
//! [`WebSealer`](super::WebSealer) job, run in a batch (the web package runs them with Web
//! Crypto, under the keys it derived from the store key: non-extractable, never seen here).

use std::ops::Range;

use zeroize::Zeroizing;

use super::format::{DIGEST_LEN, NONCE_LEN};
use crate::error::StoreError;

/// One operation for the platform. Each has one output, in the order of the batch.
pub enum CryptoOp {
    /// AES-256-GCM encryption under the records key: the output is the ciphertext with its tag.
    Seal {
        /// The nonce.
        nonce: [u8; NONCE_LEN],
        /// The associated data.
        aad: Vec<u8>,
        /// What to encrypt (a record's body: wiped when dropped).
        plaintext: Zeroizing<Vec<u8>>,
    },
    /// AES-256-GCM decryption under the records key: the output is the plaintext, or nothing
    /// if it does not open (wrong key, damage, other associated data).
    Open {
        /// The nonce.
        nonce: [u8; NONCE_LEN],
        /// The associated data.
        aad: Vec<u8>,
        /// The ciphertext with its tag.
        ciphertext: Vec<u8>,
    },
    /// HMAC-SHA256 under the session-id key (a session id to hash): 32 bytes.
    HashId(Vec<u8>),
    /// HMAC-SHA256 under the digest key (an element's input): 32 bytes.
    Element(Vec<u8>),
}

impl CryptoOp {
    /// The operation's kind as the web package numbers it: 0 seal, 1 open, 2 hash an id, 3 an
    /// element.
    pub fn kind(&self) -> u8 {
        match self {
            Self::Seal { .. } => 0,
            Self::Open { .. } => 1,
            Self::HashId(_) => 2,
            Self::Element(_) => 3,
        }
    }
}

impl std::fmt::Debug for CryptoOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A plaintext holds keys: only the kind is shown.
        write!(f, "CryptoOp({})", self.kind())
    }
}

/// The outputs of a batch, in its order, as the host hands them over: one buffer (wiped when
/// dropped: opened bodies hold keys) cut at each output's length. One buffer rather than a
/// vector per output: no allocation and no wipe per record, and less code in the wasm module.
pub struct Outputs {
    bytes: Zeroizing<Vec<u8>>,
    /// Where each output is in `bytes`; `None`: an [`CryptoOp::Open`] that did not open.
    parts: Vec<Option<Range<usize>>>,
}

impl Outputs {
    /// An output length that says an open failed.
    pub const FAILED: u32 = u32::MAX;

    /// The outputs `bytes` holds one after the other, of `lengths` (or [`Self::FAILED`]);
    /// `None` if the lengths exceed the bytes.
    pub fn new(bytes: Zeroizing<Vec<u8>>, lengths: &[u32]) -> Option<Self> {
        let mut parts = Vec::with_capacity(lengths.len());
        let mut end = 0usize;
        for len in lengths {
            if *len == Self::FAILED {
                parts.push(None);
                continue;
            }
            let start = end;
            end = end.checked_add(usize::try_from(*len).ok()?)?;
            parts.push(Some(start..end));
        }
        (end <= bytes.len()).then_some(Self { bytes, parts })
    }

    /// How many outputs there are.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Each output in order (`None`: an open that did not open).
    pub fn iter(&self) -> impl Iterator<Item = Option<&[u8]>> {
        self.parts
            .iter()
            .map(|part| part.clone().and_then(|r| self.bytes.get(r)))
    }
}

impl std::fmt::Debug for Outputs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Opened bodies hold keys: only how many.
        write!(f, "Outputs({})", self.parts.len())
    }
}

/// The platform answered a batch with something else than one output of the right shape per
/// operation: a bug of the host, never a store's content.
pub(super) fn host_error(what: &str) -> StoreError {
    StoreError::Backend(format!("the host's answer to the sealing requests: {what}"))
}

/// An HMAC output: 32 bytes.
pub(super) fn mac(output: Option<&[u8]>) -> Result<[u8; DIGEST_LEN], StoreError> {
    output
        .and_then(|o| <[u8; DIGEST_LEN]>::try_from(o).ok())
        .ok_or_else(|| host_error("an HMAC is not 32 bytes"))
}

/// A fresh random nonce (the randomness the client uses for its keys).
pub(super) fn nonce() -> [u8; NONCE_LEN] {
    use proteus_core::{OsRng, Rng};
    let mut nonce = [0; NONCE_LEN];
    OsRng.fill_bytes(&mut nonce);
    nonce
}
