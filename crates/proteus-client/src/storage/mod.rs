//! Where the client keeps its records: a small key-value interface with atomic commits.
//!
//! Everything the client stores goes through [`Storage`]: four tables of opaque records, point
//! reads, prefix scans and one atomic commit per protocol step. That is small enough to put over
//! SQLite ([`SqliteStorage`](crate::SqliteStorage)), memory ([`MemoryStorage`]) or a browser's
//! IndexedDB (one IndexedDB transaction per commit, through a [`Journal`]).
//!
//! # The commit protocol
//!
//! A store may be shared: by an app and its notification extension (two processes on one
//! SQLite file), by two tabs (one IndexedDB database). The client caches what it read (sessions,
//! the identity), so every operation runs as:
//!
//! 1. [`begin`](Storage::begin): take the backend's exclusion (SQLite: a write transaction,
//!    waiting up to the busy timeout; IndexedDB: a Web Lock) and learn whether anyone else
//!    committed since this handle last began ([`Freshness::Stale`]); if so the client drops what
//!    it cached;
//! 2. read, decrypt or encrypt;
//! 3. [`commit`](Storage::commit) the writes, which ends the operation, or
//!    [`end`](Storage::end) it without writing.
//!
//! So two handles never interleave inside an operation and never act on each other's old
//! state. The exclusion is held only while a call runs: never while the application is idle or
//! suspended (on iOS, a process suspended while it holds a lock on a file in a shared container
//! is killed with `0xdead10cc`).

pub(crate) mod journal;
mod memory;
pub(crate) mod rollback;
#[cfg(feature = "sealed")]
pub(crate) mod sealed;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;

pub use journal::Journal;
pub use memory::MemoryStorage;
use zeroize::Zeroizing;

use crate::error::StoreError;

/// The tables of a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// Client metadata: the identity key pair, the prekey id counter.
    Meta,
    /// Prekeys by id (2 bytes, big-endian).
    PreKeys,
    /// Session records without their staged keys, by session id.
    Sessions,
    /// Staged message keys, by session id (length-prefixed) and staged-key id.
    StagedKeys,
}

impl Table {
    /// Every table.
    pub const ALL: [Table; 4] = [
        Table::Meta,
        Table::PreKeys,
        Table::Sessions,
        Table::StagedKeys,
    ];

    /// The table's name in a storage backend.
    pub fn name(self) -> &'static str {
        match self {
            Self::Meta => "meta",
            Self::PreKeys => "prekeys",
            Self::Sessions => "sessions",
            Self::StagedKeys => "staged_keys",
        }
    }
}

/// One change of a commit. Values hold secret keys and are wiped when dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// Insert or replace a record.
    Put {
        /// The table.
        table: Table,
        /// The record's key.
        key: Vec<u8>,
        /// The record.
        value: Zeroizing<Vec<u8>>,
    },
    /// Delete a record (if it exists).
    Delete {
        /// The table.
        table: Table,
        /// The record's key.
        key: Vec<u8>,
    },
}

/// A record read back: (key, value).
pub type Record = (Vec<u8>, Zeroizing<Vec<u8>>);

/// What [`Storage::begin`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub enum Freshness {
    /// Nobody else committed since this handle last began an operation (or was opened): what
    /// the caller cached from the store is current.
    Fresh,
    /// Another handle (another process, tab or connection) committed since: anything cached
    /// from the store may be out of date and must be read again.
    Stale,
}

/// A store of records with atomic commits.
///
/// Implementations must make [`commit`](Storage::commit) atomic and durable: after it returns
/// `Ok` every write is stored and survives a crash; after it returns `Err` (or a crash during
/// it) none is.
///
/// A store that other handles may write (another process, tab or connection) implements
/// [`begin`](Storage::begin) and [`end`](Storage::end) (see
/// [Sharing a store](crate#sharing-a-store-an-app-and-its-extension)): between `begin` and the
/// `commit` or `end` that follows, no other handle commits. The defaults suit a
/// store with a single user (nothing to exclude, never stale). A `commit` without `begin` is a
/// whole operation of its own (it begins and commits).
pub trait Storage: Send {
    /// The record under `key`, if any.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError>;

    /// Every record whose key starts with `prefix`, in ascending key order.
    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError>;

    /// Applies all `writes`, in order, atomically, and ends the operation begun by
    /// [`begin`](Storage::begin), if any, whether it succeeds or fails.
    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError>;

    /// Begins an operation: takes the store's exclusion from other handles (waiting for it,
    /// within the backend's limit, then [`StoreError::Busy`]) and reports whether another handle
    /// committed since this one last began. Until [`commit`](Storage::commit) or
    /// [`end`](Storage::end), reads see the latest state and no other handle commits. Call it
    /// only while no operation is open.
    fn begin(&mut self) -> Result<Freshness, StoreError> {
        Ok(Freshness::Fresh)
    }

    /// Ends the operation without writing, releasing the exclusion. Does nothing if no
    /// operation is open (e.g. a `commit` already ended it).
    fn end(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Makes sure that what commits deleted or replaced is gone from the disk, now: `Ok(true)`
    /// once it is, `Ok(false)` if it cannot be yet (SQLite: another connection still reads an
    /// older snapshot after waiting the busy timeout; the store retries after later
    /// operations). Call it only while no operation is open. The default suits stores that
    /// keep nothing deleted (memory).
    fn erase_deleted(&mut self) -> Result<bool, StoreError> {
        Ok(true)
    }
}
