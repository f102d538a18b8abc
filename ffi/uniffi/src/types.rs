//! The records and the callback interface that cross the boundary.

use std::collections::HashMap;

#[cfg(test)]
use proteus_client::Decrypted;

use crate::batch::BatchResults;
use crate::bytes::Bytes;
use crate::error::ProteusError;
use crate::kind::ErrorKind;

/// A prekey bundle as published: its prekey id and its CBOR bytes (what `createSession` takes).
/// Equal when the contents are (`equals`/`==` compare the bytes, not the arrays).
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Record)]
#[uniffi::export(Eq, Hash)]
pub struct PreKeyBundle {
    /// The prekey id (65535 is the last-resort prekey).
    pub id: i32,
    /// The bundle's CBOR, as Wire's Proteus serialises it.
    pub bytes: Bytes,
}

impl From<proteus_core::PreKeyBundle> for PreKeyBundle {
    fn from(bundle: proteus_core::PreKeyBundle) -> Self {
        Self {
            id: i32::from(bundle.prekey_id().value()),
            bytes: Bytes(bundle.to_bytes()),
        }
    }
}

/// One received message waiting to be decrypted.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Record)]
#[uniffi::export(Eq, Hash)]
pub struct QueuedMessage {
    /// The session it belongs to (the sender, e.g. `"user:device"`).
    pub session_id: String,
    /// The envelope as received.
    pub envelope: Bytes,
}

/// One message to encrypt in `encryptBatch`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, uniffi::Record)]
#[uniffi::export(Eq, Hash)]
pub struct OutgoingMessage {
    /// The session to encrypt for.
    pub session_id: String,
    /// The plaintext.
    pub plaintext: Bytes,
}

/// The result of one message of a batch.
///
/// Exactly one of `plaintext` and `error_code` is set. Messages that were decrypted before
/// (a re-delivery after the commit) come back with `already_seen` set and code 208 or 209:
/// drop them silently. Code 214 (`MessageKeyEvicted`: a skipped message whose key was evicted)
/// is not "already seen": that message was never decrypted.
#[derive(Clone, PartialEq, Eq, Hash, uniffi::Record)]
#[uniffi::export(Eq, Hash)]
pub struct BatchResult {
    /// The message's stable id: lowercase hex of the envelope's MAC. The same envelope always
    /// has the same id, so the application can recognise a re-delivery after a crash; once the
    /// message decrypted its MAC is verified, so no one else can make a message with that id.
    pub message_id: String,
    /// Its session.
    pub session_id: String,
    /// The plaintext, if the message decrypted.
    pub plaintext: Option<Bytes>,
    /// Why it did not: the stable code.
    pub error_code: Option<i32>,
    /// Why it did not: the stable kind name.
    pub error_kind: Option<ErrorKind>,
    /// The message was decrypted before (a duplicate or an outdated message).
    pub already_seen: bool,
    /// For the first messages of a session (PreKeyMessages): the fingerprint of the identity
    /// they carry, when the message decrypted or was refused because the session has another
    /// identity (`RemoteIdentityChanged`, 204: then only what the message claims). Otherwise
    /// null: the sender is the session's peer.
    pub sender: Option<String>,
}

impl std::fmt::Debug for BatchResult {
    /// Leaves the plaintext out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchResult")
            .field("message_id", &self.message_id)
            .field("session_id", &self.session_id)
            .field("plaintext_len", &self.plaintext.as_ref().map(|p| p.len()))
            .field("error_code", &self.error_code)
            .field("error_kind", &self.error_kind)
            .field("sender", &self.sender)
            .finish()
    }
}

#[cfg(test)]
impl BatchResult {
    /// The record of one result, as `BatchResults` writes it (the reference in tests).
    pub(crate) fn of(decrypted: &Decrypted) -> Self {
        let (plaintext, error_code, error_kind) = match &decrypted.outcome {
            Ok(plaintext) => (Some(Bytes(plaintext.clone())), None, None),
            Err(e) => (
                None,
                Some(i32::from(e.code())),
                Some(ErrorKind::of(e.error_code())),
            ),
        };
        Self {
            message_id: decrypted.message_id.to_string(),
            session_id: decrypted.session_id.clone(),
            plaintext,
            error_code,
            error_kind,
            already_seen: decrypted.is_already_seen(),
            sender: decrypted.sender.map(|key| key.fingerprint()),
        }
    }
}

/// The result of one recipient of `encryptFor`: its envelope, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
#[uniffi::export(Eq)]
pub struct FanoutResult {
    /// The recipient's session id, as given.
    pub session_id: String,
    /// The envelope for this recipient, if its session encrypted.
    pub envelope: Option<Bytes>,
    /// Why it did not (`SessionNotFound`, 104, for a missing session, ...).
    pub error: Option<ProteusError>,
}

/// How far a batch has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct BatchProgress {
    /// Messages processed so far.
    pub done: i32,
    /// Messages in the batch.
    pub total: i32,
}

/// What a batch did, once committed: its outcomes counted, and where its time went (what an
/// app sends as telemetry without walking the results).
#[derive(Debug, Clone, Default, PartialEq, uniffi::Record)]
pub struct BatchSummary {
    /// Messages in the batch.
    pub total: i32,
    /// Messages that decrypted.
    pub decrypted: i32,
    /// Messages decrypted before (duplicates, outdated), to be dropped silently.
    pub already_seen: i32,
    /// Messages whose skipped key had been evicted (`MessageKeyEvicted`, 214).
    pub key_evicted: i32,
    /// Other rejected messages: the sum of `failedByCode`.
    pub failed: i32,
    /// The other rejections by stable code: code to count.
    pub failed_by_code: HashMap<i32, i32>,
    /// Milliseconds spent decrypting (the call less delivery and commit).
    pub decrypt_ms: f64,
    /// Milliseconds spent in the delivery callback.
    pub delivery_ms: f64,
    /// Milliseconds spent committing.
    pub commit_ms: f64,
}

impl From<&proteus_client::BatchSummary> for BatchSummary {
    fn from(s: &proteus_client::BatchSummary) -> Self {
        let int = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
        Self {
            total: int(s.total),
            decrypted: int(s.decrypted),
            already_seen: int(s.already_seen),
            key_evicted: int(s.key_evicted),
            failed: int(s.failed_total()),
            failed_by_code: s
                .failed
                .iter()
                .map(|&(code, n)| (i32::from(code), int(n)))
                .collect(),
            decrypt_ms: ms(s.decrypt_time),
            delivery_ms: ms(s.delivery_time),
            commit_ms: ms(s.commit_time),
        }
    }
}

/// Receives the results of `decryptBatch`, in queue order and in chunks, **before** the batch
/// is committed.
///
/// Store (or show) each plaintext here, keyed by its message id, and return `true` to go on.
/// Returning `false`, or throwing, stops the batch: nothing of it is committed, and
/// `decryptBatch` throws (`BatchAborted`, 108, or the error thrown here; any other exception
/// becomes `CallbackFailed`, 121).
///
/// The client is busy while this runs: calling the same client from here fails with
/// `ClientBusy` (120) rather than deadlocking.
#[uniffi::export(callback_interface)]
pub trait BatchDelivery: Send + Sync {
    /// Delivers the next results of the batch; `progress` counts every message up to the last
    /// one of `results`. Returns whether to go on.
    ///
    /// In Kotlin `results` is a `List<BatchResult>`, in Swift a `[BatchResult]`; in Rust,
    /// [`BatchResults::to_vec`] reads them.
    fn deliver(&self, results: BatchResults, progress: BatchProgress)
    -> Result<bool, ProteusError>;
}
