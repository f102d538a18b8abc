//! Identity pinning on the wasm client (`identityPinning`, `pinnedIdentity`, `acceptIdentity`).

use wasm_bindgen::prelude::*;

use crate::{RawClient, js_error};

#[wasm_bindgen]
impl RawClient {
    /// Turns identity pinning on or off (`Client::set_identity_pinning`); the JS side applies
    /// it to every wasm client it opens on the store.
    #[wasm_bindgen(js_name = setIdentityPinning)]
    pub fn set_identity_pinning(&mut self, on: bool) {
        self.client.set_identity_pinning(on);
    }

    /// The fingerprint of the identity pinned for a session id, or "" if none is (a string
    /// rather than an option: less glue in the .wasm; client-calls.js makes it undefined).
    #[wasm_bindgen(js_name = pinnedIdentity)]
    pub fn pinned_identity(&self, session_id: &str) -> Result<String, JsValue> {
        self.client
            .pinned_identity(session_id)
            .map(Option::unwrap_or_default)
            .map_err(|e| js_error(&e))
    }

    /// Pins the identity a fingerprint names for a session id (deleting a session of another).
    #[wasm_bindgen(js_name = acceptIdentity)]
    pub fn accept_identity(&mut self, session_id: &str, fingerprint: &str) -> Result<(), JsValue> {
        self.client
            .accept_identity(session_id, fingerprint)
            .map_err(|e| js_error(&e))
    }
}
