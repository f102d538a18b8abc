use std::collections::BTreeMap;

use zeroize::Zeroizing;

use super::{Record, Storage, Table, Write};
use crate::error::StoreError;

/// A store in memory, for tests and short-lived clients. Nothing survives the process.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    records: BTreeMap<(Table, Vec<u8>), Zeroizing<Vec<u8>>>,
}

impl MemoryStorage {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Storage for MemoryStorage {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        Ok(self.records.get(&(table, key.to_vec())).cloned())
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        Ok(self
            .records
            .range((table, prefix.to_vec())..)
            .take_while(|((t, k), _)| *t == table && k.starts_with(prefix))
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect())
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        for write in writes {
            match write {
                Write::Put { table, key, value } => {
                    self.records.insert((*table, key.clone()), value.clone());
                }
                Write::Delete { table, key } => {
                    self.records.remove(&(*table, key.clone()));
                }
            }
        }
        Ok(())
    }
}
