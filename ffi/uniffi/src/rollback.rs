//! Rollback protection: the app's commit counter, kept outside the store (the iOS Keychain,
//! Android Keystore-backed storage), checked by `proteus_client::RollbackGuard` when the store
//! opens and at every call. Conversions only.

use proteus_client::CounterError;

use crate::error::ProteusError;

/// Where the app keeps the store's commit count, outside the store: somewhere a restored copy
/// of the store (a device backup, a file copied back) does not roll back — the Keychain on iOS
/// (in the access group the app and its extensions share), Android Keystore-backed storage. A
/// store behind the count is refused with `StoreRolledBack` (511), never wiped. Called on the
/// library's thread.
#[uniffi::export(callback_interface)]
pub trait CommitCounter: Send + Sync {
    /// The count stored last; 0 if none was ever stored. What this throws fails the open with
    /// `StorageFailure` (507), its message naming the commit counter.
    fn load(&self) -> Result<i64, ProteusError>;

    /// Stores `count`, after every durable commit of the store. What this throws does not fail
    /// the commit (it is on disk already); the next commit stores its count again.
    fn store(&self, count: i64) -> Result<(), ProteusError>;
}

/// The app's counter, as the client's guard takes it.
pub(crate) struct AppCounter(pub(crate) Box<dyn CommitCounter>);

impl proteus_client::CommitCounter for AppCounter {
    fn load(&mut self) -> Result<u64, CounterError> {
        let count = self.0.load()?;
        u64::try_from(count)
            .map_err(|_| format!("the app's commit count is negative: {count}").into())
    }

    fn store(&mut self, count: u64) -> Result<(), CounterError> {
        Ok(self.0.store(i64::try_from(count)?)?)
    }
}
