//! The commands typed at the prompt (`/help` lists them); any other line is sent.

use super::identity::is_identity_changed;
use super::terminal::say;
use super::{Chat, ChatError};

impl Chat {
    /// Handles one line of input; false to quit.
    pub(super) async fn command(&mut self, line: &str) -> Result<bool, ChatError> {
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        match word {
            "" => {}
            "/quit" | "/exit" => return Ok(false),
            "/help" => {
                for l in [
                    "* type a line and Enter to send it to the peer",
                    "* /fingerprint   both identity fingerprints, to compare over another channel",
                    "* /accept        trust the peer's changed identity key",
                    "* /reset         start the session with the peer over, from a fresh prekey bundle",
                    "* /status        outbox and prekeys",
                    "* /quit          leave (Ctrl-C and Ctrl-D too)",
                ] {
                    say(l);
                }
            }
            "/fingerprint" | "/fp" => self.fingerprints()?,
            "/accept" => self.accept()?,
            "/reset" => self.reset().await?,
            "/status" => {
                let waiting = self.db.outbox()?.len();
                let (received, sent) = self.db.counts(&self.peer)?;
                let prekeys = self.client().prekeys_remaining()?;
                say(format!(
                    "* outbox: {waiting} waiting; with {}: {received} received, {sent} sent; {prekeys} one-time prekeys on this device",
                    self.peer
                ));
            }
            w if w.starts_with("//") => self.send(&line[1..]).await?,
            w if w.starts_with('/') => {
                let _ = rest;
                say(format!("! unknown command {w}; /help lists them"));
            }
            _ => self.send(line).await?,
        }
        Ok(true)
    }

    /// `/reset`: the session with the peer starts over from a fresh prekey bundle, in one commit
    /// (the engine's `reset_session`); messages the peer sent on the old one and that are not read
    /// yet fail from then on with a stable code.
    async fn reset(&mut self) -> Result<(), ChatError> {
        let peer = self.peer.clone();
        if !self.client().has_session(&peer)? {
            say(format!(
                "* there is no session with {peer} yet: the next line starts one"
            ));
            return Ok(());
        }
        let Some((bundle, fingerprint)) = self.claim_bundle(&peer, "not reset").await? else {
            return Ok(());
        };
        // Under pinning, a bundle of another identity is refused and waits for /accept.
        let reset = self.client().reset_session(&peer, &bundle);
        let changed = match reset {
            Ok(changed) => changed,
            Err(e) if is_identity_changed(&e) => {
                self.bundle_refused(&peer, &fingerprint)?;
                say("! not reset");
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        say(format!(
            "* the session with {peer} starts over{}",
            if changed { " with a new identity" } else { "" }
        ));
        Ok(())
    }
}
