//! The host's store of a client whose records live in memory only (the web package's
//! `Client.inMemory`): what the client's commits stored, at the commit counter they moved it to.
//! A journal goes back to it when a commit of its own was not stored (a batch's callback
//! failed), as a client on IndexedDB reloads from its database; and, as there, storing a commit
//! is a compare-and-swap on the counter.

use zeroize::Zeroizing;

use super::codec::{decode_writes, encode_writes};
use super::records::Records;
use crate::error::StoreError;

/// A store in memory for a [`Journal`](super::Journal)'s host (see the module docs). Its
/// records are wiped when it is dropped.
#[derive(Default)]
pub struct HostMemoryStore {
    records: Records,
    counter: u64,
}

impl HostMemoryStore {
    /// An empty store, at commit 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// The commit counter: how many commits were stored.
    pub fn counter(&self) -> u64 {
        self.counter
    }

    /// Every record, as the [`encode_writes`] buffer of puts a client opens on.
    pub fn load(&self) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        encode_writes(&self.records.puts())
    }

    /// Stores a commit's writes (an [`encode_writes`] buffer) and moves the counter to `next`,
    /// if the store is at `expected`. Otherwise nothing changes and the answer is the counter
    /// the store is at (the host's conflict: another client committed first). A buffer that
    /// does not decode changes nothing either.
    pub fn persist(
        &mut self,
        writes: &[u8],
        expected: u64,
        next: u64,
    ) -> Result<Option<u64>, StoreError> {
        if expected != self.counter {
            return Ok(Some(self.counter));
        }
        self.records.apply(&decode_writes(writes)?);
        self.counter = next;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{Table, Write};

    fn put(key: &[u8], value: &[u8]) -> Write {
        Write::Put {
            table: Table::Sessions,
            key: key.to_vec(),
            value: Zeroizing::new(value.to_vec()),
        }
    }

    fn buffer(writes: &[Write]) -> Zeroizing<Vec<u8>> {
        encode_writes(writes).unwrap()
    }

    #[test]
    fn a_commit_is_stored_only_at_the_counter_it_expects() {
        let mut store = HostMemoryStore::new();
        assert_eq!(
            store.persist(&buffer(&[put(b"a", b"1")]), 0, 1).unwrap(),
            None
        );
        assert_eq!(store.counter(), 1);
        // Another client committed first: nothing changes.
        assert_eq!(
            store.persist(&buffer(&[put(b"b", b"2")]), 0, 1).unwrap(),
            Some(1)
        );
        assert_eq!(store.counter(), 1);
        assert_eq!(
            decode_writes(&store.load().unwrap()).unwrap(),
            vec![put(b"a", b"1")]
        );
    }

    #[test]
    fn puts_replace_deletes_remove_and_the_load_is_in_key_order() {
        let mut store = HostMemoryStore::new();
        let first = [put(b"b", b"1"), put(b"a", b"1"), put(b"c", b"1")];
        store.persist(&buffer(&first), 0, 1).unwrap();
        let delete = Write::Delete {
            table: Table::Sessions,
            key: b"c".to_vec(),
        };
        store
            .persist(&buffer(&[put(b"a", b"2"), delete]), 1, 2)
            .unwrap();
        assert_eq!(
            decode_writes(&store.load().unwrap()).unwrap(),
            vec![put(b"a", b"2"), put(b"b", b"1")]
        );
    }

    #[test]
    fn writes_that_do_not_decode_change_nothing() {
        let mut store = HostMemoryStore::new();
        store.persist(&buffer(&[put(b"a", b"1")]), 0, 1).unwrap();
        let mut broken = buffer(&[put(b"b", b"2")]).to_vec();
        broken.truncate(broken.len() - 1);
        assert!(store.persist(&broken, 1, 2).is_err());
        assert_eq!(store.counter(), 1);
        assert_eq!(
            decode_writes(&store.load().unwrap()).unwrap(),
            vec![put(b"a", b"1")]
        );
    }
}
