//! The client's prekeys: generation with ids that are never reused while published, bundles,
//! and the view of them the protocol engine needs during an operation.

use proteus_core::{PreKey, PreKeyId, PreKeyStore};

use crate::collections::SortedSet;
use crate::error::StoreError;
use crate::records::prekey_key;
use crate::storage::{Storage, Table};

/// The prekeys as the engine sees them while an operation runs: the stored ones, less those the
/// operation has used up. Removals are only recorded; they are written with the sessions.
pub(crate) struct PendingPreKeys<'a> {
    pub(crate) storage: &'a dyn Storage,
    pub(crate) removed: &'a mut SortedSet<PreKeyId>,
}

impl PreKeyStore for PendingPreKeys<'_> {
    type Error = StoreError;

    fn prekey(&mut self, id: PreKeyId) -> Result<Option<PreKey>, StoreError> {
        if self.removed.contains(&id) {
            return Ok(None);
        }
        load_prekey(self.storage, id)
    }

    fn remove(&mut self, id: PreKeyId) -> Result<(), StoreError> {
        self.removed.insert(id);
        Ok(())
    }
}

pub(crate) fn load_prekey(
    storage: &dyn Storage,
    id: PreKeyId,
) -> Result<Option<PreKey>, StoreError> {
    match storage.get(Table::PreKeys, &prekey_key(id))? {
        None => Ok(None),
        Some(bytes) => PreKey::from_bytes(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt(format!("prekey {id}: {e}"))),
    }
}

/// Picks `n` ids for new one-time prekeys, starting at `next` and skipping ids still stored, so
/// an id comes round again only after all 65,535 one-time ids have been handed out. Returns the
/// ids and the next start, or `Err(free)` with the number of free ids if fewer than `n` are.
pub(crate) fn allocate_ids(
    storage: &dyn Storage,
    next: u16,
    n: usize,
) -> Result<Result<(Vec<PreKeyId>, u16), usize>, StoreError> {
    const ONE_TIME_IDS: u32 = PreKeyId::LAST_RESORT.value() as u32;
    // At most 65,535 ids exist: a larger `n` must not size the allocation.
    let mut ids = Vec::with_capacity(n.min(ONE_TIME_IDS as usize));
    let mut candidate = u32::from(next) % ONE_TIME_IDS;
    for _ in 0..ONE_TIME_IDS {
        if ids.len() == n {
            break;
        }
        let id = PreKeyId::new(u16::try_from(candidate).unwrap_or_default());
        if storage.get(Table::PreKeys, &prekey_key(id))?.is_none() {
            ids.push(id);
        }
        candidate = (candidate + 1) % ONE_TIME_IDS;
    }
    if ids.len() < n {
        return Ok(Err(ids.len()));
    }
    Ok(Ok((ids, u16::try_from(candidate).unwrap_or_default())))
}
