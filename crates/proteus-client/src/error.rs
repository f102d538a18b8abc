//! Errors of the client layer, each with a stable numeric code ([`ErrorCode`]).
//!
//! Protocol errors keep the core's codes (docs/protocol.md §11). The client's own
//! ([`ClientCode`]) are 104–112 (engine misuse), 411 (bad input), 502–515 (the store) and 599 (a bug).
//! Messages carry no user data: session ids stay in the variants' fields, out of the text.

use std::fmt;

use proteus_core::{DecodeError, DecryptError, EncryptError, SessionCreationError};

use crate::codes::{ClientCode, ErrorCode};
use crate::cryptobox::ImportError;

use crate::storage::Table;

/// The storage failed. Nothing was changed.
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// Another process holds the store and did not release it within the busy timeout.
    #[error("the store is in use by another process")]
    Busy,
    /// The store exists but cannot be read as a Proteus store; it was left as it is.
    #[error("the store is corrupt: {0}")]
    Corrupt(String),
    /// There is no store at this location (and it was not asked to create one).
    #[error("no store at {0}")]
    NotFound(String),
    /// A store already exists where a new one was to be created.
    #[error("a store already exists at {0}")]
    AlreadyExists(String),
    /// The store was written by a newer version of this library.
    #[error("the store has schema version {found}; this library reads up to {supported}")]
    UnsupportedSchema {
        /// The store's schema version.
        found: i64,
        /// The newest this library knows.
        supported: i64,
    },
    /// The store is sealed with another key than the one given. Nothing was changed.
    #[error("the store key is wrong")]
    WrongKey,
    /// The store is encrypted: open it with its key.
    #[error("the store is encrypted; open it with its key")]
    KeyRequired,
    /// A key was given, but the store holds unsealed records; seal it first.
    #[error("the store is not encrypted")]
    NotSealed,
    /// The store is older than the application's own record of it says: it was restored from
    /// an old copy (a device backup, say). Using it would reuse message keys, so it is refused
    /// and left as it is; see [`RollbackGuard`](crate::RollbackGuard).
    #[error(
        "the store was restored from an older copy (commit {store}, the application has seen \
         {expected}); it is refused so that no message key is used twice"
    )]
    RolledBack {
        /// The store's commit counter.
        store: u64,
        /// The counter the application kept outside the store.
        expected: u64,
    },
    /// A sealed store holds a record it did not commit, or lacks one it did: a record was
    /// deleted, put back from an older copy, moved to another key or table, or copied from
    /// another store (see [`SealedStorage`](crate::SealedStorage)). Nothing read from it was
    /// used; the store is left as it is.
    #[error(
        "the sealed store was tampered with ({}): {}; it is refused so that no message key is \
         used twice",
        .table.map_or("store", Table::name),
        .fault.describe()
    )]
    Tampered {
        /// The table of the record at fault, when one record is.
        table: Option<Table>,
        /// What is wrong.
        fault: Tamper,
    },
    /// The storage backend failed (I/O, SQLite, IndexedDB, …).
    #[error("storage failure: {0}")]
    Backend(String),
}

/// What is wrong with a tampered sealed store ([`StoreError::Tampered`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Tamper {
    /// A record the store committed is missing (deleted).
    Missing,
    /// A record is not the version the store last committed under its key: an older version
    /// put back, a record moved from another key or table, one from another store, or damage.
    NotCommitted,
    /// A record is there that the store never committed (or deleted).
    Unexpected,
    /// The store's set of records does not match its sealed manifest, or the manifest itself is
    /// missing or from another store.
    Manifest,
}

impl Tamper {
    /// What it means, in words.
    pub const fn describe(self) -> &'static str {
        match self {
            Self::Missing => "a record the store committed is missing",
            Self::NotCommitted => {
                "a record is not the version the store last committed (older, moved, from \
                 another store, or damaged)"
            }
            Self::Unexpected => "a record is there that the store never committed",
            Self::Manifest => "the records do not match the store's sealed manifest",
        }
    }
}

/// `kind (code): message`, as logs and tests read it. In wasm32 builds `(code): message`:
/// nothing prints a Debug form there (errors reach JS as code and message, which gets the kind
/// from its own table), and the kind names would be linked in for this alone.
impl fmt::Debug for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(not(target_arch = "wasm32"))]
        write!(f, "{} ", self.kind())?;
        write!(f, "({}): {self}", self.code())
    }
}

impl StoreError {
    /// The registered code of the condition.
    pub const fn error_code(&self) -> ClientCode {
        match self {
            Self::Busy => ClientCode::StoreBusy,
            Self::Corrupt(_) => ClientCode::StoreCorrupt,
            Self::NotFound(_) => ClientCode::StoreNotFound,
            Self::AlreadyExists(_) => ClientCode::StoreAlreadyExists,
            Self::UnsupportedSchema { .. } => ClientCode::UnsupportedSchema,
            Self::Backend(_) => ClientCode::StorageFailure,
            Self::WrongKey => ClientCode::WrongStoreKey,
            Self::NotSealed => ClientCode::StoreNotSealed,
            Self::KeyRequired => ClientCode::StoreKeyRequired,
            Self::RolledBack { .. } => ClientCode::StoreRolledBack,
            Self::Tampered { .. } => ClientCode::StoreTampered,
        }
    }
}

proteus_core::impl_kind_and_code!(StoreError);

/// An operation of the [`Client`](crate::Client) failed. Nothing was changed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// A message was rejected (see the core's codes).
    #[error(transparent)]
    Decrypt(#[from] DecryptError),
    /// A message could not be encrypted.
    #[error(transparent)]
    Encrypt(#[from] EncryptError),
    /// A session could not be created from a prekey bundle.
    #[error(transparent)]
    SessionCreation(#[from] SessionCreationError),
    /// Bytes given to the client (a bundle, an imported record) did not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The storage failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A cryptobox store could not be imported.
    #[error(transparent)]
    Import(#[from] ImportError),
    /// There is no session with this id (kept here, never in the message: ids are user data).
    #[error("no session with this id")]
    SessionNotFound(String),
    /// A session with this id exists already; delete it first to replace it.
    #[error("a session with this id exists already")]
    SessionExists(String),
    /// Session ids are 1 to [`MAX_SESSION_ID_LEN`](crate::MAX_SESSION_ID_LEN) bytes of UTF-8.
    #[error("invalid session id: {0}")]
    InvalidSessionId(&'static str),
    /// A fingerprint given to the client (to
    /// [`accept_identity`](crate::Client::accept_identity)) is not the 64 hex digits of a valid
    /// identity key.
    #[error("invalid fingerprint: {0}")]
    InvalidFingerprint(&'static str),
    /// The identity cannot be replaced while sessions made with it exist.
    #[error("the identity is in use by {0} sessions")]
    IdentityInUse(usize),
    /// The application stopped a batch before its commit; nothing of it was committed.
    #[error("the batch was stopped by the application before its commit")]
    BatchAborted,
    /// No prekey with this id is stored.
    #[error("no prekey with id {0}")]
    PreKeyNotFound(u16),
    /// Fewer one-time prekey ids are free than were asked for (65,535 exist).
    #[error("only {free} one-time prekey ids are free")]
    PreKeyIdsExhausted {
        /// How many are free.
        free: usize,
    },
    /// A bug in this library: an internal invariant did not hold. Nothing was changed; retrying
    /// will not help. Please report it.
    #[error("internal error: {0}")]
    Internal(String),
}

impl ClientError {
    /// The registered code of the condition, the same in every binding.
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::Decrypt(e) => ErrorCode::Core(e.error_code()),
            Self::Encrypt(e) => ErrorCode::Core(e.error_code()),
            Self::SessionCreation(e) => ErrorCode::Core(e.error_code()),
            Self::Decode(e) => ErrorCode::Core(e.error_code()),
            Self::Store(e) => ErrorCode::Client(e.error_code()),
            Self::Import(e) => ErrorCode::Client(e.error_code()),
            Self::SessionNotFound(_) => ErrorCode::Client(ClientCode::SessionNotFound),
            Self::SessionExists(_) => ErrorCode::Client(ClientCode::SessionExists),
            Self::InvalidSessionId(_) => ErrorCode::Client(ClientCode::InvalidSessionId),
            Self::IdentityInUse(_) => ErrorCode::Client(ClientCode::IdentityInUse),
            Self::InvalidFingerprint(_) => ErrorCode::Client(ClientCode::InvalidFingerprint),
            Self::BatchAborted => ErrorCode::Client(ClientCode::BatchAborted),
            // The engine's condition and number (Wire's 101); 109 is retired.
            Self::PreKeyNotFound(_) => ErrorCode::Core(proteus_core::ErrorCode::PreKeyNotFound),
            Self::PreKeyIdsExhausted { .. } => ErrorCode::Client(ClientCode::PreKeyIdsExhausted),
            Self::Internal(_) => ErrorCode::Client(ClientCode::Internal),
        }
    }
}

proteus_core::impl_kind_and_code!(ClientError);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_a_store_error_is_its_kind_code_and_message() {
        let e = StoreError::Corrupt("a staged key has a malformed key".into());
        assert_eq!(
            format!("{e:?}"),
            "StoreCorrupt (503): the store is corrupt: a staged key has a malformed key"
        );
        assert_eq!(
            format!("{:?}", ClientError::Store(StoreError::Busy)),
            "Store(StoreBusy (502): the store is in use by another process)"
        );
    }

    /// The messages with values, as the bindings' tests and logs have read them.
    #[test]
    fn messages_with_values_read_as_before() {
        let cases = [
            (
                ClientError::Store(StoreError::UnsupportedSchema {
                    found: -3,
                    supported: 2,
                }),
                "the store has schema version -3; this library reads up to 2",
            ),
            (
                StoreError::RolledBack {
                    store: 7,
                    expected: 9,
                }
                .into(),
                "the store was restored from an older copy (commit 7, the application has seen \
                 9); it is refused so that no message key is used twice",
            ),
            (
                StoreError::Corrupt("x".into()).into(),
                "the store is corrupt: x",
            ),
            (StoreError::NotFound("/a".into()).into(), "no store at /a"),
            (
                StoreError::AlreadyExists("/a".into()).into(),
                "a store already exists at /a",
            ),
            (
                StoreError::Backend("io".into()).into(),
                "storage failure: io",
            ),
            (
                ClientError::InvalidSessionId("empty"),
                "invalid session id: empty",
            ),
            (
                ClientError::IdentityInUse(3),
                "the identity is in use by 3 sessions",
            ),
            (ClientError::PreKeyNotFound(9), "no prekey with id 9"),
            (
                ClientError::PreKeyIdsExhausted { free: 0 },
                "only 0 one-time prekey ids are free",
            ),
            (
                DecodeError::MissingField("mac").into(),
                "missing field: mac",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
        let inner = std::error::Error::source(&ClientError::Decrypt(DecryptError::Decode(
            DecodeError::Truncated,
        )));
        assert_eq!(
            inner.map(ToString::to_string).as_deref(),
            Some("input ended early")
        );
    }

    #[test]
    fn session_ids_are_kept_out_of_messages() {
        for e in [
            ClientError::SessionNotFound("bob:laptop".into()),
            ClientError::SessionExists("bob:laptop".into()),
        ] {
            let text = format!("{e}");
            assert!(!text.contains("bob"), "{text}");
            assert!(
                matches!(&e, ClientError::SessionNotFound(id) | ClientError::SessionExists(id) if id == "bob:laptop")
            );
        }
        assert_eq!(
            ClientError::SessionNotFound("bob:laptop".into()).to_string(),
            "no session with this id"
        );
    }
}
