//! Staged (skipped-message) keys, for storage layers that keep them apart from their session.
//!
//! A receive chain can hold up to a thousand staged keys, and each decryption usually changes
//! none of them. A store that writes the session whole would rewrite all of them per message; a
//! store that keeps them as separate records writes only the ones that came or went. The session
//! record written by [`Session::to_bytes_without_staged_keys`] is the ordinary Proteus session
//! with empty staged-key lists; [`Session::from_bytes_with_staged_keys`] puts them back.

use std::fmt;

use zeroize::Zeroizing;

use super::derived::MessageKeys;
use super::{Session, StateEntry};
use crate::cbor::{Decoder, Encoder};
use crate::error::DecodeError;
use crate::keys::{IdentityKey, PublicKey};
use crate::message::SessionTag;

/// Where a staged key belongs: its session state, receive chain and counter.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct StagedKeyId {
    /// The session state's tag.
    pub state_tag: SessionTag,
    /// The receive chain's ratchet key.
    pub ratchet_key: PublicKey,
    /// The message counter the key decrypts.
    pub counter: u32,
}

impl StagedKeyId {
    /// Length of [`StagedKeyId::to_bytes`].
    pub const LEN: usize = 16 + 32 + 4;

    /// tag ‖ ratchet key ‖ counter (big-endian), so ids sort by chain, then counter.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut out = [0u8; Self::LEN];
        let parts = [
            self.state_tag.as_bytes().as_slice(),
            self.ratchet_key.as_bytes(),
            &self.counter.to_be_bytes(),
        ];
        for (o, i) in out.iter_mut().zip(parts.into_iter().flatten()) {
            *o = *i;
        }
        out
    }

    /// Parses [`StagedKeyId::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let bytes: &[u8; Self::LEN] = bytes.try_into().map_err(|_| DecodeError::InvalidLength {
            field: "staged key id",
            expected: Self::LEN,
            actual: bytes.len(),
        })?;
        let (tag, rest) = bytes
            .split_first_chunk::<16>()
            .ok_or(DecodeError::Truncated)?;
        let (ratchet, counter) = rest
            .split_first_chunk::<32>()
            .ok_or(DecodeError::Truncated)?;
        let counter: [u8; 4] = counter.try_into().map_err(|_| DecodeError::Truncated)?;
        Ok(Self {
            state_tag: SessionTag::from_bytes(*tag),
            ratchet_key: PublicKey::from_bytes(*ratchet),
            counter: u32::from_be_bytes(counter),
        })
    }
}

impl fmt::Debug for StagedKeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "StagedKeyId({}, {}, {})",
            self.state_tag,
            self.ratchet_key.fingerprint(),
            self.counter
        )
    }
}

/// A staged key of a session, borrowed.
pub struct StagedKey<'a>(&'a MessageKeys);

impl StagedKey<'_> {
    /// The stored form, Proteus `MessageKeys` CBOR. It holds secret keys.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut e = Encoder::with_capacity(80);
        self.0.encode(&mut e);
        Zeroizing::new(e.into_bytes())
    }
}

impl fmt::Debug for StagedKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StagedKey")
            .field("counter", &self.0.counter)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Every staged key, with where it belongs.
    pub fn staged_keys(&self) -> impl Iterator<Item = (StagedKeyId, StagedKey<'_>)> {
        self.states
            .iter()
            .flat_map(|StateEntry { tag, state, .. }| {
                state.recv_chains().flat_map(move |chain| {
                    chain.staged.iter().map(move |mk| {
                        let id = StagedKeyId {
                            state_tag: *tag,
                            ratchet_key: chain.ratchet_key,
                            counter: mk.counter,
                        };
                        (id, StagedKey(mk))
                    })
                })
            })
    }

    /// The session record without its staged keys (empty staged-key lists).
    pub fn to_bytes_without_staged_keys(&self) -> Zeroizing<Vec<u8>> {
        self.encode(false, true, false)
    }

    /// Loads a session record and puts back staged keys kept apart from it. Keys whose state or
    /// chain the session no longer has are left out: a store drops them at its next write.
    pub fn from_bytes_with_staged_keys<'k, I>(
        identity: &IdentityKey,
        bytes: &[u8],
        staged: I,
    ) -> Result<Self, DecodeError>
    where
        I: IntoIterator<Item = (StagedKeyId, &'k [u8])>,
    {
        let mut session = Self::from_bytes(identity, bytes)?;
        for (id, key_bytes) in staged {
            let mut d = Decoder::new(key_bytes);
            let mk = MessageKeys::decode(&mut d)?;
            d.finish()?;
            if mk.counter != id.counter {
                return Err(DecodeError::InvalidKey(
                    "staged key counter does not match its id",
                ));
            }
            let chain = session
                .states
                .iter_mut()
                .find(|e| e.tag == id.state_tag)
                .and_then(|e| e.state.recv_chain_mut(&id.ratchet_key));
            if let Some(chain) = chain {
                chain.restore_staged(mk);
            }
        }
        Ok(session)
    }
}
