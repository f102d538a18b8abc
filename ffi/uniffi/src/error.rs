//! The one error type of the bindings: a stable numeric code, a kind name and a message.

use proteus_client::ClientError;

/// Code of [`ProteusError`] for a call that would have to wait for another call of the same
/// client forever: a call made from inside a callback of that client (re-entrancy), or one that
/// waited longer than the client's wait timeout for the call in progress.
pub const CLIENT_BUSY: i32 = 120;
/// Code of [`ProteusError`] when the application's batch callback threw; the batch was stopped
/// before its commit, so nothing of it was committed.
pub const CALLBACK_FAILED: i32 = 121;
/// Code of [`ProteusError`] for a bug: a panic inside the library. The client refuses further
/// calls; close it and open the store again (nothing committed is lost).
pub const INTERNAL: i32 = 599;

/// Every failure of the client, in Kotlin as `ProteusException` and in Swift as `ProteusError`.
///
/// `code` and `kind` are stable and the same in Rust (`ClientError::code`/`kind`), Kotlin, Swift
/// and JavaScript: 1xx engine, 2xx decryption, 3xx decoding, 4xx input, 5xx system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum ProteusError {
    /// The only variant: match on `code` or `kind`, not on the type.
    #[error("{kind} ({code}): {detail}")]
    Failure {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition (`"DuplicateMessage"`, `"StoreBusy"`, ...).
        kind: String,
        /// What happened, for logs; never contains key material.
        detail: String,
    },
}

impl ProteusError {
    pub(crate) fn new(code: i32, kind: &str, detail: impl Into<String>) -> Self {
        Self::Failure {
            code,
            kind: kind.to_owned(),
            detail: detail.into(),
        }
    }

    pub(crate) fn busy(message: impl Into<String>) -> Self {
        Self::new(CLIENT_BUSY, "ClientBusy", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(INTERNAL, "Internal", message)
    }

    /// The stable numeric code.
    pub fn code(&self) -> i32 {
        match self {
            Self::Failure { code, .. } => *code,
        }
    }

    /// The stable kind name.
    pub fn kind(&self) -> &str {
        match self {
            Self::Failure { kind, .. } => kind,
        }
    }
}

impl From<ClientError> for ProteusError {
    fn from(e: ClientError) -> Self {
        Self::new(i32::from(e.code()), e.kind(), e.to_string())
    }
}

/// A callback implemented in Kotlin or Swift threw something other than a `ProteusError`.
impl From<uniffi::UnexpectedUniFFICallbackError> for ProteusError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        Self::new(
            CALLBACK_FAILED,
            "CallbackFailed",
            format!("the callback threw: {}", e.reason),
        )
    }
}
