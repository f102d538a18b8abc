//! Where the client keeps its records: a small key-value interface with atomic commits.
//!
//! Everything the client stores goes through [`Storage`]: four tables of opaque records, point
//! reads, prefix scans and one atomic commit per protocol step. That is small enough to put over
//! SQLite ([`SqliteStorage`](crate::SqliteStorage)), memory ([`MemoryStorage`]) or a browser's
//! IndexedDB (one IndexedDB transaction per commit, through a [`Journal`]).

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

/// A store of records with atomic commits.
///
/// Implementations must make [`commit`](Storage::commit) atomic and durable: after it returns
/// `Ok` every write is stored and survives a crash; after it returns `Err` (or a crash during
/// it) none is.
pub trait Storage: Send {
    /// The record under `key`, if any.
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError>;

    /// Every record whose key starts with `prefix`, in ascending key order.
    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError>;

    /// Applies all `writes`, in order, atomically.
    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError>;
}
