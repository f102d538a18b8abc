//! Base keys of handshakes made on the last-resort prekey, kept after their session is deleted.
//!
//! The last-resort prekey (65535) is never consumed, so a recorded PreKeyMessage built on it
//! would create its session again after [`Client::delete_session`](crate::Client::delete_session)
//! and deliver its old plaintext once more (docs/protocol.md §10.3). While a session exists, the session
//! itself refuses such a replay (it keeps the base keys of its handshakes). For deleted
//! sessions the client keeps the base key of every session it created from the last-resort
//! prekey, and refuses a PreKeyMessage whose base key is there with `DuplicateMessage` (209): a
//! deleted session stays deleted until the peer starts a new handshake (a new base key). One-time
//! prekeys need none of this: they are deleted when used.
//!
//! # The bound: none is forgotten
//!
//! Versions up to 0.1 kept the last [`MAX_LAST_RESORT_BASE_KEYS`] in one record, dropping the
//! oldest: whoever could get 4096 fresh handshakes accepted (a relay can claim any sender, so
//! any session id) flushed a deleted session's base key and replayed its first message. Now
//! every base key is its own small record (meta `last_resort_base_key ‖ base key`, value: the
//! version byte), looked up by key, and never dropped: the replay is refused however many
//! handshakes came since. The cost is one record (32 bytes of key) per session ever created
//! from the last-resort prekey, a fraction of the session record that same handshake stores;
//! a commit writes only the keys it adds. The old record is still read, and kept as it is.

use proteus_core::PublicKey;
use zeroize::Zeroizing;

use crate::error::{ClientError, StoreError};
use crate::storage::{Storage, Table, Write};

/// How many base keys the record of versions up to 0.1 kept (32 bytes each: a 128 KiB record);
/// they dropped the oldest past this. Stores written by them still have that record, and it is
/// still read; new base keys are never dropped (see the module docs).
pub const MAX_LAST_RESORT_BASE_KEYS: usize = 4096;

/// The record of versions up to 0.1: version byte 1 ‖ 32-byte base keys, oldest first.
const LEGACY_META_KEY: &[u8] = b"last_resort_base_keys";
/// The prefix of one base key's record (meta `PREFIX ‖ base key`, value [`VERSION`]).
const META_PREFIX: &[u8] = b"last_resort_base_key:";
const VERSION: u8 = 1;

fn meta_key(base_key: &[u8; 32]) -> Vec<u8> {
    [META_PREFIX, base_key.as_slice()].concat()
}

/// The base keys of the old record (loaded on first use) and those a pending commit adds.
#[derive(Default)]
pub(crate) struct ReplayGuard {
    legacy: Option<Vec<[u8; 32]>>,
    pending: Vec<[u8; 32]>,
}

impl ReplayGuard {
    fn legacy(&mut self, storage: &dyn Storage) -> Result<&Vec<[u8; 32]>, ClientError> {
        if self.legacy.is_none() {
            let keys = match storage.get(Table::Meta, LEGACY_META_KEY)? {
                None => Vec::new(),
                Some(bytes) => decode(&bytes)?,
            };
            self.legacy = Some(keys);
        }
        Ok(self.legacy.get_or_insert_with(Vec::new))
    }

    /// Whether a session was created from a handshake with this base key.
    pub(crate) fn contains(
        &mut self,
        storage: &dyn Storage,
        base_key: &PublicKey,
    ) -> Result<bool, ClientError> {
        let key = base_key.as_bytes();
        Ok(self.pending.contains(key)
            || storage.get(Table::Meta, &meta_key(key))?.is_some()
            || self.legacy(storage)?.contains(key))
    }

    /// Records a base key, stored with the next commit.
    pub(crate) fn record(&mut self, base_key: &PublicKey) {
        self.pending.push(*base_key.as_bytes());
    }

    /// The writes that store the pending base keys, if any.
    pub(crate) fn writes(
        &mut self,
        _storage: &dyn Storage,
        writes: &mut Vec<Write>,
    ) -> Result<(), ClientError> {
        for key in &self.pending {
            writes.push(Write::Put {
                table: Table::Meta,
                key: meta_key(key),
                value: Zeroizing::new(vec![VERSION]),
            });
        }
        Ok(())
    }

    /// The commit holding [`writes`](Self::writes) succeeded.
    pub(crate) fn committed(&mut self) {
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

#[cfg(test)]
mod tests {
    use proteus_core::PublicKey;

    use super::{MAX_LAST_RESORT_BASE_KEYS, ReplayGuard};
    use crate::storage::{MemoryStorage, Storage};

    fn key(i: usize) -> PublicKey {
        let mut bytes = [0; 32];
        bytes[..8].copy_from_slice(&(i as u64).to_be_bytes());
        PublicKey::from_bytes(bytes)
    }

    /// Issue 31 (Low): the guard kept the last 4096 base keys; more recorded since flushed the
    /// oldest, and a replay of its handshake was accepted. None is forgotten now, one commit at
    /// a time and across a reload.
    #[test]
    fn no_base_key_is_forgotten() -> Result<(), crate::ClientError> {
        let mut storage = MemoryStorage::new();
        let mut guard = ReplayGuard::default();
        for i in 0..=MAX_LAST_RESORT_BASE_KEYS {
            guard.record(&key(i));
            let mut writes = Vec::new();
            guard.writes(&storage, &mut writes)?;
            storage.commit(&writes)?;
            guard.committed();
        }
        assert!(guard.contains(&storage, &key(0))?);
        let mut reloaded = ReplayGuard::default();
        assert!(reloaded.contains(&storage, &key(0))?);
        assert!(reloaded.contains(&storage, &key(MAX_LAST_RESORT_BASE_KEYS))?);
        assert!(!reloaded.contains(&storage, &key(MAX_LAST_RESORT_BASE_KEYS + 1))?);
        Ok(())
    }
}
