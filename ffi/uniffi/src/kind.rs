// Generated from every layer's error codes (assembled in ffi/codes/src/lib.rs) by
// `PROTEUS_BLESS=1 cargo test -p proteus-ffi-codes --test error_code_files`. Do not edit.

//! The kind of every error, an enum in Kotlin (`ErrorKind.SESSION_NOT_FOUND`) and Swift
//! (`.sessionNotFound`): one variant per kind name of the registry.

use proteus_ffi_codes::ErrorCode;

/// The stable name of an error's condition (`ProteusError.kind`). A kind spans a few codes
/// only where positions of one condition are told apart (InvalidSignature 206/207/210).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum ErrorKind {
    /// A key is degenerate, or a Diffie-Hellman result was all zero.
    DegeneratedKey,
    /// The prekey a message or a call names is not stored (used up, or never ours).
    PreKeyNotFound,
    /// The session has no state for its current tag (a corrupt session).
    NoSessionForTag,
    /// The sending chain has used all its counters; the peer must reply first.
    ChainExhausted,
    /// There is no session with this id.
    SessionNotFound,
    /// A session with this id exists already; delete it first to replace it.
    SessionExists,
    /// A session id is empty, too long or not UTF-8.
    InvalidSessionId,
    /// The identity cannot be replaced while sessions made with it exist.
    IdentityInUse,
    /// The application stopped a batch before its commit; nothing of it was committed.
    BatchAborted,
    /// Fewer one-time prekey ids are free than were asked for.
    PreKeyIdsExhausted,
    /// The store holds another identity, already in use; a cryptobox store is imported only into a new store (or one with the source's identity).
    ImportIdentityMismatch,
    /// Records of the imported store do not decode; nothing was imported (the message names them by table and id).
    ImportBadRecords,
    /// A call made while another call of the same client delivers its results (re-entrancy), or that waited for it longer than the client's wait timeout.
    ClientBusy,
    /// The application's batch callback threw; nothing of the batch was committed.
    CallbackFailed,
    /// The client was closed (Swift `close()`); open the store again to go on.
    ClientClosed,
    /// A session can only be created from a PreKeyMessage.
    NotAPreKeyMessage,
    /// The PreKeyMessage carries another identity than the session's remote identity.
    RemoteIdentityChanged,
    /// The session has no state for the message's session tag.
    UnknownSessionTag,
    /// Codes 206, 207, 210: see `ErrorCode` for each.
    InvalidSignature,
    /// The message is older than the oldest kept key of its chain and was decrypted before.
    OutdatedMessage,
    /// The message was already decrypted.
    DuplicateMessage,
    /// Codes 211, 212: see `ErrorCode` for each.
    TooDistantFuture,
    /// The message's key was evicted (or cannot be told apart from one); it was not decrypted.
    MessageKeyEvicted,
    /// A session belongs to another local identity than this one.
    LocalIdentityChanged,
    /// A value had another CBOR type than the format requires.
    UnexpectedType,
    /// The message type is neither cipher (1) nor prekey (2).
    UnknownMessageType,
    /// A fixed-size byte string had the wrong length.
    InvalidLength,
    /// A length or count exceeded a decoder limit.
    LimitExceeded,
    /// A map repeated a key.
    DuplicateField,
    /// The input ended in the middle of a value.
    Truncated,
    /// Bytes were left over after the value.
    TrailingBytes,
    /// A CBOR feature Proteus never uses (indefinite lengths, tags, floats).
    UnsupportedCbor,
    /// An integer did not fit its field.
    IntegerOutOfRange,
    /// A required field was absent.
    MissingField,
    /// Values were nested deeper than the decoder allows.
    TooDeep,
    /// A public key is not a valid prime-order point, or a secret key does not match its public half.
    InvalidKey,
    /// The plaintext is longer than the engine allows.
    PlaintextTooLong,
    /// A fingerprint is not the 64 hex digits of a valid identity key.
    InvalidFingerprint,
    /// The prekey store failed.
    PreKeyStore,
    /// Another process holds the store and did not release it in time.
    StoreBusy,
    /// The store cannot be read as a Proteus store; it was left as it is.
    StoreCorrupt,
    /// There is no store at this location.
    StoreNotFound,
    /// A store already exists where a new one was to be created.
    StoreAlreadyExists,
    /// The store was written by a newer version of this library.
    UnsupportedSchema,
    /// The storage backend failed (I/O, SQLite, IndexedDB).
    StorageFailure,
    /// The store is sealed with another key than the one given.
    WrongStoreKey,
    /// A key was given, but the store is not sealed.
    StoreNotSealed,
    /// The store is sealed: open it with its key.
    StoreKeyRequired,
    /// The store is older than the application's record of it (restored from a copy).
    StoreRolledBack,
    /// Another client of the store (another tab) committed first; nothing of this call was stored.
    StoreConflict,
    /// This runtime has no durable store for the web package: `Client.open` needs IndexedDB, which Node.js lacks (there the durable store is the Node package's native addon).
    StoreUnavailable,
    /// A record of a sealed store is missing, older than the store last committed, moved, or from another store: the store was tampered with and is refused.
    StoreTampered,
    /// The store to import cannot be read (a missing directory, an unknown layout, no identity, an I/O error).
    ImportSourceUnreadable,
    /// A bug: a panic or trap inside the library. Close the client and open the store again.
    Internal,
}

impl ErrorKind {
    /// The kind of `code`.
    pub fn of(code: impl Into<ErrorCode>) -> Self {
        match code.into().number() {
            100 => Self::DegeneratedKey,
            101 => Self::PreKeyNotFound,
            102 => Self::NoSessionForTag,
            103 => Self::ChainExhausted,
            104 => Self::SessionNotFound,
            105 => Self::SessionExists,
            106 => Self::InvalidSessionId,
            107 => Self::IdentityInUse,
            108 => Self::BatchAborted,
            110 => Self::PreKeyIdsExhausted,
            111 => Self::ImportIdentityMismatch,
            112 => Self::ImportBadRecords,
            120 => Self::ClientBusy,
            121 => Self::CallbackFailed,
            122 => Self::ClientClosed,
            201 => Self::NotAPreKeyMessage,
            204 => Self::RemoteIdentityChanged,
            205 => Self::UnknownSessionTag,
            206 => Self::InvalidSignature,
            207 => Self::InvalidSignature, // InvalidSignatureAhead
            208 => Self::OutdatedMessage,
            209 => Self::DuplicateMessage,
            210 => Self::InvalidSignature, // InvalidSignatureBehind
            211 => Self::TooDistantFuture, // TooDistantFutureNewChain
            212 => Self::TooDistantFuture,
            214 => Self::MessageKeyEvicted,
            300 => Self::LocalIdentityChanged,
            301 => Self::UnexpectedType,
            302 => Self::UnknownMessageType,
            303 => Self::InvalidLength,
            304 => Self::LimitExceeded,
            305 => Self::DuplicateField,
            306 => Self::Truncated,
            307 => Self::TrailingBytes,
            308 => Self::UnsupportedCbor,
            309 => Self::IntegerOutOfRange,
            310 => Self::MissingField,
            311 => Self::TooDeep,
            409 => Self::InvalidKey,
            410 => Self::PlaintextTooLong,
            411 => Self::InvalidFingerprint,
            501 => Self::PreKeyStore,
            502 => Self::StoreBusy,
            503 => Self::StoreCorrupt,
            504 => Self::StoreNotFound,
            505 => Self::StoreAlreadyExists,
            506 => Self::UnsupportedSchema,
            507 => Self::StorageFailure,
            508 => Self::WrongStoreKey,
            509 => Self::StoreNotSealed,
            510 => Self::StoreKeyRequired,
            511 => Self::StoreRolledBack,
            512 => Self::StoreConflict,
            513 => Self::StoreUnavailable,
            514 => Self::StoreTampered,
            515 => Self::ImportSourceUnreadable,
            599 => Self::Internal,
            // A code newer than this file: the registry test regenerates it.
            _ => Self::Internal,
        }
    }

    /// The kind's name, as `ErrorCode::kind` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Self::DegeneratedKey => "DegeneratedKey",
            Self::PreKeyNotFound => "PreKeyNotFound",
            Self::NoSessionForTag => "NoSessionForTag",
            Self::ChainExhausted => "ChainExhausted",
            Self::SessionNotFound => "SessionNotFound",
            Self::SessionExists => "SessionExists",
            Self::InvalidSessionId => "InvalidSessionId",
            Self::IdentityInUse => "IdentityInUse",
            Self::BatchAborted => "BatchAborted",
            Self::PreKeyIdsExhausted => "PreKeyIdsExhausted",
            Self::ImportIdentityMismatch => "ImportIdentityMismatch",
            Self::ImportBadRecords => "ImportBadRecords",
            Self::ClientBusy => "ClientBusy",
            Self::CallbackFailed => "CallbackFailed",
            Self::ClientClosed => "ClientClosed",
            Self::NotAPreKeyMessage => "NotAPreKeyMessage",
            Self::RemoteIdentityChanged => "RemoteIdentityChanged",
            Self::UnknownSessionTag => "UnknownSessionTag",
            Self::InvalidSignature => "InvalidSignature",
            Self::OutdatedMessage => "OutdatedMessage",
            Self::DuplicateMessage => "DuplicateMessage",
            Self::TooDistantFuture => "TooDistantFuture",
            Self::MessageKeyEvicted => "MessageKeyEvicted",
            Self::LocalIdentityChanged => "LocalIdentityChanged",
            Self::UnexpectedType => "UnexpectedType",
            Self::UnknownMessageType => "UnknownMessageType",
            Self::InvalidLength => "InvalidLength",
            Self::LimitExceeded => "LimitExceeded",
            Self::DuplicateField => "DuplicateField",
            Self::Truncated => "Truncated",
            Self::TrailingBytes => "TrailingBytes",
            Self::UnsupportedCbor => "UnsupportedCbor",
            Self::IntegerOutOfRange => "IntegerOutOfRange",
            Self::MissingField => "MissingField",
            Self::TooDeep => "TooDeep",
            Self::InvalidKey => "InvalidKey",
            Self::PlaintextTooLong => "PlaintextTooLong",
            Self::InvalidFingerprint => "InvalidFingerprint",
            Self::PreKeyStore => "PreKeyStore",
            Self::StoreBusy => "StoreBusy",
            Self::StoreCorrupt => "StoreCorrupt",
            Self::StoreNotFound => "StoreNotFound",
            Self::StoreAlreadyExists => "StoreAlreadyExists",
            Self::UnsupportedSchema => "UnsupportedSchema",
            Self::StorageFailure => "StorageFailure",
            Self::WrongStoreKey => "WrongStoreKey",
            Self::StoreNotSealed => "StoreNotSealed",
            Self::StoreKeyRequired => "StoreKeyRequired",
            Self::StoreRolledBack => "StoreRolledBack",
            Self::StoreConflict => "StoreConflict",
            Self::StoreUnavailable => "StoreUnavailable",
            Self::StoreTampered => "StoreTampered",
            Self::ImportSourceUnreadable => "ImportSourceUnreadable",
            Self::Internal => "Internal",
        }
    }
}
