//! The relay: a small HTTP server that keeps prekey bundles and queued envelopes in SQLite and
//! pushes new messages to waiting clients (long-poll). It never sees a plaintext or a secret
//! key: it stores public bundles and opaque envelopes, and checks signatures with public
//! identity keys. The API is described in [`crate::api`].
//!
//! Every request is handled in full or not at all: it is checked (signature, nonce, permission,
//! size, format, rate) before anything is written, and what it writes is one SQLite
//! transaction. Signatures are checked before the database is locked, never under the lock,
//! and failed authentications are limited per address and per claimed name, so forged
//! requests cost their sender more than the relay's users. Connections over a limit are
//! answered 503. Static files (the web client) are served from a directory if one is configured.
//!
//! Its parts:
//!
//! * this module: the listener, connection limits and timeouts, the shared state;
//! * [`config`]: [`RelayConfig`], every limit with its default;
//! * [`limits`]: nonces, token buckets, connection counts, the clock (and the named default
//!   limits);
//! * `routes`: a request read in full, routed to its handler, answered (with a fresh nonce);
//! * `auth`: signature, nonce, rate and ownership checks;
//! * `users`, `prekeys`, `queues`: the handlers (register; upload and claim; send, fetch and
//!   acknowledge);
//! * `db`: the SQLite schema and shared lookups; `errors`: error answers and their codes;
//! * [`files`]: which static file a URL names, and its content type.

use std::cell::Cell;
use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::Hash;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rusqlite::Connection;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::errors::{ApiError, internal};
use self::limits::{
    AddressKey, Admission, Clock, ConnectionLimits, Connections, KnownAddresses, MAX_REFUSING,
    MAX_TRACKED_KEYS, NonceBook, RateBook,
};

mod auth;
pub mod config;
mod db;
mod errors;
pub mod files;
pub mod limits;
mod prekeys;
mod queues;
mod routes;
mod users;

pub use self::config::RelayConfig;
pub use self::files::{content_type, static_path};

/// How much longer than the longest long-poll plus the read timeouts a connection may live.
const CONNECTION_SLACK: Duration = Duration::from_secs(30);

/// A wake-up channel per user's queue, for long-polls.
type Watches = Arc<Mutex<HashMap<String, watch::Sender<u64>>>>;

/// Where the web package is served: `/pkg/index.js`, `/pkg/proteus_web_bg.wasm`, ...
pub const PKG_PREFIX: &str = "/pkg/";

/// The relay could not start.
#[derive(Debug)]
pub struct RelayError(pub String);

impl std::fmt::Display for RelayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RelayError {}

/// A running relay. Dropping it stops it too (without waiting).
#[derive(Debug)]
pub struct RelayHandle {
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
    queues: Watches,
    connections: Arc<Connections>,
}

impl RelayHandle {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// How many users' queues the relay keeps a wake-up channel for (each is memory: only
    /// authenticated users get one).
    pub fn tracked_queues(&self) -> usize {
        lock(&self.queues).len()
    }

    /// How many fetches wait on `name`'s queue now (long-polls, and fetches between their
    /// first look and their answer).
    pub fn waiting_fetches(&self, name: &str) -> usize {
        lock(&self.queues)
            .get(name)
            .map_or(0, watch::Sender::receiver_count)
    }

    /// How many connections the relay serves now (refusals being answered not counted).
    pub fn open_connections(&self) -> usize {
        self.connections.served()
    }

    /// Stops accepting, ends every connection (long-polls included) and closes the database.
    pub async fn shutdown(mut self) {
        let _ = self.shutdown.send(true);
        let _ = (&mut self.task).await;
    }
}

impl Drop for RelayHandle {
    fn drop(&mut self) {
        let _ = self.shutdown.send(true);
    }
}

/// Starts a relay on `listener` (bind first: whoever binds the address is the relay).
pub fn start(listener: TcpListener, config: RelayConfig) -> Result<RelayHandle, RelayError> {
    let addr = listener
        .local_addr()
        .map_err(|e| RelayError(format!("listener: {e}")))?;
    let connections_book = Connections::new(ConnectionLimits {
        total: config.max_connections,
        reserved_for_known: config.reserved_for_known,
        per_address: config.max_connections_per_address,
        refusing: MAX_REFUSING,
    });
    let relay_connections = connections_book.clone();
    let (header_timeout, lifetime) = (
        config.header_timeout,
        config.max_wait + config.header_timeout + config.body_timeout + CONNECTION_SLACK,
    );
    let relay = Arc::new(Relay::open(config)?);
    let queues = relay.queues.clone();
    let (shutdown, mut stop) = watch::channel(false);
    let task = tokio::spawn(async move {
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                _ = stop.changed() => break,
                accepted = listener.accept() => {
                    let Ok((stream, peer)) = accepted else { continue };
                    let address = AddressKey::of(peer.ip());
                    let known = lock(&relay.known).contains(address);
                    let (slot, refusal) = match connections_book.admit(address, known) {
                        Admission::Serve(slot) => (slot, None),
                        Admission::Refuse(slot, why) => (slot, Some(why)),
                        Admission::Close => continue,
                    };
                    let relay = relay.clone();
                    let mut stop = stop.clone();
                    connections.spawn(async move {
                        let _slot = slot;
                        let service = service_fn(move |req| {
                            let relay = relay.clone();
                            async move {
                                Ok::<_, Infallible>(match refusal {
                                    None => relay.handle(req, peer.ip()).await,
                                    Some(why) => relay.busy(req, why).await,
                                })
                            }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(header_timeout)
                            .keep_alive(refusal.is_none())
                            .serve_connection(TokioIo::new(stream), service);
                        // Every connection ends: slow headers by the header timeout, a slow
                        // body by the body timeout, anything else by its lifetime.
                        tokio::select! {
                            _ = conn => {}
                            _ = tokio::time::sleep(lifetime) => {}
                            _ = stop.changed() => {}
                        }
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        connections.shutdown().await;
    });
    Ok(RelayHandle {
        addr,
        shutdown,
        task,
        queues,
        connections: relay_connections,
    })
}

/// A rate book of at most [`MAX_TRACKED_KEYS`] keys.
fn book<K: Hash + Eq + Clone>(clock: &Clock, burst: f64, per_second: f64) -> RateBook<K> {
    RateBook::new(clock.clone(), burst, per_second, MAX_TRACKED_KEYS)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The relay's state, shared by every connection.
struct Relay {
    /// The database: taken through [`Relay::db`], never while a signature is checked.
    db: Mutex<Connection>,
    nonces: Mutex<NonceBook>,
    /// Requests per user.
    buckets: Mutex<RateBook<String>>,
    /// Registrations (new names, taken names) per address.
    registrations: Mutex<RateBook<AddressKey>>,
    /// One-time prekeys claimed per requester and target.
    claims: Mutex<RateBook<(String, String)>>,
    /// Failed authentications per address, and per claimed name.
    failures: Mutex<(RateBook<AddressKey>, RateBook<String>)>,
    /// Addresses a request authenticated from recently (they may use the reserved connections).
    known: Mutex<KnownAddresses>,
    queues: Watches,
    config: RelayConfig,
}

thread_local! {
    /// Whether this thread holds the database lock (see [`Relay::db`]).
    static HOLDS_DB: Cell<bool> = const { Cell::new(false) };
}

/// The database, locked; see [`Relay::db`].
pub(super) struct Db<'a>(MutexGuard<'a, Connection>);

impl Deref for Db<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.0
    }
}

impl DerefMut for Db<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0
    }
}

impl Drop for Db<'_> {
    fn drop(&mut self) {
        HOLDS_DB.set(false);
    }
}

/// Refuses to check a signature while this thread holds the database lock: one request's
/// signature checks (cheap for a forger to ask for) must never hold up everyone else's
/// requests. Every signature check of the relay goes through here first.
fn outside_db_lock() -> Result<(), ApiError> {
    if HOLDS_DB.get() {
        return Err(internal(
            "a signature was to be checked under the database lock",
        ));
    }
    Ok(())
}

impl Relay {
    fn open(config: RelayConfig) -> Result<Self, RelayError> {
        if let Some(dir) = config.db.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| RelayError(format!("{}: {e}", dir.display())))?;
        }
        let conn = db::open(&config.db)
            .map_err(|e| RelayError(format!("{}: {e}", config.db.display())))?;
        let clock = &config.clock;
        let nonces = NonceBook::new(
            clock.clone(),
            config.nonce_ttl,
            config.max_used_nonces_per_user,
        )
        .ok_or_else(|| RelayError("no HMAC for nonces".into()))?;
        let failures = (config.auth_failure_burst, config.auth_failures_per_second);
        Ok(Self {
            db: Mutex::new(conn),
            nonces: Mutex::new(nonces),
            buckets: Mutex::new(book(clock, config.burst, config.rate_per_second)),
            registrations: Mutex::new(book(
                clock,
                config.register_burst,
                config.register_per_second,
            )),
            claims: Mutex::new(book(clock, config.claim_burst, config.claim_per_second)),
            failures: Mutex::new((
                book(clock, failures.0, failures.1),
                book(clock, failures.0, failures.1),
            )),
            known: Mutex::new(KnownAddresses::new(
                clock.clone(),
                config.known_address_ttl,
                MAX_TRACKED_KEYS,
            )),
            queues: Arc::new(Mutex::new(HashMap::new())),
            config,
        })
    }

    /// Locks the database. While the lock is held, no signature may be checked
    /// ([`outside_db_lock`]).
    pub(super) fn db(&self) -> Db<'_> {
        let guard = lock(&self.db);
        HOLDS_DB.set(true);
        Db(guard)
    }

    /// Runs `f` on a thread where blocking (SQLite) is allowed.
    pub(super) async fn blocking<F, T>(self: &Arc<Self>, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&Relay) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let relay = self.clone();
        tokio::task::spawn_blocking(move || f(&relay))
            .await
            .map_err(internal)?
    }

    /// The wake-up channel of `name`'s queue.
    pub(super) fn queue_watch(&self, name: &str) -> watch::Sender<u64> {
        lock(&self.queues)
            .entry(name.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .clone()
    }
}
