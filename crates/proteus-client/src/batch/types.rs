//! Types of batch decryption: the queue, one result per message, progress.

use std::fmt;
use std::time::Duration;

use proteus_core::{DecodeError, Envelope, IdentityKey, Message};
use sha2::{Digest, Sha256};

use super::summary::Stopwatch;
use crate::error::ClientError;

/// A stable id of a received message: the MAC of its envelope.
///
/// The same envelope always has the same id, so an application that records the ids of the
/// messages it has stored can recognise one that is delivered again after a crash.
///
/// The MAC (HMAC-SHA256 over the message, docs/protocol.md §5.1) is already in every envelope, so the id
/// costs nothing to compute. Once the message has decrypted its MAC has been verified: no one
/// without the message's key can make another envelope that decrypts with that id, and an
/// envelope re-encoded on the way (the same message and MAC in other CBOR) keeps its id. Before
/// that it is just bytes someone sent: record the ids of messages that decrypted, not of ones
/// that were rejected. Bytes that are not an envelope get SHA-256 of the bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId([u8; 32]);

impl MessageId {
    /// The id of an envelope: its MAC, or SHA-256 of `envelope` if it is not an envelope.
    pub fn of(envelope: &[u8]) -> Self {
        match Envelope::from_bytes(envelope) {
            Ok(decoded) => Self::of_decoded(&decoded),
            Err(_) => Self::of_undecodable(envelope),
        }
    }

    /// The id of an envelope already decoded.
    pub(crate) fn of_decoded(envelope: &Envelope) -> Self {
        Self(*envelope.mac())
    }

    /// The id of bytes that do not decode as an envelope.
    pub(crate) fn of_undecodable(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Lowercase hex, as ASCII bytes: what bindings hand over for every message of a batch,
    /// without the formatting machinery of `Display`.
    pub fn hex(&self) -> [u8; 64] {
        // Arithmetic rather than a table lookup: no bounds checks, and it vectorises.
        fn digit(nibble: u8) -> u8 {
            if nibble < 10 {
                b'0' + nibble
            } else {
                b'a' - 10 + nibble
            }
        }
        let mut out = [0u8; 64];
        for (pair, b) in out.chunks_exact_mut(2).zip(&self.0) {
            if let [hi, lo] = pair {
                *hi = digit(b >> 4);
                *lo = digit(b & 0xf);
            }
        }
        out
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // ASCII, so never the empty fallback.
        f.write_str(std::str::from_utf8(&self.hex()).unwrap_or_default())
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
}

/// The identity a PreKeyMessage carries, read before it is decrypted: what an application that
/// pins its peers' identities checks to hold a message from a changed identity unread. `None`
/// for other messages. Not authenticated: a message that decrypts proves its sender (see
/// [`Decrypted::sender`]); this only says what the envelope claims.
pub fn claimed_sender(envelope: &[u8]) -> Result<Option<IdentityKey>, DecodeError> {
    Ok(match Envelope::from_bytes(envelope)?.message() {
        Message::PreKey(pkm) => Some(pkm.identity_key),
        Message::Cipher(_) => None,
    })
}

/// One queued message: who it is from (the session id) and its envelope as received.
#[derive(Debug, Clone, Copy)]
pub struct QueuedMessage<'a> {
    /// The session the message belongs to (e.g. "user:device").
    pub session_id: &'a str,
    /// The envelope bytes.
    pub envelope: &'a [u8],
}

/// The result of one message of a batch.
#[derive(Debug)]
pub struct Decrypted {
    /// The message's stable id.
    pub message_id: MessageId,
    /// Its session.
    pub session_id: String,
    /// The plaintext, or why the message was rejected (with a stable code). Duplicates of
    /// messages already decrypted come back as `DuplicateMessage` (209) or `OutdatedMessage`
    /// (208): see [`ClientError::code`]. A message whose skipped key was evicted comes back as
    /// `MessageKeyEvicted` (214): it was never decrypted, so it is not "already seen".
    pub outcome: Result<Vec<u8>, ClientError>,
    /// Who sent it, for a PreKeyMessage (the first messages of a session): the identity it
    /// carries, when the message decrypted (the session's peer, authenticated by the handshake)
    /// or was refused because it is not the identity of the session already there
    /// (`RemoteIdentityChanged`, 204: then it is only what the message claims). `None` for
    /// other messages, whose sender is the session's ([`Client::remote_fingerprint`]).
    ///
    /// [`Client::remote_fingerprint`]: crate::Client::remote_fingerprint
    pub sender: Option<IdentityKey>,
}

impl Decrypted {
    /// Whether the message was one already decrypted (duplicate or outdated).
    pub fn is_already_seen(&self) -> bool {
        matches!(&self.outcome, Err(ClientError::Decrypt(e)) if e.is_already_seen())
    }
}

/// How far a batch has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Messages processed so far.
    pub done: usize,
    /// Messages in the batch.
    pub total: usize,
}

/// When a batch hands its results to the application: every `max_len` results, sooner once
/// `interval` has passed since the last hand-over (so a progress display moves at a steady
/// rate however fast messages decrypt), and at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Chunking {
    /// The most results in one hand-over (at least 1).
    pub max_len: usize,
    /// Hand over what there is once this much time has passed since the last hand-over.
    /// Ignored in WebAssembly without a host clock (`wasm32-unknown-unknown`).
    pub interval: Option<Duration>,
}

impl Chunking {
    /// Chunks of up to `max_len` results (at least 1), with no interval.
    pub fn every(max_len: usize) -> Self {
        Self {
            max_len: max_len.max(1),
            interval: None,
        }
    }

    /// These chunks, handed over sooner once `interval` has passed.
    #[must_use]
    pub fn with_interval(mut self, interval: Duration) -> Self {
        self.interval = Some(interval);
        self
    }
}

/// Whether a chunk is due because its interval has passed. The clock is read every 8 results
/// only (a few microseconds of decryption), and never where there is none.
pub(crate) struct HandOverClock {
    last: Option<(Stopwatch, Duration)>,
}

impl HandOverClock {
    pub(crate) fn start(chunking: Chunking) -> Self {
        Self {
            last: chunking
                .interval
                .and_then(|interval| Some((Stopwatch::start()?, interval))),
        }
    }

    /// Whether `waiting` results should be handed over now because the interval has passed.
    pub(crate) fn due(&self, waiting: usize) -> bool {
        match &self.last {
            Some((last, interval)) => waiting.is_multiple_of(8) && last.elapsed() >= *interval,
            None => false,
        }
    }

    pub(crate) fn handed_over(&mut self) {
        if let Some((last, _)) = &mut self.last
            && let Some(now) = Stopwatch::start()
        {
            *last = now;
        }
    }
}

/// Why a [`decrypt_batch_chunked`](crate::Client::decrypt_batch_chunked) failed. Either way
/// nothing of the batch was committed.
#[derive(Debug, thiserror::Error)]
pub enum BatchError<E> {
    /// The client failed (the store), or the application stopped the batch
    /// ([`ClientError::BatchAborted`]).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The application's callback failed with this error.
    #[error("the batch's delivery callback failed")]
    Delivery(E),
}

#[cfg(test)]
mod tests {
    use super::MessageId;

    #[test]
    fn hex_covers_every_digit() {
        let mut bytes = [0u8; 32];
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = (i as u8).wrapping_mul(0x11) ^ 0x0f;
        }
        let id = MessageId(bytes);
        assert_eq!(id.hex().as_slice(), hex::encode(bytes).as_bytes());
        assert_eq!(
            MessageId([0xab; 32]).hex().as_slice(),
            "ab".repeat(32).as_bytes()
        );
    }
}
