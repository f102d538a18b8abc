use std::fmt;

use rand_core::CryptoRng;

/// 16 random bytes naming a session state; every message carries it (docs/protocol.md §5.5).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, zeroize::Zeroize)]
pub struct SessionTag([u8; 16]);

impl SessionTag {
    /// Draws a new tag from `rng`.
    pub fn generate<R: CryptoRng + ?Sized>(rng: &mut R) -> Self {
        let mut t = [0u8; 16];
        rng.fill_bytes(&mut t);
        Self(t)
    }

    /// Wraps 16 bytes.
    pub fn from_bytes(bytes: [u8; 16]) -> Self {
        Self(bytes)
    }

    /// The 16 bytes.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }
}

impl fmt::Debug for SessionTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SessionTag({self})")
    }
}

impl fmt::Display for SessionTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::keys::hex(&self.0))
    }
}
