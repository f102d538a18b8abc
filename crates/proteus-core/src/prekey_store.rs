//! Where the engine finds the prekeys that PreKeyMessages name.

use std::collections::BTreeMap;
use std::convert::Infallible;

use zeroize::Zeroize;

use crate::keys::{PreKey, PreKeyId};

/// The prekeys a client has published, as the engine needs them.
///
/// The engine looks a prekey up when a PreKeyMessage needs a new session state and removes it
/// only after that message decrypted (never the last-resort prekey). A persistent store should
/// make the removal part of the transaction that saves the session.
pub trait PreKeyStore {
    /// The store's error.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The prekey with this id, if the store has it.
    fn prekey(&mut self, id: PreKeyId) -> Result<Option<PreKey>, Self::Error>;

    /// Removes the prekey with this id.
    fn remove(&mut self, id: PreKeyId) -> Result<(), Self::Error>;
}

/// An in-memory prekey store.
impl PreKeyStore for BTreeMap<PreKeyId, PreKey> {
    type Error = Infallible;

    fn prekey(&mut self, id: PreKeyId) -> Result<Option<PreKey>, Infallible> {
        Ok(self.get(&id).cloned())
    }

    fn remove(&mut self, id: PreKeyId) -> Result<(), Infallible> {
        // Wiped in place first: removing moves the value out and frees its node unwiped.
        if let Some(prekey) = self.get_mut(&id) {
            prekey.zeroize();
        }
        BTreeMap::remove(self, &id);
        Ok(())
    }
}
