//! Encrypting and decrypting: single messages, batches and fan-out.

use std::ops::ControlFlow;
use std::time::Duration;

use proteus_client::{BatchError, Chunking};

use crate::batch::{BatchResults, QueuedMessages};
use crate::bytes::Bytes;
use crate::client::{Client, count};
use crate::error::ProteusError;
use crate::types::{BatchDelivery, BatchProgress, BatchSummary, FanoutResult, OutgoingMessage};

#[uniffi::export]
impl Client {
    /// Encrypts several messages (for one or several sessions) with one commit, made before any
    /// envelope is returned. Envelopes come back in order; if one fails, none is returned and
    /// nothing is committed.
    pub async fn encrypt_batch(
        &self,
        messages: Vec<OutgoingMessage>,
    ) -> Result<Vec<Bytes>, ProteusError> {
        self.run(move |c| {
            let borrowed: Vec<(&str, &[u8])> = messages
                .iter()
                .map(|m| (m.session_id.as_str(), &*m.plaintext))
                .collect();
            Ok(c.encrypt_batch(&borrowed)?.into_iter().map(Bytes).collect())
        })
        .await
    }

    /// Encrypts one plaintext for each of `session_ids` (every device of a conversation), with
    /// one commit made before any envelope is returned. Each recipient gets a result, in order:
    /// a missing or broken session is an `error` in its place and the others are encrypted.
    /// The call fails as a whole only if the commit fails (then nothing is stored). Linear in
    /// the number of recipients.
    pub async fn encrypt_for(
        &self,
        session_ids: Vec<String>,
        plaintext: Bytes,
    ) -> Result<Vec<FanoutResult>, ProteusError> {
        self.run(move |c| {
            let borrowed: Vec<&str> = session_ids.iter().map(String::as_str).collect();
            let results = c.encrypt_for(&borrowed, &plaintext)?;
            Ok(session_ids
                .into_iter()
                .zip(results)
                .map(|(session_id, result)| match result {
                    Ok(envelope) => FanoutResult {
                        session_id,
                        envelope: Some(Bytes(envelope)),
                        error: None,
                    },
                    Err(e) => FanoutResult {
                        session_id,
                        envelope: None,
                        error: Some(e.into()),
                    },
                })
                .collect())
        })
        .await
    }

    /// Decrypts a queue of messages (mixed senders, new sessions, duplicates welcome) and commits
    /// every change in one transaction, **after** `delivery` has received every result.
    ///
    /// Results reach `delivery` in queue order, in chunks: a chunk is delivered when it holds
    /// `max_chunk` results, when `progress_interval_ms` have passed since the last delivery (0:
    /// never for that reason), and at the end. Each result carries its stable message id. If
    /// the process dies before the commit, the same envelopes decrypt again (same ids) the next
    /// time; after the commit they come back as `already_seen`. So no message is lost, and
    /// deduplicating by message id makes delivery exactly-once.
    ///
    /// Per-message rejections are results, not exceptions; the call throws only if the store
    /// fails, or `delivery` returns false (`BatchAborted`, 108) or throws: then nothing of the
    /// batch is committed. Cancelling the call (the coroutine or the Task) stops the batch at
    /// its next chunk, before the commit: nothing of it is committed either. `delivery` runs on
    /// a worker thread of the library, while the client is busy: see [`BatchDelivery`].
    #[uniffi::method(default(max_chunk = 1000, progress_interval_ms = 100))]
    pub async fn decrypt_batch(
        &self,
        queue: QueuedMessages,
        delivery: Box<dyn BatchDelivery>,
        max_chunk: i32,
        progress_interval_ms: i64,
    ) -> Result<BatchSummary, ProteusError> {
        let max_chunk = match count("maxChunk", max_chunk, usize::MAX)? {
            0 => return Err(ProteusError::out_of_range("maxChunk", 0)),
            n => n,
        };
        let interval = u64::try_from(progress_interval_ms)
            .map_err(|_| ProteusError::out_of_range("progressIntervalMs", progress_interval_ms))?;
        let mut chunking = Chunking::every(max_chunk);
        if interval > 0 {
            chunking = chunking.with_interval(Duration::from_millis(interval));
        }
        // Room for a chunk's results: about the size of its envelopes, plus the hex ids.
        let per_message = queue.byte_len() / queue.len().max(1) + 80;
        let chunk_bytes = per_message.saturating_mul(chunking.max_len.min(queue.len()));
        self.run_cancellable(move |client, cancel| {
            let borrowed: Vec<proteus_client::QueuedMessage<'_>> = queue
                .iter()
                .map(|(session_id, envelope)| proteus_client::QueuedMessage {
                    session_id,
                    envelope,
                })
                .collect();
            let outcome = client.decrypt_batch_chunked(&borrowed, chunking, |chunk, progress| {
                if cancel.is_cancelled() {
                    return Ok(ControlFlow::Break(()));
                }
                let mut results = BatchResults::with_capacity(chunk_bytes);
                for decrypted in chunk {
                    results.push(decrypted);
                }
                let progress = BatchProgress {
                    done: i32::try_from(progress.done).unwrap_or(i32::MAX),
                    total: i32::try_from(progress.total).unwrap_or(i32::MAX),
                };
                let go_on = delivery.deliver(results, progress)?;
                // Cancelled while the callback ran: still before the commit.
                Ok(match go_on && !cancel.is_cancelled() {
                    true => ControlFlow::Continue(()),
                    false => ControlFlow::Break(()),
                })
            });
            match outcome {
                Ok(_) => Ok(client
                    .last_batch_summary()
                    .map(BatchSummary::from)
                    .unwrap_or_default()),
                Err(BatchError::Client(e)) => Err(e.into()),
                Err(BatchError::Delivery(thrown)) => Err(thrown),
            }
        })
        .await
    }
}
