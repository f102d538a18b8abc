//! The client's side of the commit protocol (see [`Storage::begin`]): every operation runs under
//! the store's exclusion and first drops what it cached if another handle (the app's notification
//! extension, another process) committed since this client last looked.

use proteus_core::{IdentityKeyPair, OsRng, PreKey};
use zeroize::Zeroizing;

use super::Client;
use crate::error::{ClientError, StoreError};
use crate::records::{META_IDENTITY, META_NEXT_PREKEY_ID, META_SEAL_CHECK, prekey_key};
use crate::replay_guard::ReplayGuard;
use crate::storage::{Freshness, Storage, Table, Write};

impl Client {
    /// Runs `op` as one operation: under the store's exclusion, after dropping every cache if
    /// the store is stale; `op` commits (which ends the operation) or the operation ends here
    /// without writing. A call made inside `op` runs in the operation already open.
    pub(crate) fn operation<T>(
        &mut self,
        op: impl FnOnce(&mut Self) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        if self.in_operation {
            return op(self);
        }
        self.begin_operation()?;
        let result = self.run_unwind_safe(op);
        let ended = self.end_operation();
        let value = result?;
        ended?;
        Ok(value)
    }

    /// Takes the store's exclusion and reloads what is stale. Not generic (nor is
    /// `end_operation`): `operation` is instantiated for every call of the client, and only its
    /// few lines are copied each time.
    fn begin_operation(&mut self) -> Result<(), ClientError> {
        if self.storage.begin()? == Freshness::Stale {
            log::info!(
                target: crate::LOG_TARGET,
                "another process or tab committed: reloading"
            );
            if let Err(e) = self.reload() {
                let _ = self.storage.end();
                return Err(e);
            }
        }
        self.in_operation = true;
        Ok(())
    }

    fn end_operation(&mut self) -> Result<(), ClientError> {
        self.in_operation = false;
        Ok(self.storage.end()?)
    }

    /// Runs `op`. If it panics (a `deliver` callback's panic, say) the operation is ended and the
    /// caches dropped before the panic goes on: the store must not stay locked for the other
    /// process as long as this client lives, and cached sessions may hold uncommitted steps.
    /// Where panics abort (the web build) there is nothing to clean up, and no unwinding
    /// machinery is linked in for it (9 KB of wasm).
    fn run_unwind_safe<T>(
        &mut self,
        op: impl FnOnce(&mut Self) -> Result<T, ClientError>,
    ) -> Result<T, ClientError> {
        #[cfg(panic = "unwind")]
        {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op(&mut *self))) {
                Ok(result) => result,
                Err(panic) => {
                    let _ = self.end_operation();
                    self.sessions.clear();
                    self.replay_guard = ReplayGuard::default();
                    std::panic::resume_unwind(panic)
                }
            }
        }
        #[cfg(not(panic = "unwind"))]
        {
            op(self)
        }
    }

    /// Drops what was cached from the store: sessions and the replay guard's base keys are
    /// loaded again when next used, the identity now (another handle may have imported one).
    fn reload(&mut self) -> Result<(), ClientError> {
        self.sessions.clear();
        self.replay_guard = ReplayGuard::default();
        self.identity = load_identity(&*self.storage)?.ok_or_else(|| {
            StoreError::Corrupt("the identity is missing from a store in use".into())
        })?;
        Ok(())
    }
}

/// Loads the identity, or creates one (with a last-resort prekey) if the storage holds nothing
/// yet, as one operation: two processes opening a new store at once make one identity.
pub(super) fn open_identity(
    storage: &mut dyn Storage,
) -> Result<(IdentityKeyPair, bool), ClientError> {
    let _ = storage.begin()?;
    let identity = match load_identity(storage) {
        Ok(Some(identity)) => storage
            .end()
            .map(|()| (identity, false))
            .map_err(Into::into),
        Ok(None) => create_identity(storage).map(|identity| (identity, true)),
        Err(e) => Err(e),
    };
    if identity.is_err() {
        let _ = storage.end();
    }
    identity
}

/// The stored identity, if there is one.
fn load_identity(storage: &dyn Storage) -> Result<Option<IdentityKeyPair>, ClientError> {
    let Some(bytes) = storage.get(Table::Meta, META_IDENTITY)? else {
        return Ok(None);
    };
    match IdentityKeyPair::from_bytes(&bytes) {
        Ok(identity) => Ok(Some(identity)),
        // Sealed records read without the key: say so rather than "corrupt".
        Err(_) if storage.get(Table::Meta, META_SEAL_CHECK)?.is_some() => {
            Err(StoreError::KeyRequired.into())
        }
        Err(e) => Err(StoreError::Corrupt(format!("identity record: {e}")).into()),
    }
}

/// Creates and commits a new identity. Storage that holds records but no identity is corrupt and
/// is refused, never reinitialised.
fn create_identity(storage: &mut dyn Storage) -> Result<IdentityKeyPair, ClientError> {
    for table in [Table::PreKeys, Table::Sessions, Table::StagedKeys] {
        if !storage.scan(table, &[])?.is_empty() {
            return Err(StoreError::Corrupt(format!(
                "the identity is missing but {} are stored",
                table.name()
            ))
            .into());
        }
    }
    let identity = IdentityKeyPair::generate(&mut OsRng);
    let last_resort = PreKey::last_resort(&mut OsRng);
    storage.commit(&[
        Write::Put {
            table: Table::Meta,
            key: META_IDENTITY.to_vec(),
            value: identity.to_bytes(),
        },
        Write::Put {
            table: Table::PreKeys,
            key: prekey_key(last_resort.id()),
            value: last_resort.to_bytes(),
        },
        Write::Put {
            table: Table::Meta,
            key: META_NEXT_PREKEY_ID.to_vec(),
            value: Zeroizing::new(vec![0, 0]),
        },
    ])?;
    Ok(identity)
}
