//! Errors of the client layer, each with a stable numeric code.
//!
//! Protocol errors keep the core's codes (spec §11). Client codes are 104–110 (engine misuse),
//! storage codes 502–511 (system). The bindings add 120 (client busy: a re-entrant call),
//! 121 (the application's callback failed) and 599 (internal error), and the web package 512
//! (StoreConflict: another tab's commit won the compare-and-swap); they are reserved here.

use proteus_core::{DecodeError, DecryptError, EncryptError, SessionCreationError};

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
    /// The storage backend failed (I/O, SQLite, IndexedDB, …).
    #[error("storage failure: {0}")]
    Backend(String),
}

/// `kind (code): message`. Written out rather than derived: the derived form escapes its strings,
/// and that machinery alone (reached through `dyn Error`) is several KB of the web build.
impl std::fmt::Debug for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {self}", self.kind(), self.code())
    }
}

impl StoreError {
    /// A stable name of the condition, for bindings and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Busy => "StoreBusy",
            Self::Corrupt(_) => "StoreCorrupt",
            Self::NotFound(_) => "StoreNotFound",
            Self::AlreadyExists(_) => "StoreAlreadyExists",
            Self::UnsupportedSchema { .. } => "UnsupportedSchema",
            Self::Backend(_) => "StorageFailure",
            Self::WrongKey => "WrongStoreKey",
            Self::NotSealed => "StoreNotSealed",
            Self::KeyRequired => "StoreKeyRequired",
            Self::RolledBack { .. } => "StoreRolledBack",
        }
    }

    /// The stable numeric code.
    pub fn code(&self) -> u16 {
        match self {
            Self::Busy => 502,
            Self::Corrupt(_) => 503,
            Self::NotFound(_) => 504,
            Self::AlreadyExists(_) => 505,
            Self::UnsupportedSchema { .. } => 506,
            Self::Backend(_) => 507,
            Self::WrongKey => 508,
            Self::NotSealed => 509,
            Self::KeyRequired => 510,
            Self::RolledBack { .. } => 511,
        }
    }
}

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
    /// There is no session with this id.
    #[error("no session with id \"{0}\"")]
    SessionNotFound(String),
    /// A session with this id exists already; delete it first to replace it.
    #[error("a session with id \"{0}\" exists already")]
    SessionExists(String),
    /// Session ids are 1 to [`MAX_SESSION_ID_LEN`](crate::MAX_SESSION_ID_LEN) bytes of UTF-8.
    #[error("invalid session id: {0}")]
    InvalidSessionId(&'static str),
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
}

impl ClientError {
    /// A stable name of the condition (`"DuplicateMessage"`, `"StoreBusy"`, …), the same in every
    /// binding, alongside [`code`](Self::code).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Decrypt(e) => e.kind(),
            Self::Encrypt(e) => e.kind(),
            Self::SessionCreation(e) => e.kind(),
            Self::Decode(e) => e.kind(),
            Self::Store(e) => e.kind(),
            Self::SessionNotFound(_) => "SessionNotFound",
            Self::SessionExists(_) => "SessionExists",
            Self::InvalidSessionId(_) => "InvalidSessionId",
            Self::IdentityInUse(_) => "IdentityInUse",
            Self::BatchAborted => "BatchAborted",
            Self::PreKeyNotFound(_) => "PreKeyNotFound",
            Self::PreKeyIdsExhausted { .. } => "PreKeyIdsExhausted",
        }
    }

    /// The stable numeric code.
    pub fn code(&self) -> u16 {
        match self {
            Self::Decrypt(e) => e.code(),
            Self::Encrypt(e) => e.code(),
            Self::SessionCreation(e) => e.code(),
            Self::Decode(e) => e.code(),
            Self::Store(e) => e.code(),
            Self::SessionNotFound(_) => 104,
            Self::SessionExists(_) => 105,
            Self::InvalidSessionId(_) => 106,
            Self::IdentityInUse(_) => 107,
            Self::BatchAborted => 108,
            Self::PreKeyNotFound(_) => 109,
            Self::PreKeyIdsExhausted { .. } => 110,
        }
    }
}

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

    #[test]
    fn session_ids_are_quoted_in_messages() {
        assert_eq!(
            ClientError::SessionNotFound("bob:laptop".into()).to_string(),
            "no session with id \"bob:laptop\""
        );
    }
}
