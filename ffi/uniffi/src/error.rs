//! The one error type of the bindings: a stable numeric code, a kind name and a message.

use proteus_client::ClientError;
use proteus_core::ErrorCode;

/// Code of [`ProteusError`] for a call that would have to wait for another call of the same
/// client forever: a call made from inside a callback of that client (re-entrancy), or one that
/// waited longer than the client's wait timeout for the call in progress.
pub const CLIENT_BUSY: i32 = ErrorCode::ClientBusy.number() as i32;
/// Code of [`ProteusError`] when the application's batch callback threw; the batch was stopped
/// before its commit, so nothing of it was committed.
pub const CALLBACK_FAILED: i32 = ErrorCode::CallbackFailed.number() as i32;
/// Code of [`ProteusError`] for a bug: a panic inside the library. The client refuses further
/// calls; close it and open the store again (nothing committed is lost).
pub const INTERNAL: i32 = ErrorCode::Internal.number() as i32;

/// One entry of the registry of error codes, as [`error_codes`] lists them: the generated
/// constants of Kotlin (`ProteusErrorCode`) and Swift (`ProteusErrorCode`) are checked against it.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ErrorCodeEntry {
    /// The stable number.
    pub code: i32,
    /// The constant's name (CamelCase).
    pub name: String,
    /// The kind name errors of this code report.
    pub kind: String,
    /// `Engine`, `Decrypt`, `Decode`, `Input` or `System`.
    pub family: String,
    /// Whether the message was decrypted before (drop it silently).
    pub already_seen: bool,
}

/// Every error code of the library, ascending: the registry the bindings' constants come from.
#[uniffi::export]
pub fn error_codes() -> Vec<ErrorCodeEntry> {
    ErrorCode::ALL
        .iter()
        .map(|&c| ErrorCodeEntry {
            code: i32::from(c.number()),
            name: c.name().to_owned(),
            kind: c.kind().to_owned(),
            family: c.family().name().to_owned(),
            already_seen: c.is_already_seen(),
        })
        .collect()
}

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

    fn registered(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self::new(i32::from(code.number()), code.kind(), detail)
    }

    pub(crate) fn busy(message: impl Into<String>) -> Self {
        Self::registered(ErrorCode::ClientBusy, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::registered(ErrorCode::Internal, message)
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
        Self::registered(e.error_code(), e.to_string())
    }
}

/// A callback implemented in Kotlin or Swift threw something other than a `ProteusError`.
impl From<uniffi::UnexpectedUniFFICallbackError> for ProteusError {
    fn from(e: uniffi::UnexpectedUniFFICallbackError) -> Self {
        Self::registered(
            ErrorCode::CallbackFailed,
            format!("the callback threw: {}", e.reason),
        )
    }
}
