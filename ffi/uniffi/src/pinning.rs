//! Identity pinning (`ClientOptions.identityPinning`): the identity pinned for a session id,
//! and accepting a changed one.

use crate::client::Client;
use crate::error::ProteusError;

/// Identity pinning.
#[uniffi::export]
impl Client {
    /// The fingerprint (lowercase hex) of the identity pinned for `session_id`, or null if none
    /// is. With `ClientOptions.identityPinning` the first identity seen for a session id is
    /// pinned; a PreKeyMessage or a bundle of another one is refused with
    /// `RemoteIdentityChanged` (204), changing nothing, until `acceptIdentity`.
    pub async fn pinned_identity(
        &self,
        session_id: String,
    ) -> Result<Option<String>, ProteusError> {
        self.run(move |c| c.pinned_identity(&session_id)).await
    }

    /// Pins the identity `fingerprint` names (64 hex digits, as `remoteFingerprint` and a batch
    /// result's `sender` give it) for `session_id`, in one commit, and deletes a session of
    /// another identity under that id: a refused PreKeyMessage then decrypts (same message id),
    /// a refused bundle then makes the session with `createSession`. A malformed fingerprint is
    /// `InvalidFingerprint` (411).
    pub async fn accept_identity(
        &self,
        session_id: String,
        fingerprint: String,
    ) -> Result<(), ProteusError> {
        self.run(move |c| c.accept_identity(&session_id, &fingerprint))
            .await
    }
}
