//! The Proteus client for the web: a thin wasm-bindgen adapter over [`proteus_client::Client`].
//!
//! This crate is the low layer of the npm package built into `ffi/web/pkg/`. It exports one
//! class, [`RawClient`], whose methods are synchronous and convert and delegate only: no protocol
//! logic lives here. The package's ES module (`ffi/web/js/index.js`) wraps it into the public
//! `Client` with Promises, IndexedDB persistence and Web Locks.
//!
//! The client runs on a [`Journal`] of the store (`proteus-client`), which the JS side holds as a
//! [`RawJournal`]: it loads every record and the commit counter into it when it opens a client
//! ([`RawClient::new`]), and takes each commit to store from it, with its compare-and-swap
//! ([`RawJournal::take_commit`]). The journal's driver decides every step of the commit
//! protocol (read the counter, reload, run, store, run again or fail: [`RawJournal::next`]); the
//! JS side executes them: the IndexedDB I/O and the Web Locks, nothing more.
//!
//! Errors are JS `Error`s named `ProteusError` with the native numeric `code` of
//! [`ClientError`]; the JS side (`errors.js`, `adopt`) gives them the registry's `kind` for it,
//! as it does to batch results: the kind names need not be in the module.

mod calls;
mod commit;
mod delivery;
mod import;
mod js;
mod memory;
mod pinning;
mod sealing;

use std::ops::ControlFlow;

use proteus_client::{
    BatchError, Chunking, Client, ClientError, CommitDriver, ImportOptions, Journal, MessageId,
    QueuedMessage, StoreError,
};
use proteus_core::PreKeyBundle;
use wasm_bindgen::prelude::*;

pub use crate::delivery::BatchSink;
use crate::delivery::{CHUNK, Chunk};
pub use crate::import::ImportProgress;
pub use crate::memory::RawMemoryStore;
pub use crate::sealing::{
    RawSealer, open_step, pack_records, record_bounds, seal_changed, sealing_key_info,
};

/// Talc: smaller than the default allocator (dlmalloc) and faster.
#[cfg(all(
    target_arch = "wasm32",
    target_os = "unknown",
    not(target_feature = "atomics")
))]
#[global_allocator]
static ALLOCATOR: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();

/// A [`ClientError`] as a JS `Error` with `name` "ProteusError" and `code` (`kind` is the JS
/// side's to add: `errors.js`, `adopt`).
fn js_error(error: &ClientError) -> JsValue {
    let js = js::Error::new(&error.to_string());
    js.set_name("ProteusError");
    js::set(&js, "code", &error.code().into());
    js.into()
}

fn store_error(error: StoreError) -> JsValue {
    js_error(&error.into())
}

/// Splits the concatenated `bytes` into parts of `lengths`.
fn split<'a>(bytes: &'a [u8], lengths: &[u32]) -> Result<Vec<&'a [u8]>, JsValue> {
    proteus_js_results::split(bytes, lengths).map_err(js::range_error)
}

/// The session id of each message: `ids[index[i]]`.
fn session_ids<'a>(ids: &'a [String], index: &[u32]) -> Result<Vec<&'a str>, JsValue> {
    index
        .iter()
        .map(|i| {
            usize::try_from(*i)
                .ok()
                .and_then(|i| ids.get(i))
                .map(String::as_str)
                .ok_or_else(|| js::range_error("session index out of range"))
        })
        .collect()
}

fn bundle_object(bundle: &PreKeyBundle) -> JsValue {
    let object = js::Object::new();
    js::set(&object, "id", &bundle.prekey_id().value().into());
    js::set(&object, "bundle", &js::bytes(&bundle.to_bytes()));
    object.into()
}

/// The stable id of a received message, as batch results carry it: lowercase hex of the
/// envelope's MAC (of SHA-256 of the bytes if they are not an envelope). See
/// [`proteus_client::MessageId`]: only a decrypted message's id is authenticated.
#[wasm_bindgen(js_name = messageId)]
pub fn message_id(envelope: &[u8]) -> String {
    MessageId::of(envelope).to_string()
}

/// The fingerprint of the identity in a prekey bundle (lowercase hex), to compare with
/// `remoteFingerprint` or show before a session exists.
#[wasm_bindgen(js_name = bundleFingerprint)]
pub fn bundle_fingerprint(bundle: &[u8]) -> Result<String, JsValue> {
    let bundle = PreKeyBundle::from_bytes(bundle).map_err(|e| js_error(&e.into()))?;
    Ok(bundle.identity_key().fingerprint())
}

/// The sender's identity fingerprint (lowercase hex) if `envelope` holds a PreKeyMessage, which
/// carries it; `undefined` for other messages. What to show when a peer's identity changed
/// (`RemoteIdentityChanged`, 204): the new fingerprint, before accepting it.
#[wasm_bindgen(js_name = prekeyMessageFingerprint)]
pub fn prekey_message_fingerprint(envelope: &[u8]) -> Result<Option<String>, JsValue> {
    let claimed = proteus_client::claimed_sender(envelope).map_err(|e| js_error(&e.into()))?;
    Ok(claimed.map(|key| key.fingerprint()))
}

/// The JS side's handle on the [`Journal`] of its store, which the [`RawClient`]s it opens run
/// on, with the driver of its commit protocol (`proteus_client::CommitDriver`; its methods are
/// in `commit.rs`); the JS side does the I/O.
///
/// Commit counters cross as JS numbers: integers below 2^53, as the JS side stores them.
/// Anything else (a damaged store) converts to some other count, which can only make a
/// compare-and-swap fail.
#[wasm_bindgen]
pub struct RawJournal {
    journal: Journal,
    /// The loop of the commit protocol over it (its methods: commit.rs).
    driver: CommitDriver,
}

impl Default for RawJournal {
    fn default() -> Self {
        let journal = Journal::new();
        let driver = CommitDriver::new(journal.clone());
        Self { journal, driver }
    }
}

#[wasm_bindgen]
impl RawJournal {
    /// An empty journal, stale until a [`RawClient`] is opened on it.
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawJournal {
        Self::default()
    }

    /// The commit to store, or `undefined`: `[writes, expected, next]`, the writes (a record
    /// buffer) to store in one transaction only if the store's counter is still `expected`,
    /// setting it to `next`. The driver asks for it, and hears whether it was stored.
    #[wasm_bindgen(js_name = takeCommit)]
    pub fn take_commit(&self) -> Result<Option<Vec<JsValue>>, JsValue> {
        let Some(commit) = self.journal.take_commit().map_err(store_error)? else {
            return Ok(None);
        };
        Ok(Some(vec![
            js::bytes(&commit.writes),
            (commit.expected as f64).into(),
            (commit.next as f64).into(),
        ]))
    }
}

/// A client over a [`Journal`] of the JS side's store. Synchronous; see the crate docs.
#[wasm_bindgen]
pub struct RawClient {
    client: Client,
    /// The next batch's input, which the JS side writes in place ([`RawClient::input`]).
    input: Vec<u8>,
}

#[wasm_bindgen]
impl RawClient {
    /// Opens a client on the store's `records` (a record buffer of puts, read at commit
    /// `counter`), which `journal` then holds (a client opened on it before is stale). An empty
    /// store gets a new identity, whose commit is then to be stored.
    #[wasm_bindgen(constructor)]
    pub fn new(records: Vec<u8>, counter: f64, journal: &RawJournal) -> Result<RawClient, JsValue> {
        // Owned, so that the module's copy of the records (secrets) is wiped after the call.
        let records = zeroize::Zeroizing::new(records);
        let client = journal
            .journal
            .reload(&records, counter as u64, |journal| {
                Client::with_storage(Box::new(journal.clone()))
            })
            .map_err(|e| js_error(&e))?;
        Ok(Self {
            client,
            input: Vec::new(),
        })
    }

    /// Encrypts message `i` (`plaintexts` split by `lengths`) for `session_ids[index[i]]`, with
    /// one commit for all. Returns the envelopes in order.
    #[wasm_bindgen(js_name = encryptBatch)]
    pub fn encrypt_batch(
        &mut self,
        session_ids: Vec<String>,
        index: &[u32],
        plaintexts: &[u8],
        lengths: &[u32],
    ) -> Result<Vec<JsValue>, JsValue> {
        let ids = self::session_ids(&session_ids, index)?;
        let plaintexts = split(plaintexts, lengths)?;
        if ids.len() != plaintexts.len() {
            return Err(js::range_error("one session index per message"));
        }
        let messages: Vec<(&str, &[u8])> = ids.into_iter().zip(plaintexts).collect();
        let envelopes = self
            .client
            .encrypt_batch(&messages)
            .map_err(|e| js_error(&e))?;
        Ok(envelopes.iter().map(|e| js::bytes(e)).collect())
    }

    /// Encrypts `plaintext` for each of `session_ids` with one commit (see
    /// `Client::encrypt_for`). One buffer: per recipient, in order, an `i32` (little-endian):
    /// the length of its envelope, or minus the error code of its failure; then the envelopes
    /// back to back.
    #[wasm_bindgen(js_name = encryptFor)]
    pub fn encrypt_for(
        &mut self,
        session_ids: Vec<String>,
        plaintext: &[u8],
    ) -> Result<Vec<u8>, JsValue> {
        let ids: Vec<&str> = session_ids.iter().map(String::as_str).collect();
        let results = self
            .client
            .encrypt_for(&ids, plaintext)
            .map_err(|e| js_error(&e))?;
        let size = results.iter().flatten().map(Vec::len).sum::<usize>();
        let mut out = Vec::with_capacity(4 * results.len() + size);
        for result in &results {
            let outcome = match result {
                Ok(envelope) => i32::try_from(envelope.len()).unwrap_or(i32::MAX),
                Err(e) => -i32::from(e.code()),
            };
            out.extend_from_slice(&outcome.to_le_bytes());
        }
        for envelope in results.iter().flatten() {
            out.extend_from_slice(envelope);
        }
        Ok(out)
    }

    /// Makes room for `len` bytes of the next batch's input in wasm memory and returns where it
    /// starts, for the JS side to write them there in place, through a view of the module's
    /// memory made after this call. A batch of 1000 envelopes is about 200 KB, which the JS side
    /// would otherwise concatenate into a fresh `Uint8Array` (an allocation that costs more than
    /// the copy) for the glue to copy again.
    pub fn input(&mut self, len: usize) -> usize {
        self.input = vec![0; len];
        self.input.as_ptr() as usize
    }

    /// Decrypts message `i` (the [`input`](RawClient::input), split by `lengths`) of session
    /// `session_ids[index[i]]` and hands the results to `sink`, in chunks, before the single commit of the batch. If the
    /// sink returns false, nothing is committed and the call fails with `BatchAborted` (108); if
    /// it throws, nothing is committed and its exception is rethrown.
    #[wasm_bindgen(js_name = decryptBatch)]
    pub fn decrypt_batch(
        &mut self,
        session_ids: Vec<String>,
        index: &[u32],
        lengths: &[u32],
        sink: &BatchSink,
    ) -> Result<(), JsValue> {
        // Taken: the input is for this batch only.
        let input = std::mem::take(&mut self.input);
        let ids = self::session_ids(&session_ids, index)?;
        let envelopes = split(&input, lengths)?;
        if ids.len() != envelopes.len() {
            return Err(js::range_error("one session index per message"));
        }
        let queue: Vec<QueuedMessage<'_>> = ids
            .into_iter()
            .zip(envelopes)
            .map(|(session_id, envelope)| QueuedMessage {
                session_id,
                envelope,
            })
            .collect();
        let mut chunk = Chunk::default();
        let result = self.client.decrypt_batch_chunked(
            &queue,
            Chunking::every(CHUNK),
            |results, progress| {
                chunk.fill(progress.done - results.len(), results);
                chunk.flush(sink).map(|go_on| match go_on {
                    true => ControlFlow::Continue(()),
                    false => ControlFlow::Break(()),
                })
            },
        );
        match result {
            Ok(_) => Ok(()),
            Err(BatchError::Client(e)) => Err(js_error(&e)),
            Err(BatchError::Delivery(exception)) => Err(exception),
        }
    }

    /// The counts of the last batch that committed (`Client::last_batch_summary`), flat:
    /// total, decrypted, already seen, key evicted, then a (code, count) pair per other
    /// failure. Empty before the first batch.
    #[wasm_bindgen(js_name = lastBatchCounts)]
    pub fn last_batch_counts(&self) -> Vec<u32> {
        let Some(s) = self.client.last_batch_summary() else {
            return Vec::new();
        };
        let n = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut counts = vec![
            n(s.total),
            n(s.decrypted),
            n(s.already_seen),
            n(s.key_evicted),
        ];
        for &(code, count) in &s.failed {
            counts.extend([u32::from(code), n(count)]);
        }
        counts
    }

    /// Imports a cryptobox store in one commit: its identity, then its prekeys and sessions,
    /// each as ids and their bytes one after the other, split by lengths. Returns the report.
    #[wasm_bindgen(js_name = importCryptobox)]
    #[allow(clippy::too_many_arguments)]
    pub fn import_cryptobox(
        &mut self,
        identity: &[u8],
        prekey_ids: Vec<String>,
        prekeys: &[u8],
        prekey_lengths: &[u32],
        session_ids: Vec<String>,
        sessions: &[u8],
        session_lengths: &[u32],
        skip_bad_records: bool,
        progress: Option<ImportProgress>,
    ) -> Result<JsValue, JsValue> {
        let source = import::source(
            identity,
            (prekey_ids, prekeys, prekey_lengths),
            (session_ids, sessions, session_lengths),
        )?;
        let report = self
            .client
            .import_cryptobox(
                &source,
                ImportOptions::default().skip_bad_records(skip_bad_records),
                &mut |p| import::report_progress(progress.as_ref(), p),
            )
            .map_err(|e| js_error(&e))?;
        Ok(import::report(&report))
    }
}

#[cfg(test)]
mod tests {
    use proteus_client::Table;

    /// The JS side names the IndexedDB object stores of the tables, by the index the record
    /// buffers use (a constant there rather than an export of the module: 500 bytes of wasm).
    #[test]
    fn the_js_side_names_the_stores_tables() {
        let names: Vec<String> = Table::ALL
            .iter()
            .map(|t| format!("'{}'", t.name()))
            .collect();
        let line = format!("export const TABLES = [{}];", names.join(", "));
        assert!(
            include_str!("../js/records.js").contains(&line),
            "js/records.js must say: {line}"
        );
    }
}
