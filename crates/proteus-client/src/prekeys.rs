//! The client's prekeys: generation with ids that are never reused while published, bundles,
//! and the view of them the protocol engine needs during an operation.

use proteus_core::{PreKey, PreKeyId, PreKeyStore};

use crate::collections::SortedSet;
use crate::error::{ClientError, StoreError};
use crate::records::prekey_key;
use crate::storage::{Storage, Table};

/// The prekeys as the engine sees them while an operation runs: the stored ones (or a batch
/// run's snapshot of them), less those the operation has used up. Removals are only recorded;
/// they are written with the sessions. One type for every decrypt path, so the engine's
/// decrypt code is built once for it.
pub(crate) struct PendingPreKeys<'a> {
    pub(crate) source: PreKeySource<'a>,
    pub(crate) removed: &'a mut SortedSet<PreKeyId>,
}

/// Where [`PendingPreKeys`] reads a prekey.
pub(crate) enum PreKeySource<'a> {
    /// The store, when the engine asks.
    Store(&'a dyn Storage),
    /// A batch run's snapshot, sorted by id: every prekey its PreKeyMessages name, read before
    /// the run started (a run never touches the store).
    Snapshot(&'a [(PreKeyId, Option<PreKey>)]),
}

/// Why [`PendingPreKeys`] gave no answer.
#[derive(thiserror::Error)]
pub(crate) enum PreKeyViewError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A batch run asked for a prekey its snapshot does not hold: a bug in the batch's plan,
    /// never a store's failure.
    #[error("a prekey a batch run's message names is not in its snapshot")]
    NotInSnapshot,
}

impl From<PreKeyViewError> for ClientError {
    fn from(e: PreKeyViewError) -> Self {
        match e {
            PreKeyViewError::Store(e) => Self::Store(e),
            PreKeyViewError::NotInSnapshot => Self::Internal(e.to_string()),
        }
    }
}

// Written out, not derived: the derived form would bring the escaping Debug of strings into
// the web build through the engine's `dyn Error`.
impl std::fmt::Debug for PreKeyViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Store(e) => std::fmt::Debug::fmt(e, f),
            Self::NotInSnapshot => f.write_str("NotInSnapshot"),
        }
    }
}

impl PreKeyStore for PendingPreKeys<'_> {
    type Error = PreKeyViewError;

    fn prekey(&mut self, id: PreKeyId) -> Result<Option<PreKey>, PreKeyViewError> {
        if self.removed.contains(&id) {
            return Ok(None);
        }
        match self.source {
            PreKeySource::Store(storage) => Ok(load_prekey(storage, id)?),
            PreKeySource::Snapshot(snapshot) => match snapshot.binary_search_by_key(&id, |p| p.0) {
                Ok(at) => Ok(snapshot.get(at).and_then(|p| p.1.clone())),
                Err(_) => Err(PreKeyViewError::NotInSnapshot),
            },
        }
    }

    fn remove(&mut self, id: PreKeyId) -> Result<(), PreKeyViewError> {
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
