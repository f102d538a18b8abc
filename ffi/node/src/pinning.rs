//! The `identityPinning` option on the addon's client, applied by `native.js` right after
//! opening (`pinnedIdentity` and `acceptIdentity` are shared calls: `calls.rs`).

use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;

use crate::RawClient;
use crate::task::{Call, run};

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
}
