//! The relay: a small HTTP server that keeps prekey bundles and queued envelopes in SQLite and
//! pushes new messages to waiting clients (long-poll). It never sees a plaintext or a secret
//! key: it stores public bundles and opaque envelopes, and checks signatures with public
//! identity keys. The API is described in [`crate::api`].
//!
//! Every request is handled in full or not at all: it is checked (signature, nonce, permission,
//! size, format, rate) before anything is written, and what it writes is one SQLite
//! transaction. Static files (the web client) are served from a directory if one is configured.
//!
//! Its parts:
//!
//! * this module: the listener, connection limits and timeouts, the shared state;
//! * [`config`]: [`RelayConfig`], every limit with its default;
//! * [`limits`]: nonces, token buckets, connection counts (and the named default limits);
//! * `routes`: a request read in full, routed to its handler, answered (with a fresh nonce);
//! * `auth`: signature, nonce, rate and ownership checks;
//! * `users`, `prekeys`, `queues`: the handlers (register; upload and claim; send, fetch and
//!   acknowledge);
//! * `db`: the SQLite schema and shared lookups; `errors`: error answers and their codes;
//! * [`files`]: which static file a URL names, and its content type.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use rusqlite::Connection;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use self::errors::{ApiError, internal};
use self::limits::{Connections, NonceBook, RateBook};

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
    let connections_book = Connections::new(config.max_connections, config.max_connections_per_ip);
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
                    // Over the limit: the connection is closed at once (dropped).
                    let Some(slot) = connections_book.admit(peer.ip()) else { continue };
                    let relay = relay.clone();
                    let mut stop = stop.clone();
                    connections.spawn(async move {
                        let _slot = slot;
                        let service = service_fn(move |req| {
                            let relay = relay.clone();
                            async move { Ok::<_, Infallible>(relay.handle(req, peer.ip()).await) }
                        });
                        let conn = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(header_timeout)
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
    })
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The relay's state, shared by every connection.
struct Relay {
    db: Mutex<Connection>,
    nonces: Mutex<NonceBook>,
    buckets: Mutex<RateBook<String>>,
    registrations: Mutex<RateBook<IpAddr>>,
    claims: Mutex<RateBook<(String, String)>>,
    queues: Watches,
    config: RelayConfig,
}
impl Relay {
    fn open(config: RelayConfig) -> Result<Self, RelayError> {
        if let Some(dir) = config.db.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| RelayError(format!("{}: {e}", dir.display())))?;
        }
        let conn = db::open(&config.db)
            .map_err(|e| RelayError(format!("{}: {e}", config.db.display())))?;
        let nonces = NonceBook::new(config.nonce_ttl, config.max_used_nonces_per_user)
            .ok_or_else(|| RelayError("no HMAC for nonces".into()))?;
        Ok(Self {
            db: Mutex::new(conn),
            nonces: Mutex::new(nonces),
            buckets: Mutex::new(RateBook::new()),
            registrations: Mutex::new(RateBook::new()),
            claims: Mutex::new(RateBook::new()),
            queues: Arc::new(Mutex::new(HashMap::new())),
            config,
        })
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
