//! Batch decryption on a small thread pool (native builds; see [`Client::set_batch_threads`]).
//!
//! The queue is taken a window at a time. The messages of a window are grouped by session;
//! each session's run is a task (`client/task.rs`) that owns the session while it decrypts, on
//! the calling thread or a helper (`client/share.rs`: the caller works too, helpers join as they
//! come). A window of one session's run (a backlog from one sender) is one task on the calling
//! thread, which plans the run while the helpers open what it planned (`client/pipeline.rs`),
//! and hands each result over as soon as it is applied. What sessions share — the prekeys, the
//! last-resort replay guard — is read before the tasks start, and a session that could see
//! another one's change within the window (two sessions naming one one-time prekey or one
//! last-resort handshake) is not a task: its messages go the ordinary way, in queue order. The
//! results are handed over in queue order, exactly as the sequential path does, so the
//! delivery, the chunks, the abort and the single commit after the last hand-over are
//! unchanged; so are the results and what is stored.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::Client;
use super::batch::{BatchState, decode};
use super::pace::Helpers;
use super::share::{share, share_after};
use super::task::{SessionTask, TaskOutcome, missing_result};
use crate::batch::{BatchError, Decrypted, MessageId, Progress, QueuedMessage};
use crate::collections::{HashMap, SortedSet};
use crate::prekeys::load_prekey;
use crate::records::check_session_id;
use proteus_core::{DecodeError, Envelope, IdentityCache, Message, PreKeyId};

/// Messages taken at a time: results are handed over per window, so a progress display moves
/// during a batch, and a window is enough work to share out.
const WINDOW: usize = 256;
/// The longest window of one session's run (a backlog from one sender): one pipelined run
/// (`client/pipeline.rs`) instead of several, each of which would start and drain the
/// pipeline; about 6 ms of work between hand-overs.
const MAX_RUN_WINDOW: usize = 4096;
/// A run of one session shorter than this is decrypted on the calling thread: a helper that
/// has to be woken would come too late to take a share (an open costs about 1 µs; a wake-up
/// tens of µs).
pub(super) const SHARE_MIN_OPENS: usize = 96;

/// Envelopes decoded per thread at a time.
const DECODE_CHUNK: usize = 64;

/// A window's envelopes decoded, with their ids, in queue order: in the chunks they were
/// decoded in (one vector per chunk), not moved into one vector (a copy of ~200 bytes a
/// message, about 20 µs per 1000).
struct Decoded<'q> {
    chunks: Vec<Vec<(MessageId, Result<Envelope<'q>, DecodeError>)>>,
}

impl<'q> Decoded<'q> {
    fn iter(&self) -> impl Iterator<Item = &(MessageId, Result<Envelope<'q>, DecodeError>)> {
        self.chunks.iter().flatten()
    }
}

/// The window's envelopes decoded, with their ids; a long window's shared out (which also
/// wakes the helpers for the work that follows).
fn decode_window<'q>(pool: Option<&Helpers>, window: &[QueuedMessage<'q>]) -> Decoded<'q> {
    decode_window_after(pool, window, || ())
}

/// [`decode_window`], the calling thread doing `first` while the helpers start decoding.
fn decode_window_after<'q>(
    pool: Option<&Helpers>,
    window: &[QueuedMessage<'q>],
    first: impl FnOnce(),
) -> Decoded<'q> {
    if window.len() < SHARE_MIN_OPENS {
        first();
        return Decoded {
            chunks: vec![window.iter().map(decode).collect()],
        };
    }
    let mut chunks: Vec<(&[QueuedMessage<'q>], Vec<_>)> = window
        .chunks(DECODE_CHUNK)
        .map(|chunk| (chunk, Vec::new()))
        .collect();
    share_after(
        pool,
        &mut chunks,
        &|(chunk, decoded)| {
            *decoded = chunk.iter().map(decode).collect();
        },
        first,
    );
    Decoded {
        chunks: chunks.into_iter().map(|(_, decoded)| decoded).collect(),
    }
}

/// The length of the next window of `rest`: a run of one session longer than [`WINDOW`] whole
/// (up to [`MAX_RUN_WINDOW`]), else [`WINDOW`] messages.
fn window_len(rest: &[QueuedMessage<'_>]) -> usize {
    let Some(first) = rest.first() else {
        return 0;
    };
    let run = rest
        .iter()
        .take(MAX_RUN_WINDOW)
        .take_while(|m| m.session_id == first.session_id)
        .count();
    if run > WINDOW {
        run
    } else {
        WINDOW.min(rest.len())
    }
}

/// Whether a batch has work for more than one thread: several sessions, or a run long enough
/// to share its opens. A conversation's turn (a few messages from one sender) goes the
/// sequential way, without the grouping into tasks.
pub(super) fn has_work_to_share(queue: &[QueuedMessage<'_>]) -> bool {
    match queue {
        [] | [_] => false,
        [first, rest @ ..] => {
            queue.len() >= SHARE_MIN_OPENS || rest.iter().any(|m| m.session_id != first.session_id)
        }
    }
}

/// The thread count of a client's batches and, once a batch needs it, the pool of its helpers
/// (the calling thread is one of the batch's threads: the pool has one thread fewer).
pub(crate) struct BatchPool {
    threads: usize,
    pool: Option<Arc<Helpers>>,
}

/// The pools of the process, one per helper count: every client with that count shares it
/// (an app may open several clients), and it lives as long as the process, idle between
/// batches, so no batch pays for starting threads but the first.
static POOLS: Mutex<Vec<(usize, Arc<Helpers>)>> = Mutex::new(Vec::new());

impl BatchPool {
    pub(crate) fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            pool: None,
        }
    }

    pub(crate) fn threads(&self) -> usize {
        self.threads
    }

    /// The pool of helpers, found or started on first use. `None` for one thread, or if the
    /// system gives no threads: the batch then runs on the calling thread alone.
    pub(crate) fn pool(&mut self) -> Option<Arc<Helpers>> {
        if self.pool.is_none() {
            let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
            let helpers = self.threads.saturating_sub(1);
            if helpers == 0 {
                return None;
            }
            self.pool = match pools.iter().find(|(n, _)| *n == helpers) {
                Some((_, pool)) => Some(Arc::clone(pool)),
                None => {
                    let pool = Helpers::start(helpers).map(Arc::new);
                    if let Some(pool) = &pool {
                        pools.push((helpers, Arc::clone(pool)));
                    }
                    pool
                }
            };
        }
        self.pool.clone()
    }
}

/// Where a message of a window gets its outcome.
enum Slot {
    /// The ordinary way, in queue order (undecodable, invalid id, shared prekey, store error).
    Sequential,
    /// Result `index` of task `task`.
    Task { task: usize, index: usize },
}

impl Client {
    /// Whether the batch pool's helpers are to be asked (`client/pace.rs`): if they were late
    /// lately, a batch takes the sequential path, one thread's fastest.
    pub(super) fn batch_helpers_on_time(&mut self) -> bool {
        self.batch_pool
            .pool()
            .is_some_and(|helpers| helpers.on_time().is_some())
    }

    /// Wakes this client's batch helper threads, if it has any, ahead of a batch that the
    /// calling thread hands to another thread: call it on the handing thread just before, so
    /// that the helpers are running on another CPU when the batch starts, rather than woken as
    /// the batch's thread first offers them work (docs/benchmarks.md, sessions 13 and 15).
    /// Changes nothing stored and no result; without a batch after it, the helpers spin for
    /// at most 1 ms.
    pub fn wake_batch_helpers(&mut self) {
        if let Some(helpers) = self.batch_pool.pool() {
            helpers.wake();
        }
    }

    /// The batch loop of `decrypt_batch_chunked` on the pool.
    pub(super) fn decrypt_parallel<'q, F, E>(
        &mut self,
        queue: &[QueuedMessage<'q>],
        batch: &mut BatchState<'q>,
        deliver: &mut F,
    ) -> Result<(), BatchError<E>>
    where
        F: FnMut(&[Decrypted], Progress) -> Result<ControlFlow<()>, E>,
    {
        let pool = self.batch_pool.pool();
        // Set once the helpers opened no part of a pipelined run: they are not getting a CPU
        // in time (a busy machine), and waiting for them to start would make the batch slower
        // than one thread; the batch's later runs stay on this thread.
        let helpers_late = AtomicBool::new(false);
        let mut rest = queue;
        while !rest.is_empty() {
            let (window, after) = rest
                .split_at_checked(window_len(rest))
                .unwrap_or((rest, &[]));
            rest = after;
            // A window longer than WINDOW is one sender's backlog: its first message (often a
            // ratchet step or a new session, which the rest waits for) is decrypted here, the
            // ordinary way, while the helpers decode the others.
            let (window, decoded) = match window.split_first() {
                Some((first, others))
                    if window.len() > WINDOW
                        && pool.as_deref().and_then(Helpers::on_time).is_some() =>
                {
                    let (message_id, envelope) = decode(first);
                    let mut outcome = None;
                    let decoded = decode_window_after(pool.as_deref(), others, || {
                        outcome =
                            Some(self.decrypt_queued(first, envelope.as_ref(), &mut batch.removed));
                    });
                    let outcome = outcome.unwrap_or_else(|| Err(missing_result()));
                    self.hand_over(
                        batch,
                        first,
                        message_id,
                        envelope.as_ref(),
                        outcome,
                        deliver,
                    )?;
                    (others, decoded)
                }
                _ => (window, decode_window(pool.as_deref(), window)),
            };
            let (mut tasks, slots) = self.plan_window(window, &decoded, &batch.removed);
            let (identity, identities) = (&self.identity, &self.identities);
            let pool = pool.as_deref();
            match tasks.as_mut_slice() {
                // One session: its task runs here, a long run pipelined with the helpers (a
                // short run, a conversation's turn, never leaves this thread).
                [task] => {
                    let late = helpers_late.load(Ordering::Relaxed);
                    let helpers = pool.filter(|_| !late).and_then(Helpers::on_time);
                    // A window that is all this task's messages, in order (a backlog from
                    // one sender): each result is handed over as soon as the run has it,
                    // while the helpers open the next parts.
                    let in_order = slots.iter().enumerate().all(
                        |(k, slot)| matches!(slot, Slot::Task { task: 0, index } if *index == k),
                    );
                    if in_order {
                        let replay_guard = &mut self.replay_guard;
                        let mut pending = window.iter().zip(decoded.iter());
                        let mut failed = None;
                        let mut sink = |(outcome, recorded): TaskOutcome| {
                            let Some((queued, (message_id, envelope))) = pending.next() else {
                                return ControlFlow::Break(());
                            };
                            if let Some(base_key) = recorded {
                                replay_guard.record(&base_key);
                            }
                            match batch.hand_over(
                                queued,
                                *message_id,
                                envelope.as_ref(),
                                outcome,
                                deliver,
                            ) {
                                Ok(()) => ControlFlow::Continue(()),
                                Err(e) => {
                                    failed = Some(e);
                                    ControlFlow::Break(())
                                }
                            }
                        };
                        let helped = task.run(identity, identities, helpers, Some(&mut sink));
                        if let Some(false) = helped {
                            helpers_late.store(true, Ordering::Relaxed);
                        }
                        // Messages the run gave no result for (never expected) fail the batch
                        // as in the loop below.
                        let failed = failed.map_or_else(
                            || {
                                pending.try_for_each(|(queued, (message_id, envelope))| {
                                    let missing = Err(missing_result());
                                    batch.hand_over(
                                        queued,
                                        *message_id,
                                        envelope.as_ref(),
                                        missing,
                                        deliver,
                                    )
                                })
                            },
                            Err,
                        );
                        if let Err(e) = failed {
                            self.forget(&batch.touched);
                            return Err(e);
                        }
                        self.end_window(tasks, batch);
                        continue;
                    }
                    if let Some(false) = task.run(identity, identities, helpers, None) {
                        helpers_late.store(true, Ordering::Relaxed);
                    }
                }
                // Several: sessions are shared out, each task opening its own messages.
                tasks => {
                    share(pool, tasks, &|task: &mut SessionTask<'_, '_>| {
                        task.run(identity, identities, None, None);
                    });
                }
            }
            for ((queued, (message_id, envelope)), slot) in
                window.iter().zip(decoded.iter()).zip(&slots)
            {
                let outcome = match slot {
                    Slot::Sequential => {
                        self.decrypt_queued(queued, envelope.as_ref(), &mut batch.removed)
                    }
                    Slot::Task { task, index } => {
                        let taken = tasks
                            .get_mut(*task)
                            .and_then(|t| t.outcomes.get_mut(*index))
                            .and_then(Option::take);
                        match taken {
                            Some((outcome, recorded)) => {
                                if let Some(base_key) = recorded {
                                    self.replay_guard.record(&base_key);
                                }
                                outcome
                            }
                            None => Err(missing_result()),
                        }
                    }
                };
                self.hand_over(
                    batch,
                    queued,
                    *message_id,
                    envelope.as_ref(),
                    outcome,
                    deliver,
                )?;
            }
            self.end_window(tasks, batch);
        }
        Ok(())
    }

    /// What a window's tasks leave once their results are handed over: the prekeys they used
    /// up, the identities they checked, their sessions back in the cache.
    fn end_window<'q>(&mut self, tasks: Vec<SessionTask<'_, 'q>>, batch: &mut BatchState<'q>) {
        for task in tasks {
            for id in task.removed.iter() {
                batch.removed.insert(*id);
            }
            for checked in task.kept {
                self.identities.keep(checked);
            }
            if let Some(cached) = task.cached {
                self.sessions.put(task.session_id, cached);
            }
        }
    }

    /// Groups a window's messages into session tasks, taking their sessions out of the cache
    /// and reading what they share from the store.
    fn plan_window<'w, 'q>(
        &mut self,
        window: &[QueuedMessage<'q>],
        decoded: &'w Decoded<'q>,
        removed: &SortedSet<PreKeyId>,
    ) -> (Vec<SessionTask<'w, 'q>>, Vec<Slot>) {
        let mut groups: Vec<(&'q str, Vec<(usize, &'w Envelope<'q>)>)> = Vec::new();
        let mut group_of: HashMap<&'q str, usize> = HashMap::default();
        // A backlog comes in runs of one session: the previous message's group is tried first,
        // without checking and hashing the id again.
        let mut last: Option<(&'q str, usize)> = None;
        for (k, (queued, (_, envelope))) in window.iter().zip(decoded.iter()).enumerate() {
            let Ok(envelope) = envelope else {
                continue;
            };
            let g = match last {
                Some((id, g)) if id == queued.session_id => g,
                _ => {
                    if check_session_id(queued.session_id).is_err() {
                        continue;
                    }
                    let g = *group_of.entry(queued.session_id).or_insert_with(|| {
                        groups.push((queued.session_id, Vec::new()));
                        groups.len() - 1
                    });
                    last = Some((queued.session_id, g));
                    g
                }
            };
            if let Some((_, members)) = groups.get_mut(g) {
                members.push((k, envelope));
            }
        }
        let shared = shared_handshakes(&groups);
        let mut slots: Vec<Slot> = window.iter().map(|_| Slot::Sequential).collect();
        let mut tasks = Vec::with_capacity(groups.len());
        for (g, (session_id, members)) in groups.into_iter().enumerate() {
            if shared.contains(&g) {
                continue;
            }
            let Some(task) = self.task_for(session_id, &members, removed) else {
                continue;
            };
            for (index, (k, _)) in members.iter().enumerate() {
                if let Some(slot) = slots.get_mut(*k) {
                    *slot = Slot::Task {
                        task: tasks.len(),
                        index,
                    };
                }
            }
            tasks.push(task);
        }
        (tasks, slots)
    }

    /// The task of one session's run, or `None` if the store fails to give what it needs (its
    /// messages then go the ordinary way, which meets the failure in queue order).
    fn task_for<'w, 'q>(
        &mut self,
        session_id: &'q str,
        members: &[(usize, &'w Envelope<'q>)],
        removed: &SortedSet<PreKeyId>,
    ) -> Option<SessionTask<'w, 'q>> {
        let storage = &*self.storage;
        let identity = self.identity.public_key();
        let cached = self.sessions.take(storage, identity, session_id).ok()?;
        let mut prekeys = BTreeMap::new();
        let mut replayed = Vec::new();
        let mut failed = false;
        for (_, envelope) in members {
            let Message::PreKey(pkm) = envelope.message() else {
                continue;
            };
            let id = pkm.prekey_id;
            if let Entry::Vacant(slot) = prekeys.entry(id) {
                let prekey = if removed.contains(&id) {
                    Ok(None)
                } else {
                    load_prekey(storage, id)
                };
                match prekey {
                    Ok(prekey) => {
                        slot.insert(prekey);
                    }
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
            if cached.is_none() && id.is_last_resort() {
                match self.replay_guard.contains(storage, &pkm.base_key) {
                    Ok(true) => replayed.push(pkm.base_key),
                    Ok(false) => {}
                    Err(_) => {
                        failed = true;
                        break;
                    }
                }
            }
        }
        if failed {
            if let Some(cached) = cached {
                self.sessions.put(session_id, cached);
            }
            return None;
        }
        Some(SessionTask {
            session_id,
            cached,
            config: self.sessions.config(),
            envelopes: members.iter().map(|(_, e)| *e).collect(),
            prekeys,
            replayed,
            removed: SortedSet::new(),
            kept: Vec::new(),
            outcomes: Vec::new(),
        })
    }
}

/// The groups that share a one-time prekey or a last-resort handshake with another group of
/// the window: one's use of it changes what the other sees, so they run in queue order.
fn shared_handshakes(groups: &[(&str, Vec<(usize, &Envelope<'_>)>)]) -> BTreeSet<usize> {
    #[derive(PartialEq, Eq, Hash)]
    enum Claim {
        PreKey(u16),
        LastResort([u8; 32]),
    }
    let mut claimed: HashMap<Claim, usize> = HashMap::default();
    let mut shared = BTreeSet::new();
    for (g, (_, members)) in groups.iter().enumerate() {
        for (_, envelope) in members {
            let Message::PreKey(pkm) = envelope.message() else {
                continue;
            };
            let claim = if pkm.prekey_id.is_last_resort() {
                Claim::LastResort(*pkm.base_key.as_bytes())
            } else {
                Claim::PreKey(pkm.prekey_id.value())
            };
            let first = *claimed.entry(claim).or_insert(g);
            if first != g {
                shared.insert(first);
                shared.insert(g);
            }
        }
    }
    shared
}
