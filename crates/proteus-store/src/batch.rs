//! Types of batch decryption: the queue, one result per message, progress.

use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::ClientError;

/// A stable id of a received message: SHA-256 of its envelope bytes.
///
/// The same envelope always has the same id, so an application that records the ids it has
/// shown can recognise a message that is delivered again after a crash.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MessageId([u8; 32]);

impl MessageId {
    /// The id of an envelope.
    pub fn of(envelope: &[u8]) -> Self {
        Self(Sha256::digest(envelope).into())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in &self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MessageId({self})")
    }
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
    /// (208): see [`ClientError::code`].
    pub outcome: Result<Vec<u8>, ClientError>,
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
