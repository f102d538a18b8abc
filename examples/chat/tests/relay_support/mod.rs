//! What the relay tests share: users that sign (or forge) requests, a relay on 127.0.0.1 with
//! test limits, and a snapshot of everything the relay stores.

#![allow(dead_code, unreachable_pub)]

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use proteus_chat::api::{self, ErrorBody};
use proteus_chat::net::{RawResponse, RelayClient};
use proteus_chat::relay::limits::Clock;
use proteus_chat::relay::{self, RelayConfig, RelayHandle};
use proteus_core::{IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId};

/// How long a request may take before the test gives up on it: a hang guard, far above what
/// a request takes on a machine ten times slower than ours.
pub const T: Duration = Duration::from_secs(60);

/// The loopback address 127.0.0.`n` (Linux answers on all of 127.0.0.0/8).
pub fn loopback(n: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, n))
}

pub struct User {
    pub identity: Arc<IdentityKeyPair>,
    pub relay: RelayClient,
}

impl User {
    /// A user connecting from 127.0.0.1.
    pub fn new(name: &str, relay: &RelayHandle) -> Self {
        Self::at(name, relay, loopback(1))
    }

    /// A user connecting from `ip` (a loopback address).
    pub fn at(name: &str, relay: &RelayHandle, ip: IpAddr) -> Self {
        let identity = Arc::new(IdentityKeyPair::generate(&mut OsRng));
        let signer = {
            let identity = identity.clone();
            Arc::new(move |m: &[u8]| identity.sign(m))
        };
        Self {
            identity,
            relay: RelayClient::new(relay.local_addr(), name, signer).from_address(ip),
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

/// A relay on 127.0.0.1 with its database in `dir`, its limits as `tune` sets them. Its clock
/// is a manual one that stands still (windows and refills move only when a test sets a clock
/// it advances), so no test depends on the machine's speed.
pub async fn start(dir: &Path, tune: impl FnOnce(&mut RelayConfig)) -> (RelayHandle, PathBuf) {
    let db = dir.join("relay.sqlite");
    let mut config = RelayConfig::new(&db);
    config.clock = Clock::manual();
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
    envelope_of(b"opaque to the relay")
}

/// A real envelope of `plaintext`.
pub fn envelope_of(plaintext: &[u8]) -> Vec<u8> {
    let sender = IdentityKeyPair::generate(&mut OsRng);
    let receiver = IdentityKeyPair::generate(&mut OsRng);
    let bundle = PreKeyBundle::new(
        receiver.public_key(),
        &PreKey::generate(PreKeyId::new(1), &mut OsRng),
    );
    let mut session =
        proteus_core::Session::init_from_prekey(&mut OsRng, &sender, &bundle).unwrap();
    session.encrypt(plaintext).unwrap().to_bytes()
}
