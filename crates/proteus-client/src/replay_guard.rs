//! Base keys of handshakes made on the last-resort prekey, kept after their session is deleted.
//!
//! The last-resort prekey (65535) is never consumed, so a recorded PreKeyMessage built on it
//! would create its session again after [`Client::delete_session`](crate::Client::delete_session)
//! and deliver its old plaintext once more (docs/protocol.md §10.3). While a session exists, the session
//! itself refuses such a replay (it keeps the base keys of its handshakes). For deleted
//! sessions the client keeps the base key of every session it created from the last-resort
//! prekey in one meta record, and refuses a PreKeyMessage whose base key is there with
//! `DuplicateMessage` (209): a deleted session stays deleted until the peer starts a new
//! handshake (a new base key). One-time prekeys need none of this: they are deleted when used.
//!
//! Record: meta `last_resort_base_keys` = version byte 1 ‖ 32-byte base keys, oldest first.
//! A store without it (older versions) has recorded none.

use proteus_core::PublicKey;
use zeroize::Zeroizing;

use crate::error::{ClientError, StoreError};
use crate::storage::{Storage, Table, Write};

/// Base keys kept; the oldest are dropped past this (32 bytes each: a 128 KiB record). A replay
/// of a handshake older than the last 4096 made on the last-resort prekey, after its session was
/// deleted, is no longer recognised.
pub const MAX_LAST_RESORT_BASE_KEYS: usize = 4096;

const META_KEY: &[u8] = b"last_resort_base_keys";
const VERSION: u8 = 1;

/// The committed base keys (loaded on first use) and those a pending commit adds.
#[derive(Default)]
pub(crate) struct ReplayGuard {
    stored: Option<Vec<[u8; 32]>>,
    pending: Vec<[u8; 32]>,
}

impl ReplayGuard {
    fn stored(&mut self, storage: &dyn Storage) -> Result<&Vec<[u8; 32]>, ClientError> {
        if self.stored.is_none() {
            let keys = match storage.get(Table::Meta, META_KEY)? {
                None => Vec::new(),
                Some(bytes) => decode(&bytes)?,
            };
            self.stored = Some(keys);
        }
        Ok(self.stored.get_or_insert_with(Vec::new))
    }

    /// Whether a session was created from a handshake with this base key.
    pub(crate) fn contains(
        &mut self,
        storage: &dyn Storage,
        base_key: &PublicKey,
    ) -> Result<bool, ClientError> {
        let key = base_key.as_bytes();
        Ok(self.pending.contains(key) || self.stored(storage)?.contains(key))
    }

    /// Records a base key, stored with the next commit.
    pub(crate) fn record(&mut self, base_key: &PublicKey) {
        self.pending.push(*base_key.as_bytes());
    }

    /// The write that stores the pending base keys, if any.
    pub(crate) fn writes(
        &mut self,
        storage: &dyn Storage,
        writes: &mut Vec<Write>,
    ) -> Result<(), ClientError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        self.stored(storage)?;
        let stored = self.stored.as_deref().unwrap_or_default();
        let all: Vec<&[u8; 32]> = stored.iter().chain(self.pending.iter()).collect();
        let skip = all.len().saturating_sub(MAX_LAST_RESORT_BASE_KEYS);
        let mut value = Vec::with_capacity(1 + 32 * (all.len() - skip));
        value.push(VERSION);
        for key in all.iter().skip(skip) {
            value.extend_from_slice(*key);
        }
        writes.push(Write::Put {
            table: Table::Meta,
            key: META_KEY.to_vec(),
            value: Zeroizing::new(value),
        });
        Ok(())
    }

    /// The commit holding [`writes`](Self::writes) succeeded.
    pub(crate) fn committed(&mut self) {
        if let Some(stored) = &mut self.stored {
            stored.append(&mut self.pending);
            let excess = stored.len().saturating_sub(MAX_LAST_RESORT_BASE_KEYS);
            stored.drain(..excess);
        }
        self.pending.clear();
    }

    /// The commit failed or was abandoned: forget what it would have added.
    pub(crate) fn rolled_back(&mut self) {
        self.pending.clear();
    }
}

fn decode(bytes: &[u8]) -> Result<Vec<[u8; 32]>, ClientError> {
    let corrupt = || StoreError::Corrupt("the last-resort base keys record is malformed".into());
    let Some((&VERSION, keys)) = bytes.split_first() else {
        return Err(corrupt().into());
    };
    let chunks = keys.chunks_exact(32);
    if !chunks.remainder().is_empty() {
        return Err(corrupt().into());
    }
    Ok(chunks
        .filter_map(|c| <[u8; 32]>::try_from(c).ok())
        .collect())
}
