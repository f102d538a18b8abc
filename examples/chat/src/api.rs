//! The relay's HTTP API, shared by the relay and its clients (the CLI here, the web page later).
//!
//! Every route is under `/v1`. Bodies are JSON except a message, which is the raw envelope
//! (`application/octet-stream`). Binary values in JSON (identity keys, prekey bundles,
//! envelopes) are standard base64 with padding.
//!
//! | request | who may | what it does |
//! | --- | --- | --- |
//! | `GET /v1/nonce` | anyone | a fresh single-use challenge (also in every response's `Replay-Nonce`) |
//! | `POST /v1/users/{name}` `{identity}` | the key's owner | binds `name` to the identity key on first use |
//! | `PUT /v1/prekeys/{name}` `{prekeys, last_resort}` | `name` only | publishes `name`'s prekey bundles |
//! | `POST /v1/prekeys/{name}/claim` | any user | hands out one of `name`'s one-time prekeys, once (the last-resort one past the requester's share) |
//! | `POST /v1/queues/{name}` envelope | any user | queues a message for `name` (bounded per sender, for strangers as a group, per recipient and in all) |
//! | `GET /v1/queues/{name}?after=&limit=&wait=` | `name` only | queued messages, long-polling up to `wait` s |
//! | `DELETE /v1/queues/{name}?up_to=` | `name` only | deletes queued messages up to a sequence number |
//!
//! # Authentication
//!
//! Each request but `GET /v1/nonce` (and static files) is signed with the user's identity key
//! over a fresh challenge: the client takes a nonce from the relay, signs
//! [`signed_message`]`(user, nonce, method, path and query, body)` and sends the user, the nonce
//! and the signature in the [`HEADER_USER`], [`HEADER_NONCE`] and [`HEADER_SIGNATURE`] headers.
//! A nonce is accepted once and only within its time window, so a replayed request is refused
//! (see [`crate::relay::limits`] for why flooding cannot undo that); the signature covers the body, so
//! a changed request is refused. A user name is bound to the identity key that registered it
//! first (trust on first use at the relay); clients check their peers' fingerprints themselves.
//!
//! Errors are `{"error": code, "message": text}` with an HTTP status; see [`ErrorBody`].

use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// The context string that starts every signed request: it keeps a relay signature from ever
/// being mistaken for a prekey-bundle signature (which covers a bare 32-byte key).
pub const AUTH_CONTEXT: &str = "proteus-chat-relay-v2";
/// The header naming the user a request is signed by.
pub const HEADER_USER: &str = "proteus-user";
/// The header carrying the relay's nonce the request is signed over.
pub const HEADER_NONCE: &str = "proteus-nonce";
/// The header carrying the Ed25519 signature (base64).
pub const HEADER_SIGNATURE: &str = "proteus-signature";
/// The response header carrying a fresh nonce for the next request.
pub const HEADER_REPLAY_NONCE: &str = "replay-nonce";
/// The longest user name.
pub const MAX_NAME_LEN: usize = 32;
/// The id of the last-resort prekey.
pub const LAST_RESORT_ID: u16 = 65535;

/// Whether `name` is a valid user name: 1 to [`MAX_NAME_LEN`] of `a-z`, `0-9`, `.`, `_`, `-`,
/// starting with a letter or digit. Lowercase ASCII only, so that no two names look alike.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= MAX_NAME_LEN
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
}

/// The bytes a request's signature covers: `AUTH_CONTEXT \n user \n nonce \n METHOD \n
/// path?query \n` and then the body. None of the first five parts can hold a newline (names are
/// checked, nonces are the relay's hex, paths come from a request line), so the parts cannot
/// run into each other.
pub fn signed_message(
    user: &str,
    nonce: &str,
    method: &str,
    path_and_query: &str,
    body: &[u8],
) -> Vec<u8> {
    let mut message =
        format!("{AUTH_CONTEXT}\n{user}\n{nonce}\n{method}\n{path_and_query}\n").into_bytes();
    message.extend_from_slice(body);
    message
}

/// Base64 (standard, padded), as used in every JSON body.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Decodes base64 (standard, padded).
pub fn unb64(text: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}

/// `GET /v1/nonce`.
#[derive(Debug, Serialize, Deserialize)]
pub struct NonceResponse {
    /// A single-use challenge.
    pub nonce: String,
}

/// `POST /v1/users/{name}`: signed with the key being registered.
#[derive(Debug, Serialize, Deserialize)]
pub struct RegisterRequest {
    /// The 32-byte Ed25519 identity key, base64.
    pub identity: String,
}

/// The answer to a registration.
#[derive(Debug, Serialize, Deserialize)]
pub struct RegisterResponse {
    /// Whether the name was new (false: it was already bound to this key).
    pub created: bool,
    /// How many one-time prekeys of this user the relay still holds.
    pub prekeys_remaining: u64,
}

/// `PUT /v1/prekeys/{name}`: bundles as the engine serialises them (CBOR), base64.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct UploadPreKeys {
    /// One-time prekey bundles (ids below 65535).
    #[serde(default)]
    pub prekeys: Vec<String>,
    /// The last-resort bundle (id 65535), handed out when no one-time prekey is left.
    #[serde(default)]
    pub last_resort: Option<String>,
}

/// How many one-time prekeys the relay holds for the user.
#[derive(Debug, Serialize, Deserialize)]
pub struct PreKeyCount {
    /// One-time prekeys left.
    pub prekeys_remaining: u64,
}

/// `POST /v1/prekeys/{name}/claim`.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClaimedBundle {
    /// The bundle (CBOR), base64.
    pub bundle: String,
    /// Whether it is the last-resort bundle (no one-time prekey was left).
    pub last_resort: bool,
}

/// `POST /v1/queues/{name}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct SendResponse {
    /// The message's sequence number in the recipient's queue.
    pub seq: u64,
}

/// One queued message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QueuedEnvelope {
    /// Its sequence number: increasing in the order the relay accepted messages for this
    /// recipient, so messages of one sender come in the order they were sent.
    pub seq: u64,
    /// The authenticated sender.
    pub from: String,
    /// The envelope, base64.
    pub envelope: String,
}

/// `GET /v1/queues/{name}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct QueuePage {
    /// Messages with `seq > after`, in order.
    pub messages: Vec<QueuedEnvelope>,
    /// How many more are queued after these.
    pub remaining: u64,
    /// How many one-time prekeys the relay still holds for the user (refill when low).
    pub prekeys_remaining: u64,
}

/// `DELETE /v1/queues/{name}`.
#[derive(Debug, Serialize, Deserialize)]
pub struct AckResponse {
    /// How many messages were deleted.
    pub deleted: u64,
}

/// Every error: a stable code and a sentence.
#[derive(Debug, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The stable code.
    pub error: ErrorCode,
    /// What went wrong, for people.
    pub message: String,
}

/// The stable code of a refused request, `snake_case` on the wire (`"queue_full"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorCode {
    /// The request is malformed (a parameter, a name, the JSON, the method).
    BadRequest,
    /// The body of a send is not a Proteus envelope.
    BadEnvelope,
    /// An uploaded prekey bundle is malformed, someone else's or badly signed.
    BadBundle,
    /// The request is not signed.
    MissingAuth,
    /// The nonce is unknown, expired or used.
    BadNonce,
    /// The signature does not verify.
    BadSignature,
    /// No such user is registered.
    UnknownUser,
    /// The signer may not do this to another user's data.
    Forbidden,
    /// The name is registered with another identity key.
    IdentityConflict,
    /// No such route or file.
    NotFound,
    /// The user has published no prekeys.
    NoPrekeys,
    /// The body is too large.
    TooLarge,
    /// Too many prekeys in one upload, or kept for one user.
    TooManyPrekeys,
    /// Too many requests: try again later (429).
    RateLimited,
    /// The recipient's queue is full (507).
    QueueFull,
    /// The sender's share of the recipient's queue is full (429).
    QueueQuota,
    /// The relay's storage is full (507): nothing more is stored until messages are read.
    StoreFull,
    /// The relay has too many open connections, in all or from this address (503).
    Busy,
    /// The body was too slow (408).
    Timeout,
    /// The relay failed.
    Internal,
    /// A code this build does not know (a newer relay).
    #[serde(other)]
    Unknown,
}

impl ErrorCode {
    /// The code as on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BadRequest => "bad_request",
            Self::BadEnvelope => "bad_envelope",
            Self::BadBundle => "bad_bundle",
            Self::MissingAuth => "missing_auth",
            Self::BadNonce => "bad_nonce",
            Self::BadSignature => "bad_signature",
            Self::UnknownUser => "unknown_user",
            Self::Forbidden => "forbidden",
            Self::IdentityConflict => "identity_conflict",
            Self::NotFound => "not_found",
            Self::NoPrekeys => "no_prekeys",
            Self::TooLarge => "too_large",
            Self::TooManyPrekeys => "too_many_prekeys",
            Self::RateLimited => "rate_limited",
            Self::QueueFull => "queue_full",
            Self::QueueQuota => "queue_quota",
            Self::StoreFull => "store_full",
            Self::Busy => "busy",
            Self::Timeout => "timeout",
            Self::Internal => "internal",
            Self::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_their_wire_names() {
        for code in [
            ErrorCode::BadRequest,
            ErrorCode::IdentityConflict,
            ErrorCode::NoPrekeys,
            ErrorCode::TooManyPrekeys,
            ErrorCode::QueueQuota,
            ErrorCode::StoreFull,
            ErrorCode::Busy,
            ErrorCode::Internal,
        ] {
            let wire = serde_json::to_string(&code).unwrap();
            assert_eq!(wire, format!("\"{}\"", code.as_str()));
            assert_eq!(serde_json::from_str::<ErrorCode>(&wire).unwrap(), code);
        }
        let newer: ErrorCode = serde_json::from_str("\"from_the_future\"").unwrap();
        assert_eq!(newer, ErrorCode::Unknown);
    }

    #[test]
    fn names() {
        for ok in ["alice", "bob2", "a", "x.y_z-1", "0day"] {
            assert!(valid_name(ok), "{ok}");
        }
        let long = "a".repeat(MAX_NAME_LEN + 1);
        for bad in [
            "",
            "Alice",
            "-a",
            ".a",
            "a b",
            "é",
            "a/b",
            "a\n",
            long.as_str(),
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn the_signed_message_binds_every_part() {
        let base = signed_message("alice", "n1", "POST", "/v1/queues/bob", b"x");
        assert_eq!(
            base,
            b"proteus-chat-relay-v2\nalice\nn1\nPOST\n/v1/queues/bob\nx"
        );
        for other in [
            signed_message("alicf", "n1", "POST", "/v1/queues/bob", b"x"),
            signed_message("alice", "n2", "POST", "/v1/queues/bob", b"x"),
            signed_message("alice", "n1", "PUT", "/v1/queues/bob", b"x"),
            signed_message("alice", "n1", "POST", "/v1/queues/bo", b"x"),
            signed_message("alice", "n1", "POST", "/v1/queues/bob", b"y"),
        ] {
            assert_ne!(base, other);
        }
    }
}
