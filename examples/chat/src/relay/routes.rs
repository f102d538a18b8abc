//! A request read in full (within the body limit and timeout), routed to its handler, and
//! answered: JSON or a static file, always with a fresh nonce.

use std::net::IpAddr;
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, RETRY_AFTER,
};
use hyper::{Method, Request, Response, StatusCode};

use super::errors::{ApiError, ErrorCode, bad_request, err, internal, json, too_large};
use super::files::{content_type, static_path};
use super::limits::AddressKey;
use super::{PKG_PREFIX, Relay, lock};
use crate::api::{self, ErrorBody, HEADER_REPLAY_NONCE, NonceResponse};

/// A request, read in full.
pub(super) struct Call {
    pub(super) method: Method,
    pub(super) path_and_query: String,
    pub(super) query: String,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
    /// The address it came from (an IPv4 address, an IPv6 /64).
    pub(super) peer: AddressKey,
}

/// What a route answers with.
pub(super) enum Routed {
    Json(StatusCode, Vec<u8>),
    File(&'static str, Vec<u8>),
}
impl Relay {
    pub(super) async fn handle(
        self: Arc<Self>,
        req: Request<Incoming>,
        peer: IpAddr,
    ) -> Response<Full<Bytes>> {
        let (status, content_type, body, file) = match self.clone().route(req, peer).await {
            Ok(Routed::Json(status, body)) => (status, "application/json", body, false),
            Ok(Routed::File(content_type, body)) => (StatusCode::OK, content_type, body, true),
            Err(e) => {
                let body = serde_json::to_vec(&ErrorBody {
                    error: e.code,
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

    /// The answer on a connection over a connection limit: 503 and `why` (the connection is
    /// then closed). The request is read first, within the body limit and timeout, so that the
    /// client sees the answer rather than a reset.
    pub(super) async fn busy(&self, req: Request<Incoming>, why: &str) -> Response<Full<Bytes>> {
        let body = Limited::new(req.into_body(), self.config.max_body).collect();
        let _ = tokio::time::timeout(self.config.body_timeout, body).await;
        let body = serde_json::to_vec(&ErrorBody {
            error: ErrorCode::Busy,
            message: why.to_owned(),
        })
        .unwrap_or_default();
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        let headers = response.headers_mut();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
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
                Err(err(
                    StatusCode::NOT_FOUND,
                    ErrorCode::NotFound,
                    "no such route",
                ))
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
                ErrorCode::Timeout,
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
            peer: AddressKey::of(peer),
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
                ErrorCode::BadRequest,
                format!("{method} is not allowed here"),
            )),
            _ => Err(err(
                StatusCode::NOT_FOUND,
                ErrorCode::NotFound,
                "no such route",
            )),
        }?;
        Ok(Routed::Json(reply.0, reply.1))
    }

    // --- static files ---------------------------------------------------------------------

    /// A file of the web client (`web_dir`) or, under [`PKG_PREFIX`], of the web package.
    pub(super) async fn static_file(&self, path: &str) -> Result<Routed, ApiError> {
        let not_found = || err(StatusCode::NOT_FOUND, ErrorCode::NotFound, "no such file");
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

pub(super) fn query_pairs(query: &str) -> Result<Vec<(&str, u64)>, ApiError> {
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
