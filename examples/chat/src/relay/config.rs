//! What the relay allows and where it keeps its state.

use std::path::PathBuf;
use std::time::Duration;

use super::limits::{self, Clock, MAX_USED_NONCES_PER_USER, NONCE_TTL};

/// What the relay allows and where it keeps its state. Each limit defaults to the named
/// constant of [`limits`] that documents it; tests set small ones.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// The SQLite file (created if missing).
    pub db: PathBuf,
    /// A directory of static files served at `/` (the web client), if any.
    pub web_dir: Option<PathBuf>,
    /// The web package (`ffi/web/pkg`: its ES module and `.wasm`) served at [`PKG_PREFIX`](super::PKG_PREFIX),
    /// if any. It takes that prefix from `web_dir`.
    pub web_pkg_dir: Option<PathBuf>,
    /// The largest envelope accepted, in bytes.
    pub max_envelope: usize,
    /// The largest request body accepted, in bytes.
    pub max_body: usize,
    /// Requests per second each user may make, on average…
    pub rate_per_second: f64,
    /// …and in a burst.
    pub burst: f64,
    /// The most messages queued for one user ([`limits::MAX_QUEUE`]).
    pub max_queue: u64,
    /// Of those, the most from senders the user has never written to
    /// ([`limits::MAX_QUEUE_FROM_STRANGERS`]).
    pub max_queue_from_strangers: u64,
    /// The most the database may hold, in bytes ([`limits::MAX_STORE_BYTES`]).
    pub max_store_bytes: u64,
    /// The most one-time prekeys kept for one user.
    pub max_prekeys: u64,
    /// The most bundles in one upload.
    pub max_upload: usize,
    /// The longest long-poll.
    pub max_wait: Duration,
    /// The most messages in one page of a queue.
    pub max_page: u64,
    /// The most messages one sender may have queued for one recipient
    /// ([`limits::MAX_QUEUE_PER_SENDER`]): one sender cannot fill a queue alone.
    pub max_queue_per_sender: u64,
    /// Registrations that create a name or hit a taken one, per address, in a burst…
    /// ([`limits::REGISTER_BURST`])
    pub register_burst: f64,
    /// …and per second ([`limits::REGISTER_PER_SECOND`]).
    pub register_per_second: f64,
    /// One-time prekeys one user may claim of one other user, in a burst…
    /// ([`limits::CLAIM_BURST`]); past it, the claim gets the last-resort prekey.
    pub claim_burst: f64,
    /// …and per second ([`limits::CLAIM_PER_SECOND`]).
    pub claim_per_second: f64,
    /// Failed authentications per address, and per claimed name, in a burst…
    /// ([`limits::AUTH_FAILURE_BURST`])
    pub auth_failure_burst: f64,
    /// …and per second ([`limits::AUTH_FAILURES_PER_SECOND`]).
    pub auth_failures_per_second: f64,
    /// How long a nonce is valid ([`NONCE_TTL`]).
    pub nonce_ttl: Duration,
    /// The most nonces one user may use within `nonce_ttl` ([`MAX_USED_NONCES_PER_USER`]).
    pub max_used_nonces_per_user: usize,
    /// Open connections, in all ([`limits::MAX_CONNECTIONS`])…
    pub max_connections: usize,
    /// …of which only known addresses may use this many ([`limits::RESERVED_FOR_KNOWN`])…
    pub reserved_for_known: usize,
    /// …and per address: IPv4 address or IPv6 /64 ([`limits::MAX_CONNECTIONS_PER_ADDRESS`]).
    pub max_connections_per_address: usize,
    /// How long an address stays known after a request from it authenticated
    /// ([`limits::KNOWN_ADDRESS_TTL`]).
    pub known_address_ttl: Duration,
    /// The time a client has to send a request's headers ([`limits::HEADER_TIMEOUT`]).
    pub header_timeout: Duration,
    /// The time a client has to send a request's body ([`limits::BODY_TIMEOUT`]).
    pub body_timeout: Duration,
    /// The clock of the nonce window and the rate books ([`Clock::system`]; tests use a
    /// manual one).
    pub clock: Clock,
}

impl RelayConfig {
    /// The defaults, with the database at `db`.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            db: db.into(),
            web_dir: None,
            web_pkg_dir: None,
            max_envelope: limits::MAX_ENVELOPE,
            max_body: limits::MAX_BODY,
            rate_per_second: limits::RATE_PER_SECOND,
            burst: limits::BURST,
            max_queue: limits::MAX_QUEUE,
            max_queue_from_strangers: limits::MAX_QUEUE_FROM_STRANGERS,
            max_store_bytes: limits::MAX_STORE_BYTES,
            max_prekeys: limits::MAX_PREKEYS,
            max_upload: limits::MAX_UPLOAD,
            max_wait: limits::MAX_WAIT,
            max_page: limits::MAX_PAGE,
            max_queue_per_sender: limits::MAX_QUEUE_PER_SENDER,
            register_burst: limits::REGISTER_BURST,
            register_per_second: limits::REGISTER_PER_SECOND,
            claim_burst: limits::CLAIM_BURST,
            claim_per_second: limits::CLAIM_PER_SECOND,
            auth_failure_burst: limits::AUTH_FAILURE_BURST,
            auth_failures_per_second: limits::AUTH_FAILURES_PER_SECOND,
            nonce_ttl: NONCE_TTL,
            max_used_nonces_per_user: MAX_USED_NONCES_PER_USER,
            max_connections: limits::MAX_CONNECTIONS,
            reserved_for_known: limits::RESERVED_FOR_KNOWN,
            max_connections_per_address: limits::MAX_CONNECTIONS_PER_ADDRESS,
            known_address_ttl: limits::KNOWN_ADDRESS_TTL,
            header_timeout: limits::HEADER_TIMEOUT,
            body_timeout: limits::BODY_TIMEOUT,
            clock: Clock::system(),
        }
    }
}
