//! The Node-API addon of the Proteus client: a thin napi-rs adapter over
//! [`proteus_client::Client`] on its native SQLite store (sealed when given a store key) or in
//! memory.
//!
//! It exports one class, [`RawClient`], and a few functions. Every call converts its arguments
//! and runs the client's method off the JS thread (Node-API async work, see [`task`]),
//! resolving a Promise; no protocol or persistence logic lives here. The package's JS layer (`native.js`)
//! wraps it into the public `Client` of the web package's API: argument checks, calls one at a
//! time in order, `ProteusError`s (see [`error`]).
//!
//! The addon is no Rust library: its documentation is for its maintainers and links its private
//! modules (`cargo doc --document-private-items -p proteus-node`).

#![allow(rustdoc::private_intra_doc_links)]

mod batch;
mod calls;
mod error;
mod fanout;
#[cfg(feature = "fault-injection")]
mod faults;
mod feed;
mod import;
mod log;
mod pinning;
mod secret;
mod store;
mod task;

#[cfg(feature = "fault-injection")]
pub use faults::inject_delivery_fault;
pub use log::{LogLine, set_log_level, take_log};
pub use store::{delete_store, rekey_store, seal_store};

use std::sync::{Arc, Mutex};

use napi::Env;
use napi::bindgen_prelude::{
    AsyncTask, Buffer, FnArgs, Function, PromiseRaw, Uint8Array, Uint32Array, spawn_blocking,
};
use napi_derive::napi;
use proteus_client::{Client, ClientError, ImportOptions, MessageId};
use proteus_core::PreKeyBundle;

use crate::batch::{RawBatchChunk, RawBatchSummary};
pub use crate::error::RawFailure;
use crate::error::{Failure, Outcome, internal, outcome};
use crate::task::{Call, Shared, on_blocking_pool, run};

/// `result` with its error as it crosses into JS (see [`error`]).
fn js<T>(result: Result<T, ClientError>) -> Result<T, Failure> {
    result.map_err(Failure::from)
}

fn bytes(vec: Vec<u8>) -> Uint8Array {
    Uint8Array::from(vec)
}

/// A one-time prekey's bundle, to publish.
#[napi(object)]
pub struct RawPrekeyBundle {
    /// The prekey's id.
    pub id: u32,
    /// The bundle's CBOR.
    pub bundle: Uint8Array,
}

fn bundle_object(bundle: &PreKeyBundle) -> RawPrekeyBundle {
    RawPrekeyBundle {
        id: u32::from(bundle.prekey_id().value()),
        bundle: bytes(bundle.to_bytes()),
    }
}

/// A client on a store; see the crate docs. Made by [`open_store`] or [`in_memory`].
#[napi]
pub struct RawClient {
    shared: Shared,
    created: bool,
}

impl RawClient {
    fn new(client: Client, created: bool) -> Self {
        Self {
            shared: Arc::new(Mutex::new(Some(client))),
            created,
        }
    }
}

/// A client whose records live in memory only.
#[napi]
pub async fn in_memory(batch_threads: Option<u32>) -> napi::Result<Outcome<RawClient>> {
    let made = match spawn_blocking(Client::in_memory).await {
        Ok(client) => js(client),
        Err(e) => Err(internal(&e.to_string())),
    };
    outcome(made.map(|mut client| {
        store::set_batch_threads(&mut client, batch_threads);
        RawClient::new(client, true)
    }))
}

/// Opens the SQLite store at `path`, sealed with `store_key` (32 bytes) if given; creates it
/// with a new identity if there is none and `create` is true (else StoreNotFound, 504).
/// `batch_threads` (checked 1 to 256 by the JS layer) sets the client's batch threads
/// (default: the processor's parallelism, at most 4). With the app's commit counter (the count
/// its `load()` gave, and its `store`), a store restored from an older copy is refused
/// (StoreRolledBack, 511).
#[napi(
    ts_args_type = "path: string, storeKey: Uint8Array | undefined | null, create: boolean, batchThreads: number | undefined | null, counterLoaded?: number, counterStore?: (count: number) => void",
    ts_return_type = "Promise<RawClient | RawFailure>"
)]
pub fn open_store<'env>(
    env: &'env Env,
    path: String,
    store_key: Option<Uint8Array>,
    create: bool,
    batch_threads: Option<u32>,
    counter_loaded: Option<i64>,
    counter_store: Option<Function<'_, FnArgs<(i64,)>, ()>>,
) -> napi::Result<PromiseRaw<'env, Outcome<RawClient>>> {
    let key = store_key.map(|k| store::key(&k)).transpose()?;
    let counter = match (counter_loaded, counter_store.as_ref()) {
        (Some(loaded), Some(store)) => Some(store::JsCounter::new(loaded, store)?),
        _ => None,
    };
    env.spawn_future(async move {
        let opened = match spawn_blocking(move || {
            store::open(&path, key.as_ref(), create, counter.as_ref())
        })
        .await
        {
            Ok(opened) => js(opened),
            Err(e) => Err(internal(&e.to_string())),
        };
        outcome(opened.map(|(mut client, created)| {
            store::set_batch_threads(&mut client, batch_threads);
            RawClient::new(client, created)
        }))
    })
}

/// The id batch results carry for an envelope (lowercase hex of its MAC).
#[napi]
pub fn message_id(envelope: &[u8]) -> String {
    MessageId::of(envelope).to_string()
}

/// The identity fingerprint in a prekey bundle.
#[napi]
pub fn bundle_fingerprint(bundle: &[u8]) -> napi::Result<Outcome<String>> {
    outcome(
        PreKeyBundle::from_bytes(bundle)
            .map(|bundle| bundle.identity_key().fingerprint())
            .map_err(|e| ClientError::from(e).into()),
    )
}

/// The sender's identity fingerprint in a PreKeyMessage envelope; `undefined` otherwise.
#[napi]
pub fn prekey_message_fingerprint(envelope: &[u8]) -> napi::Result<Outcome<Option<String>>> {
    outcome(
        proteus_client::claimed_sender(envelope)
            .map(|claimed| claimed.map(|key| key.fingerprint()))
            .map_err(|e| ClientError::from(e).into()),
    )
}

#[napi]
impl RawClient {
    /// Whether opening found no identity and made a new one.
    #[napi(getter)]
    pub fn created(&self) -> bool {
        self.created
    }

    /// Makes sure what earlier calls deleted is gone from the disk; whether it is (`false`
    /// while another connection reads an older snapshot).
    #[napi]
    pub fn erase_deleted(&self) -> AsyncTask<Call<bool>> {
        run(&self.shared, |c| js(c.erase_deleted()))
    }

    /// Encrypts `plaintexts[i]` for `session_ids[i]`, with one commit for all.
    #[napi]
    pub fn encrypt_batch(
        &self,
        session_ids: Vec<String>,
        plaintexts: Vec<Uint8Array>,
    ) -> napi::Result<AsyncTask<Call<Vec<Uint8Array>>>> {
        if session_ids.len() != plaintexts.len() {
            return Err(napi::Error::from_reason("one session id per plaintext"));
        }
        let plaintexts: Vec<Vec<u8>> = plaintexts.iter().map(|p| p.to_vec()).collect();
        Ok(run(&self.shared, move |c| {
            let messages: Vec<(&str, &[u8])> = session_ids
                .iter()
                .map(String::as_str)
                .zip(plaintexts.iter().map(Vec::as_slice))
                .collect();
            Ok(js(c.encrypt_batch(&messages))?
                .into_iter()
                .map(bytes)
                .collect())
        }))
    }

    /// Encrypts one plaintext for each session with one commit: a result per recipient,
    /// packed (see [`fanout`]).
    #[napi]
    pub fn encrypt_for(
        &self,
        session_ids: Vec<String>,
        plaintext: Uint8Array,
    ) -> AsyncTask<Call<fanout::RawFanout>> {
        let plaintext = plaintext.to_vec();
        run(&self.shared, move |c| {
            let ids: Vec<&str> = session_ids.iter().map(String::as_str).collect();
            Ok(fanout::RawFanout::of(&js(c.encrypt_for(&ids, &plaintext))?))
        })
    }

    /// Decrypts message `i` (`envelopes` split by `lengths`) of session
    /// `session_ids[index[i]]` with one commit, handing all the results to `feed` once
    /// committed and resolving after that (the results are freed in between); see [`feed`].
    #[napi(
        ts_args_type = "sessionIds: string[], index: Uint32Array, envelopes: Buffer, lengths: Uint32Array, feed: (error: Error | null, chunk?: RawBatchChunk) => void"
    )]
    pub fn decrypt_batch(
        &self,
        session_ids: Vec<String>,
        index: Uint32Array,
        envelopes: Buffer,
        lengths: Uint32Array,
        feed: Function<'_, RawBatchChunk, ()>,
    ) -> napi::Result<AsyncTask<Call<RawBatchSummary>>> {
        let feed = feed::feed(&feed)?;
        let packed = batch::Packed::new(session_ids, &index, &envelopes, &lengths);
        Ok(run(&self.shared, move |c| {
            feed::decrypt_fed(c, &packed, &feed)
        }))
    }

    /// As [`decrypt_batch`](Self::decrypt_batch), handing the results to `sink` in chunks
    /// before the commit, and resolving to nothing; see [`batch`].
    #[napi(
        ts_args_type = "sessionIds: string[], index: Uint32Array, envelopes: Buffer, lengths: Uint32Array, sink: (chunk: RawBatchChunk) => Promise<boolean>",
        ts_return_type = "Promise<RawBatchSummary | RawFailure>"
    )]
    pub fn decrypt_batch_to<'env>(
        &self,
        env: &'env Env,
        session_ids: Vec<String>,
        index: Uint32Array,
        envelopes: Buffer,
        lengths: Uint32Array,
        sink: batch::Sink,
    ) -> napi::Result<PromiseRaw<'env, Outcome<RawBatchSummary>>> {
        let packed = batch::Packed::new(session_ids, &index, &envelopes, &lengths);
        let shared = self.shared.clone();
        env.spawn_future(async move {
            on_blocking_pool(&shared, move |c| batch::decrypt_to(c, &packed, &sink)).await
        })
    }

    /// Imports a cryptobox store in one commit (see `proteus_client::Client::import_cryptobox`):
    /// its identity, then its prekeys and sessions, each as ids and their bytes one after the
    /// other, split by lengths. Resolves to the report.
    #[napi(
        ts_args_type = "identity: Uint8Array, prekeyIds: string[], prekeys: Uint8Array, prekeyLengths: Uint32Array, sessionIds: string[], sessions: Uint8Array, sessionLengths: Uint32Array, skipBadRecords: boolean, onProgress?: (done: number, total: number) => void"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn import_cryptobox(
        &self,
        identity: Uint8Array,
        prekey_ids: Vec<String>,
        prekeys: Uint8Array,
        prekey_lengths: Uint32Array,
        session_ids: Vec<String>,
        sessions: Uint8Array,
        session_lengths: Uint32Array,
        skip_bad_records: bool,
        on_progress: Option<Function<'_, FnArgs<(u32, u32)>, ()>>,
    ) -> napi::Result<AsyncTask<Call<import::RawImportReport>>> {
        let source = import::source(
            &identity,
            (prekey_ids, &prekeys, &prekey_lengths),
            (session_ids, &sessions, &session_lengths),
        )?;
        let progress = import::progress(on_progress.as_ref())?;
        Ok(run(&self.shared, move |c| {
            let report = c.import_cryptobox(
                &source,
                ImportOptions::default().skip_bad_records(skip_bad_records),
                &mut |p| import::report(progress.as_ref(), p),
            );
            Ok(js(report)?.into())
        }))
    }

    /// Imports the cryptobox store in the directory `path` (either of Wire's layouts) in one
    /// commit; resolves to the report.
    #[napi(
        ts_args_type = "path: string, skipBadRecords: boolean, onProgress?: (done: number, total: number) => void"
    )]
    pub fn import_cryptobox_directory(
        &self,
        path: String,
        skip_bad_records: bool,
        on_progress: Option<Function<'_, FnArgs<(u32, u32)>, ()>>,
    ) -> napi::Result<AsyncTask<Call<import::RawImportReport>>> {
        let progress = import::progress(on_progress.as_ref())?;
        Ok(run(&self.shared, move |c| {
            let report = c.import_cryptobox_directory(
                &path,
                ImportOptions::default().skip_bad_records(skip_bad_records),
                &mut |p| import::report(progress.as_ref(), p),
            );
            Ok(js(report)?.into())
        }))
    }

    /// Drops the client: its keys are wiped and the store is closed.
    #[napi]
    pub async fn close(&self) -> napi::Result<Outcome<()>> {
        let shared = self.shared.clone();
        let closed = spawn_blocking(move || {
            let client = shared.lock().map(|mut guard| guard.take());
            drop(client);
        })
        .await;
        outcome(closed.map_err(|e| internal(&e.to_string())))
    }
}
