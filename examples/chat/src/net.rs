//! The relay's client side: signed requests over HTTP/1.1, a small pool of nonces, long-poll.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use proteus_core::{IdentityKey, PreKeyBundle};
use tokio::net::{TcpSocket, TcpStream};

use crate::api::{
    self, AckResponse, ClaimedBundle, ErrorBody, ErrorCode, HEADER_NONCE, HEADER_REPLAY_NONCE,
    HEADER_SIGNATURE, HEADER_USER, NonceResponse, PreKeyCount, QueuePage, RegisterRequest,
    RegisterResponse, SendResponse, UploadPreKeys,
};

/// Signs the bytes of a request with the user's identity key.
pub type Signer = Arc<dyn Fn(&[u8]) -> [u8; 64] + Send + Sync>;

/// A request to the relay failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NetError {
    /// The relay could not be reached, or the connection broke.
    Unreachable(String),
    /// The relay refused the request.
    Api {
        /// The HTTP status.
        status: u16,
        /// The relay's error code.
        code: ErrorCode,
        /// The relay's explanation.
        message: String,
    },
    /// The relay's answer made no sense.
    Protocol(String),
}

impl NetError {
    /// The relay's error code, if the relay answered with an error.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

impl std::fmt::Display for NetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unreachable(e) => write!(f, "relay unreachable: {e}"),
            Self::Api {
                status,
                code,
                message,
            } => write!(f, "relay refused ({status} {code}): {message}"),
            Self::Protocol(e) => write!(f, "unexpected answer from the relay: {e}"),
        }
    }
}

impl std::error::Error for NetError {}

const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RESPONSE: usize = 64 * 1024 * 1024;
const NONCE_POOL: usize = 8;

/// A user's connection to a relay. Cheap to share (`Arc`); requests may run concurrently.
pub struct RelayClient {
    addr: SocketAddr,
    /// The local address to connect from, if not the system's choice.
    source: Option<IpAddr>,
    user: String,
    signer: Signer,
    nonces: Mutex<Vec<String>>,
}

impl std::fmt::Debug for RelayClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayClient")
            .field("addr", &self.addr)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// A raw answer: status, body.
#[derive(Debug)]
pub struct RawResponse {
    /// The HTTP status.
    pub status: StatusCode,
    /// The headers.
    pub headers: hyper::HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl RawResponse {
    /// The relay's error code, if the body is an [`ErrorBody`].
    pub fn error_code(&self) -> Option<ErrorCode> {
        serde_json::from_slice::<ErrorBody>(&self.body)
            .ok()
            .map(|e| e.error)
    }
}

impl RelayClient {
    /// A client for `user` at the relay `addr`, signing with `signer`.
    pub fn new(addr: SocketAddr, user: &str, signer: Signer) -> Self {
        Self {
            addr,
            source: None,
            user: user.to_owned(),
            signer,
            nonces: Mutex::new(Vec::new()),
        }
    }

    /// Connects from the local address `ip` (the relay's tests come from several loopback
    /// addresses, 127.0.0.2 and on).
    pub fn from_address(mut self, ip: IpAddr) -> Self {
        self.source = Some(ip);
        self
    }

    /// The relay's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    async fn connect(&self) -> std::io::Result<TcpStream> {
        let Some(ip) = self.source else {
            return TcpStream::connect(self.addr).await;
        };
        let socket = match ip {
            IpAddr::V4(_) => TcpSocket::new_v4()?,
            IpAddr::V6(_) => TcpSocket::new_v6()?,
        };
        socket.bind(SocketAddr::new(ip, 0))?;
        socket.connect(self.addr).await
    }

    /// Sends one request as it is (no signature added) and returns the answer, whatever its
    /// status. Keeps the fresh nonce the relay sends back.
    pub async fn raw(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<RawResponse, NetError> {
        let unreachable = |e: &dyn std::fmt::Display| NetError::Unreachable(e.to_string());
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, self.connect())
            .await
            .map_err(|_| NetError::Unreachable(format!("connecting to {} timed out", self.addr)))?
            .map_err(|e| unreachable(&e))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| unreachable(&e))?;
        let connection = tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method)
            .uri(path_and_query)
            .header(HOST, self.addr.to_string());
        if !body.is_empty() {
            request = request.header(CONTENT_TYPE, "application/octet-stream");
        }
        for (name, value) in headers {
            request = request.header(*name, value.as_str());
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| NetError::Protocol(e.to_string()))?;
        let exchange = async {
            let response = sender
                .send_request(request)
                .await
                .map_err(|e| unreachable(&e))?;
            let (parts, body) = response.into_parts();
            let body = Limited::new(body, MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| unreachable(&e))?
                .to_bytes();
            Ok::<_, NetError>((parts, body))
        };
        let result = tokio::time::timeout(timeout, exchange).await;
        connection.abort();
        let (parts, body) = result.map_err(|_| {
            NetError::Unreachable(format!("no answer from {} in time", self.addr))
        })??;
        if let Some(nonce) = parts
            .headers
            .get(HEADER_REPLAY_NONCE)
            .and_then(|v| v.to_str().ok())
        {
            let mut pool = self.nonces.lock().unwrap_or_else(PoisonError::into_inner);
            if pool.len() < NONCE_POOL {
                pool.push(nonce.to_owned());
            }
        }
        Ok(RawResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }

    /// A nonce to sign the next request over: one the relay sent back earlier, or a new one.
    pub async fn nonce(&self) -> Result<String, NetError> {
        let pooled = self
            .nonces
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        if let Some(nonce) = pooled {
            return Ok(nonce);
        }
        let response = self
            .raw(Method::GET, "/v1/nonce", &[], Vec::new(), REQUEST_TIMEOUT)
            .await?;
        let answer: NonceResponse = decode(&check(response)?)?;
        // `raw` pooled the header's nonce too; use the body's.
        Ok(answer.nonce)
    }

    /// Whether a relay answers at the address.
    pub async fn ping(&self) -> Result<(), NetError> {
        self.raw(Method::GET, "/v1/nonce", &[], Vec::new(), CONNECT_TIMEOUT)
            .await
            .map(drop)
    }

    /// The headers that sign a request made now.
    pub async fn sign(
        &self,
        method: &Method,
        path_and_query: &str,
        body: &[u8],
    ) -> Result<Vec<(&'static str, String)>, NetError> {
        let nonce = self.nonce().await?;
        let message =
            api::signed_message(&self.user, &nonce, method.as_str(), path_and_query, body);
        let signature = (self.signer)(&message);
        Ok(vec![
            (HEADER_USER, self.user.clone()),
            (HEADER_NONCE, nonce),
            (HEADER_SIGNATURE, api::b64(&signature)),
        ])
    }

    /// A signed request; a stale nonce (the relay restarted, say) is replaced and the request
    /// sent again. Returns the body of a successful answer.
    pub async fn signed(
        &self,
        method: Method,
        path_and_query: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Bytes, NetError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let headers = self.sign(&method, path_and_query, &body).await?;
            let response = self
                .raw(
                    method.clone(),
                    path_and_query,
                    &headers,
                    body.clone(),
                    timeout,
                )
                .await?;
            match check(response) {
                Err(e) if e.code() == Some(ErrorCode::BadNonce) && attempt < 3 => {
                    self.nonces
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .clear();
                }
                other => return other,
            }
        }
    }

    /// [`signed`](Self::signed), the answer decoded from JSON.
    async fn signed_json<T: serde::de::DeserializeOwned>(
        &self,
        method: Method,
        path_and_query: &str,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<T, NetError> {
        decode(&self.signed(method, path_and_query, body, timeout).await?)
    }

    /// Binds our user name to our identity key (or checks that it is bound to it).
    pub async fn register(&self, identity: &IdentityKey) -> Result<RegisterResponse, NetError> {
        let body = encode(&RegisterRequest {
            identity: api::b64(identity.public_key().as_bytes()),
        })?;
        let path = format!("/v1/users/{}", self.user);
        self.signed_json(Method::POST, &path, body, REQUEST_TIMEOUT)
            .await
    }

    /// Publishes our prekey bundles.
    pub async fn upload_prekeys(
        &self,
        prekeys: &[PreKeyBundle],
        last_resort: Option<&PreKeyBundle>,
    ) -> Result<PreKeyCount, NetError> {
        let body = encode(&UploadPreKeys {
            prekeys: prekeys.iter().map(|b| api::b64(&b.to_bytes())).collect(),
            last_resort: last_resort.map(|b| api::b64(&b.to_bytes())),
        })?;
        let path = format!("/v1/prekeys/{}", self.user);
        self.signed_json(Method::PUT, &path, body, REQUEST_TIMEOUT)
            .await
    }

    /// Claims one of `peer`'s prekey bundles (CBOR); `true` if it is the last-resort one.
    pub async fn claim(&self, peer: &str) -> Result<(Vec<u8>, bool), NetError> {
        let path = format!("/v1/prekeys/{peer}/claim");
        let claimed: ClaimedBundle = self
            .signed_json(Method::POST, &path, Vec::new(), REQUEST_TIMEOUT)
            .await?;
        let bundle = api::unb64(&claimed.bundle)
            .ok_or_else(|| NetError::Protocol("the bundle is not base64".into()))?;
        Ok((bundle, claimed.last_resort))
    }

    /// Queues an envelope for `peer`; returns its sequence number.
    pub async fn send(&self, peer: &str, envelope: &[u8]) -> Result<u64, NetError> {
        let path = format!("/v1/queues/{peer}");
        let sent: SendResponse = self
            .signed_json(Method::POST, &path, envelope.to_vec(), REQUEST_TIMEOUT)
            .await?;
        Ok(sent.seq)
    }

    /// Our queued messages after `after`; waits up to `wait` for one if there is none.
    pub async fn fetch(
        &self,
        after: u64,
        limit: u64,
        wait: Duration,
    ) -> Result<QueuePage, NetError> {
        let path = format!(
            "/v1/queues/{}?after={after}&limit={limit}&wait={}",
            self.user,
            wait.as_secs()
        );
        self.signed_json(Method::GET, &path, Vec::new(), wait + REQUEST_TIMEOUT)
            .await
    }

    /// Deletes our queued messages up to `up_to`.
    pub async fn ack(&self, up_to: u64) -> Result<u64, NetError> {
        let path = format!("/v1/queues/{}?up_to={up_to}", self.user);
        let acked: AckResponse = self
            .signed_json(Method::DELETE, &path, Vec::new(), REQUEST_TIMEOUT)
            .await?;
        Ok(acked.deleted)
    }
}

fn check(response: RawResponse) -> Result<Bytes, NetError> {
    if response.status.is_success() {
        return Ok(response.body);
    }
    match serde_json::from_slice::<ErrorBody>(&response.body) {
        Ok(e) => Err(NetError::Api {
            status: response.status.as_u16(),
            code: e.error,
            message: e.message,
        }),
        Err(_) => Err(NetError::Protocol(format!(
            "status {} without an error body",
            response.status
        ))),
    }
}

fn encode(value: &impl serde::Serialize) -> Result<Vec<u8>, NetError> {
    serde_json::to_vec(value).map_err(|e| NetError::Protocol(e.to_string()))
}

fn decode<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, NetError> {
    serde_json::from_slice(body).map_err(|e| NetError::Protocol(e.to_string()))
}
