//! The native store's functions: open (sealed or not), seal, rekey, delete.

use crate::error::{Outcome, internal, outcome};
use napi::Status;
use napi::bindgen_prelude::{FnArgs, Function, Uint8Array, spawn_blocking};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use proteus_client::{
    Client, ClientError, CommitCounter, CounterError, OpenMode, SqliteOptions, StoreError, StoreKey,
};
use std::sync::Arc;

/// `commitCounter.store(count)`, called from the library's thread without waiting for JS.
type StoreCount = ThreadsafeFunction<FnArgs<(i64,)>, (), FnArgs<(i64,)>, Status, false>;

/// The app's commit counter (`commitCounter` of `Client.open`): the JS layer awaited its
/// `load()` before opening; each count is handed to its `store` as the commits go.
#[derive(Clone)]
pub(crate) struct JsCounter {
    loaded: u64,
    store: Arc<StoreCount>,
}

impl JsCounter {
    pub(crate) fn new(loaded: i64, store: &Function<'_, FnArgs<(i64,)>, ()>) -> napi::Result<Self> {
        let loaded = u64::try_from(loaded)
            .map_err(|_| napi::Error::new(Status::InvalidArg, "a commit count is not negative"))?;
        let store = Arc::new(store.build_threadsafe_function().build()?);
        Ok(Self { loaded, store })
    }
}

impl CommitCounter for JsCounter {
    fn load(&mut self) -> Result<u64, CounterError> {
        Ok(self.loaded)
    }

    fn store(&mut self, count: u64) -> Result<(), CounterError> {
        let count = i64::try_from(count)?;
        match self.store.call(
            FnArgs::from((count,)),
            ThreadsafeFunctionCallMode::NonBlocking,
        ) {
            Status::Ok => Ok(()),
            status => {
                Err(format!("the count could not be queued for JavaScript ({status})").into())
            }
        }
    }
}

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
    counter: Option<&JsCounter>,
) -> Result<(Client, bool), ClientError> {
    let options = SqliteOptions::default();
    let open = |mode| {
        let counter = counter.map(|c| Box::new(c.clone()) as Box<dyn CommitCounter>);
        Client::open_guarded(path, mode, &options, key, counter)
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
