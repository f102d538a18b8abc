//! Everything the application sees of a batch: the results in queue order, the progress, the
//! chunks they are handed over in, and what the batch changed (to commit, or to forget if it
//! stops). [`BatchState::hand_over`] is the only place a result reaches the application.

use std::ops::ControlFlow;

use proteus_core::{DecodeError, DecryptError, Envelope, Message, PreKeyId};

use super::QueuedMessage;
use super::summary::{BatchSummary, Stopwatch, elapsed};
use super::types::{BatchError, Chunking, Decrypted, HandOverClock, MessageId, Progress};
use crate::collections::{OrderedIds, SortedSet};
use crate::error::{ClientError, StoreError};

/// A batch in progress: its results, what has been handed over, what it changed.
pub(crate) struct BatchState<'q> {
    pub(crate) results: Vec<Decrypted>,
    /// One-time prekeys used up by the batch, deleted by its commit.
    pub(crate) removed: SortedSet<PreKeyId>,
    /// Sessions with a decrypted message, in the order of their first one.
    pub(crate) touched: OrderedIds<'q>,
    /// The outcomes counted, and the time in `deliver` (the rest is filled in at the end).
    pub(crate) summary: BatchSummary,
    total: usize,
    handed_over: usize,
    chunking: Chunking,
    clock: HandOverClock,
}

impl<'q> BatchState<'q> {
    pub(crate) fn new(total: usize, chunking: Chunking) -> Self {
        Self {
            results: Vec::with_capacity(total),
            removed: SortedSet::new(),
            touched: OrderedIds::default(),
            summary: BatchSummary::default(),
            total,
            handed_over: 0,
            chunking,
            clock: HandOverClock::start(chunking),
        }
    }

    /// Records the outcome of the next message of the batch, in queue order, and hands the
    /// results over when a chunk is due. A failing store or an application that stops the
    /// batch ends it with an error; the caller then forgets what the batch changed.
    pub(crate) fn hand_over<F, E>(
        &mut self,
        queued: &QueuedMessage<'q>,
        message_id: MessageId,
        decoded: Result<&Envelope<'_>, &DecodeError>,
        outcome: Result<Vec<u8>, ClientError>,
        deliver: &mut F,
    ) -> Result<(), BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        match &outcome {
            Ok(_) => {
                self.touched.add(queued.session_id);
            }
            // A damaged record concerns its own session only; a failing store stops the batch,
            // and so does a broken invariant.
            Err(ClientError::Store(e)) if !matches!(e, StoreError::Corrupt(_)) => {
                return Err(ClientError::from(e.clone()).into());
            }
            Err(ClientError::Internal(why)) => {
                return Err(ClientError::Internal(why.clone()).into());
            }
            Err(_) => {}
        }
        let sender = match (decoded.map(Envelope::message), &outcome) {
            (
                Ok(Message::PreKey(pkm)),
                Ok(_) | Err(ClientError::Decrypt(DecryptError::RemoteIdentityChanged)),
            ) => Some(pkm.identity_key),
            _ => None,
        };
        self.summary.count(&outcome);
        self.results.push(Decrypted {
            message_id,
            session_id: queued.session_id.to_owned(),
            outcome,
            sender,
        });
        let progress = Progress {
            done: self.results.len(),
            total: self.total,
        };
        let waiting = self.results.len() - self.handed_over;
        if !(waiting >= self.chunking.max_len
            || progress.done == progress.total
            || self.clock.due(waiting))
        {
            return Ok(());
        }
        let delivering = Stopwatch::start();
        let answer = deliver(
            self.results.get(self.handed_over..).unwrap_or_default(),
            progress,
        );
        self.summary.delivery_time += elapsed(delivering);
        self.handed_over = self.results.len();
        self.clock.handed_over();
        match answer {
            Ok(ControlFlow::Continue(())) => Ok(()),
            Ok(ControlFlow::Break(())) => Err(ClientError::BatchAborted.into()),
            Err(e) => Err(BatchError::Delivery(e)),
        }
    }
}

/// A queued envelope's id, and the envelope decoded (once, for its id and for decryption).
pub(crate) fn decode<'q>(
    queued: &QueuedMessage<'q>,
) -> (MessageId, Result<Envelope<'q>, DecodeError>) {
    match Envelope::from_bytes(queued.envelope) {
        Ok(envelope) => (MessageId::of_decoded(&envelope), Ok(envelope)),
        Err(e) => (MessageId::of_undecodable(queued.envelope), Err(e)),
    }
}
