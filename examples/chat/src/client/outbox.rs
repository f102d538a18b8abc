//! Sending: a line is encrypted (a session made first from a claimed bundle, its identity
//! checked) and kept in the outbox until the relay has it.

use proteus_core::PreKeyBundle;

use super::identity::{changed_warning, first_seen, is_identity_changed, pinned};
use super::terminal::say;
use super::{Chat, ChatError, MAX_TEXT};
use crate::api::ErrorCode;
use crate::net::NetError;

impl Chat {
    /// Encrypts and sends a line (through the outbox, so nothing typed is lost while the
    /// relay is away).
    pub(super) async fn send(&mut self, text: &str) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        if text.len() > MAX_TEXT {
            say(format!("! not sent: a line is at most {MAX_TEXT} bytes"));
            return Ok(());
        }
        if let Some(pending) = self.pending(&peer)? {
            let known = pinned(&mut self.client(), &peer)?.unwrap_or_default();
            for l in changed_warning(&peer, &known, &pending) {
                say(l);
            }
            say("! not sent");
            return Ok(());
        }
        if !self.client().has_session(&peer)? {
            let Some((bundle, fingerprint)) = self.claim_bundle(&peer, "not sent").await? else {
                return Ok(());
            };
            let first = pinned(&mut self.client(), &peer)?.is_none();
            let made = self.client().create_session(&peer, &bundle);
            match made {
                Ok(()) if first => say(first_seen(&peer, &fingerprint)),
                Ok(()) => {}
                Err(e) if is_identity_changed(&e) => {
                    self.bundle_refused(&peer, &fingerprint)?;
                    say("! not sent");
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        }
        let envelope = self.client().encrypt(&peer, text.as_bytes())?;
        self.db.record_sent(&peer, text, &envelope)?;
        self.flush_outbox().await;
        Ok(())
    }

    /// Claims one of `peer`'s prekey bundles at the relay: the bundle and its identity's
    /// fingerprint, or `None` after saying why not (`what`: "not sent", say) when the relay has
    /// none or a bad one. Its identity is checked by the engine when it makes the session.
    pub(super) async fn claim_bundle(
        &mut self,
        peer: &str,
        what: &str,
    ) -> Result<Option<(Vec<u8>, String)>, ChatError> {
        let (bundle, _) = match self.relay.claim(peer).await {
            Ok(b) => b,
            Err(e)
                if matches!(
                    e.code(),
                    Some(ErrorCode::UnknownUser | ErrorCode::NoPrekeys)
                ) =>
            {
                say(format!(
                    "! {what}: {peer} has not joined the relay yet (run `proteus-chat {peer} {}`)",
                    self.me
                ));
                return Ok(None);
            }
            Err(e) => {
                say(format!("! {what}: {e}"));
                return Ok(None);
            }
        };
        let fingerprint = match PreKeyBundle::from_bytes(&bundle) {
            Ok(b) => b.identity_key().fingerprint(),
            Err(e) => {
                say(format!(
                    "! {what}: the relay gave a bad bundle for {peer}: {e}"
                ));
                return Ok(None);
            }
        };
        Ok(Some((bundle, fingerprint)))
    }

    /// Sends what waits in the outbox, in order; stops at the first failure to retry later.
    pub(super) async fn flush_outbox(&mut self) {
        let Ok(outbox) = self.db.outbox() else {
            return;
        };
        for (n, peer, envelope) in outbox {
            match self.relay.send(&peer, &envelope).await {
                Ok(_) => {
                    let _ = self.db.outbox_done(n);
                }
                Err(NetError::Api {
                    status,
                    code,
                    message,
                }) if status != 429 && status < 500 => {
                    say(format!(
                        "! the relay refused a message to {peer} ({code}: {message}); dropped"
                    ));
                    let _ = self.db.outbox_done(n);
                }
                Err(e) => {
                    if !self.outbox_blocked {
                        say(format!(
                            "* kept in the outbox, sent when the relay is back ({e})"
                        ));
                    }
                    self.outbox_blocked = true;
                    return;
                }
            }
        }
    }
}
