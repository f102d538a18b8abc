//! The exported client: `proteus_client::Client` behind a [`Gate`], with owned arguments.
//!
//! Every call is async (Kotlin `suspend fun`, Swift `async throws`): it runs on the worker pool
//! (`worker.rs`), never on the caller's thread. Integers cross as `Int`/`Long` (Kotlin) and are
//! range-checked here: a value out of range is `IntegerOutOfRange` (309).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use proteus_client::{ClientError, SqliteOptions, StoreKey};

use crate::bytes::SecretBytes;
use crate::error::ProteusError;
use crate::gate::Gate;
use crate::rollback::{AppCounter, CommitCounter};
use crate::worker::{self, Cancel};

/// How `Client.open` treats the path.
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

/// Options of `Client.open` and `Client.inMemory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, uniffi::Record)]
pub struct ClientOptions {
    /// How long a call waits while another client on the same store (another process, such as
    /// an app's notification extension, or another client of this one) is in a call, before it
    /// fails with `StoreBusy` (502). SQLite stores only. 0 to 2^31-1.
    #[uniffi(default = 5000)]
    pub busy_timeout_ms: i64,
    /// How long a call waits for another call of the same client before it fails with
    /// `ClientBusy` (120). 0 to 2^31-1.
    #[uniffi(default = 30000)]
    pub wait_timeout_ms: i64,
    /// How many threads a batch (`decryptBatch`, `encryptFor`) uses: its independent work
    /// (different sessions, the opening of messages whose chain is stepped, the recipients of
    /// a fan-out) runs on a pool of that many, with the same results, delivery order and single
    /// commit as one thread. 1 to 256; null is the default, the processor's parallelism up to 4;
    /// 1 runs a batch on the call's own thread.
    #[uniffi(default = None)]
    pub batch_threads: Option<i32>,
    /// Identity pinning: the first identity seen for a session id is pinned, and a
    /// PreKeyMessage or a bundle of another one is refused with `RemoteIdentityChanged` (204)
    /// until `acceptIdentity`. Not stored: give it every time the store is opened, in every
    /// process that opens it.
    #[uniffi(default = false)]
    pub identity_pinning: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            busy_timeout_ms: 5000,
            wait_timeout_ms: 30_000,
            batch_threads: None,
            identity_pinning: false,
        }
    }
}

/// A duration in milliseconds from a `Long`: 0 to `i32::MAX`.
fn millis(what: &str, ms: i64) -> Result<Duration, ProteusError> {
    match u64::try_from(ms) {
        Ok(v) if ms <= i64::from(i32::MAX) => Ok(Duration::from_millis(v)),
        _ => Err(ProteusError::out_of_range(what, ms)),
    }
}

/// The batch threads of `ClientOptions`: `1..=256`, or by default the processor's parallelism
/// up to [`DEFAULT_MAX_THREADS`]. A client gets a pool of that many (asleep between batches);
/// 1 runs a batch on the call's own worker thread.
fn batch_threads(value: Option<i32>) -> Result<usize, ProteusError> {
    match value {
        None => Ok(
            std::thread::available_parallelism().map_or(1, |n| n.get().min(DEFAULT_MAX_THREADS))
        ),
        Some(0) => Err(ProteusError::out_of_range("batchThreads", 0)),
        Some(n) => count("batchThreads", n, 256),
    }
}

/// The most batch threads a client gets by default: a phone's big cores.
const DEFAULT_MAX_THREADS: usize = 4;

/// A count or a size from an `Int`: `0..=max`.
pub(crate) fn count(what: &str, value: i32, max: usize) -> Result<usize, ProteusError> {
    match usize::try_from(value) {
        Ok(v) if v <= max => Ok(v),
        _ => Err(ProteusError::out_of_range(what, i64::from(value))),
    }
}

/// The 32 bytes of a store key.
pub(crate) fn store_key(bytes: &[u8]) -> Result<StoreKey, ProteusError> {
    let key: [u8; 32] = bytes.try_into().map_err(|_| {
        ProteusError::registered(
            proteus_core::ErrorCode::InvalidLength,
            format!("a store key is 32 bytes, not {}", bytes.len()),
        )
    })?;
    Ok(StoreKey::new(key))
}

/// A Proteus client: an identity, its prekeys and its sessions, kept in a SQLite store
/// (optionally sealed with a key) or in memory.
///
/// Safe to share between threads and coroutines/tasks: calls run one at a time, and a call
/// waits for the one in progress (see `ClientOptions.waitTimeoutMs`). Every call that changes
/// state has committed it when it returns; a failed or cancelled call changes nothing. Close it
/// to close the store (Kotlin `close()`/`use {}`, Swift `close()`).
#[derive(Debug, uniffi::Object)]
pub struct Client {
    /// `None` once closed.
    inner: Arc<Gate<Option<proteus_client::Client>>>,
}

impl Client {
    fn wrap(client: proteus_client::Client, wait_timeout: Duration) -> Arc<Self> {
        Arc::new(Self {
            inner: Arc::new(Gate::new(Some(client), wait_timeout)),
        })
    }

    /// Runs `f` on the client, on the worker pool; see [`Self::run_cancellable`].
    pub(crate) fn run<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut proteus_client::Client) -> Result<R, ClientError> + Send + 'static,
    ) -> impl Future<Output = Result<R, ProteusError>> {
        self.run_cancellable(move |client, _| f(client).map_err(ProteusError::from))
    }

    /// Runs `f` on the client, on the worker pool. A call from inside one of this client's own
    /// callbacks fails at once with `ClientBusy` (it would wait for itself).
    pub(crate) fn run_cancellable<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut proteus_client::Client, &Cancel) -> Result<R, ProteusError> + Send + 'static,
    ) -> impl Future<Output = Result<R, ProteusError>> {
        let gate = Arc::clone(&self.inner);
        // Checked on the caller's thread: the thread of a callback in progress holds the gate.
        let reentrant = gate.is_held_here();
        async move {
            if reentrant {
                return Err(ProteusError::busy(
                    "the client was called from inside one of its own callbacks",
                ));
            }
            worker::spawn(move |cancel| {
                gate.with(|slot| match slot {
                    // Cancelled while it waited for the call in progress: it never starts.
                    _ if cancel.is_cancelled() => Err(ProteusError::cancelled()),
                    Some(client) => f(client, cancel),
                    None => Err(ProteusError::closed()),
                })
            })
            .await
        }
    }
}

/// Opening, closing, and the stores.
#[uniffi::export]
impl Client {
    /// Opens the SQLite store at `path`. With `store_key` (32 bytes, e.g. from the Android
    /// Keystore or the iOS Keychain: see the README) every record is sealed; a new store is
    /// created sealed. A sealed store opened without its key fails with `StoreKeyRequired`
    /// (510), with another key `WrongStoreKey` (508), an unsealed one given a key
    /// `StoreNotSealed` (509); none of them changes anything. `mode` null is `ExistingOrNew`.
    /// With `commit_counter` (the app's count of the store's commits, kept outside it: see
    /// `CommitCounter`) a store restored from an older copy is refused with `StoreRolledBack`
    /// (511), when it opens and at every later call.
    #[uniffi::constructor(default(store_key = None, mode = None, commit_counter = None, options))]
    pub async fn open(
        path: String,
        store_key: Option<SecretBytes>,
        mode: Option<OpenMode>,
        options: ClientOptions,
        commit_counter: Option<Box<dyn CommitCounter>>,
    ) -> Result<Arc<Self>, ProteusError> {
        let sqlite = SqliteOptions {
            busy_timeout: millis("busyTimeoutMs", options.busy_timeout_ms)?,
        };
        let wait = millis("waitTimeoutMs", options.wait_timeout_ms)?;
        let mode = mode.unwrap_or(OpenMode::ExistingOrNew).into();
        let key = store_key.as_deref().map(self::store_key).transpose()?;
        let threads = batch_threads(options.batch_threads)?;
        let pinning = options.identity_pinning;
        let client = worker::spawn(move |_| {
            let counter = commit_counter
                .map(|c| Box::new(AppCounter(c)) as Box<dyn proteus_client::CommitCounter>);
            let mut client =
                proteus_client::Client::open_guarded(path, mode, &sqlite, key.as_ref(), counter)?;
            client.set_batch_threads(threads);
            client.set_identity_pinning(pinning);
            Ok(client)
        })
        .await?;
        Ok(Self::wrap(client, wait))
    }

    /// A client whose state lives in memory only (tests, throwaway identities).
    #[uniffi::constructor(default(options))]
    pub async fn in_memory(options: ClientOptions) -> Result<Arc<Self>, ProteusError> {
        let wait = millis("waitTimeoutMs", options.wait_timeout_ms)?;
        let threads = batch_threads(options.batch_threads)?;
        let pinning = options.identity_pinning;
        let client = worker::spawn(move |_| {
            let mut client = proteus_client::Client::in_memory()?;
            client.set_batch_threads(threads);
            client.set_identity_pinning(pinning);
            Ok(client)
        })
        .await?;
        Ok(Self::wrap(client, wait))
    }

    /// Waits for the call in progress, then closes the store and wipes the keys in memory.
    /// Later calls fail with `ClientClosed` (122); closing again does nothing. (Kotlin's
    /// `close()` is `AutoCloseable`'s: it releases the client once the calls in progress end.)
    pub async fn close(&self) -> Result<(), ProteusError> {
        let gate = Arc::clone(&self.inner);
        worker::spawn(move |_| {
            gate.with(|slot| {
                drop(slot.take());
                Ok(())
            })
        })
        .await
    }
}

/// `Client.sealStore`: encrypts an existing unsealed SQLite store in place with `key` (32
/// bytes), in one transaction; no plaintext record remains in the file. Clients on it must be
/// closed. Called as `Client.sealStore` (Kotlin companion, Swift static).
#[uniffi::export]
pub async fn client_seal_store(path: String, key: SecretBytes) -> Result<(), ProteusError> {
    let key = store_key(&key)?;
    worker::spawn(move |_| Ok(proteus_client::seal_store(path, &key).map_err(ClientError::from)?))
        .await
}

/// `Client.rekeyStore`: re-encrypts a sealed store from `old_key` to `new_key` in one
/// transaction (key rotation). A wrong `old_key` gives `WrongStoreKey` (508) and changes
/// nothing.
#[uniffi::export]
pub async fn client_rekey_store(
    path: String,
    old_key: SecretBytes,
    new_key: SecretBytes,
) -> Result<(), ProteusError> {
    let (old, new) = (store_key(&old_key)?, store_key(&new_key)?);
    worker::spawn(move |_| {
        Ok(proteus_client::rekey_store(path, &old, &new).map_err(ClientError::from)?)
    })
    .await
}

/// `Client.deleteStore`: deletes the store at `path` with its SQLite side files (`-wal`,
/// `-shm`). Nothing happens if there is none; a file that is not a Proteus store is refused
/// (`StoreCorrupt`, 503) and left alone. Clients on it must be closed.
#[uniffi::export]
pub async fn client_delete_store(path: String) -> Result<(), ProteusError> {
    worker::spawn(move |_| Ok(proteus_client::delete_store(path).map_err(ClientError::from)?)).await
}

/// Identity, prekeys, sessions, import and export.
#[uniffi::export]
impl Client {
    /// Makes sure that what earlier calls deleted (a consumed prekey, used message keys, old
    /// session states) is gone from the disk now, and says whether it is: `false` while another
    /// connection still reads an older snapshot of the store (a backup agent, another process);
    /// the store keeps trying after later calls, and this call can be made again. Call it
    /// before the app is suspended. A store in memory answers `true`.
    pub async fn erase_deleted(&self) -> Result<bool, ProteusError> {
        self.run(|c| c.erase_deleted()).await
    }
}
