//! decryptBatch: the queue comes in packed (distinct session ids, an id index per message, the
//! envelopes back to back in one JS buffer, read where it lies, and their lengths) and the
//! results go out packed in chunks, as the web package's do (ffi/web/src/delivery.rs): a few
//! conversions per chunk rather than several per message.
//!
//! With a sink (`decryptBatchTo`), the client decrypts on a worker thread and hands each chunk to the JS sink
//! through a threadsafe function, waiting for the Promise it returns before it goes on. The
//! client commits only after the sink accepted the last chunk (the JS layer resolves that one
//! once the callback's own promises settled), as the batch contract requires: false stops the
//! batch (BatchAborted, 108), a rejection stops it too, and nothing is committed either way.
//! Without a sink (`decryptBatch`), all the results go to JS as one chunk once committed, through
//! a threadsafe function (see [`feed`](crate::feed)).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::time::Duration;

use napi::Status;
use napi::bindgen_prelude::{Buffer, Promise, Uint32Array, block_on};
use napi::threadsafe_function::ThreadsafeFunction;
use napi_derive::napi;
use proteus_client::{BatchError, BatchSummary, Chunking, Client, Decrypted, QueuedMessage};
use proteus_js_results::PackedResults;

use crate::error::Failure;

/// Results per crossing into JS: a 1000-message batch crosses 4 times, not 1000. Each crossing
/// is two thread hand-overs (to JS and back), about 30 µs on a loaded 2-core machine, where 256
/// established-session messages take about 0.45 ms to decrypt; 64 (the web package's chunk)
/// made a 1000-message batch with a callback about 1 ms slower than one without.
const CHUNK: usize = 256;

/// A chunk goes to JS sooner once this much time passed since the last (new sessions are slower
/// to decrypt): a progress display still moves every frame or so.
const CHUNK_INTERVAL: Duration = Duration::from_millis(16);

/// The JS function that receives the chunks and resolves whether to go on.
pub(crate) type Sink =
    ThreadsafeFunction<RawBatchChunk, Promise<bool>, RawBatchChunk, Status, false>;

/// The results of messages `first`, `first + 1`, … of a batch, packed as the web package packs
/// them (`proteus_js_results::PackedResults`, which documents the fields).
#[napi(object)]
pub struct RawBatchChunk {
    /// The index of the first result in the batch.
    pub first: u32,
    /// (code, plaintext length, names a sender) per message.
    pub meta: Uint32Array,
    /// The message ids in hex.
    pub ids: String,
    /// The plaintexts, back to back from the buffer's start (which may hold more after them).
    pub plaintexts: Buffer,
    /// The sender fingerprints of the messages that name one.
    pub senders: String,
}

impl RawBatchChunk {
    /// The `results` of messages `first`, `first + 1`, …, in buffers made at their final size
    /// (no growing, no copy when they cross into JS).
    fn of(first: usize, results: &[Decrypted]) -> Self {
        let size = results
            .iter()
            .map(|d| d.outcome.as_ref().map_or(0, Vec::len))
            .sum();
        let mut packed = PackedResults::for_messages(results.len());
        let mut plaintexts = Vec::with_capacity(size);
        for decrypted in results {
            plaintexts.extend_from_slice(packed.push_leaving_plaintext(decrypted));
        }
        Self::from_parts(first, packed, plaintexts)
    }

    /// Results packed by the caller, their plaintexts in `plaintexts`.
    pub(crate) fn from_parts(first: usize, packed: PackedResults, plaintexts: Vec<u8>) -> Self {
        Self {
            first: u32::try_from(first).unwrap_or(u32::MAX),
            meta: Uint32Array::from(packed.meta),
            ids: packed.ids,
            plaintexts: Buffer::from(plaintexts),
            senders: packed.senders,
        }
    }
}

/// The queue as it came from JS: `envelopes` split by `lengths`, message `i` of session
/// `session_ids[index[i]]`.
pub(crate) struct Packed {
    pub(crate) session_ids: Vec<String>,
    pub(crate) index: Vec<u32>,
    /// A copy of the JS buffer, made on the JS thread when the call is made: the work runs on
    /// another thread, and reading JS memory there would be sound only while the JS layer
    /// left the buffer alone until the call settled (a convention, not a guarantee).
    pub(crate) envelopes: Vec<u8>,
    pub(crate) lengths: Vec<u32>,
}

impl Packed {
    /// The queue's parts; the small ones copied out of JS memory.
    pub(crate) fn new(
        session_ids: Vec<String>,
        index: &[u32],
        envelopes: &[u8],
        lengths: &[u32],
    ) -> Self {
        Self {
            session_ids,
            index: index.to_vec(),
            envelopes: envelopes.to_vec(),
            lengths: lengths.to_vec(),
        }
    }

    pub(crate) fn queue(&self) -> napi::Result<Vec<QueuedMessage<'_>>> {
        let range = || napi::Error::new(Status::InvalidArg, "the packed batch is inconsistent");
        if self.index.len() != self.lengths.len() {
            return Err(range());
        }
        let mut rest: &[u8] = &self.envelopes;
        let mut queue = Vec::with_capacity(self.index.len());
        for (i, len) in self.index.iter().zip(&self.lengths) {
            let session_id = usize::try_from(*i)
                .ok()
                .and_then(|i| self.session_ids.get(i))
                .ok_or_else(range)?;
            let len = usize::try_from(*len).map_err(|_| range())?;
            let (envelope, tail) = rest.split_at_checked(len).ok_or_else(range)?;
            rest = tail;
            queue.push(QueuedMessage {
                session_id,
                envelope,
            });
        }
        Ok(queue)
    }
}

/// What a batch did (`Client::last_batch_summary`), as the web package's `BatchSummary`.
#[napi(object)]
pub struct RawBatchSummary {
    /// Messages in the batch.
    pub total: u32,
    /// Messages that decrypted.
    pub decrypted: u32,
    /// Duplicates and outdated messages.
    pub already_seen: u32,
    /// Messages whose key had been evicted (214).
    pub key_evicted: u32,
    /// The other rejections: the sum of `failed_by_code`.
    pub failed: u32,
    /// Code (as a string key) to count.
    pub failed_by_code: HashMap<String, u32>,
    /// Milliseconds decrypting.
    pub decrypt_ms: f64,
    /// Milliseconds in the delivery callback.
    pub delivery_ms: f64,
    /// Milliseconds committing.
    pub commit_ms: f64,
}

impl RawBatchSummary {
    /// The summary of the batch `client` just committed.
    pub(crate) fn of(client: &Client) -> Self {
        let summary = client.last_batch_summary().cloned().unwrap_or_default();
        let int = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let BatchSummary {
            total,
            decrypted,
            already_seen,
            key_evicted,
            ref failed,
            decrypt_time,
            delivery_time,
            commit_time,
            ..
        } = summary;
        Self {
            total: int(total),
            decrypted: int(decrypted),
            already_seen: int(already_seen),
            key_evicted: int(key_evicted),
            failed: int(summary.failed_total()),
            failed_by_code: failed
                .iter()
                .map(|(code, n)| (code.to_string(), int(*n)))
                .collect(),
            decrypt_ms: ms(decrypt_time),
            delivery_ms: ms(delivery_time),
            commit_ms: ms(commit_time),
        }
    }
}

/// Runs the batch on `client`, handing the results to `sink` in chunks before the commit (on a
/// worker thread: this blocks while JS handles each chunk).
pub(crate) fn decrypt_to(
    client: &mut Client,
    packed: &Packed,
    sink: &Sink,
) -> Result<RawBatchSummary, Failure> {
    let queue = packed.queue()?;
    let result = client.decrypt_batch_chunked(
        &queue,
        Chunking::every(CHUNK).with_interval(CHUNK_INTERVAL),
        |results, progress| {
            let chunk = RawBatchChunk::of(progress.done - results.len(), results);
            let go_on = block_on(async { sink.call_async(chunk).await?.await })?;
            Ok(if go_on {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            })
        },
    );
    match result {
        Ok(_) => Ok(RawBatchSummary::of(client)),
        Err(BatchError::Client(e)) => Err(e.into()),
        Err(BatchError::Delivery(e)) => Err(Failure::Js(e)),
    }
}

#[cfg(test)]
mod tests {
    use proteus_client::{Client, ClientError, Decrypted, MessageId};
    use proteus_core::{DecryptError, IdentityKey};
    use proteus_js_results::PackedResults;

    use super::{Packed, RawBatchChunk};

    fn packed(index: Vec<u32>, lengths: Vec<u32>) -> Packed {
        Packed {
            session_ids: vec!["a".into(), "b".into()],
            index,
            envelopes: vec![1, 2, 3, 4, 5],
            lengths,
        }
    }

    /// Results of all kinds: plaintexts (one empty), a failure, a named sender.
    fn results(sender: IdentityKey) -> Vec<Decrypted> {
        let result = |n: u8, outcome, sender| Decrypted {
            message_id: MessageId::of(&[n]),
            session_id: "a".into(),
            outcome,
            sender,
        };
        vec![
            result(1, Ok(vec![7; 5]), Some(sender)),
            result(
                2,
                Err(ClientError::Decrypt(DecryptError::DuplicateMessage)),
                None,
            ),
            result(3, Ok(Vec::new()), None),
            result(4, Ok(vec![8, 9]), None),
        ]
    }

    #[test]
    fn a_chunk_reads_as_the_web_package_packs_it() {
        let sender = *Client::in_memory().expect("a client").identity();
        let expected = PackedResults::of(&results(sender));
        let chunk = RawBatchChunk::of(0, &results(sender));
        assert_eq!(chunk.first, 0);
        assert_eq!(&chunk.meta[..], &expected.meta[..]);
        assert_eq!(chunk.ids, expected.ids);
        assert_eq!(chunk.senders, expected.senders);
        assert_eq!(&chunk.plaintexts[..], &[7, 7, 7, 7, 7, 8, 9][..]);
    }

    #[test]
    fn a_packed_queue_splits_into_its_messages() {
        let p = packed(vec![1, 0, 1], vec![2, 0, 3]);
        let queue = p.queue().expect("consistent");
        let got: Vec<(&str, &[u8])> = queue.iter().map(|m| (m.session_id, m.envelope)).collect();
        assert_eq!(
            got,
            [("b", &[1, 2][..]), ("a", &[][..]), ("b", &[3, 4, 5][..])]
        );
    }

    #[test]
    fn an_inconsistent_packed_queue_is_an_error_not_a_panic() {
        // An index past the session ids, lengths past the bytes, counts that differ.
        for p in [
            packed(vec![2], vec![1]),
            packed(vec![0, 0], vec![3, 3]),
            packed(vec![0], vec![1, 1]),
        ] {
            assert!(p.queue().is_err());
        }
    }
}
