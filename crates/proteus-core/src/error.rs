//! Errors, one enum per operation family, each variant with a stable numeric code.
//!
//! Codes follow the numbering plan of Wire's Proteus (docs/protocol.md §11): 1xx engine, 2xx decrypt,
//! 3xx decode, 4xx input, 5xx system. Where Wire's two implementations disagree we use the
//! JavaScript codes, which keep distinct conditions apart (e.g. the three MAC failures 206, 207
//! and 210 that Rust 2.x folds into 406). Every code is one of the engine's,
//! [`ErrorCode`]; the bindings expose the same numbers and kinds in every language.

use crate::codes::ErrorCode;
use crate::keys::PreKeyId;

/// Where a message's counter stood relative to the receive chain when its MAC failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CounterPosition {
    /// The counter was the chain's next one.
    InSync,
    /// The counter was ahead of the chain (messages were skipped).
    Ahead,
    /// The counter was behind the chain and matched a staged key.
    Behind,
}

/// A value could not be decoded. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended in the middle of a value.
    #[error("input ended early")]
    Truncated,
    /// Bytes were left over after the value.
    #[error("unexpected bytes after the value")]
    TrailingBytes,
    /// A value had another CBOR type than the format requires.
    #[error("unexpected CBOR type")]
    UnexpectedType,
    /// Indefinite lengths, tags, floats and other CBOR features Proteus never uses.
    #[error("unsupported CBOR encoding")]
    UnsupportedCbor,
    /// An integer did not fit its field (u8, u16 or u32).
    #[error("integer out of range")]
    IntegerOutOfRange,
    /// A required field was absent.
    #[error("missing field: {0}")]
    MissingField(&'static str),
    /// A map repeated a key.
    #[error("duplicate map key {0}")]
    DuplicateField(u8),
    /// A fixed-size byte string had the wrong length.
    #[error("{field}: expected {expected} bytes, got {actual}")]
    InvalidLength {
        /// The field.
        field: &'static str,
        /// Its required length.
        expected: usize,
        /// The length found.
        actual: usize,
    },
    /// A length or count exceeded a decoder limit (see [`crate::limits`]).
    #[error("{0} exceeds the decoder limit")]
    LimitExceeded(&'static str),
    /// Nesting deeper than [`crate::limits::MAX_NESTING_DEPTH`].
    #[error("nesting too deep")]
    TooDeep,
    /// The message type byte was neither 1 (cipher) nor 2 (prekey).
    #[error("unknown message type {0}")]
    UnknownMessageType(u64),
    /// A public key is not a valid, prime-order curve point (all-zero, low-order, mixed-order
    /// or not on the curve), or a secret key does not match its public half.
    #[error("invalid key: {0}")]
    InvalidKey(&'static str),
    /// A stored session belongs to another local identity than the one given.
    #[error("the session belongs to another local identity")]
    LocalIdentityChanged,
}

impl DecodeError {
    /// The registered code of the condition.
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::Truncated => ErrorCode::Truncated,
            Self::TrailingBytes => ErrorCode::TrailingBytes,
            Self::UnexpectedType => ErrorCode::UnexpectedType,
            Self::UnsupportedCbor => ErrorCode::UnsupportedCbor,
            Self::IntegerOutOfRange => ErrorCode::IntegerOutOfRange,
            Self::MissingField(_) => ErrorCode::MissingField,
            Self::DuplicateField(_) => ErrorCode::DuplicateField,
            Self::InvalidLength { .. } => ErrorCode::InvalidLength,
            Self::LimitExceeded(_) => ErrorCode::LimitExceeded,
            Self::TooDeep => ErrorCode::TooDeep,
            Self::UnknownMessageType(_) => ErrorCode::UnknownMessageType,
            // An input error (4xx): the bytes decoded, the key is not acceptable (Wire JS 409).
            Self::InvalidKey(_) => ErrorCode::InvalidKey,
            Self::LocalIdentityChanged => ErrorCode::LocalIdentityChanged,
        }
    }
}

crate::impl_kind_and_code!(DecodeError);

/// A session could not be created from a prekey bundle. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionCreationError {
    /// A key of the bundle is degenerate, or a Diffie-Hellman result was all zero.
    #[error("degenerate key")]
    DegeneratedKey,
}

impl SessionCreationError {
    /// The registered code of the condition.
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::DegeneratedKey => ErrorCode::DegeneratedKey,
        }
    }
}

crate::impl_kind_and_code!(SessionCreationError);

/// A message could not be encrypted. Nothing was changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncryptError {
    /// The session has no state for its current tag (a corrupt session).
    #[error("no session state for the current session tag")]
    NoSessionForTag,
    /// The sending chain has used all 2^32 message counters; the peer must reply first.
    #[error("the sending chain is exhausted")]
    ChainExhausted,
    /// The plaintext is longer than [`crate::limits::MAX_PLAINTEXT_LEN`].
    #[error("plaintext of {0} bytes is too long")]
    PlaintextTooLong(usize),
}

impl EncryptError {
    /// The registered code of the condition.
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::NoSessionForTag => ErrorCode::NoSessionForTag,
            Self::ChainExhausted => ErrorCode::ChainExhausted,
            Self::PlaintextTooLong(_) => ErrorCode::PlaintextTooLong,
        }
    }
}

crate::impl_kind_and_code!(EncryptError);

/// A message was rejected. The session and the prekey store are exactly as they were.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DecryptError {
    /// A key in the message is degenerate, or a Diffie-Hellman result was all zero.
    #[error("degenerate key")]
    DegeneratedKey,
    /// The PreKeyMessage names a prekey that is not in the store (already used, or never ours).
    #[error("prekey {0} not found")]
    PreKeyNotFound(PreKeyId),
    /// A session can only be created from a PreKeyMessage.
    #[error("a CipherMessage cannot create a session")]
    NotAPreKeyMessage,
    /// The PreKeyMessage carries another identity than the session's remote identity.
    #[error("the remote identity changed")]
    RemoteIdentityChanged,
    /// The session has no state for the message's session tag.
    #[error("no session state for the message's session tag")]
    UnknownSessionTag,
    /// The envelope MAC did not verify.
    #[error("invalid message authentication code")]
    InvalidSignature(CounterPosition),
    /// The message is older than the oldest staged key of its chain and was decrypted before.
    #[error("outdated message")]
    OutdatedMessage,
    /// The message's key is gone: it was skipped and its staged key evicted (only the newest
    /// keys are kept per chain), or the engine cannot tell whether it was (a session record
    /// without eviction data). It was **not** necessarily decrypted: not "already seen".
    #[error("the message's key was evicted; it cannot be decrypted")]
    MessageKeyEvicted,
    /// The message was already decrypted.
    #[error("duplicate message")]
    DuplicateMessage,
    /// The message skips more messages than the counter-gap limit allows.
    #[error("message counter too far ahead (gap {gap})")]
    TooDistantFuture {
        /// How many messages the counter skips.
        gap: u64,
        /// Whether the receive chain was still at its start (code 211) or in use (212).
        chain_start: bool,
    },
    /// The envelope could not be decoded.
    #[error("malformed message: {0}")]
    Decode(#[from] DecodeError),
    /// The caller's identity is not the session's local identity.
    #[error("the session belongs to another local identity")]
    LocalIdentityMismatch,
    /// The prekey store failed.
    #[error("prekey store: {0}")]
    PreKeyStore(Box<dyn std::error::Error + Send + Sync>),
}

impl DecryptError {
    /// The registered code of the condition (the decode errors keep their own).
    pub const fn error_code(&self) -> ErrorCode {
        match self {
            Self::DegeneratedKey => ErrorCode::DegeneratedKey,
            Self::PreKeyNotFound(_) => ErrorCode::PreKeyNotFound,
            Self::NotAPreKeyMessage => ErrorCode::NotAPreKeyMessage,
            Self::RemoteIdentityChanged => ErrorCode::RemoteIdentityChanged,
            Self::UnknownSessionTag => ErrorCode::UnknownSessionTag,
            Self::InvalidSignature(CounterPosition::InSync) => ErrorCode::InvalidSignature,
            Self::InvalidSignature(CounterPosition::Ahead) => ErrorCode::InvalidSignatureAhead,
            Self::InvalidSignature(CounterPosition::Behind) => ErrorCode::InvalidSignatureBehind,
            Self::OutdatedMessage => ErrorCode::OutdatedMessage,
            Self::DuplicateMessage => ErrorCode::DuplicateMessage,
            Self::MessageKeyEvicted => ErrorCode::MessageKeyEvicted,
            Self::TooDistantFuture {
                chain_start: true, ..
            } => ErrorCode::TooDistantFutureNewChain,
            Self::TooDistantFuture {
                chain_start: false, ..
            } => ErrorCode::TooDistantFuture,
            Self::Decode(e) => e.error_code(),
            // The same condition as the decoder's: the session is another identity's.
            Self::LocalIdentityMismatch => ErrorCode::LocalIdentityChanged,
            Self::PreKeyStore(_) => ErrorCode::PreKeyStore,
        }
    }

    /// Whether the message was already decrypted (duplicate or outdated): apps drop these
    /// silently. [`MessageKeyEvicted`](Self::MessageKeyEvicted) is not: that message was lost.
    pub const fn is_already_seen(&self) -> bool {
        self.error_code().is_already_seen()
    }
}

crate::impl_kind_and_code!(DecryptError);

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages with values, as the bindings' tests and logs have read them.
    #[test]
    fn messages_with_values_read_as_before() {
        let cases: [(&dyn std::fmt::Display, &str); 10] = [
            (
                &DecodeError::MissingField("ratchet key"),
                "missing field: ratchet key",
            ),
            (&DecodeError::DuplicateField(7), "duplicate map key 7"),
            (
                &DecodeError::InvalidLength {
                    field: "mac",
                    expected: 32,
                    actual: 0,
                },
                "mac: expected 32 bytes, got 0",
            ),
            (
                &DecodeError::LimitExceeded("cipher text"),
                "cipher text exceeds the decoder limit",
            ),
            (
                &DecodeError::UnknownMessageType(u64::MAX),
                "unknown message type 18446744073709551615",
            ),
            (
                &DecodeError::InvalidKey("identity key"),
                "invalid key: identity key",
            ),
            (
                &EncryptError::PlaintextTooLong(1 << 20),
                "plaintext of 1048576 bytes is too long",
            ),
            (
                &DecryptError::PreKeyNotFound(PreKeyId::new(65535)),
                "prekey 65535 not found",
            ),
            (
                &DecryptError::TooDistantFuture {
                    gap: 1001,
                    chain_start: true,
                },
                "message counter too far ahead (gap 1001)",
            ),
            (
                &DecryptError::Decode(DecodeError::Truncated),
                "malformed message: input ended early",
            ),
        ];
        for (error, message) in cases {
            assert_eq!(error.to_string(), message);
        }
        let store: Box<dyn std::error::Error + Send + Sync> = "disk full".into();
        assert_eq!(
            DecryptError::PreKeyStore(store).to_string(),
            "prekey store: disk full"
        );
        assert_eq!(PreKeyId::new(42).to_string(), "42");
    }
}
