//! Batch decryption: a queue of messages decrypted with one commit, every result handed to the
//! application before it (see the crate docs for the contract).
//!
//! One loop, top to bottom, whatever runs where:
//!
//! 1. **window**: the queue is taken a window at a time (`plan.rs`: 256 messages, or one
//!    sender's whole backlog);
//! 2. **plan**: the window's messages are grouped into one run per session, each with its
//!    session and a snapshot of the prekeys and replay guard it needs (`plan.rs`);
//! 3. **run**: the runs are decrypted, apart from each other (`run.rs`), on the [`Executor`]
//!    (`executor.rs`: inline, or the app's rayon pool);
//! 4. **hand over**: the outcomes go to the application in queue order, in its chunks
//!    (`delivery.rs`); messages that are no run's are decrypted here, the ordinary way;
//! 5. **commit**: after the last window, once, everything the batch changed.
//!
//! The batch code gets what it needs of the client lent as arguments ([`Lent`]), never the
//! client itself.

mod delivery;
mod executor;
mod plan;
mod run;
mod summary;
mod types;

use std::convert::Infallible;
use std::ops::ControlFlow;

use proteus_core::{IdentityCache, IdentityKeyPair};

pub use executor::Executor;
pub(crate) use run::decrypt_one;
pub use summary::BatchSummary;
pub use types::{
    BatchError, Chunking, Decrypted, MessageId, Progress, QueuedMessage, claimed_sender,
};

use self::delivery::{BatchState, decode};
use self::plan::{Plan, Slot};
use self::summary::{Stopwatch, elapsed};
use crate::checked_identities::CheckedIdentities;
use crate::client::Client;
use crate::error::ClientError;
use crate::records::check_session_id;
use crate::replay_guard::ReplayGuard;
use crate::session_cache::SessionCache;
use crate::storage::Storage;

/// What decrypting borrows from the client: its store, identity, session cache, replay guard,
/// checked identities and executor.
pub(crate) struct Lent<'c> {
    pub(crate) storage: &'c dyn Storage,
    pub(crate) identity: &'c IdentityKeyPair,
    pub(crate) sessions: &'c mut SessionCache,
    pub(crate) replay_guard: &'c mut ReplayGuard,
    pub(crate) identities: &'c mut CheckedIdentities,
    pub(crate) executor: &'c Executor,
    /// Whether identities are pinned (`client/pinning.rs`).
    pub(crate) pinning: bool,
}

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
    /// included: its messages fail with [`StoreError::Corrupt`](crate::StoreError::Corrupt));
    /// the call fails only if the storage itself fails, and then nothing of the batch is
    /// committed — unless the failure was the sync of the commit itself (an I/O error of
    /// `fsync`): then no one can know whether the commit reached the disk, and after a crash
    /// SQLite may replay it. Nothing is lost either way: keep what `deliver` received; delivered
    /// again, the messages come back either decrypted with the same ids or as already seen
    /// (tests/io_faults.rs).
    ///
    /// The work runs on the client's [`Executor`]: on the calling thread unless the
    /// application gave the client a pool.
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
        mut deliver: F,
    ) -> Result<Vec<Decrypted>, BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        // The operation ends (without a commit) whichever way the batch fails.
        let started = Stopwatch::start();
        self.operation(|this| {
            let mut batch = BatchState::new(queue.len(), chunking);
            if let Err(e) = decrypt_windows(&mut this.lend(), queue, &mut batch, &mut deliver) {
                this.forget(batch.touched.as_slice());
                return Ok(Err(e));
            }
            let decrypted = elapsed(started);
            let committing = Stopwatch::start();
            this.commit_sessions(batch.touched.as_slice(), &batch.removed)?;
            let mut summary = batch.summary;
            summary.commit_time = elapsed(committing);
            summary.decrypt_time = decrypted.saturating_sub(summary.delivery_time);
            this.batch_done(summary);
            Ok(Ok(batch.results))
        })
        .unwrap_or_else(|e| Err(BatchError::Client(e)))
    }
}

/// THE loop: window → plan → run → hand over, for the whole queue. What it changed is in the
/// cache and in `batch` (sessions touched, prekeys used up), for the caller to commit; if it
/// fails, sessions it changed but did not hand over are out of the cache already.
fn decrypt_windows<'q, F, E>(
    lent: &mut Lent<'_>,
    queue: &[QueuedMessage<'q>],
    batch: &mut BatchState<'q>,
    deliver: &mut F,
) -> Result<(), BatchError<E>>
where
    F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
{
    let mut rest = queue;
    while !rest.is_empty() {
        let (window, after) = rest.split_at(plan::window_len(rest).min(rest.len()));
        rest = after;
        let decoded = lent.executor.map(window, decode);
        let mut plan = plan::plan_window(lent, window, &decoded, &batch.removed);
        let (identity, identities, executor) = (lent.identity, &*lent.identities, lent.executor);
        executor.for_each(&mut plan.runs, |run| {
            run.decrypt(identity, identities, executor)
        });
        hand_over_window(lent, batch, window, &decoded, &mut plan, deliver)?;
        // The runs' outcomes are with the application: their sessions go back to the cache,
        // what they used up and checked to the batch and the client.
        for run in plan.runs {
            for id in run.removed.iter() {
                batch.removed.insert(*id);
            }
            for checked in run.kept {
                lent.identities.keep(checked);
            }
            if let Some(cached) = run.cached {
                let key = run.key.unwrap_or_else(|| run.session_id.to_owned());
                lent.sessions.put(key, cached);
            }
        }
    }
    Ok(())
}

/// Hands a window's outcomes over in queue order, decrypting the messages that are no run's.
fn hand_over_window<'q, F, E>(
    lent: &mut Lent<'_>,
    batch: &mut BatchState<'q>,
    window: &[QueuedMessage<'q>],
    decoded: &plan::Decoded<'q>,
    plan: &mut Plan<'_, 'q>,
    deliver: &mut F,
) -> Result<(), BatchError<E>>
where
    F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
{
    let mut outcomes: Vec<_> = plan
        .runs
        .iter_mut()
        .map(|run| std::mem::take(&mut run.outcomes).into_iter())
        .collect();
    for ((queued, (message_id, envelope)), slot) in window.iter().zip(decoded).zip(&plan.slots) {
        let outcome = match slot {
            Slot::Ordinary => check_session_id(queued.session_id).and_then(|()| {
                let envelope = envelope.as_ref().map_err(|e| e.clone())?;
                decrypt_one(lent, queued.session_id, envelope, &mut batch.removed)
            }),
            Slot::Run(run) => match outcomes.get_mut(*run).and_then(Iterator::next) {
                Some((outcome, recorded)) => {
                    if let Some(base_key) = recorded {
                        lent.replay_guard.record(&base_key);
                    }
                    outcome
                }
                None => Err(ClientError::Internal(
                    "a batch run gave no outcome for a message".into(),
                )),
            },
        };
        batch.hand_over(queued, *message_id, envelope.as_ref(), outcome, deliver)?;
    }
    Ok(())
}
