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
//! | meta        | `sealed_ids_hashed` (encrypted stores only)  | empty, sealed             |
//! | prekeys     | prekey id, u16 big-endian                    | PreKey                    |
//! | sessions    | session id (UTF-8)                           | Session, no staged keys   |
//! | staged_keys | u16 BE length ‖ session id ‖ StagedKeyId     | MessageKeys               |

use proteus_core::{PreKeyId, staged::StagedKeyId};

use crate::error::ClientError;

/// Longest session id, in bytes of UTF-8.
pub const MAX_SESSION_ID_LEN: usize = 1024;

pub(crate) const META_IDENTITY: &[u8] = b"identity";
pub(crate) const META_NEXT_PREKEY_ID: &[u8] = b"next_prekey_id";
/// Present (sealed) in an encrypted store: only the right key opens it.
pub(crate) const META_SEAL_CHECK: &[u8] = b"sealed_check";
/// Present (sealed) once an encrypted store keeps session ids hashed (sealed format 2).
pub(crate) const META_SEALED_IDS_HASHED: &[u8] = b"sealed_ids_hashed";
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

pub(crate) fn staged_key(prefix: &[u8], id: &StagedKeyId) -> Vec<u8> {
    let mut key = prefix.to_vec();
    key.extend_from_slice(&id.to_bytes());
    key
}
