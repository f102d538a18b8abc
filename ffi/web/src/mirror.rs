//! The storage the wasm client runs on: an in-memory mirror of the JS side's store that also
//! collects the writes of every commit, so the JS side can persist them (one IndexedDB
//! transaction per commit) before the operation's Promise resolves.
//!
//! The client's [`Storage`] is synchronous and IndexedDB is not. So the JS side loads every
//! record into the mirror when the client opens; each commit applies to the mirror at once and
//! queues its writes; after each call the JS side takes them ([`Mirror::take_writes`]) and writes
//! them durably. If that fails the JS side throws this mirror away and loads a new one.

use std::sync::{Arc, Mutex, MutexGuard};

use proteus_client::{MemoryStorage, Record, Storage, StoreError, Table, Write};
use zeroize::Zeroizing;

/// The records and the writes not yet taken by the JS side.
#[derive(Debug, Default)]
struct Inner {
    records: MemoryStorage,
    pending: Vec<Write>,
}

/// A handle on the mirror; the client holds one clone as its storage, the adapter another.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mirror(Arc<Mutex<Inner>>);

impl Mirror {
    fn lock(&self) -> Result<MutexGuard<'_, Inner>, StoreError> {
        self.0
            .lock()
            .map_err(|_| StoreError::Backend("the record mirror is poisoned".into()))
    }

    /// A mirror holding `records` (as the JS side read them), with no pending writes.
    pub(crate) fn loaded(records: &[Write]) -> Result<Self, StoreError> {
        let mirror = Self::default();
        mirror.lock()?.records.commit(records)?;
        Ok(mirror)
    }

    /// The writes committed since the last call, in commit order.
    pub(crate) fn take_writes(&self) -> Result<Vec<Write>, StoreError> {
        Ok(std::mem::take(&mut self.lock()?.pending))
    }
}

impl Storage for Mirror {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        self.lock()?.records.get(table, key)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        self.lock()?.records.scan(table, prefix)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        let mut inner = self.lock()?;
        inner.records.commit(writes)?;
        inner.pending.extend_from_slice(writes);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(key: &[u8], value: &[u8]) -> Write {
        Write::Put {
            table: Table::Sessions,
            key: key.to_vec(),
            value: Zeroizing::new(value.to_vec()),
        }
    }

    #[test]
    fn loading_queues_nothing_and_commits_queue_their_writes() {
        let mirror = Mirror::loaded(&[put(b"a", b"1")]).unwrap();
        assert!(mirror.take_writes().unwrap().is_empty());
        let mut storage = mirror.clone();
        storage.commit(&[put(b"b", b"2")]).unwrap();
        let delete = Write::Delete {
            table: Table::Sessions,
            key: b"a".to_vec(),
        };
        storage.commit(std::slice::from_ref(&delete)).unwrap();
        assert_eq!(mirror.take_writes().unwrap(), vec![put(b"b", b"2"), delete]);
        assert!(mirror.take_writes().unwrap().is_empty());
        assert_eq!(storage.get(Table::Sessions, b"a").unwrap(), None);
        assert_eq!(storage.scan(Table::Sessions, b"").unwrap().len(), 1);
    }
}
