//! The store of a client whose records live in memory only (`Client.inMemory`):
//! proteus-client's [`HostMemoryStore`], so that the records are kept, and wiped, in the module
//! as the journal's are, and the JS side's memory store only moves buffers (`js/stores.js`).

use proteus_client::HostMemoryStore;
use wasm_bindgen::prelude::*;
use zeroize::Zeroizing;

use crate::{js, store_error};

/// What the client's commits stored, in memory (see the module docs).
#[wasm_bindgen]
#[derive(Default)]
pub struct RawMemoryStore {
    store: HostMemoryStore,
}

#[wasm_bindgen]
impl RawMemoryStore {
    /// An empty store, at commit 0.
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawMemoryStore {
        Self::default()
    }

    /// The commit counter.
    #[wasm_bindgen(getter)]
    pub fn counter(&self) -> f64 {
        self.store.counter() as f64
    }

    /// Every record, as the record buffer a client opens on (a copy of a buffer wiped here).
    pub fn load(&self) -> Result<JsValue, JsValue> {
        Ok(js::bytes(&self.store.load().map_err(store_error)?))
    }

    /// Stores a commit's writes (a record buffer) at `next` if the store is at `expected`;
    /// otherwise stores nothing and returns the counter it is at.
    pub fn persist(
        &mut self,
        writes: Vec<u8>,
        expected: f64,
        next: f64,
    ) -> Result<Option<f64>, JsValue> {
        let writes = Zeroizing::new(writes);
        let found = self
            .store
            .persist(&writes, expected as u64, next as u64)
            .map_err(store_error)?;
        Ok(found.map(|c| c as f64))
    }
}
