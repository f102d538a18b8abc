//! How batch results reach JS: in chunks of up to [`CHUNK`] messages, one call each, so a
//! 1000-message batch crosses into JS 16 times rather than 1000. Every chunk is handed over
//! before the batch commits, as the batch contract requires.

use proteus_store::Decrypted;
use wasm_bindgen::prelude::*;

/// Results per call into JS.
pub(crate) const CHUNK: usize = 64;

#[wasm_bindgen]
extern "C" {
    /// Where [`RawClient::decrypt_batch`](crate::RawClient::decrypt_batch) hands the results.
    pub type BatchSink;

    /// Receives the results of messages `first`, `first + 1`, ...: `meta` holds two numbers
    /// per message, its error code (0 if it decrypted) and its plaintext's length; `ids` their
    /// message ids (64 lowercase hex digits each); `plaintexts` the plaintexts, one after the
    /// other; `kinds` the error kinds of the failed ones, in order, each followed by a newline.
    /// The byte slices are views into wasm memory, valid during the call only. Returns whether
    /// to go on.
    #[wasm_bindgen(method, catch)]
    fn deliver(
        this: &BatchSink,
        first: u32,
        meta: &[u32],
        ids: &str,
        plaintexts: &[u8],
        kinds: &str,
    ) -> Result<bool, JsValue>;
}

/// The results gathered for the next call.
#[derive(Default)]
pub(crate) struct Chunk {
    first: usize,
    meta: Vec<u32>,
    /// The message ids in hex: one string for the chunk is much cheaper for JS than one per id.
    ids: String,
    plaintexts: Vec<u8>,
    kinds: String,
}

impl Chunk {
    /// How many results are waiting.
    pub(crate) fn len(&self) -> usize {
        self.meta.len() / 2
    }

    /// Adds the result of message `index`.
    pub(crate) fn push(&mut self, index: usize, decrypted: &Decrypted) {
        if self.meta.is_empty() {
            self.first = index;
        }
        // ASCII, so never the empty fallback.
        self.ids
            .push_str(std::str::from_utf8(&decrypted.message_id.hex()).unwrap_or_default());
        match &decrypted.outcome {
            Ok(plaintext) => {
                self.meta.push(0);
                self.meta
                    .push(u32::try_from(plaintext.len()).unwrap_or(u32::MAX));
                self.plaintexts.extend_from_slice(plaintext);
            }
            Err(e) => {
                self.meta.push(u32::from(e.code()));
                self.meta.push(0);
                self.kinds.push_str(e.kind());
                self.kinds.push('\n');
            }
        }
    }

    /// Hands the waiting results to `sink` and empties the chunk.
    pub(crate) fn flush(&mut self, sink: &BatchSink) -> Result<bool, JsValue> {
        let first = u32::try_from(self.first).unwrap_or(u32::MAX);
        let go_on = sink.deliver(first, &self.meta, &self.ids, &self.plaintexts, &self.kinds);
        self.meta.clear();
        self.ids.clear();
        self.plaintexts.clear();
        self.kinds.clear();
        go_on
    }
}
