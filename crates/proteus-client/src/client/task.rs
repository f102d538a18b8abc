//! One session's messages of a batch window, decrypted as a task on the calling thread or a
//! batch helper (`client/parallel.rs` plans the tasks; a long run is pipelined with the helpers,
//! `client/pipeline.rs`). A task sees the prekeys and checked identities read for it before the
//! window, and gives back what it used up and checked after it.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use super::pace::Helpers;
use super::parallel::SHARE_MIN_OPENS;
use super::pipeline::decrypt_run_pipelined;
use crate::checked_identities::CheckedIdentities;
use crate::collections::SortedSet;
use crate::error::{ClientError, StoreError};
use crate::session_cache::{CachedSession, SessionConfig};
use proteus_core::plan::{Opened, open_jobs};
use proteus_core::text::Part::{Number, Text};
use proteus_core::text::join;
use proteus_core::{
    CheckedIdentity, DecryptError, Envelope, IdentityCache, IdentityKey, IdentityKeyPair, Message,
    OsRng, PreKey, PreKeyId, PreKeyStore, PublicKey, Session,
};

/// The result of a message decrypted by a task, and the last-resort handshake it recorded.
pub(super) type TaskOutcome = (Result<Vec<u8>, ClientError>, Option<PublicKey>);

/// Where a task gives each outcome as soon as it has it, in order; `Break` stops the task.
pub(super) type TaskSink<'a> = dyn FnMut(TaskOutcome) -> ControlFlow<()> + 'a;

/// One session's messages of a window, decrypted on the calling thread or a helper.
pub(super) struct SessionTask<'w, 'q> {
    pub(super) session_id: &'q str,
    /// The session, taken out of the cache; `None` while it does not exist.
    pub(super) cached: Option<CachedSession>,
    pub(super) config: SessionConfig,
    pub(super) envelopes: Vec<&'w Envelope<'q>>,
    /// The prekeys the run's PreKeyMessages name, as the store holds them at the window's start.
    pub(super) prekeys: BTreeMap<PreKeyId, Option<PreKey>>,
    /// Last-resort base keys the replay guard already holds (for a session that does not exist).
    pub(super) replayed: Vec<PublicKey>,
    pub(super) removed: SortedSet<PreKeyId>,
    pub(super) kept: Vec<CheckedIdentity>,
    pub(super) outcomes: Vec<Option<TaskOutcome>>,
}

impl SessionTask<'_, '_> {
    /// Decrypts the run, in order, as the ordinary path would one message at a time; a long
    /// run with `helpers` pipelined. Each outcome goes to `sink` as soon as it is known (if
    /// `sink` breaks, the run stops there), or without one into `outcomes`. Whether the
    /// helpers took a share, if they were asked.
    pub(super) fn run(
        &mut self,
        identity: &IdentityKeyPair,
        shared: &CheckedIdentities,
        helpers: Option<&Helpers>,
        mut sink: Option<&mut TaskSink<'_>>,
    ) -> Option<bool> {
        let mut prekeys = TaskPreKeys {
            fetched: &self.prekeys,
            removed: &mut self.removed,
        };
        let mut identities = TaskIdentities {
            shared,
            kept: &mut self.kept,
        };
        let mut outcomes = Vec::with_capacity(match sink {
            Some(_) => 0,
            None => self.envelopes.len(),
        });
        let mut emit = |outcome: TaskOutcome| match sink.as_deref_mut() {
            Some(sink) => sink(outcome),
            None => {
                outcomes.push(Some(outcome));
                ControlFlow::Continue(())
            }
        };
        let mut rest = self.envelopes.as_slice();
        while self.cached.is_none() {
            let Some((envelope, tail)) = rest.split_first() else {
                break;
            };
            rest = tail;
            let Message::PreKey(pkm) = envelope.message() else {
                let missing = ClientError::SessionNotFound(self.session_id.to_owned());
                if emit((Err(missing), None)).is_break() {
                    return None;
                }
                continue;
            };
            // As `Client::decrypt_uncommitted` for a session that does not exist.
            let last_resort = pkm.prekey_id.is_last_resort();
            let inbound = Session::init_from_message_with_cache(
                &mut OsRng,
                identity,
                &mut prekeys,
                &mut identities,
                envelope,
            );
            let outcome = match inbound {
                Ok(_) if last_resort && self.replayed.contains(&pkm.base_key) => {
                    (Err(DecryptError::DuplicateMessage.into()), None)
                }
                Ok(inbound) => {
                    let mut session = inbound.session;
                    self.config.apply(&mut session);
                    self.cached = Some(CachedSession::new_unstored(session));
                    (Ok(inbound.plaintext), last_resort.then_some(pkm.base_key))
                }
                Err(e) => (Err(super::decrypt_error(e)), None),
            };
            if emit(outcome).is_break() {
                return None;
            }
        }
        if let Some(cached) = &mut self.cached {
            let session = cached.session_mut();
            let helped = match helpers {
                Some(pool) if rest.len() >= SHARE_MIN_OPENS => {
                    let mut ordinary = |session: &mut Session, envelope: &Envelope<'_>| {
                        session.decrypt_with_cache(
                            &mut OsRng,
                            identity,
                            &mut prekeys,
                            &mut identities,
                            envelope,
                        )
                    };
                    let mut sink = |r: Opened| emit((r.map_err(super::decrypt_error), None));
                    let helped = decrypt_run_pipelined(
                        pool,
                        session,
                        identity,
                        rest,
                        &mut ordinary,
                        &mut sink,
                    );
                    Some(helped)
                }
                _ => {
                    let results = session.decrypt_run(
                        &mut OsRng,
                        identity,
                        &mut prekeys,
                        &mut identities,
                        rest,
                        |jobs| open_jobs(jobs),
                    );
                    for r in results {
                        if emit((r.map_err(super::decrypt_error), None)).is_break() {
                            break;
                        }
                    }
                    None
                }
            };
            self.outcomes = outcomes;
            return helped;
        }
        self.outcomes = outcomes;
        None
    }
}

/// A task's result that is not there: never expected; the batch stops and commits nothing.
pub(super) fn missing_result() -> ClientError {
    ClientError::Store(StoreError::Backend(
        "a batch worker gave no result for a message".into(),
    ))
}

/// The prekeys as a task sees them: those read for it, less those its run used up.
struct TaskPreKeys<'t> {
    fetched: &'t BTreeMap<PreKeyId, Option<PreKey>>,
    removed: &'t mut SortedSet<PreKeyId>,
}

impl PreKeyStore for TaskPreKeys<'_> {
    type Error = StoreError;

    fn prekey(&mut self, id: PreKeyId) -> Result<Option<PreKey>, StoreError> {
        if self.removed.contains(&id) {
            return Ok(None);
        }
        match self.fetched.get(&id) {
            Some(prekey) => Ok(prekey.clone()),
            // Every prekey a PreKeyMessage of the run names was read before the task started.
            None => Err(StoreError::Backend(join(&[
                Text("prekey "),
                Number(id.value().into()),
                Text(" was not read"),
            ]))),
        }
    }

    fn remove(&mut self, id: PreKeyId) -> Result<(), StoreError> {
        self.removed.insert(id);
        Ok(())
    }
}

/// The client's checked identities as a task sees them; what it checks is kept after the window.
struct TaskIdentities<'t> {
    shared: &'t CheckedIdentities,
    kept: &'t mut Vec<CheckedIdentity>,
}

impl IdentityCache for TaskIdentities<'_> {
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity> {
        self.shared
            .get(key)
            .or_else(|| self.kept.iter().find(|c| c.key() == key))
    }

    fn keep(&mut self, checked: CheckedIdentity) {
        self.kept.push(checked);
    }
}
