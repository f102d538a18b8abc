//! Batch decryption: a queue of messages decrypted with one commit, every result handed to the
//! application before it (see the crate docs for the contract).

use crate::collections::{HashSet, SortedSet};
use std::convert::Infallible;
use std::ops::ControlFlow;

use proteus_core::{DecodeError, DecryptError, Envelope, Message, PreKeyId};

use super::Client;
use crate::batch::{
    BatchError, Chunking, Decrypted, HandOverClock, MessageId, Progress, QueuedMessage,
};
use crate::error::{ClientError, StoreError};
use crate::records::check_session_id;

impl Client {
    /// Decrypts a queue of messages (mixed senders, new sessions, reordering and duplicates
    /// welcome) and commits every change in one transaction.
    ///
    /// `deliver` receives each result, with the progress, **before** the commit: store or show
    /// the plaintext there, keyed by [`Decrypted::message_id`]. If the process dies before the
    /// commit, delivering the same envelopes again decrypts them again (same ids); after the
    /// commit they come back as duplicates. If `deliver` returns `ControlFlow::Break`, nothing is
    /// committed and [`ClientError::BatchAborted`] is returned.
    ///
    /// Per-message rejections are results, not errors (a session whose stored record is damaged
    /// included: its messages fail with [`StoreError::Corrupt`]); the call fails only if the
    /// storage itself fails, and then nothing of the batch is committed.
    pub fn decrypt_batch<F>(
        &mut self,
        queue: &[QueuedMessage<'_>],
        mut deliver: F,
    ) -> Result<Vec<Decrypted>, ClientError>
    where
        F: FnMut(&Decrypted, Progress) -> ControlFlow<()>,
    {
        let each = |chunk: &[Decrypted], progress| {
            let flow = match chunk {
                [decrypted] => deliver(decrypted, progress),
                _ => ControlFlow::Continue(()),
            };
            Ok::<_, Infallible>(flow)
        };
        self.decrypt_batch_chunked(queue, Chunking::every(1), each)
            .map_err(|e| match e {
                BatchError::Client(e) => e,
                BatchError::Delivery(never) => match never {},
            })
    }

    /// [`decrypt_batch`](Self::decrypt_batch) with the results handed over in chunks, as
    /// `chunking` says, each with the progress so far: what a binding needs, where every call
    /// into the application has a cost. The same contract: every chunk is handed over before
    /// the single commit. If `deliver` returns `Ok(ControlFlow::Break(()))`, nothing is
    /// committed and the batch fails with [`ClientError::BatchAborted`]; if it returns an
    /// error, nothing is committed and the batch fails with [`BatchError::Delivery`] holding it.
    pub fn decrypt_batch_chunked<F, E>(
        &mut self,
        queue: &[QueuedMessage<'_>],
        chunking: Chunking,
        deliver: F,
    ) -> Result<Vec<Decrypted>, BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        // The operation ends (without a commit) whichever way the batch fails.
        self.operation(|this| Ok(this.decrypt_batch_chunked_op(queue, chunking, deliver)))
            .unwrap_or_else(|e| Err(BatchError::Client(e)))
    }

    fn decrypt_batch_chunked_op<'q, F, E>(
        &mut self,
        queue: &[QueuedMessage<'q>],
        chunking: Chunking,
        mut deliver: F,
    ) -> Result<Vec<Decrypted>, BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        let mut batch = BatchState::new(queue.len(), chunking);
        #[cfg(not(target_arch = "wasm32"))]
        if self.batch_threads() > 1
            && super::parallel::has_work_to_share(queue)
            && self.batch_helpers_on_time()
        {
            self.decrypt_parallel(queue, &mut batch, &mut deliver)?;
            self.commit_sessions(batch.touched.iter().copied(), &batch.removed)?;
            return Ok(batch.results);
        }
        // The web build with `batch-lanes` decrypts runs of messages to one session ahead,
        // four at a time in SIMD lanes (client/runs.rs); outcomes are handed over in queue order.
        let mut ahead = super::runs::RunAhead::default();
        for (i, queued) in queue.iter().enumerate() {
            // The envelope is decoded once, for its id and for decryption (a run decrypted
            // ahead decoded its envelopes and hands them over with the outcomes).
            let (message_id, decoded, outcome) =
                match self.run_outcome(queue, i, &mut batch.removed, &mut ahead) {
                    Some((outcome, envelope)) => {
                        // A run decrypted ahead changed its session for messages not handed
                        // over yet: it is touched now, so that a batch that stops forgets it.
                        if ahead.changed_at(i) {
                            batch.touch(queued.session_id);
                        }
                        (MessageId::of_decoded(&envelope), Ok(envelope), outcome)
                    }
                    None => {
                        let (message_id, decoded) = decode(queued);
                        let outcome =
                            self.decrypt_queued(queued, decoded.as_ref(), &mut batch.removed);
                        (message_id, decoded, outcome)
                    }
                };
            self.hand_over(
                &mut batch,
                queued,
                message_id,
                decoded.as_ref(),
                outcome,
                &mut deliver,
            )?;
        }
        self.commit_sessions(batch.touched.iter().copied(), &batch.removed)?;
        Ok(batch.results)
    }

    /// Decrypts one queued message the ordinary way, into the cached session, uncommitted.
    pub(super) fn decrypt_queued(
        &mut self,
        queued: &QueuedMessage<'_>,
        decoded: Result<&Envelope<'_>, &DecodeError>,
        removed: &mut SortedSet<PreKeyId>,
    ) -> Result<Vec<u8>, ClientError> {
        check_session_id(queued.session_id).and_then(|()| {
            let envelope = decoded.map_err(|e| ClientError::Decode(e.clone()))?;
            self.decrypt_uncommitted(queued.session_id, envelope, removed)
        })
    }

    /// Records the outcome of the next message of the batch, in queue order, and hands the
    /// results over when a chunk is due. A failing store or an application that stops the
    /// batch ends it: the cached sessions it changed are forgotten, nothing is committed.
    pub(super) fn hand_over<'q, F, E>(
        &mut self,
        batch: &mut BatchState<'q>,
        queued: &QueuedMessage<'q>,
        message_id: MessageId,
        decoded: Result<&Envelope<'_>, &DecodeError>,
        outcome: Result<Vec<u8>, ClientError>,
        deliver: &mut F,
    ) -> Result<(), BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        let handed = batch.hand_over(queued, message_id, decoded, outcome, deliver);
        if handed.is_err() {
            self.forget(&batch.touched);
        }
        handed
    }
}

impl<'q> BatchState<'q> {
    /// [`Client::hand_over`] without forgetting the sessions when the batch ends: the caller
    /// does (`Client::forget` of `touched`) before it returns the error.
    pub(super) fn hand_over<F, E>(
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
        let batch = self;
        match &outcome {
            Ok(_) => batch.touch(queued.session_id),
            // A damaged record concerns its own session only; a failing store stops the batch.
            Err(ClientError::Store(e)) if !matches!(e, StoreError::Corrupt(_)) => {
                return Err(ClientError::from(e.clone()).into());
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
        batch.results.push(Decrypted {
            message_id,
            session_id: queued.session_id.to_owned(),
            outcome,
            sender,
        });
        let progress = Progress {
            done: batch.results.len(),
            total: batch.total,
        };
        let waiting = batch.results.len() - batch.handed_over;
        if !(waiting >= batch.chunking.max_len
            || progress.done == progress.total
            || batch.clock.due(waiting))
        {
            return Ok(());
        }
        let answer = deliver(
            batch.results.get(batch.handed_over..).unwrap_or_default(),
            progress,
        );
        batch.handed_over = batch.results.len();
        batch.clock.handed_over();
        match answer {
            Ok(ControlFlow::Continue(())) => Ok(()),
            Ok(ControlFlow::Break(())) => Err(ClientError::BatchAborted.into()),
            Err(e) => Err(BatchError::Delivery(e)),
        }
    }
}

/// A batch in progress: its results, what has been handed over, what it changed.
pub(super) struct BatchState<'q> {
    pub(super) results: Vec<Decrypted>,
    pub(super) removed: SortedSet<PreKeyId>,
    /// Sessions with a decrypted message, in the order of their first one.
    pub(super) touched: Vec<&'q str>,
    seen: HashSet<&'q str>,
    total: usize,
    handed_over: usize,
    chunking: Chunking,
    clock: HandOverClock,
}

impl<'q> BatchState<'q> {
    /// Records that the batch changed `session_id` (once; a backlog comes in runs of one
    /// session, so the last one needs no hashing).
    fn touch(&mut self, session_id: &'q str) {
        if self.touched.last() != Some(&session_id) && self.seen.insert(session_id) {
            self.touched.push(session_id);
        }
    }

    fn new(total: usize, chunking: Chunking) -> Self {
        Self {
            results: Vec::with_capacity(total),
            removed: SortedSet::new(),
            touched: Vec::new(),
            seen: HashSet::default(),
            total,
            handed_over: 0,
            chunking,
            clock: HandOverClock::start(chunking),
        }
    }
}

/// A queued envelope's id, and the envelope decoded (once, for its id and for decryption).
pub(super) fn decode<'q>(
    queued: &QueuedMessage<'q>,
) -> (MessageId, Result<Envelope<'q>, DecodeError>) {
    match Envelope::from_bytes(queued.envelope) {
        Ok(envelope) => (MessageId::of_decoded(&envelope), Ok(envelope)),
        Err(e) => (MessageId::of_undecodable(queued.envelope), Err(e)),
    }
}
