//! The commands typed at the prompt (`/help` lists them); any other line is sent.

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
                    "* /reset         delete the session with the peer; the next line starts a new one",
                    "* /status        outbox and prekeys",
                    "* /quit          leave (Ctrl-C and Ctrl-D too)",
                ] {
                    say(l);
                }
            }
            "/fingerprint" | "/fp" => self.fingerprints()?,
            "/accept" => self.accept()?,
            "/reset" => {
                let peer = self.peer.clone();
                self.client().delete_session(&peer)?;
                say(format!(
                    "* the session with {peer} is deleted: the next line starts a new one"
                ));
            }
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
}
