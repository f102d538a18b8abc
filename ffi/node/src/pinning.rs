//! Identity pinning on the addon's client: the `identityPinning` option (applied by `native.js`
//! right after opening), `pinnedIdentity` and `acceptIdentity`.

use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use crate::task::{Call, run};
use crate::{RawClient, js};

#[napi]
impl RawClient {
    /// Turns identity pinning on or off (`Client::set_identity_pinning`).
    #[napi]
    pub fn set_identity_pinning(&self, on: bool) -> AsyncTask<Call<()>> {
        run(&self.shared, move |c| {
            c.set_identity_pinning(on);
            Ok(())
        })
    }

    /// The fingerprint of the identity pinned for a session id, or null.
    #[napi]
    pub fn pinned_identity(&self, session_id: String) -> AsyncTask<Call<Option<String>>> {
        run(&self.shared, move |c| js(c.pinned_identity(&session_id)))
    }

    /// Pins the identity a fingerprint names for a session id (deleting a session of another).
    #[napi]
    pub fn accept_identity(&self, session_id: String, fingerprint: String) -> AsyncTask<Call<()>> {
        run(&self.shared, move |c| {
            js(c.accept_identity(&session_id, &fingerprint))
        })
    }
}
