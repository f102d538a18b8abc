//! decryptBatch's delivery: the client decrypts on a worker thread and hands each chunk of
//! results to the JS sink through a threadsafe function, waiting for the Promise it returns
//! before it goes on. The client commits only after the sink accepted the last chunk (the JS
//! layer resolves that one once the callback's own promises settled), as the batch contract
//! requires: false stops the batch (BatchAborted, 108), a rejection stops it too and nothing is
//! committed either way.

use std::ops::ControlFlow;

use napi::Status;
use napi::bindgen_prelude::{Promise, Uint8Array, block_on};
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use proteus_client::{BatchError, Chunking, Client, Decrypted, QueuedMessage};

use crate::error::client_error;

/// Results per crossing into JS: a 1000-message batch crosses 16 times, not 1000.
const CHUNK: usize = 64;

/// The JS function that receives the chunks and resolves whether to go on.
pub(crate) type Sink =
    ThreadsafeFunction<RawBatchChunk, Promise<bool>, RawBatchChunk, Status, false>;

/// The results of messages `first`, `first + 1`, … of a batch.
#[napi(object)]
pub struct RawBatchChunk {
    /// The index of the first result in the batch.
    pub first: u32,
    /// The results, in order.
    pub results: Vec<RawBatchResult>,
}

/// The result of one message: a plaintext or the error's code and kind.
#[napi(object)]
pub struct RawBatchResult {
    /// Lowercase hex of the envelope's MAC.
    pub message_id: String,
    /// The plaintext, if it decrypted.
    pub plaintext: Option<Uint8Array>,
    /// The error's code, if it did not.
    pub error_code: Option<u32>,
    /// The error's kind, if it did not.
    pub error_kind: Option<String>,
    /// The identity fingerprint a PreKeyMessage carries.
    pub sender: Option<String>,
}

fn result_object(decrypted: &Decrypted) -> RawBatchResult {
    let (plaintext, error_code, error_kind) = match &decrypted.outcome {
        Ok(plaintext) => (Some(Uint8Array::from(plaintext.clone())), None, None),
        Err(e) => (None, Some(u32::from(e.code())), Some(e.kind().to_owned())),
    };
    RawBatchResult {
        message_id: decrypted.message_id.to_string(),
        plaintext,
        error_code,
        error_kind,
        sender: decrypted.sender.map(|key| key.fingerprint()),
    }
}

/// Runs the batch on `client` (on a worker thread: this blocks while JS handles each chunk).
/// Without a sink, the results come back once committed.
pub(crate) fn decrypt(
    client: &mut Client,
    session_ids: &[String],
    envelopes: &[Vec<u8>],
    sink: Option<&Sink>,
) -> napi::Result<Option<Vec<RawBatchResult>>> {
    let queue: Vec<QueuedMessage<'_>> = session_ids
        .iter()
        .zip(envelopes)
        .map(|(session_id, envelope)| QueuedMessage {
            session_id,
            envelope,
        })
        .collect();
    let Some(sink) = sink else {
        let results = client
            .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
            .map_err(|e| client_error(&e))?;
        return Ok(Some(results.iter().map(result_object).collect()));
    };
    let result =
        client.decrypt_batch_chunked(&queue, Chunking::every(CHUNK), |results, progress| {
            let chunk = RawBatchChunk {
                first: u32::try_from(progress.done - results.len()).unwrap_or(u32::MAX),
                results: results.iter().map(result_object).collect(),
            };
            let go_on = block_on(async { sink.call_async(chunk).await?.await })?;
            Ok(if go_on {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        });
    match result {
        Ok(_) => Ok(None),
        Err(BatchError::Client(e)) => Err(client_error(&e)),
        Err(BatchError::Delivery(e)) => Err(e),
    }
}
