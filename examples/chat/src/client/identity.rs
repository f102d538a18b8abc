//! Identity pinning, by the engine (`Client::set_identity_pinning`): a peer's identity is
//! pinned on first sight; a prekey message or a bundle of another identity is refused
//! (`RemoteIdentityChanged`, 204). A refused message is held, unread, in the chat's records
//! until `/accept` (`Client::accept_identity`); nothing is sent until then.

use std::collections::HashSet;

use proteus_client::{Client, ClientError};
use proteus_core::DecryptError;

use super::inbox::show;
use super::records::{Held, MAX_HELD_PER_PEER};
use super::terminal::{grouped, say};
use super::{Chat, ChatError};

/// Whether the engine refused an identity that is not the pinned one.
pub(super) fn is_identity_changed(e: &ClientError) -> bool {
    matches!(e, ClientError::Decrypt(DecryptError::RemoteIdentityChanged))
}

/// The identity pinned for `peer` by the engine, or else its session's (a session made before
/// pinning, pinned at its next commit).
pub(super) fn pinned(client: &mut Client, peer: &str) -> Result<Option<String>, ChatError> {
    if let Some(pin) = client.pinned_identity(peer)? {
        return Ok(Some(pin));
    }
    match client.has_session(peer)? {
        true => Ok(Some(client.remote_fingerprint(peer)?)),
        false => Ok(None),
    }
}

pub(super) fn first_seen(peer: &str, fingerprint: &str) -> String {
    format!(
        "* {peer}'s fingerprint: {} (first seen; compare it with {peer}'s /fingerprint)",
        grouped(fingerprint)
    )
}

impl Chat {
    /// A changed identity of `peer` that waits for `/accept`: one a bundle had (this run), or
    /// the last one a held message claims.
    pub(super) fn pending(&self, peer: &str) -> Result<Option<String>, ChatError> {
        if let Some(fingerprint) = self.pending_bundles.get(peer) {
            return Ok(Some(fingerprint.clone()));
        }
        let pin = pinned(&mut self.client(), peer)?;
        Ok(self
            .db
            .held(peer)?
            .into_iter()
            .rev()
            .map(|(_, h)| h.fingerprint)
            .find(|f| !f.is_empty() && Some(f) != pin.as_ref()))
    }

    /// Keeps envelopes the engine refused for their identity, and says so.
    pub(super) fn hold(&mut self, held: &[Held]) -> Result<Vec<String>, ChatError> {
        let mut notes = Vec::new();
        if held.is_empty() {
            return Ok(notes);
        }
        let mut peers = HashSet::new();
        let mut known = Vec::new();
        for h in held {
            if peers.insert(&h.from) {
                let pin = pinned(&mut self.client(), &h.from)?;
                known.push((h.from.clone(), pin, self.pending(&h.from)?));
            }
        }
        let dropped = self.db.hold(held)?;
        let mut warned = HashSet::new();
        for h in held {
            let Some((_, pin, pending)) = known.iter().find(|(p, _, _)| *p == h.from) else {
                continue;
            };
            if pending.as_deref() != Some(h.fingerprint.as_str())
                && warned.insert((&h.from, &h.fingerprint))
            {
                notes.extend(changed_warning(
                    &h.from,
                    pin.as_deref().unwrap_or("(none)"),
                    &h.fingerprint,
                ));
            }
        }
        for (peer, _, _) in &known {
            notes.push(format!(
                "! messages from {peer} are held until you /accept {peer}'s new identity"
            ));
        }
        if dropped > 0 {
            notes.push(format!(
                "! {dropped} more held message(s) dropped: at most {MAX_HELD_PER_PEER} are held per peer"
            ));
        }
        Ok(notes)
    }

    /// Notes a bundle's identity that the engine refused, and says so.
    pub(super) fn bundle_refused(
        &mut self,
        peer: &str,
        fingerprint: &str,
    ) -> Result<(), ChatError> {
        let pin = pinned(&mut self.client(), peer)?;
        if self.pending(peer)?.as_deref() != Some(fingerprint) {
            for l in changed_warning(peer, pin.as_deref().unwrap_or("(none)"), fingerprint) {
                say(l);
            }
        }
        self.pending_bundles
            .insert(peer.to_owned(), fingerprint.to_owned());
        Ok(())
    }

    pub(super) fn fingerprints(&mut self) -> Result<(), ChatError> {
        let mine = self.client().fingerprint();
        say(format!("* you ({}):  {}", self.me, grouped(&mine)));
        let peer = self.peer.clone();
        match pinned(&mut self.client(), &peer)? {
            None => say(format!(
                "* {peer}: no identity seen yet (it is pinned with the first message either way)"
            )),
            Some(fingerprint) => say(format!("* {peer}:  {}", grouped(&fingerprint))),
        }
        if let Some(pending) = self.pending(&peer)? {
            say(format!(
                "! {peer}'s identity CHANGED to {}: not accepted (/accept)",
                grouped(&pending)
            ));
        }
        Ok(())
    }

    pub(super) fn accept(&mut self) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        let Some(pending) = self.pending(&peer)? else {
            say(format!(
                "* nothing to accept: {peer}'s identity has not changed"
            ));
            return Ok(());
        };
        // Re-pins, and deletes a session of the old identity: held messages make the new one.
        self.client().accept_identity(&peer, &pending)?;
        self.pending_bundles.remove(&peer);
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

/// Moves the pins of a chat database made before the engine pinned identities (its `peers`
/// table) into the engine, then drops the table: the user's trust decisions are kept, not
/// re-made on first sight. A pin the engine has already wins; a peer whose session has another
/// identity than the old pin keeps its session's (pinned at its next commit) rather than lose
/// the session. A changed identity waiting there is kept as the claim of the peer's held
/// messages that recorded none.
pub(super) fn migrate_pins(
    client: &mut Client,
    db: &mut super::records::ChatDb,
) -> Result<(), ChatError> {
    let Some(old) = db.legacy_pins()? else {
        return Ok(());
    };
    for (peer, fingerprint, _) in &old {
        let session = match client.has_session(peer)? {
            true => Some(client.remote_fingerprint(peer)?),
            false => None,
        };
        if client.pinned_identity(peer)?.is_none()
            && session.as_ref().is_none_or(|s| s == fingerprint)
        {
            match client.accept_identity(peer, fingerprint) {
                Ok(()) | Err(ClientError::InvalidFingerprint(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    db.drop_legacy_pins(&old)?;
    Ok(())
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

#[cfg(test)]
mod tests {
    use proteus_client::Client;
    use rusqlite::Connection;

    use super::migrate_pins;
    use crate::client::records::ChatDb;

    fn bundle_of(c: &mut Client) -> Vec<u8> {
        c.generate_prekeys(1).unwrap().remove(0).to_bytes()
    }

    /// A chat database of a version that pinned identities itself moves its pins into the
    /// engine, once; a session with another identity than the old pin keeps its session.
    #[test]
    fn the_old_pin_table_moves_into_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.sqlite");
        let (bob, mut carol, mut dave) = (
            Client::in_memory().unwrap(),
            Client::in_memory().unwrap(),
            Client::in_memory().unwrap(),
        );
        let mut me = Client::in_memory().unwrap();
        me.create_session("carol", &bundle_of(&mut carol)).unwrap();
        me.create_session("dave", &bundle_of(&mut dave)).unwrap();
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE peers (name TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, pending TEXT) WITHOUT ROWID;",
            )
            .unwrap();
            for (name, fp, pending) in [
                ("bob", bob.fingerprint(), Some(carol.fingerprint())),
                ("carol", carol.fingerprint(), None),
                ("dave", bob.fingerprint(), None),
                ("zed", "not a fingerprint".to_owned(), None),
            ] {
                conn.execute(
                    "INSERT INTO peers VALUES (?1, ?2, ?3)",
                    rusqlite::params![name, fp, pending],
                )
                .unwrap();
            }
        }
        let mut db = ChatDb::open(&path).unwrap();
        db.hold(&[crate::client::records::Held {
            from: "bob".into(),
            fingerprint: String::new(),
            envelope: vec![1, 2, 3],
        }])
        .unwrap();
        me.set_identity_pinning(true);
        migrate_pins(&mut me, &mut db).unwrap();
        assert_eq!(me.pinned_identity("bob").unwrap(), Some(bob.fingerprint()));
        assert_eq!(
            me.pinned_identity("carol").unwrap(),
            Some(carol.fingerprint())
        );
        // Dave's session is kept, with its own identity.
        assert_eq!(me.pinned_identity("dave").unwrap(), None);
        assert_eq!(me.remote_fingerprint("dave").unwrap(), dave.fingerprint());
        assert_eq!(me.pinned_identity("zed").unwrap(), None);
        assert!(db.legacy_pins().unwrap().is_none());
        // Bob's pending identity is now the claim of his held message.
        assert_eq!(
            db.held("bob").unwrap()[0].1.fingerprint,
            carol.fingerprint()
        );
        // Once only.
        migrate_pins(&mut me, &mut db).unwrap();
        drop(db);
        assert!(
            ChatDb::open(&path)
                .unwrap()
                .legacy_pins()
                .unwrap()
                .is_none()
        );
    }
}
