//! Identity pinning: a peer's fingerprint is pinned on first sight; a prekey message that
//! claims another identity is held, unread, until `/accept`.

use std::collections::{HashMap, HashSet};

use super::inbox::show;
use super::records::{Held, MAX_HELD_PER_PEER};
use super::terminal::{grouped, say};
use super::{Chat, ChatError};
use proteus_client::{QueuedMessage, claimed_sender};

impl Chat {
    /// Splits a page before anything is decrypted: a prekey message that claims an identity
    /// other than its sender's pinned one is held, unread (also when there is no session that
    /// would make the engine refuse it, e.g. after the session was deleted); the rest goes to
    /// the engine.
    pub(super) fn screen<'e>(
        &self,
        envelopes: &'e [(String, Vec<u8>)],
    ) -> Result<(Vec<QueuedMessage<'e>>, Vec<Held>), ChatError> {
        let mut pinned: HashMap<&str, Option<String>> = HashMap::new();
        let mut queue = Vec::with_capacity(envelopes.len());
        let mut held = Vec::new();
        for (from, envelope) in envelopes {
            if let Some(claimed) = claimed_identity(envelope) {
                let known = match pinned.get(from.as_str()) {
                    Some(known) => known.clone(),
                    None => {
                        let known = self.db.peer(from)?.map(|p| p.fingerprint);
                        pinned.insert(from, known.clone());
                        known
                    }
                };
                if known.is_some_and(|known| known != claimed) {
                    held.push(Held {
                        from: from.clone(),
                        fingerprint: claimed,
                        envelope: envelope.clone(),
                    });
                    continue;
                }
            }
            queue.push(QueuedMessage {
                session_id: from,
                envelope,
            });
        }
        Ok((queue, held))
    }

    /// Keeps held envelopes, marks their identity as changed, and says so.
    pub(super) fn hold(&mut self, held: &[Held]) -> Result<Vec<String>, ChatError> {
        let mut notes = Vec::new();
        if held.is_empty() {
            return Ok(notes);
        }
        let dropped = self.db.hold(held)?;
        let mut seen = HashSet::new();
        for h in held {
            if seen.insert((&h.from, &h.fingerprint)) {
                notes.extend(self.db_check_identity(&h.from, &h.fingerprint)?);
            }
        }
        let mut peers = HashSet::new();
        for h in held {
            if peers.insert(&h.from) {
                notes.push(format!(
                    "! messages from {} are held until you /accept {}'s new identity",
                    h.from, h.from
                ));
            }
        }
        if dropped > 0 {
            notes.push(format!(
                "! {dropped} more held message(s) dropped: at most {MAX_HELD_PER_PEER} are held per peer"
            ));
        }
        Ok(notes)
    }

    /// Compares a peer's identity with the pinned one; pins it on first sight.
    pub(super) fn db_check_identity(
        &self,
        peer: &str,
        fingerprint: &str,
    ) -> Result<Vec<String>, ChatError> {
        match self.db.peer(peer)? {
            None => {
                self.db.pin(peer, fingerprint)?;
                Ok(vec![format!(
                    "* {peer}'s fingerprint: {} (first seen; compare it with {peer}'s /fingerprint)",
                    grouped(fingerprint)
                )])
            }
            Some(p)
                if p.fingerprint != fingerprint && p.pending.as_deref() != Some(fingerprint) =>
            {
                self.db.set_pending(peer, fingerprint)?;
                Ok(changed_warning(peer, &p.fingerprint, fingerprint))
            }
            Some(_) => Ok(Vec::new()),
        }
    }

    pub(super) fn fingerprints(&mut self) -> Result<(), ChatError> {
        let mine = self.client().fingerprint();
        say(format!("* you ({}):  {}", self.me, grouped(&mine)));
        let peer = self.peer.clone();
        match self.db.peer(&peer)? {
            None => say(format!(
                "* {peer}: no identity seen yet (it is pinned with the first message either way)"
            )),
            Some(p) => {
                say(format!("* {peer}:  {}", grouped(&p.fingerprint)));
                if let Some(pending) = p.pending {
                    say(format!(
                        "! {peer}'s identity CHANGED to {}: not accepted (/accept)",
                        grouped(&pending)
                    ));
                }
            }
        }
        Ok(())
    }

    pub(super) fn accept(&mut self) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        let Some(pending) = self.db.peer(&peer)?.and_then(|p| p.pending) else {
            say(format!(
                "* nothing to accept: {peer}'s identity has not changed"
            ));
            return Ok(());
        };
        let stale = {
            let mut client = self.client();
            client.has_session(&peer)? && client.remote_fingerprint(&peer)? != pending
        };
        if stale {
            self.client().delete_session(&peer)?;
        }
        self.db.accept(&peer)?;
        say(format!(
            "* {peer}'s new identity {} is accepted",
            grouped(&pending)
        ));
        let held = self.db.held(&peer)?;
        if let Some((last, _)) = held.last() {
            let last = *last;
            // Only what claimed the accepted identity (or was held before the claim was
            // recorded); a forgery among them fails to decrypt, the genuine one does not.
            let (envelopes, other): (Vec<_>, Vec<_>) = held
                .into_iter()
                .map(|(_, h)| h)
                .partition(|h| h.fingerprint == pending || h.fingerprint.is_empty());
            let envelopes: Vec<(String, Vec<u8>)> = envelopes
                .into_iter()
                .map(|h| (peer.clone(), h.envelope))
                .collect();
            let mut notes = Vec::new();
            if !other.is_empty() {
                notes.push(format!(
                    "! {} held message(s) claimed another identity of {peer}; dropped",
                    other.len()
                ));
            }
            let outcome = self.decrypt(&envelopes, None, 0, notes)?;
            self.db.drop_held(&peer, last)?;
            show(&outcome);
            self.db.mark_shown()?;
        }
        Ok(())
    }
}

pub(super) fn changed_warning(peer: &str, known: &str, now: &str) -> Vec<String> {
    vec![
        format!("! WARNING: {peer}'s identity key has CHANGED"),
        format!("!   known: {}", grouped(known)),
        format!("!   now:   {}", grouped(now)),
        format!(
            "! {peer} may have reinstalled, or someone may be impersonating {peer}. Compare fingerprints"
        ),
        format!(
            "! with {peer} over another channel; /accept trusts the new key. Nothing is sent to {peer} until then."
        ),
    ]
}

/// The fingerprint of the identity a prekey message claims, read by the engine before it is
/// decrypted (`None` for any other envelope, or bytes that are no envelope): what lets a message
/// from a changed identity be held unread.
fn claimed_identity(envelope: &[u8]) -> Option<String> {
    claimed_sender(envelope)
        .ok()
        .flatten()
        .map(|key| key.fingerprint())
}
