//! The exported client: `proteus_client::Client` behind a [`Gate`], with owned arguments.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use proteus_client::{BatchError, Chunking, ClientError, SqliteOptions};
use proteus_core::PreKeyId;

use crate::batch::{BatchResults, QueuedMessages};
use crate::bytes::{Bytes, SecretBytes};
use crate::error::ProteusError;
use crate::gate::Gate;
use crate::types::{BatchDelivery, BatchProgress, BatchSummary, OutgoingMessage, PreKeyBundle};

/// How `Client.openWith` treats the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Enum)]
pub enum OpenMode {
    /// The store must exist (`StoreNotFound`, 504, otherwise).
    Existing,
    /// The store must not exist yet (`StoreAlreadyExists`, 505, otherwise).
    New,
    /// Open the store, creating it (with a new identity) if there is none.
    ExistingOrNew,
}

impl From<OpenMode> for proteus_client::OpenMode {
    fn from(mode: OpenMode) -> Self {
        match mode {
            OpenMode::Existing => Self::Existing,
            OpenMode::New => Self::New,
            OpenMode::ExistingOrNew => Self::ExistingOrNew,
        }
    }
}

/// Options of `Client.openWith` and `Client.inMemoryWith`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct ClientOptions {
    /// How long a call waits while another client on the same store (another process, such as
    /// an app's notification extension, or another client of this one) is in a call, before it
    /// fails with `StoreBusy` (502). SQLite stores only.
    #[uniffi(default = 5000)]
    pub busy_timeout_ms: u32,
    /// How long a call waits for another call of the same client, running on another thread,
    /// before it fails with `ClientBusy` (120).
    #[uniffi(default = 30000)]
    pub wait_timeout_ms: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            busy_timeout_ms: 5000,
            wait_timeout_ms: 30_000,
        }
    }
}

/// A Proteus client: an identity, its prekeys and its sessions, kept in a SQLite store (or in
/// memory).
///
/// Safe to share between threads: calls run one at a time, and a call waits for the one in
/// progress (see `ClientOptions.waitTimeoutMs`). Every call that changes state has committed it
/// when it returns; a failed call changes nothing. In Kotlin, close it (`use {}`) to close the
/// store; in Swift, the store closes when the last reference goes.
#[derive(Debug, uniffi::Object)]
pub struct Client {
    inner: Gate<proteus_client::Client>,
}

impl Client {
    fn wrap(client: proteus_client::Client, options: ClientOptions) -> Arc<Self> {
        Arc::new(Self {
            inner: Gate::new(
                client,
                Duration::from_millis(u64::from(options.wait_timeout_ms)),
            ),
        })
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&mut proteus_client::Client) -> Result<R, ClientError>,
    ) -> Result<R, ProteusError> {
        self.inner
            .with(|client| f(client).map_err(ProteusError::from))
    }
}

#[uniffi::export]
impl Client {
    /// Opens the SQLite store at `path`, creating it (with a new identity) if there is none.
    #[uniffi::constructor]
    pub fn open(path: String) -> Result<Arc<Self>, ProteusError> {
        Self::open_with(path, OpenMode::ExistingOrNew, ClientOptions::default())
    }

    /// Opens the SQLite store at `path` as `mode` says.
    #[uniffi::constructor]
    pub fn open_with(
        path: String,
        mode: OpenMode,
        options: ClientOptions,
    ) -> Result<Arc<Self>, ProteusError> {
        let sqlite = SqliteOptions {
            busy_timeout: Duration::from_millis(u64::from(options.busy_timeout_ms)),
        };
        let client = proteus_client::Client::open_with(path, mode.into(), &sqlite)?;
        Ok(Self::wrap(client, options))
    }

    /// A client whose state lives in memory only (tests, throwaway identities).
    #[uniffi::constructor]
    pub fn in_memory() -> Result<Arc<Self>, ProteusError> {
        Self::in_memory_with(ClientOptions::default())
    }

    /// A client in memory, with options.
    #[uniffi::constructor]
    pub fn in_memory_with(options: ClientOptions) -> Result<Arc<Self>, ProteusError> {
        Ok(Self::wrap(proteus_client::Client::in_memory()?, options))
    }

    /// Our fingerprint: lowercase hex of the identity key (64 characters).
    pub fn fingerprint(&self) -> Result<String, ProteusError> {
        self.with(|c| Ok(c.fingerprint()))
    }

    /// An Ed25519 signature of `message` by our identity key (64 bytes), e.g. to answer a
    /// server's authentication challenge; it verifies with the public key of `fingerprint()`.
    /// Prefix the message with a context string of your own: the identity key also signs
    /// prekey bundles.
    pub fn sign(&self, message: Bytes) -> Result<Bytes, ProteusError> {
        self.with(|c| Ok(Bytes(c.sign(&message).to_vec())))
    }

    /// Raises how many skipped-message keys each chain keeps: 1000 (the default, and the least)
    /// to 10,000. A message may skip up to 100,000 messages whatever this is; the keys of the
    /// oldest skipped ones beyond this limit are evicted (`MessageKeyEvicted`, 214).
    pub fn set_max_counter_gap(&self, gap: u32) -> Result<(), ProteusError> {
        self.with(|c| {
            c.set_session_config(c.session_config().with_max_counter_gap(gap));
            Ok(())
        })
    }

    // --- prekeys -------------------------------------------------------------------------

    /// Generates `count` one-time prekeys and returns their bundles, for publishing.
    pub fn generate_prekeys(&self, count: u32) -> Result<Vec<PreKeyBundle>, ProteusError> {
        self.with(|c| {
            let count = usize::try_from(count).unwrap_or(usize::MAX);
            let one_time_ids = usize::from(PreKeyId::LAST_RESORT.value());
            if count > one_time_ids {
                // Refused here rather than by the store, which would first reserve room for
                // `count` ids.
                let free = one_time_ids.saturating_sub(c.prekeys_remaining()?);
                return Err(ClientError::PreKeyIdsExhausted { free });
            }
            Ok(c.generate_prekeys(count)?
                .into_iter()
                .map(PreKeyBundle::from)
                .collect())
        })
    }

    /// The bundle of the last-resort prekey (id 65535), which is never used up.
    pub fn last_resort_bundle(&self) -> Result<PreKeyBundle, ProteusError> {
        self.with(|c| c.last_resort_bundle().map(PreKeyBundle::from))
    }

    /// The bundle of a stored prekey.
    pub fn prekey_bundle(&self, id: u16) -> Result<PreKeyBundle, ProteusError> {
        self.with(|c| c.prekey_bundle(PreKeyId::new(id)).map(PreKeyBundle::from))
    }

    /// How many one-time prekeys are left (the last-resort prekey is not counted).
    pub fn prekeys_remaining(&self) -> Result<u32, ProteusError> {
        self.with(|c| Ok(u32::try_from(c.prekeys_remaining()?).unwrap_or(u32::MAX)))
    }

    // --- sessions ------------------------------------------------------------------------

    /// Starts a session with the owner of `bundle` (its bytes, as published) under an id of the
    /// application's choice, such as `"user:device"`.
    pub fn create_session(&self, session_id: String, bundle: Bytes) -> Result<(), ProteusError> {
        self.with(|c| c.create_session(&session_id, &bundle))
    }

    /// Whether a session with this id exists.
    pub fn has_session(&self, session_id: String) -> Result<bool, ProteusError> {
        self.with(|c| c.has_session(&session_id))
    }

    /// The ids of all sessions.
    pub fn session_ids(&self) -> Result<Vec<String>, ProteusError> {
        self.with(|c| c.session_ids())
    }

    /// The peer's fingerprint in a session.
    pub fn remote_fingerprint(&self, session_id: String) -> Result<String, ProteusError> {
        self.with(|c| c.remote_fingerprint(&session_id))
    }

    /// Deletes a session (nothing happens if there is none).
    pub fn delete_session(&self, session_id: String) -> Result<(), ProteusError> {
        self.with(|c| c.delete_session(&session_id))
    }

    // --- messages ------------------------------------------------------------------------

    /// Encrypts for the session's peer. The advanced sending chain is committed before the
    /// envelope is returned.
    pub fn encrypt(&self, session_id: String, plaintext: Bytes) -> Result<Bytes, ProteusError> {
        self.with(|c| c.encrypt(&session_id, &plaintext).map(Bytes))
    }

    /// Encrypts several messages (for one or several sessions) with one commit, made before any
    /// envelope is returned. Envelopes come back in order; if one fails, none is returned and
    /// nothing is committed.
    pub fn encrypt_batch(
        &self,
        messages: Vec<OutgoingMessage>,
    ) -> Result<Vec<Bytes>, ProteusError> {
        self.with(|c| {
            let borrowed: Vec<(&str, &[u8])> = messages
                .iter()
                .map(|m| (m.session_id.as_str(), &*m.plaintext))
                .collect();
            Ok(c.encrypt_batch(&borrowed)?.into_iter().map(Bytes).collect())
        })
    }

    /// Decrypts one message and commits the result. A PreKeyMessage from a new peer creates the
    /// session (its one-time prekey is deleted in the same commit).
    pub fn decrypt(&self, session_id: String, envelope: Bytes) -> Result<Bytes, ProteusError> {
        self.with(|c| c.decrypt(&session_id, &envelope).map(Bytes))
    }

    /// Decrypts a queue of messages (mixed senders, new sessions, duplicates welcome) and commits
    /// every change in one transaction, **after** `delivery` has received every result.
    ///
    /// Results reach `delivery` in queue order, in chunks: a chunk is delivered when it holds
    /// `max_chunk` results, when `progress_interval_ms` have passed since the last delivery (0:
    /// never for that reason), and at the end. So a progress display is updated at a steady
    /// rate however fast the messages decrypt, and few calls cross the boundary (each costs
    /// tens of microseconds on the JVM). Each result carries its stable message id. If the
    /// process dies before the commit, the same envelopes decrypt again (same ids) the next
    /// time; after the commit they come back as `already_seen`. So no message is lost, and
    /// deduplicating by message id makes delivery exactly-once.
    ///
    /// Per-message rejections are results, not exceptions; the call throws only if the store
    /// fails, or `delivery` returns false (`BatchAborted`, 108) or throws: then nothing of the
    /// batch is committed. While `delivery` runs, the client is busy: see [`BatchDelivery`].
    #[uniffi::method(default(max_chunk = 1000, progress_interval_ms = 100))]
    pub fn decrypt_batch(
        &self,
        queue: QueuedMessages,
        delivery: Box<dyn BatchDelivery>,
        max_chunk: u32,
        progress_interval_ms: u32,
    ) -> Result<BatchSummary, ProteusError> {
        let mut chunking = Chunking::every(usize::try_from(max_chunk).unwrap_or(usize::MAX));
        if progress_interval_ms > 0 {
            chunking =
                chunking.with_interval(Duration::from_millis(u64::from(progress_interval_ms)));
        }
        // Room for a chunk's results: about the size of its envelopes, plus the hex ids.
        let per_message = queue.byte_len() / queue.len().max(1) + 80;
        let chunk_bytes = per_message.saturating_mul(chunking.max_len.min(queue.len()));
        self.inner.with(|client| {
            let borrowed: Vec<proteus_client::QueuedMessage<'_>> = queue
                .iter()
                .map(|(session_id, envelope)| proteus_client::QueuedMessage {
                    session_id,
                    envelope,
                })
                .collect();
            let mut summary = BatchSummary::default();
            let outcome = client.decrypt_batch_chunked(&borrowed, chunking, |chunk, progress| {
                let mut results = BatchResults::with_capacity(chunk_bytes);
                for decrypted in chunk {
                    summary.count(&decrypted.outcome);
                    results.push(decrypted);
                }
                let progress = BatchProgress {
                    done: u32::try_from(progress.done).unwrap_or(u32::MAX),
                    total: u32::try_from(progress.total).unwrap_or(u32::MAX),
                };
                delivery
                    .deliver(results, progress)
                    .map(|go_on| match go_on {
                        true => ControlFlow::Continue(()),
                        false => ControlFlow::Break(()),
                    })
            });
            match outcome {
                Ok(_) => Ok(summary),
                Err(BatchError::Client(e)) => Err(e.into()),
                Err(BatchError::Delivery(thrown)) => Err(thrown),
            }
        })
    }

    // --- import and export ---------------------------------------------------------------

    /// Replaces the identity with one serialised by Wire's Proteus (or this library). Only
    /// allowed while there are no sessions (`IdentityInUse`, 107).
    pub fn import_identity(&self, identity: SecretBytes) -> Result<(), ProteusError> {
        self.with(|c| c.import_identity(&identity))
    }

    /// Stores a prekey serialised by Wire's Proteus (or this library), replacing one with the
    /// same id; returns its id.
    pub fn import_prekey(&self, prekey: SecretBytes) -> Result<u16, ProteusError> {
        self.with(|c| c.import_prekey(&prekey).map(PreKeyId::value))
    }

    /// Stores a session serialised by Wire's Proteus (or this library) under `session_id`.
    pub fn import_session(
        &self,
        session_id: String,
        session: SecretBytes,
    ) -> Result<(), ProteusError> {
        self.with(|c| c.import_session(&session_id, &session))
    }

    /// The identity key pair, serialised as Wire's Proteus does. It holds the secret key: wipe
    /// the array after use.
    pub fn export_identity(&self) -> Result<SecretBytes, ProteusError> {
        self.with(|c| Ok(SecretBytes::new(c.export_identity())))
    }

    /// A session, serialised as Wire's Proteus does. It holds secret keys.
    pub fn export_session(&self, session_id: String) -> Result<SecretBytes, ProteusError> {
        self.with(|c| Ok(SecretBytes::new(c.export_session(&session_id)?)))
    }
}
