//! How an error crosses into JS, as data: a failure of the library (every [`ClientError`], and
//! this adapter's own registry errors) is a [`RawFailure`] that the call resolves to, with the
//! registry's numeric `code`, its `kind` (every layer's codes, assembled in ffi/codes) and the
//! `message`; the package's JS layer (`native.js`) throws it as a `ProteusError`, as the web
//! package's are. A call rejects only with an error of JavaScript itself (the application's
//! callback threw: the exception, as it was) or of the adapter's arguments.

use napi::bindgen_prelude::Either;
use napi_derive::napi;
use proteus_client::ClientError;
use proteus_client::codes::{ClientCode, ErrorCode};

/// A failure of the library: what a call resolves to instead of its value.
#[napi]
pub struct RawFailure {
    /// The registry's code (e.g. 209).
    pub code: u32,
    /// The registry's kind (e.g. "DuplicateMessage").
    pub kind: String,
    /// What happened, in words (no key material, no session ids).
    pub message: String,
}

/// What a call gives JS: its value, or a failure of the library.
pub(crate) type Outcome<T> = Either<T, RawFailure>;

/// Why a call did not give its value.
pub(crate) enum Failure {
    /// The library failed: crosses as a [`RawFailure`].
    Library(RawFailure),
    /// JavaScript failed (a callback threw), or the call's arguments were not what the JS layer
    /// checks: crosses as that error (the rejection).
    Js(napi::Error),
}

impl From<ClientError> for Failure {
    fn from(error: ClientError) -> Self {
        Self::Library(failure(error.code(), error.kind(), error.to_string()))
    }
}

impl From<napi::Error> for Failure {
    fn from(error: napi::Error) -> Self {
        Self::Js(error)
    }
}

fn failure(code: u16, kind: &str, message: String) -> RawFailure {
    RawFailure {
        code: u32::from(code),
        kind: kind.to_owned(),
        message,
    }
}

/// A registry failure of this adapter itself (e.g. Internal, 599).
pub(crate) fn code_failure(code: impl Into<ErrorCode>, message: String) -> Failure {
    let code = code.into();
    Failure::Library(failure(code.number(), code.kind(), message))
}

/// A bug of the adapter (a worker that did not finish, a poisoned lock): Internal (599).
pub(crate) fn internal(what: &str) -> Failure {
    code_failure(
        ClientCode::Internal,
        format!("internal error in the native client: {what}"),
    )
}

/// `result` as JS gets it: the value, or the library's failure as data; an error of JavaScript
/// rejects.
pub(crate) fn outcome<T>(result: Result<T, Failure>) -> napi::Result<Outcome<T>> {
    match result {
        Ok(value) => Ok(Either::A(value)),
        Err(Failure::Library(failure)) => Ok(Either::B(failure)),
        Err(Failure::Js(error)) => Err(error),
    }
}
