//! Decrypting: one session's run of a batch, and one message the ordinary way (what
//! `Client::decrypt` does, and a batch for the messages that are no run's). Both start a new
//! session through [`new_session`], the one copy of that rule.

use proteus_core::{
    DecryptError, Envelope, IdentityCache, IdentityKey, IdentityKeyPair, Message, OsRng, PreKeyId,
    PublicKey, Session,
};

use super::Lent;
use super::executor::Executor;
use super::plan::SessionRun;
use crate::checked_identities::{CheckedIdentities, PendingIdentities};
use crate::client::{check_pin, load_pin};
use crate::collections::SortedSet;
use crate::error::ClientError;
use crate::prekeys::{PendingPreKeys, PreKeySource, PreKeyViewError};
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
        let mut prekeys = PendingPreKeys {
            source: PreKeySource::Snapshot(&self.prekeys),
            removed: &mut self.removed,
        };
        let mut identities = PendingIdentities {
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
            let replayed = &mut |key: &PublicKey| Ok(self.replayed.contains(key));
            let made = new_session(
                self.session_id,
                identity,
                &mut prekeys,
                &mut identities,
                envelope,
                replayed,
                self.pin.as_ref(),
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
    let mut prekeys = PendingPreKeys {
        source: PreKeySource::Store(storage),
        removed,
    };
    let mut kept = Vec::new();
    let mut identities = PendingIdentities {
        shared: &*lent.identities,
        kept: &mut kept,
    };
    let decrypted = match lent
        .sessions
        .get_or_load(storage, identity.public_key(), session_id)?
    {
        Some(session) => session
            .decrypt_with_cache(
                &mut OsRng,
                identity,
                &mut prekeys,
                &mut identities,
                envelope,
            )
            .map_err(decrypt_error),
        None => {
            let pin = match lent.pinning {
                true => load_pin(storage, session_id)?,
                false => None,
            };
            let guard = &mut *lent.replay_guard;
            let replayed = &mut |key: &PublicKey| guard.contains(storage, key);
            new_session(
                session_id,
                identity,
                &mut prekeys,
                &mut identities,
                envelope,
                replayed,
                pin.as_ref(),
            )
            .map(|(session, plaintext, recorded)| {
                if let Some(base_key) = recorded {
                    guard.record(&base_key);
                }
                lent.sessions.insert_new(session_id, session);
                plaintext
            })
        }
    };
    for checked in kept {
        lent.identities.keep(checked);
    }
    decrypted
}

/// The session a PreKeyMessage makes for a session id that has none, its plaintext, and the
/// base key to record if it used the last-resort prekey. A PreKeyMessage from another identity
/// than `pin` (the session id's pinned one, under pinning) is refused with
/// `RemoteIdentityChanged`, before anything is used. A last-resort handshake that
/// `replayed` says was seen before (its session has been deleted since) is a replay:
/// `DuplicateMessage`, and nothing is made. Not inlined: both decrypt paths call it, and the
/// web build would carry it twice.
#[inline(never)]
fn new_session(
    session_id: &str,
    identity: &IdentityKeyPair,
    prekeys: &mut PendingPreKeys<'_>,
    identities: &mut PendingIdentities<'_>,
    envelope: &Envelope,
    replayed: &mut dyn FnMut(&PublicKey) -> Result<bool, ClientError>,
    pin: Option<&IdentityKey>,
) -> Result<(Session, Vec<u8>, Option<PublicKey>), ClientError> {
    let Message::PreKey(pkm) = envelope.message() else {
        return Err(ClientError::SessionNotFound(session_id.to_owned()));
    };
    check_pin(pin, &pkm.identity_key)?;
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

/// A decryption error as the client reports it: a failure of the prekey view
/// ([`PendingPreKeys`]) is the client error it was (the store's, or a broken invariant).
fn decrypt_error(e: DecryptError) -> ClientError {
    match e {
        DecryptError::PreKeyStore(inner) => match inner.downcast::<PreKeyViewError>() {
            Ok(view) => ClientError::from(*view),
            Err(_) => ClientError::Internal("the prekey view failed with a foreign error".into()),
        },
        other => ClientError::Decrypt(other),
    }
}
