//! A Proteus client with an embedded store: one object that owns an identity, its prekeys and
//! its sessions, keeps them on disk, and gets through a queue of messages fast without losing
//! one.
//!
//! [`Client`] sits on [`proteus_core`] and a [`Storage`]: [`SqliteStorage`] (one SQLite file,
//! the native default), [`MemoryStorage`] (tests), a [`Journal`] for a host that stores commits
//! asynchronously (the web build: IndexedDB, with the commit protocol the journal decides), or
//! anything else with atomic commits.
//!
//! # Durability
//!
//! * [`Client::encrypt`] commits the advanced sending chain before it returns the envelope: a
//!   crash can never make two messages share a message key.
//! * A one-time prekey is deleted in the same commit that saves the session made from it.
//! * A failed operation changes nothing, in memory or on disk.
//! * Opening never wipes or recreates anything: a store that cannot be read is reported
//!   ([`StoreError::Corrupt`], distinct from [`StoreError::NotFound`]) and left as it is.
//! * What is deleted is gone (SQLite): a used one-time prekey, a superseded session state, a
//!   used message key or a deleted session is overwritten on disk by the commit that removes
//!   it (`secure_delete`, and a checkpoint that empties the WAL after every commit), so a copy
//!   of the file taken later does not decrypt messages already read. [`seal_store`] and
//!   [`rekey_store`] leave no plaintext or old ciphertext behind either.
//! * Encryption at rest (feature `sealed`, on by default): [`Client::open_sealed`] seals every
//!   record with an application key (ChaCha20-Poly1305, the record's table and key as associated
//!   data); [`seal_store`] encrypts an existing store, [`rekey_store`] rotates the key. Session
//!   ids (the contact list) are stored as keyed hashes (HMAC-SHA256 under a key derived from
//!   the store key), the clear id sealed inside the record; stores sealed before are migrated
//!   when first opened. See [`SealedStorage`] for what stays visible.
//!
//! # Sharing a store: an app and its extension
//!
//! Several processes may open one SQLite store at once: on iOS the app and its Notification
//! Service Extension, on Android a push process. Every call of the [`Client`] is one operation
//! of the [commit protocol](Storage::begin): it takes the store's write lock (waiting up to
//! the busy timeout, `SqliteOptions::busy_timeout`, then [`StoreError::Busy`]), reloads what it cached if
//! another process committed since its last call (one `PRAGMA data_version` check per call
//! tells), runs, and commits. So the contracts above hold across processes: a chain step is
//! never used twice, and a message is delivered exactly once by id whichever process decrypts
//! it.
//!
//! **iOS: no lock may be held while the app is suspended.** A process suspended while it holds
//! a file lock in a shared (app group) container is killed by the system (`0xdead10cc`). The
//! store holds its lock only while a call runs, and releases it when the call returns (or
//! fails), so an open, idle client holds nothing. Do not let the app be suspended in the middle
//! of a call: a [`Client::decrypt_batch`] holds the lock through its `deliver` callbacks, so
//! finish the batch (or return `ControlFlow::Break`) before the app goes to the background, or
//! run it inside a background task.
//!
//! # Backups: never restore an old copy of a store
//!
//! A store holds the ratchet: which message keys were used. A copy of it restored later (a
//! device backup, a file copied back) rolls the ratchet back, and the next messages are
//! encrypted with message keys already used for messages sent after the copy was taken. The engine cannot tell a restored copy from the real store by itself. So:
//!
//! * **Keep the store out of backups.** iOS/macOS: set `isExcludedFromBackup` on the store's
//!   file URL (`NSURLIsExcludedFromBackupKey`), and on the `-wal` file too, or put the store in
//!   a directory excluded that way (`Caches` is not backed up but may be purged: do not use
//!   it). Android: leave the store out of Auto Backup and device transfer, with
//!   `android:allowBackup="false"`, or with `fullBackupContent` / `dataExtractionRules`
//!   (Android 12+) rules that `exclude` the store file and its `-wal` for both `cloud-backup`
//!   and `device-transfer`. Web: browser sync does not copy IndexedDB, but copying a whole
//!   browser profile does; nothing in a page can prevent that.
//! * **Detect a restored copy: [`RollbackGuard`].** The application keeps a commit counter
//!   outside the store ([`CommitCounter`]: the keychain, say, which a restored file does not
//!   roll back); a store behind it is refused with [`StoreError::RolledBack`] (511) and left
//!   as it is. The application then decides (start a new device identity, say); the store is
//!   never wiped automatically. Without a guard, a restored copy opens as if nothing happened.
//!   The guard is available to Rust applications; the bindings do not expose it yet.
//!
//! A device that moves to a new phone should be a new Proteus client (new identity, new
//! sessions), not a restored copy of the old one.
//!
//! # Batch decryption: the contract
//!
//! [`Client::decrypt_batch`] takes a queue of `(session id, envelope)` and commits all session
//! changes of the batch in one transaction. Each result reaches the application's `deliver`
//! callback **before** that commit, with a stable [`MessageId`] (the envelope's MAC, verified by
//! the decryption):
//!
//! * the application stores (or shows) each plaintext in `deliver`, keyed by its message id;
//! * if the process dies before the commit, nothing of the batch was committed: delivering the
//!   same envelopes again decrypts them again, and the application drops the ids it already has;
//! * after the commit, the same envelopes come back as duplicates (`DuplicateMessage`, 209).
//!
//! So no message is ever lost, and deduplication by message id makes delivery exactly-once.
//!
//! # Logs and telemetry
//!
//! The client logs through the [`log`](https://docs.rs/log) facade, under the target
//! [`LOG_TARGET`]: install any logger to see stores opened, migrations, reloads after another
//! process committed, each batch's summary, the prekey stock below [`PREKEY_LOW_WATER`] and a
//! refused rollback. No line holds key material, plaintext or a session id in clear (a keyed
//! tag stands for it). With no logger installed it costs a comparison per event. Each batch's
//! counts and times are also kept: [`Client::last_batch_summary`].
//!
//! # Threads are yours
//!
//! A client starts no thread. A batch ([`Client::decrypt_batch`], [`Client::encrypt_for`])
//! runs on the calling thread unless you hand the client a rayon pool
//! ([`Client::set_executor`] with [`Executor::Rayon`], which may be the pool the rest of your
//! app uses) or ask it to build one ([`Client::set_batch_threads`]); then the batch's
//! independent work (different sessions, the opening of one sender's messages, the
//! recipients of a fan-out) runs on that pool, with the same results, delivery order and
//! single commit. The library has no timing heuristics and touches no thread's affinity;
//! an idle client uses no CPU.
//!
//! ```
//! use std::collections::HashSet;
//! use std::ops::ControlFlow;
//! use proteus_client::{Client, QueuedMessage};
//!
//! let mut alice = Client::in_memory()?;
//! let mut bob = Client::in_memory()?;
//! let bundle = bob.generate_prekeys(1)?.remove(0);
//! alice.create_session("bob:phone", &bundle.to_bytes())?;
//! let queue: Vec<Vec<u8>> = (0..3).map(|i| alice.encrypt("bob:phone", format!("hi {i}").as_bytes())).collect::<Result<_, _>>()?;
//!
//! // Bob comes online. His app keeps the ids of the messages it has stored.
//! let mut stored: HashSet<proteus_client::MessageId> = HashSet::new();
//! let batch: Vec<QueuedMessage> = queue.iter().map(|e| QueuedMessage { session_id: "alice:laptop", envelope: e }).collect();
//! bob.decrypt_batch(&batch, |msg, progress| {
//!     if let Ok(plaintext) = &msg.outcome {
//!         if stored.insert(msg.message_id) {
//!             // a new message: persist `plaintext` in the app's own database here
//!             assert!(plaintext.starts_with(b"hi "));
//!         }
//!     }
//!     println!("{}/{}", progress.done, progress.total);
//!     ControlFlow::Continue(())
//! })?;
//! assert_eq!(stored.len(), 3);
//!
//! // Delivered again after the commit: duplicates, nothing new.
//! let again = bob.decrypt_batch(&batch, |_, _| ControlFlow::Continue(()))?;
//! assert!(again.iter().all(|m| m.is_already_seen()));
//! # Ok::<(), proteus_client::ClientError>(())
//! ```

#![forbid(unsafe_code)]

mod batch;
mod checked_identities;
mod client;
pub mod codes;
mod collections;
mod cryptobox;
mod error;
mod logging;
mod prekeys;
mod records;
mod replay_guard;
mod session_cache;
mod storage;

pub use batch::{
    BatchError, BatchSummary, Chunking, Decrypted, Executor, MessageId, Progress, QueuedMessage,
    claimed_sender,
};
pub use client::Client;
#[cfg(feature = "cryptobox-directory")]
pub use cryptobox::MAX_RECORD_FILE_BYTES;
pub use cryptobox::{
    BadRecord, CryptoboxRecords, ImportError, ImportOptions, ImportProgress, ImportReport,
    LOCAL_IDENTITY, MAX_NAMED_BAD_RECORDS, PROGRESS_EVERY, SourceRecord, SourceTable,
};
pub use error::{ClientError, StoreError, Tamper};
pub use logging::{LOG_TARGET, PREKEY_LOW_WATER};
pub use records::MAX_SESSION_ID_LEN;
pub use replay_guard::MAX_LAST_RESORT_BASE_KEYS;
pub use session_cache::SessionConfig;
pub use storage::journal::{
    Commit, CommitAction, CommitDriver, CommitReport, HostMemoryStore, MAX_COMMIT_ATTEMPTS,
    decode_writes, encode_writes, entry_bounds, web_sealed,
};
pub use storage::rollback::{CommitCounter, CounterError, RollbackGuard};
#[cfg(feature = "sealed")]
pub use storage::sealed::{MAX_UNLOCKED_READ_ATTEMPTS, SEAL_OVERHEAD, SealedStorage, StoreKey};
#[cfg(feature = "sqlite")]
pub use storage::sqlite::{
    DEFAULT_BUSY_TIMEOUT, OpenMode, SCHEMA_VERSION, SqliteOptions, SqliteStorage,
};

/// Encrypts an existing, unencrypted SQLite store in place with `key`, in one transaction.
///
/// No plaintext remains in the file: it is first compacted (`VACUUM`, which changes no record),
/// so that pages freed by older versions of this library are gone, and the sealing transaction
/// overwrites every plaintext record it replaces (`secure_delete`).
#[cfg(all(feature = "sqlite", feature = "sealed"))]
pub fn seal_store(path: impl AsRef<std::path::Path>, key: &StoreKey) -> Result<(), StoreError> {
    let mut storage = SqliteStorage::open(path, OpenMode::Existing, &SqliteOptions::default())?;
    storage.compact()?;
    SealedStorage::seal_existing(storage, key).map(drop)
}

/// Re-encrypts a sealed SQLite store from `old` to `new`, in one transaction. As with
/// [`seal_store`], no record sealed with `old` remains in the file afterwards.
#[cfg(all(feature = "sqlite", feature = "sealed"))]
pub fn rekey_store(
    path: impl AsRef<std::path::Path>,
    old: &StoreKey,
    new: &StoreKey,
) -> Result<(), StoreError> {
    let storage = SqliteStorage::open(path, OpenMode::Existing, &SqliteOptions::default())?;
    let mut sealed = SealedStorage::open(storage, old)?;
    sealed.inner_mut().compact()?;
    sealed.rekey(new)
}
pub use storage::{Freshness, Journal, MemoryStorage, Record, Storage, Table, Write};
/// Deletes the SQLite store at `path` with its side files (`-wal`, `-shm`, `-journal`). Nothing
/// happens if there is none. A file that is not a Proteus store is refused
/// ([`StoreError::Corrupt`]) and left alone, so a wrong path cannot delete an unrelated file.
/// Clients on the store must be closed first.
#[cfg(feature = "sqlite")]
pub fn delete_store(path: impl AsRef<std::path::Path>) -> Result<(), StoreError> {
    let path = path.as_ref();
    if !path.exists() {
        return Ok(());
    }
    // Opening checks that it is a Proteus store (a sealed one too: sealing is above SQLite).
    drop(SqliteStorage::open(
        path,
        OpenMode::Existing,
        &SqliteOptions::default(),
    )?);
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        match std::fs::remove_file(&file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(StoreError::Backend(format!("cannot delete the store: {e}")));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The crate README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The repository README's Rust examples (the core's and the client's), compiled and run as
/// doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct RootReadmeDoctests;
