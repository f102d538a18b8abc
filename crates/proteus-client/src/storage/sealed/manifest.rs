//! The manifest of a sealed store: its id, its commit, and the commit of every live record,
//! with the keyed digest of that set (see the module docs of `storage::sealed`).

use std::collections::BTreeMap;

use ring::rand::{SecureRandom, SystemRandom};

use super::format::{DIGEST_LEN, Keys, STORE_ID_LEN};
use crate::error::StoreError;
use crate::storage::Table;

/// What the store committed: its id, its commit, and every live record's commit by table and
/// stored key, with the digest of that set.
#[derive(Clone)]
pub(super) struct Manifest {
    pub(super) store_id: [u8; STORE_ID_LEN],
    pub(super) commit: u64,
    pub(super) digest: [u8; DIGEST_LEN],
    pub(super) entries: BTreeMap<(Table, Vec<u8>), u64>,
    /// The manifest record as this handle last read or wrote it: when the stored one differs,
    /// someone else committed (or replaced the store).
    pub(super) raw: Vec<u8>,
}

impl Manifest {
    /// An empty manifest of a new store id.
    pub(super) fn new(rng: &SystemRandom) -> Result<Self, StoreError> {
        let mut store_id = [0; STORE_ID_LEN];
        rng.fill(&mut store_id)
            .map_err(|_| StoreError::Backend("no randomness for a store id".into()))?;
        Ok(Self {
            store_id,
            commit: 0,
            digest: [0; DIGEST_LEN],
            entries: BTreeMap::new(),
            raw: Vec::new(),
        })
    }

    pub(super) fn toggle(&mut self, element: &[u8; DIGEST_LEN]) {
        for (d, e) in self.digest.iter_mut().zip(element) {
            *d ^= e;
        }
    }

    /// Records that `(table, stored)` is now written by `commit` (or deleted: `None`);
    /// returns what it was.
    pub(super) fn set(
        &mut self,
        keys: &Keys,
        table: Table,
        stored: &[u8],
        commit: Option<u64>,
    ) -> Option<u64> {
        let slot = (table, stored.to_vec());
        let old = match commit {
            Some(c) => self.entries.insert(slot, c),
            None => self.entries.remove(&slot),
        };
        if let Some(old) = old {
            self.toggle(&keys.element(table, stored, old));
        }
        if let Some(c) = commit {
            self.toggle(&keys.element(table, stored, c));
        }
        old
    }
}
