//! Every bound the engine enforces, in one place.
//!
//! The protocol limits are those of Wire's deployed Proteus (docs/protocol.md §7, §8, §12); the
//! decoder limits are those of Wire's CBOR codecs (docs/protocol.md §3.3), so anything one of them
//! accepts we accept too, and nothing an attacker claims can make us allocate more than the input
//! itself.

/// Skipped-message keys kept per receive chain (the default; configurable per session up to
/// [`MAX_CONFIGURABLE_COUNTER_GAP`]). When more are skipped, the oldest are evicted and their
/// messages get `MessageKeyEvicted` (214). Wire's implementations use the same number, as the
/// largest gap they accept; here the gap itself is bounded by [`MAX_FAST_FORWARD`].
pub const MAX_COUNTER_GAP: u32 = 1000;

/// Largest accepted gap between a receive chain's next counter and a message's counter: how far
/// one message may fast-forward a chain. A gap of exactly this is accepted, one more is
/// `TooDistantFuture` (211/212).
///
/// Separate from the staged-key limit so that a client back after a long absence (tens of
/// thousands of messages it never received) still decrypts what comes next. The bound is on
/// CPU: a message costs one HMAC-SHA256 per skipped index before its MAC can be checked, and
/// only the last [`MAX_COUNTER_GAP`] chain keys are kept meanwhile, so memory does not grow
/// with the gap. A forged message at this distance costs about 100,000 HMACs and changes
/// nothing (see the README for measured times).
pub const MAX_FAST_FORWARD: u32 = 100_000;

/// Upper bound for a caller-raised staged-key limit. Each staged key costs about 80 bytes in
/// the serialised session, so this keeps a session blob under a few MB per chain.
pub const MAX_CONFIGURABLE_COUNTER_GAP: u32 = 10_000;

/// Receive chains kept per session state; the oldest is dropped when a sixth arrives.
/// Late messages of a dropped chain can no longer be decrypted.
pub const MAX_RECV_CHAINS: usize = 5;

/// Session states kept per session. After an insertion leaves this many, the oldest state other
/// than the current one is evicted, so at most `MAX_SESSION_STATES - 1` remain.
pub const MAX_SESSION_STATES: usize = 100;

/// Base keys of the handshakes that created states of a session, kept (oldest dropped first) so
/// that a replayed PreKeyMessage is refused as a duplicate instead of building its state again,
/// even after the state was evicted. Twice [`MAX_SESSION_STATES`]; 32 bytes each in the record,
/// and below the 1000-element arrays Wire's decoders skip.
pub const MAX_SESSION_BASE_KEYS: usize = 2 * MAX_SESSION_STATES;

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
