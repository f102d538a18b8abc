//! The error type of the bindings: a family, a stable numeric code, a kind and a detail.

use proteus_client::ClientError;
use proteus_client::codes::ClientCode;
use proteus_core::codes::Family;
use proteus_ffi_codes::{BindingsCode, ErrorCode};

use crate::kind::ErrorKind;

/// Code of [`ProteusError`] for a call that would have to wait for another call of the same
/// client forever: a call made from inside a callback of that client (re-entrancy), or one that
/// waited longer than the client's wait timeout for the call in progress.
pub const CLIENT_BUSY: i32 = BindingsCode::ClientBusy.number() as i32;
/// Code of [`ProteusError`] when the application's batch callback threw; the batch was stopped
/// before its commit, so nothing of it was committed.
pub const CALLBACK_FAILED: i32 = BindingsCode::CallbackFailed.number() as i32;
/// Code of [`ProteusError`] for a bug: a panic inside the library. The client refuses further
/// calls; close it and open the store again (nothing committed is lost).
pub const INTERNAL: i32 = ClientCode::Internal.number() as i32;

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
    proteus_ffi_codes::all()
        .into_iter()
        .map(|c| ErrorCodeEntry {
            code: i32::from(c.number()),
            name: c.name().to_owned(),
            kind: c.kind().to_owned(),
            family: c.family().name().to_owned(),
            already_seen: c.is_already_seen(),
        })
        .collect()
}

/// Every failure of the client, in Kotlin as `ProteusException` and in Swift as `ProteusError`:
/// one variant per family (the hundreds digit of the code), so that an app can catch a family
/// (`ProteusException.Decrypt`, `catch ProteusError.Decrypt`) and branch on `kind`, an enum.
///
/// `code` and `kind` are stable and the same in Rust (`ClientError::code`/`kind`), Kotlin, Swift
/// and JavaScript: 1xx engine, 2xx decryption, 3xx decoding, 4xx input, 5xx system. `detail` is
/// for logs and never contains key material or user data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
pub enum ProteusError {
    /// 1xx: the engine or the client refused the call (no session, a busy client, an aborted
    /// batch, ...).
    #[error("{kind:?} ({code}): {detail}")]
    Engine {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition.
        kind: ErrorKind,
        /// What happened, for logs.
        detail: String,
    },
    /// 2xx: a message was rejected (duplicate, bad MAC, changed identity, ...).
    #[error("{kind:?} ({code}): {detail}")]
    Decrypt {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition.
        kind: ErrorKind,
        /// What happened, for logs.
        detail: String,
    },
    /// 3xx: bytes did not decode (or an integer argument was out of range, 309).
    #[error("{kind:?} ({code}): {detail}")]
    Decode {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition.
        kind: ErrorKind,
        /// What happened, for logs.
        detail: String,
    },
    /// 4xx: an input decoded but is not acceptable (an invalid key, a plaintext too long).
    #[error("{kind:?} ({code}): {detail}")]
    Input {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition.
        kind: ErrorKind,
        /// What happened, for logs.
        detail: String,
    },
    /// 5xx: the store (busy, corrupt, wrong key, ...), the system, or a bug (599).
    #[error("{kind:?} ({code}): {detail}")]
    System {
        /// The stable numeric code.
        code: i32,
        /// The stable name of the condition.
        kind: ErrorKind,
        /// What happened, for logs.
        detail: String,
    },
}

impl ProteusError {
    /// The error of a registered code.
    pub(crate) fn registered(code: impl Into<ErrorCode>, detail: impl Into<String>) -> Self {
        let code = code.into();
        let (number, kind, detail) = (i32::from(code.number()), ErrorKind::of(code), detail.into());
        match code.family() {
            Family::Engine => Self::Engine {
                code: number,
                kind,
                detail,
            },
            Family::Decrypt => Self::Decrypt {
                code: number,
                kind,
                detail,
            },
            Family::Decode => Self::Decode {
                code: number,
                kind,
                detail,
            },
            Family::Input => Self::Input {
                code: number,
                kind,
                detail,
            },
            _ => Self::System {
                code: number,
                kind,
                detail,
            },
        }
    }

    pub(crate) fn busy(message: impl Into<String>) -> Self {
        Self::registered(BindingsCode::ClientBusy, message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::registered(ClientCode::Internal, message)
    }

    pub(crate) fn closed() -> Self {
        Self::registered(BindingsCode::ClientClosed, "the client was closed")
    }

    /// What a job whose caller gave up returns (nobody reads it).
    pub(crate) fn cancelled() -> Self {
        Self::registered(ClientCode::BatchAborted, "the caller cancelled the call")
    }

    /// An integer argument outside the range its parameter allows (`IntegerOutOfRange`, 309).
    pub(crate) fn out_of_range(what: &str, value: i64) -> Self {
        Self::registered(
            proteus_core::ErrorCode::IntegerOutOfRange,
            format!("{what} {value} is out of range"),
        )
    }

    fn parts(&self) -> (i32, ErrorKind, &str) {
        match self {
            Self::Engine { code, kind, detail }
            | Self::Decrypt { code, kind, detail }
            | Self::Decode { code, kind, detail }
            | Self::Input { code, kind, detail }
            | Self::System { code, kind, detail } => (*code, *kind, detail),
        }
    }

    /// The stable numeric code.
    pub fn code(&self) -> i32 {
        self.parts().0
    }

    /// The stable kind.
    pub fn kind(&self) -> ErrorKind {
        self.parts().1
    }

    /// What happened, for logs.
    pub fn detail(&self) -> &str {
        self.parts().2
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
            BindingsCode::CallbackFailed,
            format!("the callback threw: {}", e.reason),
        )
    }
}
