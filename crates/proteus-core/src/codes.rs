//! The one registry of error codes: every code any layer reports (core, client, bindings, web),
//! its kind name, its family and what it means.
//!
//! Every error enum maps its variants to an [`ErrorCode`] once, in its `error_code()`, and gets
//! `code()` and `kind()` from it (`impl_kind_and_code!`). The bindings' constants (Kotlin, Swift,
//! JavaScript) are generated from this table and checked against it by tests
//! (`crates/proteus-core/tests/error_code_files.rs` keeps the generated files current).
//!
//! Rules: a code names one condition; a code once given is never reused for another (retired
//! and foreign numbers are in [`RESERVED`]); the family is the hundreds digit. Wire's numbers
//! are kept where Wire has the condition (docs/protocol.md §11). A kind name may span a few codes only where
//! Wire tells positions of one condition apart (InvalidSignature 206/207/210, TooDistantFuture
//! 211/212).

/// The family of a code: its hundreds digit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Family {
    /// 1xx: the engine or the client was used in a way it refuses.
    Engine,
    /// 2xx: a message was rejected.
    Decrypt,
    /// 3xx: bytes did not decode.
    Decode,
    /// 4xx: an input decoded but is not acceptable.
    Input,
    /// 5xx: the store, the system or a bug.
    System,
}

impl Family {
    /// The family's name, as the generated bindings spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Engine => "Engine",
            Self::Decrypt => "Decrypt",
            Self::Decode => "Decode",
            Self::Input => "Input",
            Self::System => "System",
        }
    }
}

/// Which layer reports a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Layer {
    /// The protocol engine (`proteus-core`).
    Core,
    /// The client and its storage (`proteus-client`).
    Client,
    /// The Kotlin/Swift and web bindings themselves.
    Bindings,
    /// Only the web package.
    Web,
}

impl Layer {
    /// The layer's name, as the generated bindings spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Core => "Core",
            Self::Client => "Client",
            Self::Bindings => "Bindings",
            Self::Web => "Web",
        }
    }
}

macro_rules! registry {
    ($($(#[doc = $doc:literal])* $name:ident = $code:literal, $kind:literal, $layer:ident;)*) => {
        /// A stable error code. The number ([`number`](Self::number)) and the kind name
        /// ([`kind`](Self::kind)) are the same in Rust, Kotlin, Swift and JavaScript.
        // No explicit discriminants: dense ones make every lookup below a small table (the
        // web build counts its bytes).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum ErrorCode {
            $($(#[doc = concat!($doc)])* #[doc = concat!("\n\nCode ", $code, ", kind `", $kind, "`.")] $name,)*
        }

        impl ErrorCode {
            /// Every code, in ascending order.
            pub const ALL: &'static [ErrorCode] = &[$(Self::$name),*];

            /// The stable number.
            pub const fn number(self) -> u16 {
                match self {
                    $(Self::$name => $code,)*
                }
            }

            /// The name of the code's constant (CamelCase; the bindings convert it).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Self::$name => stringify!($name),)*
                }
            }

            /// The kind name errors of this code report (`"DuplicateMessage"`, `"StoreBusy"`).
            pub const fn kind(self) -> &'static str {
                match self {
                    $(Self::$name => $kind,)*
                }
            }

            /// Which layer reports it.
            pub const fn layer(self) -> Layer {
                match self {
                    $(Self::$name => Layer::$layer,)*
                }
            }

            /// What it means, in one line.
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Self::$name => concat!($($doc),*).trim_ascii(),)*
                }
            }
        }
    };
}

registry! {
    /// A key is degenerate, or a Diffie-Hellman result was all zero.
    DegeneratedKey = 100, "DegeneratedKey", Core;
    /// The prekey a message or a call names is not stored (used up, or never ours).
    PreKeyNotFound = 101, "PreKeyNotFound", Core;
    /// The session has no state for its current tag (a corrupt session).
    NoSessionForTag = 102, "NoSessionForTag", Core;
    /// The sending chain has used all its counters; the peer must reply first.
    ChainExhausted = 103, "ChainExhausted", Core;
    /// There is no session with this id.
    SessionNotFound = 104, "SessionNotFound", Client;
    /// A session with this id exists already; delete it first to replace it.
    SessionExists = 105, "SessionExists", Client;
    /// A session id is empty, too long or not UTF-8.
    InvalidSessionId = 106, "InvalidSessionId", Client;
    /// The identity cannot be replaced while sessions made with it exist.
    IdentityInUse = 107, "IdentityInUse", Client;
    /// The application stopped a batch before its commit; nothing of it was committed.
    BatchAborted = 108, "BatchAborted", Client;
    /// Fewer one-time prekey ids are free than were asked for.
    PreKeyIdsExhausted = 110, "PreKeyIdsExhausted", Client;
    /// A call made while another call of the same client delivers its results (re-entrancy),
    /// or that waited for it longer than the client's wait timeout.
    ClientBusy = 120, "ClientBusy", Bindings;
    /// The application's batch callback threw; nothing of the batch was committed.
    CallbackFailed = 121, "CallbackFailed", Bindings;
    /// The client was closed (Swift `close()`); open the store again to go on.
    ClientClosed = 122, "ClientClosed", Bindings;
    /// A session can only be created from a PreKeyMessage.
    NotAPreKeyMessage = 201, "NotAPreKeyMessage", Core;
    /// The PreKeyMessage carries another identity than the session's remote identity.
    RemoteIdentityChanged = 204, "RemoteIdentityChanged", Core;
    /// The session has no state for the message's session tag.
    UnknownSessionTag = 205, "UnknownSessionTag", Core;
    /// The message's MAC did not verify; its counter was the chain's next one.
    InvalidSignature = 206, "InvalidSignature", Core;
    /// The message's MAC did not verify; its counter was ahead of the chain.
    InvalidSignatureAhead = 207, "InvalidSignature", Core;
    /// The message is older than the oldest kept key of its chain and was decrypted before.
    OutdatedMessage = 208, "OutdatedMessage", Core;
    /// The message was already decrypted.
    DuplicateMessage = 209, "DuplicateMessage", Core;
    /// The message's MAC did not verify; its counter was behind the chain (a kept key).
    InvalidSignatureBehind = 210, "InvalidSignature", Core;
    /// The message skips more messages than allowed, on a receive chain still at its start.
    TooDistantFutureNewChain = 211, "TooDistantFuture", Core;
    /// The message skips more messages than allowed.
    TooDistantFuture = 212, "TooDistantFuture", Core;
    /// The message's key was evicted (or cannot be told apart from one); it was not decrypted.
    MessageKeyEvicted = 214, "MessageKeyEvicted", Core;
    /// A session belongs to another local identity than this one.
    LocalIdentityChanged = 300, "LocalIdentityChanged", Core;
    /// A value had another CBOR type than the format requires.
    UnexpectedType = 301, "UnexpectedType", Core;
    /// The message type is neither cipher (1) nor prekey (2).
    UnknownMessageType = 302, "UnknownMessageType", Core;
    /// A fixed-size byte string had the wrong length.
    InvalidLength = 303, "InvalidLength", Core;
    /// A length or count exceeded a decoder limit.
    LimitExceeded = 304, "LimitExceeded", Core;
    /// A map repeated a key.
    DuplicateField = 305, "DuplicateField", Core;
    /// The input ended in the middle of a value.
    Truncated = 306, "Truncated", Core;
    /// Bytes were left over after the value.
    TrailingBytes = 307, "TrailingBytes", Core;
    /// A CBOR feature Proteus never uses (indefinite lengths, tags, floats).
    UnsupportedCbor = 308, "UnsupportedCbor", Core;
    /// An integer did not fit its field.
    IntegerOutOfRange = 309, "IntegerOutOfRange", Core;
    /// A required field was absent.
    MissingField = 310, "MissingField", Core;
    /// Values were nested deeper than the decoder allows.
    TooDeep = 311, "TooDeep", Core;
    /// A public key is not a valid prime-order point, or a secret key does not match its public half.
    InvalidKey = 409, "InvalidKey", Core;
    /// The plaintext is longer than the engine allows.
    PlaintextTooLong = 410, "PlaintextTooLong", Core;
    /// The prekey store failed.
    PreKeyStore = 501, "PreKeyStore", Core;
    /// Another process holds the store and did not release it in time.
    StoreBusy = 502, "StoreBusy", Client;
    /// The store cannot be read as a Proteus store; it was left as it is.
    StoreCorrupt = 503, "StoreCorrupt", Client;
    /// There is no store at this location.
    StoreNotFound = 504, "StoreNotFound", Client;
    /// A store already exists where a new one was to be created.
    StoreAlreadyExists = 505, "StoreAlreadyExists", Client;
    /// The store was written by a newer version of this library.
    UnsupportedSchema = 506, "UnsupportedSchema", Client;
    /// The storage backend failed (I/O, SQLite, IndexedDB).
    StorageFailure = 507, "StorageFailure", Client;
    /// The store is sealed with another key than the one given.
    WrongStoreKey = 508, "WrongStoreKey", Client;
    /// A key was given, but the store is not sealed.
    StoreNotSealed = 509, "StoreNotSealed", Client;
    /// The store is sealed: open it with its key.
    StoreKeyRequired = 510, "StoreKeyRequired", Client;
    /// The store is older than the application's record of it (restored from a copy).
    StoreRolledBack = 511, "StoreRolledBack", Client;
    /// Another client of the store (another tab) committed first; nothing of this call was stored.
    StoreConflict = 512, "StoreConflict", Web;
    /// This runtime has no durable store for the web package: `Client.open` needs IndexedDB,
    /// which Node.js lacks (there the durable store is the Node package's native addon).
    StoreUnavailable = 513, "StoreUnavailable", Web;
    /// A record of a sealed store is missing, older than the store last committed, moved, or
    /// from another store: the store was tampered with and is refused.
    StoreTampered = 514, "StoreTampered", Client;
    /// A bug: a panic or trap inside the library. Close the client and open the store again.
    Internal = 599, "Internal", Bindings;
}

/// Numbers no [`ErrorCode`] may take, with why: retired codes of this library, and codes Wire
/// gives another meaning.
pub const RESERVED: &[(u16, &str)] = &[
    (
        109,
        "retired: was the client's PreKeyNotFound, now 101 like the engine's",
    ),
    (200, "Wire Rust: an unknown message type (302 here)"),
    (
        202,
        "Wire Rust: an invalid message (201 and 205 here, as Wire JS)",
    ),
    (203, "Wire JS: a prekey not found (101 here)"),
    (
        213,
        "Wire: RemoteEncryptionError, an application-level error",
    ),
    (
        406,
        "Wire Rust and core-crypto: every MAC failure (206, 207 and 210 here)",
    ),
];

impl ErrorCode {
    /// The code of `number`, if this version knows it.
    pub fn from_number(number: u16) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.number() == number)
    }

    /// The family: the hundreds digit.
    pub const fn family(self) -> Family {
        match self.number() / 100 {
            1 => Family::Engine,
            2 => Family::Decrypt,
            3 => Family::Decode,
            4 => Family::Input,
            _ => Family::System,
        }
    }

    /// Whether a message rejected with this code was decrypted before (duplicate or outdated):
    /// apps drop these silently. Not [`MessageKeyEvicted`](Self::MessageKeyEvicted): that
    /// message was lost.
    pub const fn is_already_seen(self) -> bool {
        matches!(self, Self::DuplicateMessage | Self::OutdatedMessage)
    }
}

/// Gives an error enum its `kind()` and `code()`, read from the registry through the enum's own
/// `const fn error_code(&self) -> ErrorCode` (the one place its variants' codes are stated), so
/// that every error reports them alike. Used by this crate and `proteus-client`.
#[doc(hidden)]
#[macro_export]
macro_rules! impl_kind_and_code {
    ($error:ty) => {
        impl $error {
            /// A stable name of the condition (`"DuplicateMessage"`, `"StoreBusy"`, …), the same
            /// in every binding, alongside [`code`](Self::code).
            pub const fn kind(&self) -> &'static str {
                self.error_code().kind()
            }

            /// The stable numeric code, the same in every binding.
            pub const fn code(&self) -> u16 {
                self.error_code().number()
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_ascending_and_distinct() {
        for pair in ErrorCode::ALL.windows(2) {
            assert!(pair[0].number() < pair[1].number(), "{pair:?}");
        }
    }

    #[test]
    fn every_number_is_in_its_family_range_and_not_reserved() {
        for &code in ErrorCode::ALL {
            assert!((100..600).contains(&code.number()), "{code:?}");
            assert!(
                RESERVED.iter().all(|&(n, _)| n != code.number()),
                "{code:?} takes a reserved number"
            );
            assert_eq!(ErrorCode::from_number(code.number()), Some(code));
            assert!(!code.meaning().is_empty(), "{code:?}");
        }
        assert_eq!(ErrorCode::from_number(109), None);
    }

    #[test]
    fn a_kind_spans_several_codes_only_within_one_family() {
        for a in ErrorCode::ALL {
            for b in ErrorCode::ALL {
                if a.kind() == b.kind() {
                    assert_eq!(a.family(), b.family(), "{a:?} {b:?}");
                    assert!(
                        a.name().starts_with(a.kind()),
                        "{a:?}: a constant's name starts with its kind"
                    );
                }
            }
        }
        let shared: Vec<_> = ErrorCode::ALL
            .iter()
            .filter(|c| c.name() != c.kind())
            .map(|c| c.number())
            .collect();
        assert_eq!(shared, [207, 210, 211]);
    }

    #[test]
    fn already_seen_is_duplicate_or_outdated_only() {
        let seen: Vec<_> = ErrorCode::ALL
            .iter()
            .filter(|c| c.is_already_seen())
            .map(|c| c.number())
            .collect();
        assert_eq!(seen, [208, 209]);
    }
}
