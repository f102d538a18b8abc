//! Batch decryption: a queue of messages decrypted with one commit, every result handed to the
//! application before it (see the crate docs for the contract).

use std::convert::Infallible;
use std::ops::ControlFlow;

use proteus_core::{DecryptError, Envelope, Message};

use super::Client;
use crate::batch::{
    BatchError, Chunking, Decrypted, HandOverClock, MessageId, Progress, QueuedMessage,
};
use crate::collections::{HashSet, SortedSet};
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

    fn decrypt_batch_chunked_op<F, E>(
        &mut self,
        queue: &[QueuedMessage<'_>],
        chunking: Chunking,
        mut deliver: F,
    ) -> Result<Vec<Decrypted>, BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        let mut removed = SortedSet::new();
        let mut touched: Vec<&str> = Vec::new();
        let mut seen: HashSet<&str> = HashSet::default();
        let mut results = Vec::with_capacity(queue.len());
        let mut clock = HandOverClock::start(chunking);
        let mut handed_over = 0;
        for (i, queued) in queue.iter().enumerate() {
            // The envelope is decoded once, for its id and for decryption.
            let (message_id, decoded) = match Envelope::from_bytes(queued.envelope) {
                Ok(envelope) => (MessageId::of_decoded(&envelope), Ok(envelope)),
                Err(e) => (MessageId::of_undecodable(queued.envelope), Err(e)),
            };
            let outcome = check_session_id(queued.session_id).and_then(|()| {
                let envelope = decoded
                    .as_ref()
                    .map_err(|e| ClientError::Decode(e.clone()))?;
                self.decrypt_uncommitted(queued.session_id, envelope, &mut removed)
            });
            match &outcome {
                Ok(_) => {
                    // A backlog comes in runs of one session: the last one needs no hashing.
                    if touched.last() != Some(&queued.session_id) && seen.insert(queued.session_id)
                    {
                        touched.push(queued.session_id);
                    }
                }
                // A damaged record concerns its own session only; a failing store stops the batch.
                Err(ClientError::Store(e)) if !matches!(e, StoreError::Corrupt(_)) => {
                    let e = e.clone();
                    self.forget(&touched);
                    return Err(ClientError::from(e).into());
                }
                Err(_) => {}
            }
            let sender = match (decoded.as_ref().map(Envelope::message), &outcome) {
                (
                    Ok(Message::PreKey(pkm)),
                    Ok(_) | Err(ClientError::Decrypt(DecryptError::RemoteIdentityChanged)),
                ) => Some(pkm.identity_key),
                _ => None,
            };
            results.push(Decrypted {
                message_id,
                session_id: queued.session_id.to_owned(),
                outcome,
                sender,
            });
            let progress = Progress {
                done: i + 1,
                total: queue.len(),
            };
            let waiting = results.len() - handed_over;
            if !(waiting >= chunking.max_len
                || progress.done == progress.total
                || clock.due(waiting))
            {
                continue;
            }
            let answer = deliver(results.get(handed_over..).unwrap_or_default(), progress);
            handed_over = results.len();
            clock.handed_over();
            match answer {
                Ok(ControlFlow::Continue(())) => {}
                Ok(ControlFlow::Break(())) => {
                    self.forget(&touched);
                    return Err(ClientError::BatchAborted.into());
                }
                Err(e) => {
                    self.forget(&touched);
                    return Err(BatchError::Delivery(e));
                }
            }
        }
        self.commit_sessions(touched.iter().copied(), &removed)?;
        Ok(results)
    }
}
