use std::fmt;

use crate::cbor::{Decoder, Encoder};
use crate::crypto::DhPoint;
use crate::error::DecodeError;

/// An Ed25519 public key as it travels on the wire: 32 bytes.
///
/// Keys from messages are kept as bytes and compared as bytes; they are converted to X25519
/// (and validated) only when a Diffie-Hellman step needs them, which is what makes in-chain
/// decryption cheap. Use [`PublicKey::validate`] to check one up front.
#[derive(Clone, Copy, PartialEq, Eq, Hash, zeroize::Zeroize)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// Wraps 32 bytes without validating them.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex of the 32 bytes (docs/protocol.md §4.8).
    pub fn fingerprint(&self) -> String {
        hex(&self.0)
    }

    /// Checks that the key is a valid, prime-order point: not all-zero, not of small order, not
    /// mixed-order, and on the curve.
    pub fn validate(&self) -> Result<(), DecodeError> {
        self.dh_point().map(|_| ())
    }

    pub(crate) fn dh_point(&self) -> Result<DhPoint, DecodeError> {
        DhPoint::from_ed25519(&self.0).ok_or(DecodeError::InvalidKey(
            "public key is not a prime-order point",
        ))
    }

    /// `{0: bstr(32)}`
    pub(crate) fn encode(&self, e: &mut Encoder) {
        e.wrapped_bytes(&self.0);
    }

    pub(crate) fn decode(d: &mut Decoder<'_>) -> Result<Self, DecodeError> {
        d.wrapped::<32>("public key").map(Self)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint())
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    // Digit arithmetic rather than `{:02x}`: a batch formats the sender of every PreKeyMessage,
    // and the formatting machinery was 1.5% of a batch of new sessions in wasm.
    fn digit(nibble: u8) -> char {
        char::from(if nibble < 10 {
            b'0' + nibble
        } else {
            b'a' - 10 + nibble
        })
    }
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(digit(b >> 4));
        s.push(digit(b & 0xf));
    }
    s
}

#[cfg(test)]
mod tests {
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};

    use super::PublicKey;

    fn key(hex: &str) -> PublicKey {
        PublicKey::from_bytes(hex::decode(hex).unwrap().try_into().unwrap())
    }

    #[test]
    fn degenerate_keys_are_rejected() {
        // Every point of small order (the eight-torsion subgroup), including the identity.
        for point in EIGHT_TORSION {
            let k = PublicKey::from_bytes(point.compress().to_bytes());
            assert!(k.validate().is_err(), "{k:?}");
        }
        // The all-zero encoding (a point of order 4) and one that is not on the curve.
        assert!(key(&"00".repeat(32)).validate().is_err());
        assert!(
            key("0200000000000000000000000000000000000000000000000000000000000000")
                .validate()
                .is_err()
        );
        // A mixed-order point: the base point plus a point of order 2.
        let mixed = ED25519_BASEPOINT_POINT + EIGHT_TORSION[4];
        assert!(
            PublicKey::from_bytes(mixed.compress().to_bytes())
                .validate()
                .is_err()
        );
    }

    #[test]
    fn hex_covers_every_byte() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(super::hex(&bytes), hex::encode(&bytes));
    }

    #[test]
    fn honest_keys_are_accepted() {
        let k = key("d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737");
        assert!(k.validate().is_ok());
        assert_eq!(
            k.fingerprint(),
            "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737"
        );
        assert_eq!(format!("{k:?}"), format!("PublicKey({})", k.fingerprint()));
    }
}
