//! The `identityPinning` option on the wasm client (`pinnedIdentity` and `acceptIdentity` are
//! shared calls: `calls.rs`).

use wasm_bindgen::prelude::*;

use crate::RawClient;

#[wasm_bindgen]
impl RawClient {
    /// Turns identity pinning on or off (`Client::set_identity_pinning`); the JS side applies
    /// it to every wasm client it opens on the store.
    #[wasm_bindgen(js_name = setIdentityPinning)]
    pub fn set_identity_pinning(&mut self, on: bool) {
        self.client.set_identity_pinning(on);
    }
}
