//! The native store's functions: open (sealed or not), seal, rekey, delete.

use crate::error::{Outcome, internal, outcome};
use napi::bindgen_prelude::{Uint8Array, spawn_blocking};
use napi_derive::napi;
use proteus_client::{Client, ClientError, OpenMode, SqliteOptions, StoreError, StoreKey};

/// A 32-byte store key (the JS layer checks the length first).
pub(crate) fn key(bytes: &[u8]) -> napi::Result<StoreKey> {
    let key: [u8; 32] = bytes
        .try_into()
        .map_err(|_| napi::Error::new(napi::Status::InvalidArg, "a store key is 32 bytes"))?;
    Ok(StoreKey::new(key))
}

/// Opens the store at `path`: the client and whether it was created now.
pub(crate) fn open(
    path: &str,
    key: Option<&StoreKey>,
    create: bool,
) -> Result<(Client, bool), ClientError> {
    let options = SqliteOptions::default();
    let open = |mode| match key {
        Some(key) => Client::open_sealed(path, mode, &options, key),
        None => Client::open_with(path, mode, &options),
    };
    match open(OpenMode::Existing) {
        Err(ClientError::Store(StoreError::NotFound(_))) if create => match open(OpenMode::New) {
            // Another process made it in the meantime.
            Err(ClientError::Store(StoreError::AlreadyExists(_))) => {
                open(OpenMode::Existing).map(|c| (c, false))
            }
            other => other.map(|c| (c, true)),
        },
        other => other.map(|c| (c, false)),
    }
}

/// Gives the client a pool of `threads` batch threads (the JS layer checked the number), by
/// default the processor's parallelism up to [`DEFAULT_MAX_THREADS`]. The pool's threads sleep
/// between batches; 1 runs every batch on the calling thread.
pub(crate) fn set_batch_threads(client: &mut Client, threads: Option<u32>) {
    let threads = threads
        .and_then(|n| usize::try_from(n).ok())
        .unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, |n| n.get().min(DEFAULT_MAX_THREADS))
        });
    client.set_batch_threads(threads);
}

/// The most batch threads a client gets by default: a desktop's batch gains little beyond.
const DEFAULT_MAX_THREADS: usize = 4;

async fn blocking<F>(f: F) -> napi::Result<Outcome<()>>
where
    F: FnOnce() -> Result<(), StoreError> + Send + 'static,
{
    outcome(match spawn_blocking(f).await {
        Ok(done) => done.map_err(|e| ClientError::from(e).into()),
        Err(e) => Err(internal(&e.to_string())),
    })
}

/// Seals every record of the plain store at `path` with `store_key`, in one transaction.
#[napi]
pub async fn seal_store(path: String, store_key: Uint8Array) -> napi::Result<Outcome<()>> {
    let key = key(&store_key)?;
    blocking(move || proteus_client::seal_store(&path, &key)).await
}

/// Seals every record of the store at `path` with `new_key` instead of `old_key`.
#[napi]
pub async fn rekey_store(
    path: String,
    old_key: Uint8Array,
    new_key: Uint8Array,
) -> napi::Result<Outcome<()>> {
    let old = key(&old_key)?;
    let new = key(&new_key)?;
    blocking(move || proteus_client::rekey_store(&path, &old, &new)).await
}

/// Deletes the store at `path`: the file and SQLite's journal files beside it.
#[napi]
pub async fn delete_store(path: String) -> napi::Result<Outcome<()>> {
    blocking(move || {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            match std::fs::remove_file(format!("{path}{suffix}")) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::Backend(e.to_string())),
            }
        }
        Ok(())
    })
    .await
}
