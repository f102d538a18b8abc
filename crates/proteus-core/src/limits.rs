//! Every bound the engine enforces, in one place.
//!
//! The protocol limits are those of Wire's deployed Proteus (spec §7, §8); the decoder limits
//! are those of Wire's CBOR codecs (spec §2), so anything one of them accepts we accept too, and
//! nothing an attacker claims can make us allocate more than the input itself.

/// Largest accepted gap between a receive chain's next counter and a message's counter.
///
/// Deriving the skipped keys costs one hash-ratchet step per skipped message, so the gap bounds
/// the work one message can cause. A gap of exactly 1000 is accepted, 1001 is rejected
/// (`TooDistantFuture`), as in Wire's implementations. Callers may raise it per session up to
/// [`MAX_CONFIGURABLE_COUNTER_GAP`].
pub const MAX_COUNTER_GAP: u32 = 1000;

/// Upper bound for a caller-raised counter gap. Each staged key costs about 80 bytes in the
/// serialised session, so this keeps a session blob under a few MB per chain.
pub const MAX_CONFIGURABLE_COUNTER_GAP: u32 = 10_000;

/// Receive chains kept per session state; the oldest is dropped when a sixth arrives.
/// Late messages of a dropped chain can no longer be decrypted.
pub const MAX_RECV_CHAINS: usize = 5;

/// Session states kept per session. After an insertion leaves this many, the oldest state other
/// than the current one is evicted, so at most `MAX_SESSION_STATES - 1` remain.
pub const MAX_SESSION_STATES: usize = 100;

/// Largest byte string a decoder accepts (5 MiB), as in Wire's codecs.
pub const MAX_BYTES_LEN: usize = 5 * 1024 * 1024;

/// Largest array a decoder accepts. Staged message keys are the only long arrays; this admits a
/// raised counter gap while still bounding the work of a hostile length claim.
pub const MAX_ARRAY_LEN: usize = MAX_CONFIGURABLE_COUNTER_GAP as usize;

/// Largest map a decoder accepts, as in Wire's codecs.
pub const MAX_MAP_LEN: usize = 1000;

/// Deepest nesting a decoder follows when it skips an unknown value, as in Wire's codecs.
pub const MAX_NESTING_DEPTH: usize = 16;

/// Largest plaintext `encrypt` accepts: the ciphertext travels inside a byte string of the
/// message, which must itself stay within [`MAX_BYTES_LEN`] with room for the message header.
pub const MAX_PLAINTEXT_LEN: usize = MAX_BYTES_LEN - 1024;
