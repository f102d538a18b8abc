//! Decrypting: one session's run of a batch, and one message the ordinary way (what
//! `Client::decrypt` does, and a batch for the messages that are no run's). Both start a new
//! session through [`new_session`], the one copy of that rule.

use proteus_core::{
    DecryptError, Envelope, IdentityCache, IdentityKeyPair, Message, OsRng, PreKeyId, PreKeyStore,
    PublicKey, Session,
};

use super::Lent;
use super::executor::Executor;
use super::plan::{RunIdentities, RunPreKeys, SessionRun};
use crate::checked_identities::CheckedIdentities;
use crate::collections::SortedSet;
use crate::error::{ClientError, StoreError};
use crate::prekeys::PendingPreKeys;
use crate::session_cache::CachedSession;

impl SessionRun<'_, '_> {
    /// Decrypts the run, in order, with the outcomes decrypting its messages one by one would
    /// have: first the messages that make the session if it does not exist yet, then the rest
    /// through the core's open plan, whose independent opens go to `executor`.
    pub(crate) fn decrypt(
        &mut self,
        identity: &IdentityKeyPair,
        shared: &CheckedIdentities,
        executor: &Executor,
    ) {
        let mut prekeys = RunPreKeys {
            snapshot: &self.prekeys,
            removed: &mut self.removed,
        };
        let mut identities = RunIdentities {
            shared,
            kept: &mut self.kept,
        };
        let mut outcomes = Vec::with_capacity(self.envelopes.len());
        let mut rest = self.envelopes.as_slice();
        while self.cached.is_none() {
            let Some((envelope, tail)) = rest.split_first() else {
                break;
            };
            rest = tail;
            let replayed = |key: &PublicKey| Ok(self.replayed.contains(key));
            let made = new_session(
                self.session_id,
                identity,
                &mut prekeys,
                &mut identities,
                envelope,
                replayed,
            );
            outcomes.push(match made {
                Ok((mut session, plaintext, recorded)) => {
                    self.config.apply(&mut session);
                    self.cached = Some(CachedSession::new_unstored(session));
                    (Ok(plaintext), recorded)
                }
                Err(e) => (Err(e), None),
            });
        }
        if let Some(cached) = &mut self.cached
            && !rest.is_empty()
        {
            let results = cached.session_mut().decrypt_run(
                &mut OsRng,
                identity,
                &mut prekeys,
                &mut identities,
                rest,
                |jobs| executor.open(jobs),
            );
            outcomes.extend(
                results
                    .into_iter()
                    .map(|r| (r.map_err(decrypt_error), None)),
            );
        }
        self.outcomes = outcomes;
    }
}

/// Decrypts one message into the cached session, uncommitted (the session id already
/// checked); on error nothing changed. Used prekeys are added to `removed`.
pub(crate) fn decrypt_one(
    lent: &mut Lent<'_>,
    session_id: &str,
    envelope: &Envelope,
    removed: &mut SortedSet<PreKeyId>,
) -> Result<Vec<u8>, ClientError> {
    let storage = lent.storage;
    let identity = lent.identity;
    let mut prekeys = PendingPreKeys { storage, removed };
    let identities = &mut *lent.identities;
    if let Some(session) = lent
        .sessions
        .get_or_load(storage, identity.public_key(), session_id)?
    {
        return session
            .decrypt_with_cache(&mut OsRng, identity, &mut prekeys, identities, envelope)
            .map_err(decrypt_error);
    }
    let guard = &mut *lent.replay_guard;
    let replayed = |key: &PublicKey| guard.contains(storage, key);
    let (session, plaintext, recorded) = new_session(
        session_id,
        identity,
        &mut prekeys,
        identities,
        envelope,
        replayed,
    )?;
    if let Some(base_key) = recorded {
        lent.replay_guard.record(&base_key);
    }
    lent.sessions.insert_new(session_id, session);
    Ok(plaintext)
}

/// The session a PreKeyMessage makes for a session id that has none, its plaintext, and the
/// base key to record if it used the last-resort prekey. A last-resort handshake that
/// `replayed` says was seen before (its session has been deleted since) is a replay:
/// `DuplicateMessage`, and nothing is made.
fn new_session<S, C>(
    session_id: &str,
    identity: &IdentityKeyPair,
    prekeys: &mut S,
    identities: &mut C,
    envelope: &Envelope,
    replayed: impl FnOnce(&PublicKey) -> Result<bool, ClientError>,
) -> Result<(Session, Vec<u8>, Option<PublicKey>), ClientError>
where
    S: PreKeyStore + ?Sized,
    C: IdentityCache + ?Sized,
{
    let Message::PreKey(pkm) = envelope.message() else {
        return Err(ClientError::SessionNotFound(session_id.to_owned()));
    };
    let inbound =
        Session::init_from_message_with_cache(&mut OsRng, identity, prekeys, identities, envelope)
            .map_err(decrypt_error)?;
    if !pkm.prekey_id.is_last_resort() {
        return Ok((inbound.session, inbound.plaintext, None));
    }
    if replayed(&pkm.base_key)? {
        return Err(DecryptError::DuplicateMessage.into());
    }
    Ok((inbound.session, inbound.plaintext, Some(pkm.base_key)))
}

/// A decryption error as the client reports it: a prekey store's failure is the store's error;
/// any other error from a prekey view is a broken invariant of the batch (`Internal`).
fn decrypt_error(e: DecryptError) -> ClientError {
    match e {
        DecryptError::PreKeyStore(inner) => match inner.downcast::<StoreError>() {
            Ok(store) => ClientError::Store(*store),
            Err(other) => ClientError::Internal(other.to_string()),
        },
        other => ClientError::Decrypt(other),
    }
}
