//! The relay: a small HTTP server that keeps prekey bundles and queued envelopes in SQLite and
//! pushes new messages to waiting clients (long-poll). It never sees a plaintext or a secret
//! key: it stores public bundles and opaque envelopes, and checks signatures with public
//! identity keys. The API is described in [`crate::api`].
//!
//! Every request is handled in full or not at all: it is checked (signature, nonce, permission,
//! size, format, rate) before anything is written, and what it writes is one SQLite
//! transaction. Static files (the web client) are served from a directory if one is configured.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use proteus_core::{BundleVerification, Envelope, IdentityKey, PreKeyBundle, PublicKey};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::api::{
    self, AckResponse, ClaimedBundle, ErrorBody, HEADER_NONCE, HEADER_REPLAY_NONCE,
    HEADER_SIGNATURE, HEADER_USER, LAST_RESORT_ID, NonceResponse, PreKeyCount, QueuePage,
    QueuedEnvelope, RegisterRequest, RegisterResponse, SendResponse, UploadPreKeys,
};
pub use crate::relay_files::{content_type, static_path};
use crate::relay_limits::{
    self, Connections, FreshNonce, MAX_USED_NONCES_PER_USER, NONCE_TTL, NonceBook, RateBook,
    SpendError,
};

/// What the relay allows and where it keeps its state. Each limit defaults to the named
/// constant of [`relay_limits`] that documents it; tests set small ones.
#[derive(Debug, Clone)]
pub struct RelayConfig {
    /// The SQLite file (created if missing).
    pub db: PathBuf,
    /// A directory of static files served at `/` (the web client), if any.
    pub web_dir: Option<PathBuf>,
    /// The web package (`ffi/web/pkg`: its ES module and `.wasm`) served at [`PKG_PREFIX`],
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
    /// The most messages queued for one user.
    pub max_queue: u64,
    /// The most one-time prekeys kept for one user.
    pub max_prekeys: u64,
    /// The most bundles in one upload.
    pub max_upload: usize,
    /// The longest long-poll.
    pub max_wait: Duration,
    /// The most messages in one page of a queue.
    pub max_page: u64,
    /// The most messages one sender may have queued for one recipient
    /// ([`relay_limits::MAX_QUEUE_PER_SENDER`]): one sender cannot fill a queue alone.
    pub max_queue_per_sender: u64,
    /// Registrations that create a name or hit a taken one, per address, in a burst…
    /// ([`relay_limits::REGISTER_BURST`])
    pub register_burst: f64,
    /// …and per second ([`relay_limits::REGISTER_PER_SECOND`]).
    pub register_per_second: f64,
    /// One-time prekeys one user may claim of one other user, in a burst…
    /// ([`relay_limits::CLAIM_BURST`]); past it, the claim gets the last-resort prekey.
    pub claim_burst: f64,
    /// …and per second ([`relay_limits::CLAIM_PER_SECOND`]).
    pub claim_per_second: f64,
    /// How long a nonce is valid ([`NONCE_TTL`]).
    pub nonce_ttl: Duration,
    /// The most nonces one user may use within `nonce_ttl` ([`MAX_USED_NONCES_PER_USER`]).
    pub max_used_nonces_per_user: usize,
    /// Open connections, in all ([`relay_limits::MAX_CONNECTIONS`])…
    pub max_connections: usize,
    /// …and per address ([`relay_limits::MAX_CONNECTIONS_PER_IP`]).
    pub max_connections_per_ip: usize,
    /// The time a client has to send a request's headers ([`relay_limits::HEADER_TIMEOUT`]).
    pub header_timeout: Duration,
    /// The time a client has to send a request's body ([`relay_limits::BODY_TIMEOUT`]).
    pub body_timeout: Duration,
}

impl RelayConfig {
    /// The defaults, with the database at `db`.
    pub fn new(db: impl Into<PathBuf>) -> Self {
        Self {
            db: db.into(),
            web_dir: None,
            web_pkg_dir: None,
            max_envelope: relay_limits::MAX_ENVELOPE,
            max_body: relay_limits::MAX_BODY,
            rate_per_second: relay_limits::RATE_PER_SECOND,
            burst: relay_limits::BURST,
            max_queue: relay_limits::MAX_QUEUE,
            max_prekeys: relay_limits::MAX_PREKEYS,
            max_upload: relay_limits::MAX_UPLOAD,
            max_wait: relay_limits::MAX_WAIT,
            max_page: relay_limits::MAX_PAGE,
            max_queue_per_sender: relay_limits::MAX_QUEUE_PER_SENDER,
            register_burst: relay_limits::REGISTER_BURST,
            register_per_second: relay_limits::REGISTER_PER_SECOND,
            claim_burst: relay_limits::CLAIM_BURST,
            claim_per_second: relay_limits::CLAIM_PER_SECOND,
            nonce_ttl: NONCE_TTL,
            max_used_nonces_per_user: MAX_USED_NONCES_PER_USER,
            max_connections: relay_limits::MAX_CONNECTIONS,
            max_connections_per_ip: relay_limits::MAX_CONNECTIONS_PER_IP,
            header_timeout: relay_limits::HEADER_TIMEOUT,
            body_timeout: relay_limits::BODY_TIMEOUT,
        }
    }
}

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

// --- errors -------------------------------------------------------------------------------

#[derive(Debug)]
struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

fn err(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

fn bad_request(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, "bad_request", message)
}

fn internal(e: impl std::fmt::Display) -> ApiError {
    err(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        format!("relay failure: {e}"),
    )
}

fn db_err(e: rusqlite::Error) -> ApiError {
    internal(e)
}

type Reply = Result<(StatusCode, Vec<u8>), ApiError>;

fn json<T: serde::Serialize>(status: StatusCode, value: &T) -> Reply {
    serde_json::to_vec(value)
        .map(|body| (status, body))
        .map_err(internal)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

// --- the relay ------------------------------------------------------------------------------

struct Relay {
    db: Mutex<Connection>,
    nonces: Mutex<NonceBook>,
    buckets: Mutex<RateBook<String>>,
    registrations: Mutex<RateBook<IpAddr>>,
    claims: Mutex<RateBook<(String, String)>>,
    queues: Watches,
    config: RelayConfig,
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS users (
        name TEXT PRIMARY KEY,
        identity BLOB NOT NULL,
        next_seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS prekeys (
        user TEXT NOT NULL,
        id INTEGER NOT NULL,
        bundle BLOB NOT NULL,
        PRIMARY KEY (user, id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS queue (
        user TEXT NOT NULL,
        seq INTEGER NOT NULL,
        sender TEXT NOT NULL,
        envelope BLOB NOT NULL,
        PRIMARY KEY (user, seq)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS queue_by_sender ON queue (user, sender);
";

/// A request, read in full.
struct Call {
    method: Method,
    path_and_query: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
    /// The address it came from.
    peer: IpAddr,
}

/// The authenticated sender of a request.
struct Authed {
    user: String,
}

impl Relay {
    fn open(config: RelayConfig) -> Result<Self, RelayError> {
        if let Some(dir) = config.db.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| RelayError(format!("{}: {e}", dir.display())))?;
        }
        let fail = |e: rusqlite::Error| RelayError(format!("{}: {e}", config.db.display()));
        let conn = Connection::open(&config.db).map_err(fail)?;
        conn.busy_timeout(Duration::from_secs(5)).map_err(fail)?;
        // WAL with synchronous=NORMAL: a commit survives the relay process dying; only a power
        // loss can take back the last commits.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        conn.execute_batch(SCHEMA).map_err(fail)?;
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

    async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: IpAddr,
    ) -> Response<Full<Bytes>> {
        let (status, content_type, body, file) = match self.clone().route(req, peer).await {
            Ok(Routed::Json(status, body)) => (status, "application/json", body, false),
            Ok(Routed::File(content_type, body)) => (StatusCode::OK, content_type, body, true),
            Err(e) => {
                let body = serde_json::to_vec(&ErrorBody {
                    error: e.code.to_owned(),
                    message: e.message,
                })
                .unwrap_or_default();
                (e.status, "application/json", body, false)
            }
        };
        let nonce = lock(&self.nonces).issue();
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
        if let Ok(value) = HeaderValue::from_str(&nonce) {
            headers.insert(HEADER_REPLAY_NONCE, value);
        }
        if file {
            // Revalidated on every load, so a rebuilt page or package is picked up at once.
            headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            headers.insert(
                HeaderName::from_static("x-content-type-options"),
                HeaderValue::from_static("nosniff"),
            );
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
        }
        response
    }

    async fn route(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: IpAddr,
    ) -> Result<Routed, ApiError> {
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or("").to_owned();
        let path_and_query = req
            .uri()
            .path_and_query()
            .map_or_else(|| path.clone(), |p| p.as_str().to_owned());
        let segments: Vec<String> = path
            .trim_start_matches('/')
            .split('/')
            .map(str::to_owned)
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        if segments.first() != Some(&"v1") {
            return if method == Method::GET || method == Method::HEAD {
                self.static_file(&path).await
            } else {
                Err(err(StatusCode::NOT_FOUND, "not_found", "no such route"))
            };
        }
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.config.max_body as u64) {
            return Err(too_large(self.config.max_body));
        }
        let (parts, body) = req.into_parts();
        let body = tokio::time::timeout(
            self.config.body_timeout,
            Limited::new(body, self.config.max_body).collect(),
        )
        .await
        .map_err(|_| {
            err(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                format!(
                    "the body did not arrive within {:?}",
                    self.config.body_timeout
                ),
            )
        })?
        .map_err(|_| too_large(self.config.max_body))?
        .to_bytes();
        let call = Call {
            method: method.clone(),
            path_and_query,
            query,
            headers: parts.headers,
            body,
            peer,
        };
        let name = |n: &str| -> Result<String, ApiError> {
            if api::valid_name(n) {
                Ok(n.to_owned())
            } else {
                Err(bad_request(format!(
                    "invalid user name {n:?}: 1 to {} of a-z, 0-9, '.', '_', '-'",
                    api::MAX_NAME_LEN
                )))
            }
        };
        let reply = match (&method, segments.as_slice()) {
            (&Method::GET, ["v1", "nonce"]) => json(
                StatusCode::OK,
                &NonceResponse {
                    nonce: lock(&self.nonces).issue(),
                },
            ),
            (&Method::POST, ["v1", "users", n]) => {
                let n = name(n)?;
                self.blocking(move |r| r.register(&n, &call)).await
            }
            (&Method::PUT, ["v1", "prekeys", n]) => {
                let n = name(n)?;
                self.blocking(move |r| r.upload(&n, &call)).await
            }
            (&Method::POST, ["v1", "prekeys", n, "claim"]) => {
                let n = name(n)?;
                self.blocking(move |r| r.claim(&n, &call)).await
            }
            (&Method::POST, ["v1", "queues", n]) => {
                let n = name(n)?;
                self.blocking(move |r| r.send(&n, &call)).await
            }
            (&Method::GET, ["v1", "queues", n]) => {
                let n = name(n)?;
                self.fetch(n, call).await
            }
            (&Method::DELETE, ["v1", "queues", n]) => {
                let n = name(n)?;
                self.blocking(move |r| r.ack(&n, &call)).await
            }
            (_, ["v1", "nonce"] | ["v1", "users" | "prekeys" | "queues", _])
            | (_, ["v1", "prekeys", _, "claim"]) => Err(err(
                StatusCode::METHOD_NOT_ALLOWED,
                "bad_request",
                format!("{method} is not allowed here"),
            )),
            _ => Err(err(StatusCode::NOT_FOUND, "not_found", "no such route")),
        }?;
        Ok(Routed::Json(reply.0, reply.1))
    }

    async fn blocking<F, T>(self: &Arc<Self>, f: F) -> Result<T, ApiError>
    where
        F: FnOnce(&Relay) -> Result<T, ApiError> + Send + 'static,
        T: Send + 'static,
    {
        let relay = self.clone();
        tokio::task::spawn_blocking(move || f(&relay))
            .await
            .map_err(internal)?
    }

    // --- authentication ---------------------------------------------------------------------

    fn auth_headers<'c>(
        &self,
        call: &'c Call,
    ) -> Result<(&'c str, &'c str, FreshNonce, [u8; 64]), ApiError> {
        let header = |name: &str| {
            call.headers
                .get(name)
                .map(|v| {
                    v.to_str()
                        .map_err(|_| bad_request(format!("header {name} is not ASCII")))
                })
                .transpose()
        };
        let (Some(user), Some(nonce), Some(signature)) = (
            header(HEADER_USER)?,
            header(HEADER_NONCE)?,
            header(HEADER_SIGNATURE)?,
        ) else {
            return Err(err(
                StatusCode::UNAUTHORIZED,
                "missing_auth",
                format!(
                    "sign the request: headers {HEADER_USER}, {HEADER_NONCE} (from GET /v1/nonce) and {HEADER_SIGNATURE}"
                ),
            ));
        };
        let fresh = lock(&self.nonces).check(nonce).ok_or_else(bad_nonce)?;
        let signature: [u8; 64] = api::unb64(signature)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad_signature("the signature is not 64 bytes of base64"))?;
        Ok((user, nonce, fresh, signature))
    }

    /// Records the nonce of a request whose signature verified as `user`'s.
    fn spend_nonce(&self, user: &str, nonce: FreshNonce) -> Result<(), ApiError> {
        lock(&self.nonces).spend(user, nonce).map_err(|e| match e {
            SpendError::Replayed => bad_nonce(),
            SpendError::TooMany => err(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "more than {} requests in {:?}: slow down",
                    self.config.max_used_nonces_per_user, self.config.nonce_ttl
                ),
            ),
        })
    }

    fn verify(
        call: &Call,
        user: &str,
        nonce: &str,
        identity: &IdentityKey,
        sig: &[u8; 64],
    ) -> bool {
        let message = api::signed_message(
            user,
            nonce,
            call.method.as_str(),
            &call.path_and_query,
            &call.body,
        );
        identity.verify(&message, sig)
    }

    /// Checks the signature against the user's registered identity, then the user's rate.
    fn authenticate(&self, conn: &Connection, call: &Call) -> Result<Authed, ApiError> {
        let (user, nonce, fresh, signature) = self.auth_headers(call)?;
        let identity = if api::valid_name(user) {
            identity_of(conn, user)?
        } else {
            None
        }
        .ok_or_else(|| {
            err(
                StatusCode::UNAUTHORIZED,
                "unknown_user",
                format!("no user {user:?} is registered"),
            )
        })?;
        if !Self::verify(call, user, nonce, &identity, &signature) {
            return Err(bad_signature(format!(
                "the signature does not verify with {user}'s identity key"
            )));
        }
        self.spend_nonce(user, fresh)?;
        self.take_token(user)?;
        Ok(Authed {
            user: user.to_owned(),
        })
    }

    fn take_token(&self, user: &str) -> Result<(), ApiError> {
        let (burst, rate) = (self.config.burst, self.config.rate_per_second);
        if !lock(&self.buckets).take(&user.to_owned(), burst, rate) {
            return Err(err(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!(
                    "more than {} requests in a burst or {}/s: slow down",
                    self.config.burst, self.config.rate_per_second
                ),
            ));
        }
        Ok(())
    }

    /// Registrations that create a name or hit a taken one are limited per address: they are
    /// not charged to any user (a new name has no budget yet, a taken one is not the caller's).
    fn take_registration(&self, peer: IpAddr) -> Result<(), ApiError> {
        let (burst, rate) = (self.config.register_burst, self.config.register_per_second);
        if lock(&self.registrations).take(&peer, burst, rate) {
            Ok(())
        } else {
            Err(err(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                format!("more than {burst} registrations in a burst from this address: slow down"),
            ))
        }
    }

    fn own(authed: &Authed, name: &str, what: &str) -> Result<(), ApiError> {
        if authed.user == name {
            Ok(())
        } else {
            Err(err(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("{} may not {what} of {name}", authed.user),
            ))
        }
    }

    // --- routes -----------------------------------------------------------------------------

    fn register(&self, name: &str, call: &Call) -> Reply {
        let (user, nonce, fresh, signature) = self.auth_headers(call)?;
        if user != name {
            return Err(err(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("a request signed as {user:?} cannot register {name:?}"),
            ));
        }
        let request: RegisterRequest = parse_json(&call.body)?;
        let identity = api::unb64(&request.identity)
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(|b| IdentityKey::new(PublicKey::from_bytes(b)))
            .filter(|k| k.public_key().validate().is_ok())
            .ok_or_else(|| bad_request("identity: not a valid 32-byte Ed25519 key in base64"))?;
        if !Self::verify(call, user, nonce, &identity, &signature) {
            return Err(bad_signature(
                "the signature does not verify with the identity key being registered",
            ));
        }
        let mut db = lock(&self.db);
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        // The signature only proves the caller holds the key in the body: the name's budget
        // is spent only once that key is the name's (or the name is new), so a stranger
        // claiming a taken name cannot drain its owner's rate.
        // The nonce is recorded only then too: it is recorded in the name's set of used nonces.
        let existing = identity_of(&tx, name)?;
        if existing.as_ref().is_some_and(|e| *e != identity) {
            self.take_registration(call.peer)?;
            return Err(err(
                StatusCode::CONFLICT,
                "identity_conflict",
                format!("{name} is registered with another identity key"),
            ));
        }
        if existing.is_none() {
            self.take_registration(call.peer)?;
        }
        self.spend_nonce(name, fresh)?;
        self.take_token(name)?;
        let created = match existing {
            Some(_) => false,
            None => {
                tx.execute(
                    "INSERT INTO users (name, identity, next_seq) VALUES (?1, ?2, 1)",
                    params![name, identity.public_key().as_bytes().as_slice()],
                )
                .map_err(db_err)?;
                true
            }
        };
        let prekeys_remaining = count_prekeys(&tx, name)?;
        tx.commit().map_err(db_err)?;
        json(
            if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            &RegisterResponse {
                created,
                prekeys_remaining,
            },
        )
    }

    fn upload(&self, name: &str, call: &Call) -> Reply {
        let mut db = lock(&self.db);
        let authed = self.authenticate(&db, call)?;
        Self::own(&authed, name, "publish the prekeys")?;
        let request: UploadPreKeys = parse_json(&call.body)?;
        if request.prekeys.len() > self.config.max_upload {
            return Err(err(
                StatusCode::BAD_REQUEST,
                "too_many_prekeys",
                format!("at most {} bundles per upload", self.config.max_upload),
            ));
        }
        let identity = identity_of(&db, name)?.ok_or_else(|| internal("user vanished"))?;
        let check = |(i, text): (usize, &String), last_resort: bool| {
            let bytes =
                api::unb64(text).ok_or_else(|| bad_bundle(format!("bundle {i}: not base64")))?;
            let bundle = PreKeyBundle::from_bytes(&bytes)
                .map_err(|e| bad_bundle(format!("bundle {i}: {e}")))?;
            if bundle.identity_key() != &identity {
                return Err(bad_bundle(format!(
                    "bundle {i} belongs to another identity than {name}'s"
                )));
            }
            if bundle.verify() == BundleVerification::Invalid {
                return Err(bad_bundle(format!("bundle {i}: invalid signature")));
            }
            let id = bundle.prekey_id().value();
            if (id == LAST_RESORT_ID) != last_resort {
                return Err(bad_bundle(if last_resort {
                    format!("the last-resort bundle must have id {LAST_RESORT_ID}")
                } else {
                    format!("bundle {i}: id {LAST_RESORT_ID} is the last-resort prekey's")
                }));
            }
            Ok((id, bytes))
        };
        let mut bundles = Vec::with_capacity(request.prekeys.len() + 1);
        for entry in request.prekeys.iter().enumerate() {
            bundles.push(check(entry, false)?);
        }
        if let Some(last) = &request.last_resort {
            bundles.push(check((request.prekeys.len(), last), true)?);
        }
        let mut ids: Vec<u16> = bundles.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != bundles.len() {
            return Err(bad_bundle("two bundles have the same prekey id"));
        }
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        for (id, bytes) in &bundles {
            tx.execute(
                "INSERT OR REPLACE INTO prekeys (user, id, bundle) VALUES (?1, ?2, ?3)",
                params![name, id, bytes],
            )
            .map_err(db_err)?;
        }
        let prekeys_remaining = count_prekeys(&tx, name)?;
        if prekeys_remaining > self.config.max_prekeys {
            return Err(err(
                StatusCode::BAD_REQUEST,
                "too_many_prekeys",
                format!(
                    "the relay keeps at most {} one-time prekeys per user",
                    self.config.max_prekeys
                ),
            ));
        }
        tx.commit().map_err(db_err)?;
        json(StatusCode::OK, &PreKeyCount { prekeys_remaining })
    }

    fn claim(&self, name: &str, call: &Call) -> Reply {
        let mut db = lock(&self.db);
        let authed = self.authenticate(&db, call)?;
        if !call.body.is_empty() {
            return Err(bad_request("a claim has no body"));
        }
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        if identity_of(&tx, name)?.is_none() {
            return Err(err(
                StatusCode::NOT_FOUND,
                "unknown_user",
                format!("no user {name:?} is registered"),
            ));
        }
        // Past its share of `name`'s one-time prekeys, a requester gets the last-resort one:
        // one user cannot drain another's one-time prekeys.
        let within_share = authed.user == name || {
            let (burst, rate) = (self.config.claim_burst, self.config.claim_per_second);
            lock(&self.claims).take(&(authed.user.clone(), name.to_owned()), burst, rate)
        };
        let one_time: Option<(u16, Vec<u8>)> = if !within_share {
            None
        } else {
            tx.query_row(
                "SELECT id, bundle FROM prekeys WHERE user = ?1 AND id != ?2 ORDER BY id LIMIT 1",
                params![name, LAST_RESORT_ID],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(db_err)?
        };
        let (bundle, last_resort) = match one_time {
            Some((id, bundle)) => {
                tx.execute(
                    "DELETE FROM prekeys WHERE user = ?1 AND id = ?2",
                    params![name, id],
                )
                .map_err(db_err)?;
                (bundle, false)
            }
            None => {
                let last: Option<Vec<u8>> = tx
                    .query_row(
                        "SELECT bundle FROM prekeys WHERE user = ?1 AND id = ?2",
                        params![name, LAST_RESORT_ID],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(db_err)?;
                let last = last.ok_or_else(|| {
                    err(
                        StatusCode::NOT_FOUND,
                        "no_prekeys",
                        format!("{name} has published no prekeys"),
                    )
                })?;
                (last, true)
            }
        };
        tx.commit().map_err(db_err)?;
        if !last_resort {
            // Wake the owner's long-poll: its answer tells how many prekeys are left, so the
            // owner can refill them in time.
            self.queue_watch(name).send_modify(|_| {});
        }
        json(
            StatusCode::OK,
            &ClaimedBundle {
                bundle: api::b64(&bundle),
                last_resort,
            },
        )
    }

    fn send(&self, name: &str, call: &Call) -> Reply {
        if call.body.len() > self.config.max_envelope {
            return Err(too_large(self.config.max_envelope));
        }
        let seq = {
            let mut db = lock(&self.db);
            let authed = self.authenticate(&db, call)?;
            Envelope::from_bytes(&call.body).map_err(|e| {
                err(
                    StatusCode::BAD_REQUEST,
                    "bad_envelope",
                    format!("the body is not a Proteus envelope: {e}"),
                )
            })?;
            let tx = db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let next: Option<i64> = tx
                .query_row("SELECT next_seq FROM users WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(db_err)?;
            let seq = next.map(to_u64).ok_or_else(|| {
                err(
                    StatusCode::NOT_FOUND,
                    "unknown_user",
                    format!("no user {name:?} is registered"),
                )
            })?;
            let queued: u64 = tx
                .query_row("SELECT count(*) FROM queue WHERE user = ?1", [name], |r| {
                    r.get(0).map(to_u64)
                })
                .map_err(db_err)?;
            if queued >= self.config.max_queue {
                return Err(err(
                    StatusCode::INSUFFICIENT_STORAGE,
                    "queue_full",
                    format!("{name}'s queue is full ({queued} messages)"),
                ));
            }
            let mine: u64 = tx
                .query_row(
                    "SELECT count(*) FROM queue WHERE user = ?1 AND sender = ?2",
                    params![name, authed.user],
                    |r| r.get(0).map(to_u64),
                )
                .map_err(db_err)?;
            if mine >= self.config.max_queue_per_sender {
                return Err(err(
                    StatusCode::TOO_MANY_REQUESTS,
                    "queue_quota",
                    format!(
                        "{} already has {mine} messages waiting for {name}: wait until {name} reads them",
                        authed.user
                    ),
                ));
            }
            tx.execute(
                "INSERT INTO queue (user, seq, sender, envelope) VALUES (?1, ?2, ?3, ?4)",
                params![name, to_i64(seq), authed.user, call.body.as_ref()],
            )
            .map_err(db_err)?;
            tx.execute(
                "UPDATE users SET next_seq = ?2 WHERE name = ?1",
                params![name, to_i64(seq + 1)],
            )
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            seq
        };
        self.queue_watch(name).send_replace(seq);
        json(StatusCode::CREATED, &SendResponse { seq })
    }

    async fn fetch(self: &Arc<Self>, name: String, call: Call) -> Reply {
        let mut after = 0;
        let mut limit = self.config.max_page;
        let mut wait = 0;
        for (key, value) in query_pairs(&call.query)? {
            match key {
                "after" => after = value,
                "limit" => limit = value.clamp(1, self.config.max_page),
                "wait" => wait = value.min(self.config.max_wait.as_secs()),
                _ => return Err(bad_request(format!("unknown parameter {key:?}"))),
            }
        }
        let (first, mut changes) = {
            let name = name.clone();
            self.blocking(move |r| {
                let db = lock(&r.db);
                let authed = r.authenticate(&db, &call)?;
                Self::own(&authed, &name, "read the queue")?;
                // Only once authenticated (nothing is kept for strangers), and subscribed
                // before the first look under the database lock, so a message queued after
                // the look wakes the wait.
                let changes = r.queue_watch(&name).subscribe();
                Ok((
                    json(StatusCode::OK, &r.page(&db, &name, after, limit)?)?,
                    changes,
                ))
            })
            .await?
        };
        let empty = serde_json::from_slice::<QueuePage>(&first.1)
            .map(|p| p.messages.is_empty())
            .unwrap_or(false);
        if !empty || wait == 0 {
            return Ok(first);
        }
        let woken = tokio::time::timeout(Duration::from_secs(wait), changes.changed()).await;
        if !matches!(woken, Ok(Ok(()))) {
            return Ok(first);
        }
        self.blocking(move |r| {
            let db = lock(&r.db);
            json(StatusCode::OK, &r.page(&db, &name, after, limit)?)
        })
        .await
    }

    fn page(
        &self,
        db: &Connection,
        name: &str,
        after: u64,
        limit: u64,
    ) -> Result<QueuePage, ApiError> {
        let mut stmt = db
            .prepare_cached(
                "SELECT seq, sender, envelope FROM queue WHERE user = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![name, to_i64(after), to_i64(limit)], |r| {
                Ok(QueuedEnvelope {
                    seq: to_u64(r.get(0)?),
                    from: r.get(1)?,
                    envelope: api::b64(&r.get::<_, Vec<u8>>(2)?),
                })
            })
            .map_err(db_err)?;
        let messages = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
        let last = messages.last().map_or(after, |m| m.seq);
        let remaining: u64 = db
            .query_row(
                "SELECT count(*) FROM queue WHERE user = ?1 AND seq > ?2",
                params![name, to_i64(last)],
                |r| r.get(0).map(to_u64),
            )
            .map_err(db_err)?;
        Ok(QueuePage {
            messages,
            remaining,
            prekeys_remaining: count_prekeys(db, name)?,
        })
    }

    fn ack(&self, name: &str, call: &Call) -> Reply {
        let db = lock(&self.db);
        let authed = self.authenticate(&db, call)?;
        Self::own(&authed, name, "delete from the queue")?;
        let mut up_to = None;
        for (key, value) in query_pairs(&call.query)? {
            match key {
                "up_to" => up_to = Some(value),
                _ => return Err(bad_request(format!("unknown parameter {key:?}"))),
            }
        }
        let up_to = up_to.ok_or_else(|| bad_request("say up_to=SEQ"))?;
        let deleted = db
            .execute(
                "DELETE FROM queue WHERE user = ?1 AND seq <= ?2",
                params![name, to_i64(up_to)],
            )
            .map_err(db_err)?;
        json(
            StatusCode::OK,
            &AckResponse {
                deleted: deleted as u64,
            },
        )
    }

    fn queue_watch(&self, name: &str) -> watch::Sender<u64> {
        lock(&self.queues)
            .entry(name.to_owned())
            .or_insert_with(|| watch::channel(0).0)
            .clone()
    }

    // --- static files ---------------------------------------------------------------------

    /// A file of the web client (`web_dir`) or, under [`PKG_PREFIX`], of the web package.
    async fn static_file(&self, path: &str) -> Result<Routed, ApiError> {
        let not_found = || err(StatusCode::NOT_FOUND, "not_found", "no such file");
        let (root, rest) = match path.strip_prefix(PKG_PREFIX) {
            Some(rest) => (&self.config.web_pkg_dir, rest),
            None => (&self.config.web_dir, path),
        };
        let file = root
            .as_deref()
            .and_then(|root| static_path(root, rest))
            .ok_or_else(not_found)?;
        let content_type = content_type(&file);
        let body = tokio::task::spawn_blocking(move || std::fs::read(file))
            .await
            .map_err(internal)?
            .map_err(|_| not_found())?;
        Ok(Routed::File(content_type, body))
    }
}

enum Routed {
    Json(StatusCode, Vec<u8>),
    File(&'static str, Vec<u8>),
}

fn too_large(limit: usize) -> ApiError {
    err(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("the body is larger than {limit} bytes"),
    )
}

fn bad_nonce() -> ApiError {
    err(
        StatusCode::UNAUTHORIZED,
        "bad_nonce",
        "the nonce is unknown, expired or used: get a fresh one",
    )
}

fn bad_signature(message: impl Into<String>) -> ApiError {
    err(StatusCode::UNAUTHORIZED, "bad_signature", message)
}

fn bad_bundle(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, "bad_bundle", message)
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| bad_request(format!("the body is not the JSON expected: {e}")))
}

fn query_pairs(query: &str) -> Result<Vec<(&str, u64)>, ApiError> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            value
                .parse::<u64>()
                .map(|v| (key, v))
                .map_err(|_| bad_request(format!("parameter {key:?}: {value:?} is not a number")))
        })
        .collect()
}

fn identity_of(db: &Connection, name: &str) -> Result<Option<IdentityKey>, ApiError> {
    let bytes: Option<Vec<u8>> = db
        .query_row("SELECT identity FROM users WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .optional()
        .map_err(db_err)?;
    bytes
        .map(|b| {
            <[u8; 32]>::try_from(b)
                .map(|b| IdentityKey::new(PublicKey::from_bytes(b)))
                .map_err(|_| internal("a stored identity is not 32 bytes"))
        })
        .transpose()
}

fn count_prekeys(db: &Connection, name: &str) -> Result<u64, ApiError> {
    db.query_row(
        "SELECT count(*) FROM prekeys WHERE user = ?1 AND id != ?2",
        params![name, LAST_RESORT_ID],
        |r| r.get(0).map(to_u64),
    )
    .map_err(db_err)
}

/// SQLite integers are signed; counts and sequence numbers are not negative.
fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
