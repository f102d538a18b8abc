//! How the client lays its records out in the [`Storage`](crate::Storage) tables.
//!
//! Values are Proteus CBOR records (identity key pair, prekey, session without staged keys,
//! message keys), which carry their own format version; keys are:
//!
//! | table       | key                                          | value                     |
//! |-------------|----------------------------------------------|---------------------------|
//! | meta        | `identity`                                   | IdentityKeyPair           |
//! | meta        | `next_prekey_id`                             | u16, big-endian           |
//! | meta        | `sealed_check` (encrypted stores only)       | a constant, sealed        |
//! | meta        | `commit_counter` (with a rollback guard)     | u64, big-endian           |
//! | meta        | `sealed_ids_hashed` (sealed formats 1–2)     | empty, sealed             |
//! | meta        | `sealed_manifest` (sealed format 3)          | store id, commit, digest  |
//! | meta        | `pinned/` ‖ session id (UTF-8)               | `1 ‖` identity key (32)   |
//! | prekeys     | prekey id, u16 big-endian                    | PreKey                    |
//! | sessions    | session id (UTF-8)                           | Session, no staged keys   |
//! | staged_keys | u16 BE length ‖ session id ‖ StagedKeyId     | MessageKeys               |
//! | staged_keys | u16 BE length ‖ session id                   | send chain record         |
//!
//! A send chain record (`1 ‖` [`SendChainRecord`] bytes; 1 is its format version) is the
//! session's sending chain as advanced by encryptions since its session record was written: a
//! commit after encrypting only writes that (85 bytes instead of the ~500 of a session), and
//! the session loads as its record with the chain record applied. Writing the session record
//! deletes the chain record in the same commit. Versions of this library without chain records
//! refuse a session that has one (its key is no staged-key id) rather than load its older chain.

use proteus_core::{PreKeyId, SendChainRecord, staged::StagedKeyId};
use zeroize::Zeroizing;

use crate::error::{ClientError, StoreError};

/// Longest session id, in bytes of UTF-8.
pub const MAX_SESSION_ID_LEN: usize = 1024;

pub(crate) const META_IDENTITY: &[u8] = b"identity";
pub(crate) const META_NEXT_PREKEY_ID: &[u8] = b"next_prekey_id";
/// Present (sealed) in an encrypted store: only the right key opens it.
pub(crate) const META_SEAL_CHECK: &[u8] = b"sealed_check";
/// Present (sealed) once an encrypted store keeps session ids hashed (sealed format 2). Only the
/// sealed store (feature `sealed`) reads or writes it.
#[cfg(feature = "sealed")]
pub(crate) const META_SEALED_IDS_HASHED: &[u8] = b"sealed_ids_hashed";
/// The sealed manifest of an encrypted store (sealed record format 3): the store's id, its
/// commit and a keyed digest of every live record with the commit that wrote it. Only the
/// sealed store (feature `sealed`) reads or writes it.
#[cfg(feature = "sealed")]
pub(crate) const META_SEALED_MANIFEST: &[u8] = b"sealed_manifest";
/// The prefix of a pinned identity's key (see `client/pinning.rs`): `pinned/` ‖ session id. A
/// sealed store hashes the session id part, as it does in the sessions and staged-keys tables.
pub(crate) const META_PIN_PREFIX: &[u8] = b"pinned/";
/// How many commits a store opened with a [`RollbackGuard`](crate::RollbackGuard) has made.
pub(crate) const META_COMMIT_COUNTER: &[u8] = b"commit_counter";

pub(crate) fn check_session_id(id: &str) -> Result<(), ClientError> {
    if id.is_empty() {
        return Err(ClientError::InvalidSessionId("empty"));
    }
    if id.len() > MAX_SESSION_ID_LEN {
        return Err(ClientError::InvalidSessionId(
            "longer than MAX_SESSION_ID_LEN bytes",
        ));
    }
    Ok(())
}

pub(crate) fn prekey_key(id: PreKeyId) -> Vec<u8> {
    id.value().to_be_bytes().to_vec()
}

/// The prefix of all staged keys of a session. The length prefix keeps one session id from
/// being a prefix of another's keys.
pub(crate) fn staged_prefix(session_id: &str) -> Vec<u8> {
    let len = u16::try_from(session_id.len()).unwrap_or(u16::MAX);
    let mut key = Vec::with_capacity(2 + session_id.len() + StagedKeyId::LEN);
    key.extend_from_slice(&len.to_be_bytes());
    key.extend_from_slice(session_id.as_bytes());
    key
}

/// A staged key's parts (the inverse of [`staged_prefix`]): `u16 BE length ‖ session id ‖ rest`,
/// `rest` the [`StagedKeyId`] (or nothing, for a send chain record). `None` if the length does
/// not fit the key.
pub(crate) fn split_staged(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = key.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    (rest.len() >= len).then(|| rest.split_at(len))
}

/// Where the key of a record of `table` holds a session id, as `(before, id, after)` with
/// `key == before ‖ id ‖ after`: every key of the sessions table; a staged key's session id
/// (a staged key that does not split is taken whole, so that no key is left in the clear); a
/// pin's (`pinned/` ‖ session id) in the meta table. `None`: the key holds no session id. A
/// sealed store keeps these ids hashed, so this is the one place that says where they are.
pub(crate) fn split_session_id(
    table: crate::storage::Table,
    key: &[u8],
) -> Option<(&[u8], &[u8], &[u8])> {
    use crate::storage::Table;
    match table {
        Table::Sessions => Some((&[], key, &[])),
        Table::StagedKeys => Some(match split_staged(key) {
            Some((id, rest)) => (&[], id, rest),
            None => (&[], key, &[]),
        }),
        Table::Meta => key
            .strip_prefix(META_PIN_PREFIX)
            .map(|id| (META_PIN_PREFIX, id, &[][..])),
        Table::PreKeys => None,
    }
}

pub(crate) fn staged_key(prefix: &[u8], id: &StagedKeyId) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.extend_from_slice(&id.to_bytes());
    key
}

/// The format version of send chain records.
const SEND_CHAIN_RECORD_V1: u8 = 1;

/// The stored send chain record: `1 ‖ record`.
pub(crate) fn send_chain_record(record: &SendChainRecord) -> Zeroizing<Vec<u8>> {
    let mut value = Zeroizing::new(Vec::with_capacity(1 + SendChainRecord::LEN));
    value.push(SEND_CHAIN_RECORD_V1);
    value.extend_from_slice(&record.to_bytes());
    value
}

/// Parses [`send_chain_record`]. Another version, or damage, is a corrupt store.
pub(crate) fn send_chain_from_record(value: &[u8]) -> Result<SendChainRecord, ClientError> {
    let corrupt = |why: String| ClientError::Store(StoreError::Corrupt(why));
    match value.split_first() {
        Some((&SEND_CHAIN_RECORD_V1, record)) => SendChainRecord::from_bytes(record)
            .map_err(|e| corrupt(format!("a send chain record: {e}"))),
        Some((version, _)) => Err(corrupt(format!(
            "a send chain record of unknown version {version}"
        ))),
        None => Err(corrupt("an empty send chain record".into())),
    }
}
