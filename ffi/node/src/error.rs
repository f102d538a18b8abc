//! How a [`ClientError`] crosses into JS: a napi `Error` whose message starts with
//! `[proteus CODE KIND] `. The package's JS layer (`native.js`) turns it into a `ProteusError`
//! with the numeric `code` and the `kind` (the registry's: every layer's codes, assembled in
//! ffi/codes), as the web package's are.

use proteus_client::ClientError;
use proteus_client::codes::{ClientCode, ErrorCode};

/// The error `error` becomes in JS.
pub(crate) fn client_error(error: &ClientError) -> napi::Error {
    tagged(error.code(), error.kind(), &error.to_string())
}

/// A registry error of this adapter itself (e.g. Internal, 599).
pub(crate) fn code_error(code: impl Into<ErrorCode>, message: &str) -> napi::Error {
    let code = code.into();
    tagged(code.number(), code.kind(), message)
}

fn tagged(code: u16, kind: &str, message: &str) -> napi::Error {
    napi::Error::from_reason(format!("[proteus {code} {kind}] {message}"))
}

/// A bug of the adapter (a worker that did not finish, a poisoned lock): Internal (599).
pub(crate) fn internal(what: &str) -> napi::Error {
    code_error(
        ClientCode::Internal,
        &format!("internal error in the native client: {what}"),
    )
}
