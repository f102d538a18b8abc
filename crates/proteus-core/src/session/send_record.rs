//! The sending chain as a record of its own, for storage layers that write only what an
//! encryption changed.
//!
//! Sending one message to thousands of sessions (every device of a large group) advances one
//! chain key in each; a store that rewrites every whole session record writes about ten times
//! what changed. [`Session::send_chain_record`] is that change: the current state's sending chain
//! key and index, with the state's tag and the chain's ratchet key naming the chain.
//! [`Session::apply_send_chain_record`] puts it back on the session record it was taken from.
//!
//! An encryption changes nothing of a session but the current state's sending chain key, unless
//! it starts a new sending chain (a new ratchet key). So a session whose stored record has a
//! sending chain with the same tag and ratchet key ([`SendChainRecord::same_chain`]) and that
//! was only encrypted with since is exactly that record with this one applied.

use std::fmt;

use zeroize::Zeroizing;

use super::Session;
use super::derived::ChainKey;
use crate::error::DecodeError;
use crate::keys::PublicKey;
use crate::message::SessionTag;

/// The current state's sending chain: its state's tag, its ratchet key and its chain key with
/// the index of the next message. Holds a secret key (wiped on drop).
#[derive(Clone)]
pub struct SendChainRecord {
    state_tag: SessionTag,
    ratchet_key: PublicKey,
    chain_key: ChainKey,
}

impl SendChainRecord {
    /// Length of [`to_bytes`](Self::to_bytes).
    pub const LEN: usize = 16 + 32 + 4 + 32;

    /// Whether `other` is the same chain (same state and ratchet key), at any index.
    pub fn same_chain(&self, other: &SendChainRecord) -> bool {
        self.state_tag == other.state_tag && self.ratchet_key == other.ratchet_key
    }

    /// The counter of the next message sent on the chain.
    pub fn index(&self) -> u32 {
        self.chain_key.idx
    }

    /// state tag ‖ ratchet key ‖ index (u32 big-endian) ‖ chain key. It holds a secret key.
    pub fn to_bytes(&self) -> Zeroizing<Vec<u8>> {
        let mut out = Zeroizing::new(Vec::with_capacity(Self::LEN));
        out.extend_from_slice(self.state_tag.as_bytes());
        out.extend_from_slice(self.ratchet_key.as_bytes());
        out.extend_from_slice(&self.chain_key.idx.to_be_bytes());
        out.extend_from_slice(self.chain_key.key());
        out
    }

    /// Parses [`to_bytes`](Self::to_bytes).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, DecodeError> {
        let invalid = || DecodeError::InvalidLength {
            field: "send chain record",
            expected: Self::LEN,
            actual: bytes.len(),
        };
        let bytes: &[u8; Self::LEN] = bytes.try_into().map_err(|_| invalid())?;
        let (tag, rest) = bytes.split_first_chunk::<16>().ok_or_else(invalid)?;
        let (ratchet, rest) = rest.split_first_chunk::<32>().ok_or_else(invalid)?;
        let (idx, rest) = rest.split_first_chunk::<4>().ok_or_else(invalid)?;
        let key: &[u8; 32] = rest.try_into().map_err(|_| invalid())?;
        Ok(Self {
            state_tag: SessionTag::from_bytes(*tag),
            ratchet_key: PublicKey::from_bytes(*ratchet),
            chain_key: ChainKey::new(Zeroizing::new(*key), u32::from_be_bytes(*idx)),
        })
    }
}

impl fmt::Debug for SendChainRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendChainRecord")
            .field("state_tag", &self.state_tag)
            .field("ratchet_key", &self.ratchet_key.fingerprint())
            .field("index", &self.chain_key.idx)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The current state's sending chain, if it has one ready to encrypt on.
    pub fn send_chain_record(&self) -> Option<SendChainRecord> {
        let tag = self.session_tag;
        let entry = self.states.iter().find(|e| e.tag == tag)?;
        let chain = entry.state.send_chain()?;
        Some(SendChainRecord {
            state_tag: tag,
            ratchet_key: *chain.ratchet_key.public(),
            chain_key: chain.chain_key.clone(),
        })
    }

    /// Puts a sending chain taken with [`send_chain_record`](Self::send_chain_record) back on
    /// this session, loaded from a record of the same chain at the same or an earlier index.
    ///
    /// A record of a chain the session does not have, or one behind the session's chain (whose
    /// message keys were used), is refused with [`DecodeError::InvalidKey`] and changes nothing:
    /// applying it would reuse message keys.
    pub fn apply_send_chain_record(&mut self, record: &SendChainRecord) -> Result<(), DecodeError> {
        let chain = self
            .states
            .iter_mut()
            .find(|e| e.tag == record.state_tag)
            .and_then(|e| e.state.send_chain_mut())
            .filter(|c| *c.ratchet_key.public() == record.ratchet_key)
            .ok_or(DecodeError::InvalidKey(
                "the send chain record is of a chain the session does not have",
            ))?;
        if record.chain_key.idx < chain.chain_key.idx {
            return Err(DecodeError::InvalidKey(
                "the send chain record is behind the session's sending chain",
            ));
        }
        chain.chain_key = record.chain_key.clone();
        Ok(())
    }
}
