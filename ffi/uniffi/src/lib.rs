//! Kotlin and Swift bindings of the Proteus client, through UniFFI.
//!
//! A thin adapter over [`proteus_client::Client`]: owned arguments in, records out, one error
//! type, and a lock that makes the client safe to share between threads. No protocol logic lives
//! here.
//!
//! * [`Client`]: `open(path)` / `openWith(path, mode, options)` (SQLite) or `inMemory()`;
//!   fingerprints, prekeys and bundles, sessions by id, `encrypt`, `encryptBatch`, `decrypt`,
//!   `decryptBatch` with a [`BatchDelivery`] callback, import and export of Wire's records.
//! * [`ProteusError`] (Kotlin `ProteusException`): the stable `code` and `kind` of
//!   `ClientError::code`/`kind`, plus three of the bindings: `ClientBusy` (120),
//!   `CallbackFailed` (121) and `Internal` (599, a bug).
//!
//! The generated sources and the packaging are described in `ffi/uniffi/README.md`.

mod batch;
mod bytes;
mod client;
mod error;
mod gate;
mod types;

pub use batch::{BatchResults, QueuedMessages};
pub use bytes::{Bytes, SecretBytes};
pub use client::{Client, ClientOptions, OpenMode};
pub use error::{
    CALLBACK_FAILED, CLIENT_BUSY, ErrorCodeEntry, INTERNAL, ProteusError, error_codes,
};
pub use types::{
    BatchDelivery, BatchProgress, BatchResult, BatchSummary, OutgoingMessage, PreKeyBundle,
    QueuedMessage,
};

uniffi::setup_scaffolding!("proteus");

/// The stable id of a received message, as batch results carry it: lowercase hex of the
/// envelope's MAC (of SHA-256 of the bytes if they are not an envelope). Only the id of a
/// message that decrypted is authenticated: record those.
#[uniffi::export]
pub fn message_id(envelope: Bytes) -> String {
    proteus_client::MessageId::of(&envelope).to_string()
}

/// The fingerprint of the identity in a prekey bundle (lowercase hex, 64 characters), to compare
/// with `remoteFingerprint` or show to the user before a session exists.
#[uniffi::export]
pub fn bundle_fingerprint(bundle: Bytes) -> Result<String, ProteusError> {
    let bundle = proteus_core::PreKeyBundle::from_bytes(&bundle)
        .map_err(|e| ProteusError::from(proteus_client::ClientError::from(e)))?;
    Ok(bundle.identity_key().fingerprint())
}
