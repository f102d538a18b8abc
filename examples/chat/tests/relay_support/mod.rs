//! What the relay tests share: users that sign (or forge) requests, a relay on 127.0.0.1 with
//! test limits, and a snapshot of everything the relay stores.

#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use proteus_chat::api::{self, ErrorBody};
use proteus_chat::net::{RawResponse, RelayClient};
use proteus_chat::relay::{self, RelayConfig, RelayHandle};
use proteus_core::{IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId};

/// The longest one request may take: it bounds a wait for an answer the relay gives in
/// milliseconds, generous enough for a machine ten times slower than ours.
pub const T: Duration = Duration::from_secs(60);

pub struct User {
    pub identity: Arc<IdentityKeyPair>,
    pub relay: RelayClient,
}

impl User {
    pub fn new(name: &'static str, relay: &RelayHandle) -> Self {
        let identity = Arc::new(IdentityKeyPair::generate(&mut OsRng));
        let signer = {
            let identity = identity.clone();
            Arc::new(move |m: &[u8]| identity.sign(m))
        };
        Self {
            identity,
            relay: RelayClient::new(relay.local_addr(), name, signer),
        }
    }

    /// The same user (the same identity key) as a client of `relay`.
    pub fn at(&self, name: &'static str, relay: &RelayHandle) -> Self {
        let identity = self.identity.clone();
        let signer = {
            let identity = identity.clone();
            Arc::new(move |m: &[u8]| identity.sign(m))
        };
        Self {
            identity,
            relay: RelayClient::new(relay.local_addr(), name, signer),
        }
    }

    pub fn bundles(&self, ids: std::ops::Range<u16>) -> Vec<PreKeyBundle> {
        ids.map(|id| {
            PreKeyBundle::new(
                self.identity.public_key(),
                &PreKey::generate(PreKeyId::new(id), &mut OsRng),
            )
        })
        .collect()
    }

    /// A request signed as `as_user` with this user's key, over `signed_body`, sending `body`.
    pub async fn forge(
        &self,
        as_user: &str,
        method: Method,
        path: &str,
        signed_body: &[u8],
        body: &[u8],
    ) -> RawResponse {
        let nonce = self.relay.nonce().await.unwrap();
        let message = api::signed_message(as_user, &nonce, method.as_str(), path, signed_body);
        let headers = [
            (api::HEADER_USER, as_user.to_owned()),
            (api::HEADER_NONCE, nonce),
            (
                api::HEADER_SIGNATURE,
                api::b64(&self.identity.sign(&message)),
            ),
        ];
        self.relay
            .raw(method, path, &headers, body.to_vec(), T)
            .await
            .unwrap()
    }

    /// A correctly signed request, returned with its headers for replaying.
    pub async fn signed(
        &self,
        method: Method,
        path: &str,
        body: &[u8],
    ) -> (RawResponse, Vec<(&'static str, String)>) {
        let headers = self.relay.sign(&method, path, body).await.unwrap();
        let response = self
            .relay
            .raw(method, path, &headers, body.to_vec(), T)
            .await
            .unwrap();
        (response, headers)
    }
}

/// Everything the relay stores, as text.
pub fn snapshot(db: &Path) -> String {
    let conn = rusqlite::Connection::open(db).unwrap();
    let mut out = String::new();
    for (table, order) in [
        ("users", "name"),
        ("prekeys", "user, id"),
        ("queue", "user, seq"),
    ] {
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {table} ORDER BY {order}"))
            .unwrap();
        let columns = stmt.column_count();
        let rows = stmt
            .query_map([], |r| {
                (0..columns)
                    .map(|i| {
                        r.get::<_, rusqlite::types::Value>(i)
                            .map(|v| format!("{v:?}"))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .unwrap();
        for row in rows {
            out.push_str(&format!("{table}: {}\n", row.unwrap().join(" | ")));
        }
    }
    out
}

pub fn assert_refused(response: &RawResponse, status: u16, code: &str) {
    let body: ErrorBody = serde_json::from_slice(&response.body).unwrap_or_else(|_| {
        panic!(
            "not an error body ({}): {}",
            response.status,
            String::from_utf8_lossy(&response.body)
        )
    });
    assert_eq!(
        (response.status.as_u16(), body.error.as_str()),
        (status, code),
        "{}",
        body.message
    );
    assert!(!body.message.is_empty());
}

pub async fn start(dir: &Path, tune: impl FnOnce(&mut RelayConfig)) -> (RelayHandle, PathBuf) {
    let db = dir.join("relay.sqlite");
    let mut config = RelayConfig::new(&db);
    tune(&mut config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    (relay::start(listener, config).unwrap(), db)
}

/// Alice and bob registered, alice with 3 one-time prekeys and a last-resort one, bob with
/// one message queued for alice.
pub async fn world(relay: &RelayHandle) -> (User, User) {
    let alice = User::new("alice", relay);
    let bob = User::new("bob", relay);
    assert!(
        alice
            .relay
            .register(alice.identity.public_key())
            .await
            .unwrap()
            .created
    );
    assert!(
        bob.relay
            .register(bob.identity.public_key())
            .await
            .unwrap()
            .created
    );
    let last = PreKeyBundle::new(
        alice.identity.public_key(),
        &PreKey::last_resort(&mut OsRng),
    );
    let count = alice
        .relay
        .upload_prekeys(&alice.bundles(1..4), Some(&last))
        .await
        .unwrap();
    assert_eq!(count.prekeys_remaining, 3);
    bob.relay.send("alice", &envelope()).await.unwrap();
    (alice, bob)
}

/// A real envelope (from a session bob → alice's first prekey... any valid one does).
pub fn envelope() -> Vec<u8> {
    let sender = IdentityKeyPair::generate(&mut OsRng);
    let receiver = IdentityKeyPair::generate(&mut OsRng);
    let bundle = PreKeyBundle::new(
        receiver.public_key(),
        &PreKey::generate(PreKeyId::new(1), &mut OsRng),
    );
    let mut session =
        proteus_core::Session::init_from_prekey(&mut OsRng, &sender, &bundle).unwrap();
    session.encrypt(b"opaque to the relay").unwrap().to_bytes()
}
