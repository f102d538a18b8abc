//! The relay's answers: a JSON body or an error with a stable code (see [`crate::api::ErrorBody`]).

use hyper::StatusCode;

pub(super) use crate::api::ErrorCode;

#[derive(Debug)]
pub(super) struct ApiError {
    pub(super) status: StatusCode,
    pub(super) code: ErrorCode,
    pub(super) message: String,
}

pub(super) fn err(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

pub(super) fn bad_request(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, ErrorCode::BadRequest, message)
}

pub(super) fn internal(e: impl std::fmt::Display) -> ApiError {
    err(
        StatusCode::INTERNAL_SERVER_ERROR,
        ErrorCode::Internal,
        format!("relay failure: {e}"),
    )
}

pub(super) fn db_err(e: rusqlite::Error) -> ApiError {
    internal(e)
}

pub(super) type Reply = Result<(StatusCode, Vec<u8>), ApiError>;

pub(super) fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Reply {
    serde_json::to_vec(value)
        .map(|body| (status, body))
        .map_err(internal)
}

pub(super) fn too_large(limit: usize) -> ApiError {
    err(
        StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::TooLarge,
        format!("the body is larger than {limit} bytes"),
    )
}

pub(super) fn bad_nonce() -> ApiError {
    err(
        StatusCode::UNAUTHORIZED,
        ErrorCode::BadNonce,
        "the nonce is unknown, expired or used: get a fresh one",
    )
}

pub(super) fn bad_signature(message: impl Into<String>) -> ApiError {
    err(StatusCode::UNAUTHORIZED, ErrorCode::BadSignature, message)
}

pub(super) fn bad_bundle(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, ErrorCode::BadBundle, message)
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("the body is not the JSON expected: {e}")))
}
