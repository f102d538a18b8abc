//! Identity keys checked once for Diffie-Hellman, to reuse across sessions.

use super::IdentityKey;
use crate::crypto::DhPoint;
use crate::error::DecodeError;

/// A peer's identity key, decompressed and checked for Diffie-Hellman (a prime-order point,
/// docs/protocol.md §2.3): the first step of every session that identity starts with us.
///
/// The check costs about as much as a Diffie-Hellman. A receiver that keeps these in an
/// [`IdentityCache`] skips it when the same identity starts another session. Public data only.
#[derive(Clone)]
pub struct CheckedIdentity {
    key: IdentityKey,
    point: DhPoint,
}

impl CheckedIdentity {
    /// Checks `key`; fails exactly where a session from it would (`InvalidKey`).
    pub fn new(key: &IdentityKey) -> Result<Self, DecodeError> {
        Ok(Self {
            key: *key,
            point: key.public_key().dh_point()?,
        })
    }

    /// The identity key.
    pub fn key(&self) -> &IdentityKey {
        &self.key
    }

    pub(crate) fn point(&self) -> &DhPoint {
        &self.point
    }
}

impl std::fmt::Debug for CheckedIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CheckedIdentity").field(&self.key).finish()
    }
}

/// Where a receiver keeps [`CheckedIdentity`]s between sessions (see
/// [`Session::decrypt_with_cache`](crate::Session::decrypt_with_cache)). The session code asks
/// for the sender's identity before creating a state, and hands over the one it checked once
/// the message has decrypted: a cache fills with authenticated senders only. `()` keeps nothing.
pub trait IdentityCache {
    /// The checked form of `key`, if kept.
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity>;

    /// Keeps a checked identity (the cache decides what to evict).
    fn keep(&mut self, checked: CheckedIdentity);
}

impl IdentityCache for () {
    fn get(&self, _: &IdentityKey) -> Option<&CheckedIdentity> {
        None
    }

    fn keep(&mut self, _: CheckedIdentity) {}
}
