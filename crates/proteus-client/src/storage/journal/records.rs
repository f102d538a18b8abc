//! The journal's records: one vector sorted by (table, key), searched by bisection.
//!
//! A `BTreeMap` (as in [`MemoryStorage`](crate::MemoryStorage)) does the same with 5 KB more code
//! in the web build, whose size is budgeted. A client's store holds few enough records (sessions,
//! prekeys, staged keys) that moving the tail of the vector on an insert or a delete costs
//! little; records loaded in key order (as IndexedDB returns them) are appended.

use zeroize::Zeroizing;

use crate::storage::{Record, Table, Write};

#[derive(Default)]
pub(super) struct Records(Vec<(Table, Vec<u8>, Zeroizing<Vec<u8>>)>);

impl Records {
    /// Where (table, key) is, or would be inserted.
    fn find(&self, table: Table, key: &[u8]) -> Result<usize, usize> {
        self.0
            .binary_search_by(|(t, k, _)| (*t, k.as_slice()).cmp(&(table, key)))
    }

    pub(super) fn get(&self, table: Table, key: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
        let at = self.find(table, key).ok()?;
        self.0.get(at).map(|(_, _, value)| value.clone())
    }

    /// Every record of `table` whose key starts with `prefix`, in key order.
    pub(super) fn scan(&self, table: Table, prefix: &[u8]) -> Vec<Record> {
        let start = self.find(table, prefix).unwrap_or_else(|at| at);
        self.0
            .get(start..)
            .unwrap_or_default()
            .iter()
            .take_while(|(t, k, _)| *t == table && k.starts_with(prefix))
            .map(|(_, k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Every record, as puts in key order.
    pub(super) fn puts(&self) -> Vec<Write> {
        self.0
            .iter()
            .map(|(table, key, value)| Write::Put {
                table: *table,
                key: key.clone(),
                value: value.clone(),
            })
            .collect()
    }

    pub(super) fn apply(&mut self, writes: &[Write]) {
        for write in writes {
            match write {
                Write::Put { table, key, value } => match self.find(*table, key) {
                    Ok(at) => {
                        if let Some(record) = self.0.get_mut(at) {
                            record.2 = value.clone();
                        }
                    }
                    Err(at) => self.0.insert(at, (*table, key.clone(), value.clone())),
                },
                Write::Delete { table, key } => {
                    if let Ok(at) = self.find(*table, key) {
                        self.0.remove(at);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::{MemoryStorage, Storage};

    /// The records answer as a `MemoryStorage` does, over random puts and deletes.
    #[test]
    fn records_answer_as_the_memory_storage() {
        let mut records = Records::default();
        let mut oracle = MemoryStorage::new();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut random = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..2000u32 {
            let table = Table::ALL[usize::try_from(random(4)).unwrap()];
            let key: Vec<u8> = (0..random(3)).map(|_| b'a' + random(3) as u8).collect();
            let write = if random(3) == 0 {
                Write::Delete { table, key }
            } else {
                Write::Put {
                    table,
                    key,
                    value: Zeroizing::new(round.to_be_bytes().to_vec()),
                }
            };
            records.apply(std::slice::from_ref(&write));
            oracle.commit(std::slice::from_ref(&write)).unwrap();
            let prefix: Vec<u8> = (0..random(2)).map(|_| b'a' + random(3) as u8).collect();
            assert_eq!(
                records.scan(table, &prefix),
                oracle.scan(table, &prefix).unwrap()
            );
            assert_eq!(
                records.get(table, &prefix),
                oracle.get(table, &prefix).unwrap()
            );
        }
        for table in Table::ALL {
            assert_eq!(records.scan(table, b""), oracle.scan(table, b"").unwrap());
        }
    }
}
