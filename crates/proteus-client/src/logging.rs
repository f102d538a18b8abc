//! What the client logs, and how identifiers stay out of the log.
//!
//! The client logs through the [`log`] facade, under the target [`LOG_TARGET`]. `log` rather
//! than `tracing`: the client has events to report, not spans to follow; every logger of the
//! ecosystem reads `log` (env_logger, android_logger, oslog, and `tracing` subscribers through
//! `tracing-log`); and with no logger installed a call costs one comparison with a static
//! level, before any argument is formatted: the log is off by default and free when off. The
//! bindings install one logger that forwards to the application's (`setLogger`).
//!
//! What is logged, and at which level:
//!
//! | level | event |
//! | --- | --- |
//! | info | a client opened (new or existing identity); a SQLite store opened or created; a schema migration; a write-ahead log found at open (the last process did not close the store, or another has it open: SQLite recovers it); each batch's [`BatchSummary`](crate::BatchSummary); a reload because another process or tab committed; a session reset; a cryptobox import |
//! | warn | the one-time prekey stock below [`PREKEY_LOW_WATER`]; a checkpoint that failed and will be tried again |
//! | error | a store refused as rolled back (older than the application's commit counter) |
//!
//! Nothing logged holds key material or plaintext, and session ids appear only as a keyed hash
//! ([`LogIds`]): the same id gives the same tag within one client, so the lines of one session
//! can be followed, but the tag cannot be matched with the id (nor with another client's tag
//! of it) without the client's random key, which is never logged or stored.

use std::fmt;

use hmac::{Hmac, KeyInit, Mac};
use proteus_core::{OsRng, Rng};
use sha2::Sha256;
use zeroize::Zeroizing;

/// The target of every log record of this library.
pub const LOG_TARGET: &str = "proteus";

/// Below this many one-time prekeys, a commit that used one up logs a warning: it is time to
/// top the stock up ([`Client::top_up_prekeys`](crate::Client::top_up_prekeys)).
pub const PREKEY_LOW_WATER: usize = 20;

/// The key of one client's log tags.
pub(crate) struct LogIds {
    key: Zeroizing<[u8; 32]>,
}

impl LogIds {
    pub(crate) fn new() -> Self {
        let mut key = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(key.as_mut_slice());
        Self { key }
    }

    /// The tag of a session id in this client's log: 8 hex digits of HMAC-SHA256 under the
    /// client's key.
    pub(crate) fn session(&self, session_id: &str) -> Tag {
        // HMAC takes a key of any length: the error is never seen.
        let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(self.key.as_slice()) else {
            return Tag([0; 4]);
        };
        mac.update(session_id.as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut tag = [0u8; 4];
        tag.copy_from_slice(digest.get(..4).unwrap_or(&[0; 4]));
        Tag(tag)
    }
}

/// A session's tag in the log (`s:1a2b3c4d`).
pub(crate) struct Tag([u8; 4]);

impl fmt::Display for Tag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d] = self.0;
        write!(f, "s:{a:02x}{b:02x}{c:02x}{d:02x}")
    }
}

#[cfg(test)]
mod tests {
    use super::LogIds;

    #[test]
    fn tags_are_stable_per_client_and_differ_between_clients() {
        let (one, two) = (LogIds::new(), LogIds::new());
        let tag = one.session("alice:phone").to_string();
        assert_eq!(tag, one.session("alice:phone").to_string());
        assert_ne!(tag, one.session("alice:laptop").to_string());
        assert_ne!(tag, two.session("alice:phone").to_string());
        assert!(tag.starts_with("s:") && tag.len() == 10, "{tag}");
        assert!(!tag.contains("alice"));
    }
}
