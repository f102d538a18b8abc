//! Session-record fields this engine adds to Wire's format (docs/protocol.md §9.1), under new map
//! keys.
//!
//! Wire's decoders read `Session` with a key switch (JS) or skip unknown keys (Rust), so a record
//! with these keys still loads there; they are left out when empty, so a session that needs
//! none of them is byte-identical to Wire's. A record without them (Wire's, or an older
//! version's) loads with conservative defaults.
//!
//! * key 6, base keys: `[[bstr(32), u32], …]`, oldest first: the base key of each handshake that
//!   created a state (at most [`MAX_SESSION_BASE_KEYS`]) and the counter of the message that
//!   did, so a replayed PreKeyMessage is refused (209 for that message, 214 for another one).
//! * key 7, eviction watermarks: `[[tag bstr(16), ratchet key bstr(32), u32 watermark], …]` for
//!   each receive chain whose watermark differs from [`legacy_watermark`].

use super::StateEntry;
use super::chain::legacy_watermark;
use crate::cbor::{Decoder, Encoder};
use crate::error::DecodeError;
use crate::keys::PublicKey;
use crate::limits::MAX_SESSION_BASE_KEYS;
use crate::message::SessionTag;
use crate::secret_vec::SecretVec;

/// Map key of the base keys.
pub(super) const BASE_KEYS_KEY: u8 = 6;

pub(super) fn encode_base_keys(e: &mut Encoder, keys: &[(PublicKey, u32)]) {
    e.key(BASE_KEYS_KEY).array(keys.len());
    for (key, counter) in keys {
        e.array(2).bytes(key.as_bytes()).u64(u64::from(*counter));
    }
}

/// The newest [`MAX_SESSION_BASE_KEYS`] are kept if a record holds more.
// Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
#[inline(never)]
pub(super) fn decode_base_keys(d: &mut Decoder<'_>) -> Result<Vec<(PublicKey, u32)>, DecodeError> {
    let n = d.array()?;
    let mut keys = Vec::with_capacity(n.min(MAX_SESSION_BASE_KEYS));
    for _ in 0..n {
        let len = d.array()?;
        if len != 2 {
            return Err(DecodeError::InvalidLength {
                field: "base key entry",
                expected: 2,
                actual: len,
            });
        }
        let key = PublicKey::from_bytes(d.fixed::<32>("base key")?);
        keys.push((key, d.u32()?));
    }
    let excess = keys.len().saturating_sub(MAX_SESSION_BASE_KEYS);
    keys.drain(..excess);
    Ok(keys)
}

/// Map key of the eviction watermarks.
pub(super) const WATERMARKS_KEY: u8 = 7;

/// The receive chains whose watermark must be written: `(tag, ratchet key, watermark)`.
pub(super) fn watermarks(states: &[StateEntry]) -> Vec<(SessionTag, PublicKey, u32)> {
    let mut out = Vec::new();
    for entry in states {
        for chain in entry.state.recv_chains() {
            if chain.evicted_below != legacy_watermark(chain.chain_key.idx) {
                out.push((entry.tag, chain.ratchet_key, chain.evicted_below));
            }
        }
    }
    out
}

pub(super) fn encode_watermarks(e: &mut Encoder, marks: &[(SessionTag, PublicKey, u32)]) {
    e.key(WATERMARKS_KEY).array(marks.len());
    for (tag, ratchet_key, mark) in marks {
        e.array(3)
            .bytes(tag.as_bytes())
            .bytes(ratchet_key.as_bytes())
            .u64(u64::from(*mark));
    }
}

// Out of line: the session decoder inlined whole was 0.6 KB larger in the web build.
#[inline(never)]
pub(super) fn decode_watermarks(
    d: &mut Decoder<'_>,
) -> Result<Vec<(SessionTag, PublicKey, u32)>, DecodeError> {
    let n = d.array()?;
    let mut out = Vec::with_capacity(n.min(64));
    for _ in 0..n {
        let len = d.array()?;
        if len != 3 {
            return Err(DecodeError::InvalidLength {
                field: "eviction watermark",
                expected: 3,
                actual: len,
            });
        }
        let tag = SessionTag::from_bytes(d.fixed::<16>("session tag")?);
        let ratchet_key = PublicKey::from_bytes(d.fixed::<32>("ratchet key")?);
        out.push((tag, ratchet_key, d.u32()?));
    }
    Ok(out)
}

/// Puts decoded watermarks on their chains; entries for chains the session lacks are dropped.
pub(super) fn apply_watermarks(
    states: &mut SecretVec<StateEntry>,
    marks: &[(SessionTag, PublicKey, u32)],
) {
    for (tag, ratchet_key, mark) in marks {
        let chain = states
            .iter_mut()
            .find(|e| &e.tag == tag)
            .and_then(|e| e.state.recv_chain_mut(ratchet_key));
        if let Some(chain) = chain {
            chain.evicted_below = *mark;
        }
    }
}
