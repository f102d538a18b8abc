//! How batch results reach JS: in chunks of up to [`CHUNK`] messages, one call each, so a
//! 1000-message batch crosses into JS 16 times rather than 1000. Every chunk is handed over
//! before the batch commits, as the batch contract requires.

use proteus_client::Decrypted;
use proteus_js_results::PackedResults;
use wasm_bindgen::prelude::*;

/// Results per call into JS.
pub(crate) const CHUNK: usize = 64;

#[wasm_bindgen]
extern "C" {
    /// Where [`RawClient::decrypt_batch`](crate::RawClient::decrypt_batch) hands the results.
    pub type BatchSink;

    /// Receives the results of messages `first`, `first + 1`, ...: `meta` holds three numbers
    /// per message, its error code (0 if it decrypted), its plaintext's length and whether it
    /// names a sender (1) or not (0); `ids` their message ids (64 lowercase hex digits each);
    /// `plaintexts` the plaintexts, one after the other; `senders` the sender fingerprints of
    /// those that name one (64 hex digits each). The JS side gives a failed message the kind of
    /// its code from the registry. The byte slices are views into wasm memory, valid during
    /// the call only. Returns whether to go on.
    #[wasm_bindgen(method, catch)]
    fn deliver(
        this: &BatchSink,
        first: u32,
        meta: &[u32],
        ids: &str,
        plaintexts: &[u8],
        senders: &str,
    ) -> Result<bool, JsValue>;
}

/// The results gathered for the next call.
#[derive(Default)]
pub(crate) struct Chunk {
    first: usize,
    results: PackedResults,
}

impl Chunk {
    /// Takes the results of messages `first`, `first + 1`, ... for the next call.
    pub(crate) fn fill(&mut self, first: usize, results: &[Decrypted]) {
        self.first = first;
        for decrypted in results {
            self.results.push(decrypted);
        }
    }

    /// Hands the waiting results to `sink` and empties the chunk.
    pub(crate) fn flush(&mut self, sink: &BatchSink) -> Result<bool, JsValue> {
        let first = u32::try_from(self.first).unwrap_or(u32::MAX);
        let r = &self.results;
        let go_on = sink.deliver(first, &r.meta, &r.ids, &r.plaintexts, &r.senders);
        self.results.clear();
        go_on
    }
}
