//! Kotlin and Swift bindings of the Proteus client, through UniFFI.
//!
//! A thin adapter over [`proteus_client::Client`]: owned arguments in, records out, typed
//! errors, and a gate that makes the client safe to share between threads. No protocol logic
//! lives here. Every call is async (Kotlin `suspend fun`, Swift `async throws`) and runs on a
//! small worker pool (`worker.rs`), never on the caller's thread.
//!
//! * [`Client`]: `open(path, storeKey?, mode?, options)` (SQLite, sealed with a 32-byte key or
//!   not) or `inMemory(options)`; `sealStore`/`rekeyStore`/`deleteStore`; fingerprints and the
//!   identity key, prekeys and bundles, sessions by id, `encrypt`, `encryptBatch`, `encryptFor`
//!   (fan-out), `decrypt`, `decryptBatch` with a [`BatchDelivery`] callback, import and export
//!   of Wire's records, `close`.
//! * [`ProteusError`] (Kotlin `ProteusException`): one variant per family (Engine, Decrypt,
//!   Decode, Input, System), each with the stable `code` and [`ErrorKind`] of
//!   `ClientError::code`/`kind`, plus the bindings' own: `ClientBusy` (120), `CallbackFailed`
//!   (121), `ClientClosed` (122) and `Internal` (599, a bug).
//!
//! The generated sources and the packaging are described in `ffi/uniffi/README.md`.

mod batch;
mod bytes;
mod calls;
mod client;
mod error;
mod gate;
mod import;
mod kind;
mod logger;
mod messages;
mod rollback;
mod types;
mod worker;

pub use batch::{BatchResults, QueuedMessages};
pub use bytes::{Bytes, SecretBytes};
pub use client::{
    Client, ClientOptions, OpenMode, client_delete_store, client_rekey_store, client_seal_store,
};
pub use error::{
    CALLBACK_FAILED, CLIENT_BUSY, ErrorCodeEntry, INTERNAL, ProteusError, error_codes,
};
pub use import::{CryptoboxSession, CryptoboxSource, ImportProgress, ImportReport, SkippedRecord};
pub use kind::ErrorKind;
pub use logger::{LogLevel, ProteusLogger, set_logger};
pub use rollback::CommitCounter;
pub use types::{
    BatchDelivery, BatchProgress, BatchResult, BatchSummary, FanoutResult, OutgoingMessage,
    PreKeyBundle, QueuedMessage,
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

/// The sender's identity fingerprint (lowercase hex) if `envelope` holds a PreKeyMessage, which
/// carries it; null for other messages. What to show when a peer's identity changed
/// (`RemoteIdentityChanged`, 204) before accepting it. Not authenticated: only a message that
/// decrypts proves its sender.
#[uniffi::export]
pub fn prekey_message_fingerprint(envelope: Bytes) -> Result<Option<String>, ProteusError> {
    let claimed = proteus_client::claimed_sender(&envelope)
        .map_err(|e| ProteusError::from(proteus_client::ClientError::from(e)))?;
    Ok(claimed.map(|key| key.fingerprint()))
}
