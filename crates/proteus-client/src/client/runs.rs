//! A batch's runs of messages to one session decrypted through the core's open plan
//! (`Session::decrypt_run`): in a wasm build with simd128 `open_jobs` opens them four at a time
//! in the SIMD lanes of the four-lane SHA-256 (the `batch-lanes` feature turns this on).
//! Results and sessions are those of decrypting the messages one by one (the plan's contract);
//! only the work is shared across messages.

use proteus_core::plan::{Opened, open_jobs};
use proteus_core::{Envelope, OsRng, PreKeyId};

use super::Client;
use crate::batch::QueuedMessage;
use crate::collections::SortedSet;
use crate::error::ClientError;
use crate::prekeys::PendingPreKeys;
use crate::records::check_session_id;

/// Fewer messages to one session than this are decrypted one by one: a run of them would not
/// fill the four lanes.
const MIN_RUN: usize = 4;
/// The most messages decrypted ahead at a time.
const MAX_RUN: usize = 512;

/// The outcome of a message decrypted ahead, and its envelope as the run decoded it (the
/// batch needs it for the message's id and sender: it is not decoded twice).
pub(super) type RanAhead<'q> = (Result<Vec<u8>, ClientError>, Envelope<'q>);

/// Outcomes of the queue's next messages, decrypted ahead as one run.
#[derive(Default)]
pub(super) struct RunAhead<'q> {
    /// The queue position of the first outcome.
    start: usize,
    /// The outcomes not handed over yet and their envelopes, in queue order.
    outcomes: std::vec::IntoIter<Opened>,
    envelopes: std::vec::IntoIter<Envelope<'q>>,
    /// Where the last run that changed its session started: from there the cached session is
    /// ahead of the messages handed over, so a batch that stops must forget it.
    changed_from: Option<usize>,
}

impl<'q> RunAhead<'q> {
    /// Whether a run starting at message `index` of the queue changed its session.
    pub(super) fn changed_at(&self, index: usize) -> bool {
        self.changed_from == Some(index)
    }

    /// The outcome of message `index` of the queue if it was decrypted ahead.
    fn take(&mut self, index: usize) -> Option<RanAhead<'q>> {
        if index != self.start {
            return None;
        }
        let outcome = self.outcomes.next()?.map_err(super::decrypt_error);
        let envelope = self.envelopes.next()?;
        self.start += 1;
        Some((outcome, envelope))
    }
}

/// Whether batches decrypt runs ahead: in a wasm build with simd128 and the `batch-lanes`
/// feature, where the lanes make it pay. Native builds keep SHA-NI one message at a time, or
/// threads.
const RUNS_AHEAD: bool = cfg!(all(
    target_arch = "wasm32",
    target_feature = "simd128",
    feature = "batch-lanes"
));

impl Client {
    /// The outcome of message `index` of the queue if it is part of a run decrypted ahead
    /// (decrypting the run that starts there first, if one does).
    pub(super) fn run_outcome<'q>(
        &mut self,
        queue: &[QueuedMessage<'q>],
        index: usize,
        removed: &mut SortedSet<PreKeyId>,
        ahead: &mut RunAhead<'q>,
    ) -> Option<RanAhead<'q>> {
        if !RUNS_AHEAD {
            return None;
        }
        if let Some(outcome) = ahead.take(index) {
            return Some(outcome);
        }
        self.decrypt_run_ahead(queue, index, removed, ahead);
        ahead.take(index)
    }

    /// If message `index` starts a run of at least [`MIN_RUN`] decodable messages to one
    /// existing session, decrypts the run into the cached session (uncommitted) and keeps the
    /// outcomes in `ahead`. Otherwise, or if the session cannot be loaded, does nothing: the
    /// messages go the ordinary way, which reports any error.
    fn decrypt_run_ahead<'q>(
        &mut self,
        queue: &[QueuedMessage<'q>],
        index: usize,
        removed: &mut SortedSet<PreKeyId>,
        ahead: &mut RunAhead<'q>,
    ) {
        let Some(first) = queue.get(index) else {
            return;
        };
        if check_session_id(first.session_id).is_err() {
            return;
        }
        let same_session = || {
            queue
                .iter()
                .skip(index)
                .take(MAX_RUN)
                .take_while(|q| q.session_id == first.session_id)
        };
        // Counted before anything is decoded: interleaved senders make runs of one or two.
        if same_session().nth(MIN_RUN - 1).is_none() {
            return;
        }
        let envelopes: Vec<Envelope<'q>> = same_session()
            .map_while(|q| Envelope::from_bytes(q.envelope).ok())
            .collect();
        if envelopes.len() < MIN_RUN {
            return;
        }
        let storage = &*self.storage;
        let identity = &self.identity;
        let identities = &mut self.identities;
        let Ok(Some(cached)) =
            self.sessions
                .get_or_load(storage, identity.public_key(), first.session_id)
        else {
            return;
        };
        let mut prekeys = PendingPreKeys { storage, removed };
        let run: Vec<&Envelope<'_>> = envelopes.iter().collect();
        let opened = cached.decrypt_run(
            &mut OsRng,
            identity,
            &mut prekeys,
            identities,
            &run,
            open_jobs,
        );
        ahead.start = index;
        ahead.changed_from = opened.iter().any(Result::is_ok).then_some(index);
        ahead.outcomes = opened.into_iter();
        ahead.envelopes = envelopes.into_iter();
    }
}
