//! The stores a scenario runs on, and fresh clients in the same starting state for every run.
//!
//! SQLite clients come from a template: the seed is installed once into a store file, and each
//! run copies that file into a new temporary directory and opens the copy. So every run starts
//! from byte-identical state, with a cold session cache, as an app that was just started.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use std::sync::{Arc, Mutex, PoisonError};

use proteus_client::{
    Client, MemoryStorage, OpenMode, Record, SqliteOptions, SqliteStorage, Storage, StoreError,
    StoreKey, Table, Write,
};
use tempfile::TempDir;

use crate::BoxError;
use crate::scenarios::ClientSeed;

/// The stores, and how the receiver commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StoreKind {
    /// `memory`: `Client::in_memory()`, the queue decrypted with `decrypt_batch`.
    Memory,
    /// `sqlite-batch`: a durable SQLite store, the queue decrypted with `decrypt_batch` (one
    /// commit per batch).
    SqliteBatch,
    /// `sqlite-per-message`: a durable SQLite store, each message decrypted with
    /// `Client::decrypt` (one commit per message, as apps that persist after every decrypt do).
    SqlitePerMessage,
    /// `sqlite-encrypted`: as `sqlite-batch`, with every record sealed by a store key
    /// (encryption at rest).
    SqliteEncrypted,
}

impl StoreKind {
    /// Every store, in reporting order.
    pub const ALL: [Self; 4] = [
        Self::Memory,
        Self::SqliteBatch,
        Self::SqlitePerMessage,
        Self::SqliteEncrypted,
    ];

    /// The store's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Memory => "memory",
            Self::SqliteBatch => "sqlite-batch",
            Self::SqlitePerMessage => "sqlite-per-message",
            Self::SqliteEncrypted => "sqlite-encrypted",
        }
    }

    /// The store with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// Whether the receiver uses `decrypt_batch` (rather than one `decrypt` per message).
    pub fn batched(self) -> bool {
        !matches!(self, Self::SqlitePerMessage)
    }

    /// Whether the store is a SQLite file.
    pub fn is_sqlite(self) -> bool {
        !matches!(self, Self::Memory)
    }
}

impl fmt::Display for StoreKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name of the store file in its directory.
const STORE_FILE: &str = "store.db";

/// The store key of the `sqlite-encrypted` runs.
const BENCH_STORE_KEY: [u8; 32] = [0x42; 32];

/// Opens a SQLite store, sealed with the bench key if `sealed`.
fn open_store(path: PathBuf, mode: OpenMode, sealed: bool) -> Result<Client, BoxError> {
    let options = SqliteOptions::default();
    Ok(if sealed {
        Client::open_sealed(path, mode, &options, &StoreKey::new(BENCH_STORE_KEY))?
    } else {
        Client::open_with(path, mode, &options)?
    })
}

/// A SQLite store file holding a seed's state, to be copied for each run.
pub struct Template {
    dir: TempDir,
    sealed: bool,
}

impl Template {
    /// Creates a store in a new temporary directory and installs `seed` into it.
    pub fn create(seed: &ClientSeed) -> Result<Self, BoxError> {
        Self::create_as(seed, false)
    }

    /// As [`create`](Self::create), the records sealed with the bench key if `sealed`.
    pub fn create_as(seed: &ClientSeed, sealed: bool) -> Result<Self, BoxError> {
        let dir = tempfile::Builder::new()
            .prefix("proteus-bench-template-")
            .tempdir()?;
        // The seed goes into memory first and then into the file in one transaction: installing
        // it straight into SQLite would cost one durable commit per record (seconds for the
        // thousands of sessions of fan-out).
        let memory = SharedMemory::default();
        seed.install(&mut Client::with_storage(Box::new(memory.clone()))?)?;
        let path = dir.path().join(STORE_FILE);
        let mut file = SqliteStorage::open(&path, OpenMode::New, &SqliteOptions::default())?;
        file.commit(&memory.records()?)?;
        // Closing the store checkpoints its write-ahead log into the file.
        drop(file);
        if sealed {
            proteus_client::seal_store(&path, &StoreKey::new(BENCH_STORE_KEY))?;
        }
        Ok(Self { dir, sealed })
    }

    /// The template's store file.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join(STORE_FILE)
    }

    /// A fresh copy in a new temporary directory, opened.
    pub fn fresh(&self) -> Result<FreshClient, BoxError> {
        fresh_copy_as(&self.path(), self.sealed)
    }
}

/// Copies the store file `template` (with its write-ahead log, if one was left) into a new
/// temporary directory and opens the copy.
pub fn fresh_copy(template: &Path) -> Result<FreshClient, BoxError> {
    fresh_copy_as(template, false)
}

fn fresh_copy_as(template: &Path, sealed: bool) -> Result<FreshClient, BoxError> {
    let dir = tempfile::Builder::new()
        .prefix("proteus-bench-run-")
        .tempdir()?;
    let from = template.parent().ok_or("the template has no directory")?;
    let name = template
        .file_name()
        .ok_or("the template has no file name")?
        .to_string_lossy()
        .into_owned();
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        if entry.file_name().to_string_lossy().starts_with(&name) {
            fs::copy(entry.path(), dir.path().join(entry.file_name()))?;
        }
    }
    let client = open_store(dir.path().join(&name), OpenMode::Existing, sealed)?;
    Ok(FreshClient {
        client,
        _dir: Some(dir),
    })
}

/// A client for one run, in the seed's state; its store directory (if any) lives as long as it
/// and is deleted after it is closed.
pub struct FreshClient {
    /// The client. Declared first, so it is dropped (and the store closed) before the directory.
    pub client: Client,
    _dir: Option<TempDir>,
}

/// Where fresh clients with one seed's state come from, for every store.
pub struct ClientSource {
    seed: ClientSeed,
    template: Option<Template>,
    sealed_template: Option<Template>,
}

impl ClientSource {
    /// A source of clients holding `seed`. The SQLite template is made only if `sqlite`.
    pub fn new(seed: ClientSeed, sqlite: bool) -> Result<Self, BoxError> {
        let (template, sealed_template) = if sqlite {
            (
                Some(Template::create(&seed)?),
                Some(Template::create_as(&seed, true)?),
            )
        } else {
            (None, None)
        };
        Ok(Self {
            seed,
            template,
            sealed_template,
        })
    }

    /// The seed.
    pub fn seed(&self) -> &ClientSeed {
        &self.seed
    }

    /// A fresh client on `store` in the seed's state.
    pub fn fresh(&self, store: StoreKind) -> Result<FreshClient, BoxError> {
        let mut fresh = self.fresh_default(store)?;
        if let Some(threads) = crate::threads_ab::threads() {
            fresh
                .client
                .set_executor(crate::threads_ab::executor(threads));
        }
        Ok(fresh)
    }

    fn fresh_default(&self, store: StoreKind) -> Result<FreshClient, BoxError> {
        let template = match store {
            StoreKind::Memory => {
                return Ok(FreshClient {
                    client: self.seed.in_memory()?,
                    _dir: None,
                });
            }
            StoreKind::SqliteEncrypted => &self.sealed_template,
            StoreKind::SqliteBatch | StoreKind::SqlitePerMessage => &self.template,
        };
        match template {
            Some(template) => template.fresh(),
            None => Err(format!("no SQLite template was made for {store}").into()),
        }
    }
}

/// A memory store that stays readable after the client on it is dropped.
#[derive(Clone, Default)]
struct SharedMemory(Arc<Mutex<MemoryStorage>>);

impl SharedMemory {
    fn with<T>(&self, f: impl FnOnce(&mut MemoryStorage) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Every record, as the writes that recreate them.
    fn records(&self) -> Result<Vec<Write>, StoreError> {
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (key, value) in self.scan(table, b"")? {
                writes.push(Write::Put { table, key, value });
            }
        }
        Ok(writes)
    }
}

impl Storage for SharedMemory {
    fn get(
        &self,
        table: Table,
        key: &[u8],
    ) -> Result<Option<zeroize::Zeroizing<Vec<u8>>>, StoreError> {
        self.with(|m| m.get(table, key))
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        self.with(|m| m.scan(table, prefix))
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        self.with(|m| m.commit(writes))
    }
}
