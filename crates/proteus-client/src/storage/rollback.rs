//! Refusing a store that was restored from an old copy.
//!
//! A copy of the store taken earlier (a device backup restored, a file copied back) holds the
//! ratchet as it was then: using it sends new messages with message keys already used, and the
//! engine cannot notice from the store alone. [`RollbackGuard`] counts the store's commits in
//! the store itself and in a place the application keeps outside it ([`CommitCounter`]: the
//! platform keychain, say, which a restored file does not roll back). A store whose count is
//! behind the application's is refused with [`StoreError::RolledBack`] (511), and never wiped.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//! use proteus_client::{Client, CommitCounter, CounterError, MemoryStorage, RollbackGuard};
//!
//! /// Stands for the keychain.
//! struct Keychain(Arc<Mutex<u64>>);
//! impl CommitCounter for Keychain {
//!     fn load(&mut self) -> Result<u64, CounterError> {
//!         Ok(*self.0.lock().map_err(|e| e.to_string())?)
//!     }
//!     fn store(&mut self, count: u64) -> Result<(), CounterError> {
//!         *self.0.lock().map_err(|e| e.to_string())? = count;
//!         Ok(())
//!     }
//! }
//!
//! let keychain = Arc::new(Mutex::new(0));
//! let storage = RollbackGuard::open(MemoryStorage::new(), Box::new(Keychain(keychain.clone())))?;
//! let mut client = Client::with_storage(Box::new(storage))?;
//! client.generate_prekeys(1)?;
//! assert_eq!(*keychain.lock().unwrap(), 2); // the new identity, then the prekeys
//! # Ok::<(), proteus_client::ClientError>(())
//! ```

use zeroize::Zeroizing;

use super::{Freshness, Record, Storage, Table, Write};
use crate::error::StoreError;
use crate::records::META_COMMIT_COUNTER;

/// What a [`CommitCounter`] reports when it cannot load or store the count.
pub type CounterError = Box<dyn std::error::Error + Send + Sync>;

/// Where the application keeps the store's commit count, outside the store (the keychain, the
/// Android Keystore-backed preferences, a server): somewhere a restored copy of the store does
/// not roll back.
pub trait CommitCounter: Send {
    /// The count stored last; 0 if none was ever stored.
    fn load(&mut self) -> Result<u64, CounterError>;

    /// Stores `count`, called after every durable commit of the store. A failure does not fail
    /// the commit (it is on disk already); the next commit stores its count again. Until one
    /// succeeds, a restored copy made since the last stored count is not detected.
    fn store(&mut self, count: u64) -> Result<(), CounterError>;
}

/// A [`Storage`] that refuses to open a store restored from an older copy (see the module
/// docs). Every commit also writes the store's commit count, in the same transaction, then
/// hands it to the [`CommitCounter`]. A crash between the two leaves the store ahead of the
/// application's count, which is fine; only a store behind it is refused.
///
/// Put it outside a [`SealedStorage`](crate::SealedStorage), so that the count is sealed too
/// and cannot be raised by whoever holds the file without the key.
///
/// A store shared by several handles (an app and its extension) keeps one count: the count is
/// read again whenever another handle committed (see [`Storage::begin`]), and both handles may
/// share one [`CommitCounter`] location.
pub struct RollbackGuard<S: Storage> {
    inner: S,
    counter: Box<dyn CommitCounter>,
    count: u64,
    /// Whether an operation is open (begun and not yet committed or ended).
    in_operation: bool,
}

fn counter_error(e: &CounterError) -> StoreError {
    StoreError::Backend(format!("commit counter: {e}"))
}

impl<S: Storage> RollbackGuard<S> {
    /// Opens `inner` if its commit count is at least the application's.
    ///
    /// A store without records is new and continues from the application's count (the app was
    /// reinstalled while the keychain kept the count: nothing can be rolled back there). A store
    /// with records but no count was made without a guard; it is accepted only while the
    /// application's count is 0. Refused with [`StoreError::RolledBack`]; nothing is changed.
    pub fn open(inner: S, mut counter: Box<dyn CommitCounter>) -> Result<Self, StoreError> {
        let expected = counter.load().map_err(|e| counter_error(&e))?;
        let count = match stored_count(&inner)? {
            Some(count) => count,
            None if is_empty(&inner)? => expected,
            None => 0,
        };
        if count < expected {
            log_refused(count, expected);
            return Err(StoreError::RolledBack {
                store: count,
                expected,
            });
        }
        Ok(Self {
            inner,
            counter,
            count,
            in_operation: false,
        })
    }

    /// The store's commit count.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The storage underneath.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

/// The count stored in `storage`, if any.
fn stored_count(storage: &dyn Storage) -> Result<Option<u64>, StoreError> {
    let Some(bytes) = storage.get(Table::Meta, META_COMMIT_COUNTER)? else {
        return Ok(None);
    };
    let bytes: [u8; 8] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| StoreError::Corrupt("the commit counter is not 8 bytes".into()))?;
    Ok(Some(u64::from_be_bytes(bytes)))
}

fn is_empty(storage: &dyn Storage) -> Result<bool, StoreError> {
    for table in Table::ALL {
        if !storage.scan(table, &[])?.is_empty() {
            return Ok(false);
        }
    }
    Ok(true)
}

impl<S: Storage> Storage for RollbackGuard<S> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        self.inner.get(table, key)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        let mut records = self.inner.scan(table, prefix)?;
        if table == Table::Meta {
            records.retain(|(k, _)| k != META_COMMIT_COUNTER);
        }
        Ok(records)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        // A commit on its own is an operation of its own: the count must be current.
        if !self.in_operation {
            let _ = self.begin()?;
        }
        self.in_operation = false;
        let next = match self.count.checked_add(1) {
            Some(next) => next,
            None => {
                let _ = self.inner.end();
                return Err(StoreError::Corrupt(
                    "the commit counter is exhausted".into(),
                ));
            }
        };
        let mut all = Vec::with_capacity(writes.len() + 1);
        all.extend_from_slice(writes);
        all.push(Write::Put {
            table: Table::Meta,
            key: META_COMMIT_COUNTER.to_vec(),
            value: Zeroizing::new(next.to_be_bytes().to_vec()),
        });
        self.inner.commit(&all)?;
        self.count = next;
        // The commit is durable: a failure here must not report it as failed (see the trait).
        let _ = self.counter.store(next);
        Ok(())
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        let freshness = self.inner.begin()?;
        // Every operation reads the store's count, not only when the backend reports another
        // handle's commit: a store replaced under a running client (a file copied over it) is
        // refused as soon as it is used, not only at the next open.
        let count = stored_count(&self.inner).and_then(|stored| match stored {
            // Another handle committed: continue from its count.
            Some(count) if count >= self.count => Ok(count),
            // No count: a new store (it continues from the application's count), or one made
            // without a guard (only while none was kept).
            None if self.count == 0 || is_empty(&self.inner)? => Ok(self.count),
            stored => {
                log_refused(stored.unwrap_or(0), self.count);
                Err(StoreError::RolledBack {
                    store: stored.unwrap_or(0),
                    expected: self.count,
                })
            }
        });
        match count {
            Ok(count) => {
                self.count = count;
                self.in_operation = true;
                Ok(freshness)
            }
            Err(e) => {
                self.in_operation = false;
                let _ = self.inner.end();
                Err(e)
            }
        }
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.in_operation = false;
        self.inner.end()
    }

    fn erase_deleted(&mut self) -> Result<bool, StoreError> {
        self.inner.erase_deleted()
    }
}

fn log_refused(store: u64, expected: u64) {
    log::error!(
        target: crate::LOG_TARGET,
        "store refused: it was rolled back (its commit count is {store}, the application's \
         {expected})"
    );
}
