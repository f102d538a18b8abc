//! Strangers and greedy users cannot starve anyone: every resource a request can take at the
//! relay is bounded (memory per unauthenticated request, registrations per address, prekey
//! claims per requester and target, failed authentications per address and per name, queued
//! messages per sender, from strangers and in all, connections per address with room kept for
//! known users, the time to send headers and bodies, nonces). Each test is a request loop on
//! loopback addresses (127.0.0.1, 127.0.0.2, ...), bounded in count, against a relay with small
//! test limits and a manual clock. No test measures how fast the machine is: a timeout here is
//! a hang guard (a loop that never ends fails at it), far above what a machine ten times
//! slower needs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod relay_support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use hyper::Method;
use proteus_chat::api::{self, ErrorCode};
use proteus_chat::relay::RelayHandle;
use proteus_chat::relay::limits::Clock;
use proteus_core::{OsRng, PreKey, PreKeyBundle, PreKeyId};
use relay_support::{
    T, User, assert_refused, envelope, envelope_of, loopback, snapshot, start, world,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_fetches_keep_nothing_at_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    // 200 failed authentications from one address: over the default budget, which another
    // test checks.
    let (relay, _db) = start(dir.path(), |c| c.auth_failure_burst = 1000.0).await;
    let (alice, bob) = world(&relay).await;
    let before = relay.tracked_queues();
    for i in 0..200 {
        let name = format!("stranger{i}");
        let path = format!("/v1/queues/{name}?wait=0");
        // Unsigned, and signed by bob as someone else.
        let r = bob.relay.raw(Method::GET, &path, &[], Vec::new(), T).await;
        assert_refused(&r.unwrap(), 401, "missing_auth");
        let r = bob.forge(&name, Method::GET, &path, b"", b"").await;
        assert_refused(&r, 401, "unknown_user");
    }
    assert_eq!(
        relay.tracked_queues(),
        before,
        "refused fetches grew memory"
    );
    // Bob reading alice's queue is refused and keeps nothing either.
    let (r, _) = bob.signed(Method::GET, "/v1/queues/alice", b"").await;
    assert_refused(&r, 403, "forbidden");
    assert_eq!(relay.tracked_queues(), before);
    assert!(alice.relay.fetch(0, 10, Duration::ZERO).await.is_ok());
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_are_limited_per_address() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| {
        c.register_burst = 3.0;
        c.register_per_second = 0.001;
    })
    .await;
    let names = ["u1", "u2", "u3", "u4", "u5", "u6"];
    let users: Vec<User> = names.iter().map(|n| User::new(n, &relay)).collect();
    for u in &users[..3] {
        u.relay.register(u.identity.public_key()).await.unwrap();
    }
    let before = snapshot(&db);
    for u in &users[3..] {
        let e = u.relay.register(u.identity.public_key()).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::RateLimited), "{e}");
    }
    assert_eq!(
        snapshot(&db),
        before,
        "a limited registration stored a user"
    );
    // A registered user coming back is not a new registration: it is not limited.
    for _ in 0..3 {
        let again = users[0].relay.register(users[0].identity.public_key());
        assert!(!again.await.unwrap().created);
    }
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_cannot_drain_anothers_one_time_prekeys() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.claim_burst = 1.0;
        c.claim_per_second = 0.001;
    })
    .await;
    let (alice, bob) = world(&relay).await; // alice: 3 one-time prekeys and a last resort
    let mut one_time = 0;
    for _ in 0..10 {
        let (bundle, last_resort) = bob.relay.claim("alice").await.unwrap();
        let id = PreKeyBundle::from_bytes(&bundle).unwrap().prekey_id();
        assert_eq!(last_resort, id == PreKeyId::LAST_RESORT);
        one_time += usize::from(!last_resort);
    }
    assert_eq!(
        one_time, 1,
        "bob took {one_time} of alice's one-time prekeys"
    );
    let page = alice.relay.fetch(0, 1, Duration::ZERO).await.unwrap();
    assert_eq!(page.prekeys_remaining, 2);
    // Someone else still gets one.
    let carol = User::new("carol", &relay);
    carol
        .relay
        .register(carol.identity.public_key())
        .await
        .unwrap();
    let (_, last_resort) = carol.relay.claim("alice").await.unwrap();
    assert!(!last_resort);
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_sender_cannot_fill_a_queue() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| {
        c.max_queue_per_sender = 3;
        c.max_queue = 10;
    })
    .await;
    let (alice, bob) = world(&relay).await; // one of bob's queued for alice
    let mut accepted = 1;
    let mut refusal = None;
    for _ in 0..10 {
        match bob.relay.send("alice", &envelope()).await {
            Ok(_) => accepted += 1,
            Err(e) => {
                refusal = Some(e);
                break;
            }
        }
    }
    assert_eq!(accepted, 3, "bob queued {accepted} messages for alice");
    let before = snapshot(&db);
    let (r, _) = bob
        .signed(Method::POST, "/v1/queues/alice", &envelope())
        .await;
    assert_refused(&r, 429, "queue_quota");
    assert_eq!(snapshot(&db), before);
    assert_eq!(refusal.unwrap().code(), Some(ErrorCode::QueueQuota));
    // Others still reach alice; once she reads, bob may send again.
    let carol = User::new("carol", &relay);
    carol
        .relay
        .register(carol.identity.public_key())
        .await
        .unwrap();
    carol.relay.send("alice", &envelope()).await.unwrap();
    let page = alice.relay.fetch(0, 100, Duration::ZERO).await.unwrap();
    alice
        .relay
        .ack(page.messages.last().unwrap().seq)
        .await
        .unwrap();
    bob.relay.send("alice", &envelope()).await.unwrap();
    relay.shutdown().await;
}

/// Reads until the relay closes the connection: what it sent, or `None` if it was still open
/// after `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let started = Instant::now();
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = within.checked_sub(started.elapsed())?;
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0) | Err(_)) => return Some(answer),
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
        }
    }
}

/// The relay's header and body timeouts (300 ms here) end silent, trickling and stalled
/// connections. Nothing else would end them before the connection's lifetime (the longest
/// long-poll, 30 s here, plus the timeouts and 30 s), so each is given `CUT` = 20 s to be cut:
/// ample on a slow machine, and still fails if the timeouts do not work.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_silent_clients_are_cut_off() {
    const CUT: Duration = Duration::from_secs(20);
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.header_timeout = Duration::from_millis(300);
        c.body_timeout = Duration::from_millis(300);
        c.max_wait = Duration::from_secs(30);
    })
    .await;
    let addr = relay.local_addr();

    // Silent: connects and sends nothing.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let closed = closed_within(&mut silent, CUT).await;
    assert!(closed.is_some(), "a silent connection stayed open");

    // Slowloris: a header trickled one byte every 50 ms, never finished (bounded: 400 bytes,
    // 20 s), until the relay closes the connection.
    let mut slow = TcpStream::connect(addr).await.unwrap();
    slow.write_all(b"GET /v1/nonce HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        .await
        .unwrap();
    let mut cut = false;
    let mut buf = [0u8; 1024];
    for _ in 0..CUT.as_millis() / 50 {
        if slow.write_all(b"a").await.is_err() {
            cut = true;
            break;
        }
        let read = tokio::time::timeout(Duration::from_millis(50), slow.read(&mut buf)).await;
        if let Ok(Ok(0) | Err(_)) = read {
            cut = true;
            break;
        }
    }
    assert!(cut, "trickled headers kept the connection open");

    // A body that never comes: 100 bytes announced, 10 sent; answered 408 by the body timeout.
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(
            b"POST /v1/queues/alice HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
        )
        .await
        .unwrap();
    let answer = closed_within(&mut stalled, CUT)
        .await
        .expect("a stalled body kept the connection open");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"timeout\""), "{answer}");
    relay.shutdown().await;
}

/// A TCP connection to `addr` from the loopback address `ip`.
async fn connect_from(ip: IpAddr, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(ip, 0)).unwrap();
    socket.connect(addr).await.unwrap()
}

/// Sends `GET /v1/nonce` on `stream` and returns the answer's status (the connection is left
/// open if the relay keeps it).
async fn nonce_status(stream: &mut TcpStream) -> u16 {
    stream
        .write_all(b"GET /v1/nonce HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while head.len() < 12 {
        let n = tokio::time::timeout(T, stream.read(&mut buf))
            .await
            .expect("no answer")
            .unwrap();
        assert!(n > 0, "closed without an answer");
        head.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&head[9..12]).parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_limited_per_address() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.max_connections_per_address = 4;
        // The held connections stay open for the whole test, however slow.
        c.header_timeout = Duration::from_secs(600);
    })
    .await;
    let visitor = User::new("visitor", &relay);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(relay.local_addr()).await.unwrap());
    }
    // The relay accepts connections in order: the fifth is over the limit, and answered so.
    let r = visitor
        .relay
        .raw(Method::GET, "/v1/nonce", &[], Vec::new(), T)
        .await
        .expect("a connection over the limit was dropped, not answered");
    assert_refused(&r, 503, "busy");
    assert_eq!(r.headers["retry-after"], "1");
    drop(held);
    // The slots are given back: served again (the relay sees the closes soon; the bound is a
    // hang guard).
    let started = Instant::now();
    loop {
        let r = visitor
            .relay
            .raw(Method::GET, "/v1/nonce", &[], Vec::new(), T);
        if r.await.unwrap().status == 200 {
            break;
        }
        assert!(started.elapsed() < T, "the relay kept the closed slots");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relay.shutdown().await;
}

/// Strangers from many addresses hold every connection they may: the relay keeps room for
/// addresses its users authenticated from, and answers the strangers over the limit with 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_holding_connections_leave_room_for_known_users() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.max_connections = 8;
        c.reserved_for_known = 4;
        c.max_connections_per_address = 2;
        c.header_timeout = Duration::from_secs(600);
    })
    .await;
    let alice = User::new("alice", &relay); // 127.0.0.1
    alice
        .relay
        .register(alice.identity.public_key())
        .await
        .unwrap();
    // Alice's connection is the relay's to close after its answer: wait until it has, or it
    // would take one of the strangers' four slots (on a busy machine it may not have yet).
    let started = Instant::now();
    while relay.open_connections() > 0 {
        assert!(
            started.elapsed() < T,
            "the relay kept alice's connection open"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Eight stranger addresses, two connections each, held open (keep-alive).
    let mut held = Vec::new();
    let mut statuses = Vec::new();
    for n in 2..=9 {
        for _ in 0..2 {
            let mut stream = connect_from(loopback(n), relay.local_addr()).await;
            statuses.push(nonce_status(&mut stream).await);
            held.push(stream);
        }
    }
    let served = statuses.iter().filter(|&&s| s == 200).count();
    let refused = statuses.iter().filter(|&&s| s == 503).count();
    assert_eq!(
        (served, refused),
        (4, 12),
        "strangers were served beyond the unreserved room: {statuses:?}"
    );
    // Alice's address is known: she is served from the reserved room. (Her own connections
    // count against her address's limit of 2 until the relay has seen each one close, which a
    // slow machine may not have yet: such a refusal is retried. Strangers' connections keep
    // the unreserved room full, so without the reserve she is refused every time.)
    for _ in 0..3 {
        let started = Instant::now();
        loop {
            match alice.relay.fetch(0, 10, Duration::ZERO).await {
                Ok(_) => break,
                Err(e) if e.to_string().contains("from this address") => {
                    assert!(started.elapsed() < T, "{e}");
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => panic!("alice was kept out by strangers: {e}"),
            }
        }
    }
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flooding_nonces_neither_evicts_a_live_one_nor_readmits_a_used_one() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |_| {}).await;
    let (alice, bob) = world(&relay).await;
    // Alice signs a request now, and sends it after a flood of nonce requests.
    let path = "/v1/queues/alice?wait=0";
    let pending = alice.relay.sign(&Method::GET, path, b"").await.unwrap();
    let (used, used_headers) = alice.signed(Method::GET, path, b"").await;
    assert!(used.status.is_success());
    for _ in 0..1500 {
        bob.relay.nonce().await.unwrap();
    }
    let r = alice
        .relay
        .raw(Method::GET, path, &pending, Vec::new(), T)
        .await
        .unwrap();
    assert!(r.status.is_success(), "the flood evicted alice's nonce");
    // A used nonce stays used, flood or not; a made-up one is refused.
    let r = alice
        .relay
        .raw(Method::GET, path, &used_headers, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_nonce");
    let mut forged = alice.relay.sign(&Method::GET, path, b"").await.unwrap();
    forged[1].1 = "00".repeat(40);
    let r = alice
        .relay
        .raw(Method::GET, path, &forged, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_nonce");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nonce_past_its_window_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual();
    let ttl = Duration::from_secs(300);
    let (relay, _db) = start(dir.path(), |c| {
        c.nonce_ttl = ttl;
        c.clock = clock.clone();
    })
    .await;
    let alice = User::new("alice", &relay);
    alice
        .relay
        .register(alice.identity.public_key())
        .await
        .unwrap();
    // Past the window a nonce is refused by its age alone: forgetting a used one after the
    // window re-admits nothing. Just within it, one is accepted.
    let path = "/v1/queues/alice?wait=0";
    let within = alice.relay.sign(&Method::GET, path, b"").await.unwrap();
    let late = alice.relay.sign(&Method::GET, path, b"").await.unwrap();
    clock.advance(ttl - Duration::from_millis(1));
    let r = alice
        .relay
        .raw(Method::GET, path, &within, Vec::new(), T)
        .await
        .unwrap();
    assert!(r.status.is_success(), "{:?}", r.error_code());
    clock.advance(Duration::from_millis(1));
    let r = alice
        .relay
        .raw(Method::GET, path, &late, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_nonce");
    relay.shutdown().await;
}

/// A request in alice's name signed with another key, from 127.0.0.`from`: its answer.
async fn forge_as_alice(relay: &RelayHandle, from: u8) -> (u16, Option<ErrorCode>) {
    let mallory = User::at("mallory", relay, loopback(from));
    let r = mallory
        .forge("alice", Method::GET, "/v1/queues/alice?wait=0", b"", b"")
        .await;
    (r.status.as_u16(), r.error_code())
}

/// Forged requests (146,756 from one address in 6 s, none limited, before): failed
/// authentications are limited per address and per claimed name, and a request over a limit is
/// refused before its signature is checked (a 401 `bad_signature` is an answer after a check,
/// a 429 one without). The name's owner, from an address that has not failed, is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_authentications_are_limited_per_address_and_per_name() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::manual();
    let (relay, _db) = start(dir.path(), |c| {
        c.auth_failure_burst = 5.0;
        c.auth_failures_per_second = 0.1;
        c.clock = clock.clone();
    })
    .await;
    let (alice, _bob) = world(&relay).await;
    let forge = |from: u8| forge_as_alice(&relay, from);
    let checked = (401, Some(ErrorCode::BadSignature));
    let limited = (429, Some(ErrorCode::RateLimited));

    // One address: 5 checked, then limited (bounded: 50 tries).
    let mut answers = Vec::new();
    for _ in 0..50 {
        answers.push(forge(2).await);
    }
    assert!(answers[..5].iter().all(|a| *a == checked), "{answers:?}");
    assert!(answers[5..].iter().all(|a| *a == limited), "{answers:?}");

    // A fresh address: checked once (it has not failed), then limited by alice's name's
    // budget although its own is not spent.
    assert_eq!([forge(3).await, forge(3).await], [checked, limited]);
    // Unknown names are failures too.
    let stranger = User::at("stranger", &relay, loopback(4));
    let mut answers = Vec::new();
    for i in 0..20 {
        let name = format!("nobody{i}");
        let r = stranger
            .forge(&name, Method::GET, &format!("/v1/queues/{name}"), b"", b"")
            .await;
        answers.push((r.status.as_u16(), r.error_code()));
    }
    assert!(
        answers[..5]
            .iter()
            .all(|a| *a == (401, Some(ErrorCode::UnknownUser))),
        "{answers:?}"
    );
    assert!(answers[5..].iter().all(|a| *a == limited), "{answers:?}");

    // A bad nonce costs the relay no lookup and no signature check: not charged (every
    // client has one after a restart of the relay).
    let late = User::at("alice", &relay, loopback(5));
    for _ in 0..20 {
        let mut headers = late
            .relay
            .sign(&Method::GET, "/v1/queues/alice", b"")
            .await
            .unwrap();
        headers[1].1 = "00".repeat(40);
        let r = late
            .relay
            .raw(Method::GET, "/v1/queues/alice", &headers, Vec::new(), T)
            .await
            .unwrap();
        assert_refused(&r, 401, "bad_nonce");
    }

    // Alice, from her own address (no failures), is served: no lockout by strangers.
    for _ in 0..3 {
        let page = alice.relay.fetch(0, 10, Duration::ZERO).await;
        assert!(page.is_ok(), "alice was locked out: {page:?}");
    }
    // A rate, not a ban: after 10 s the first address may fail once more.
    clock.advance(Duration::from_secs(10));
    assert_eq!([forge(2).await, forge(2).await], [checked, limited]);
    relay.shutdown().await;
}

/// No signature is ever checked while the database is locked (the relay answers 500 if one
/// would be): every route, signed right and forged, gets its answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signatures_are_checked_outside_the_database_lock() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |_| {}).await;
    let (alice, bob) = world(&relay).await; // register, upload, send: signed right
    let upload = |user: &User| {
        let last = PreKeyBundle::new(user.identity.public_key(), &PreKey::last_resort(&mut OsRng));
        serde_json::to_vec(&api::UploadPreKeys {
            prekeys: user
                .bundles(40..42)
                .iter()
                .map(|b| api::b64(&b.to_bytes()))
                .collect(),
            last_resort: Some(api::b64(&last.to_bytes())),
        })
        .unwrap()
    };
    let register = serde_json::to_vec(&api::RegisterRequest {
        identity: api::b64(alice.identity.public_key().public_key().as_bytes()),
    })
    .unwrap();
    let env = envelope();
    let routes: [(Method, &str, Vec<u8>); 6] = [
        (Method::POST, "/v1/users/alice", register),
        (Method::PUT, "/v1/prekeys/alice", upload(&alice)),
        (Method::POST, "/v1/prekeys/bob/claim", Vec::new()),
        (Method::POST, "/v1/queues/bob", env),
        (Method::GET, "/v1/queues/alice?wait=0", Vec::new()),
        (Method::DELETE, "/v1/queues/alice?up_to=1", Vec::new()),
    ];
    for (method, path, body) in &routes {
        // Forged: bob's key, alice's name (the registration: a signature by another key than
        // the one in the body).
        let r = bob.forge("alice", method.clone(), path, body, body).await;
        assert_refused(&r, 401, "bad_signature");
    }
    // Bob publishes prekeys so that alice can claim one.
    let (r, _) = bob
        .signed(Method::PUT, "/v1/prekeys/bob", &upload(&bob))
        .await;
    assert!(r.status.is_success(), "{:?}", r.error_code());
    for (method, path, body) in &routes {
        let (r, _) = alice.signed(method.clone(), path, body).await;
        assert!(
            r.status.is_success(),
            "{method} {path}: {:?}",
            String::from_utf8_lossy(&r.body)
        );
    }
    relay.shutdown().await;
}

/// Ten accounts registered in one burst filled anyone's queue (its senders got 507): strangers
/// (senders a user has never written to) share a part of the queue, the rest stays for the
/// user's contacts; writing to a stranger makes them a contact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_cannot_fill_the_queue_a_users_contacts_need() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.max_queue = 8;
        c.max_queue_from_strangers = 4;
        c.max_queue_per_sender = 2;
    })
    .await;
    let (alice, bob) = world(&relay).await; // one of bob's queued for alice
    alice.relay.send("bob", &envelope()).await.unwrap(); // bob is alice's contact now
    let strangers: Vec<User> = (0..10)
        .map(|i| User::new(&format!("stranger{i}"), &relay))
        .collect();
    let mut accepted = 0;
    for s in &strangers {
        s.relay.register(s.identity.public_key()).await.unwrap();
        for _ in 0..2 {
            match s.relay.send("alice", &envelope()).await {
                Ok(_) => accepted += 1,
                Err(e) => assert_eq!(e.code(), Some(ErrorCode::QueueFull), "{e}"),
            }
        }
    }
    assert_eq!(
        accepted, 4,
        "strangers queued {accepted} messages for alice"
    );
    // Her contact still reaches her (up to his own share).
    bob.relay
        .send("alice", &envelope())
        .await
        .expect("a contact was starved by strangers");
    let e = bob.relay.send("alice", &envelope()).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::QueueQuota), "{e}");
    // Alice writes to a stranger: a contact now, no longer in the strangers' share.
    alice.relay.send("stranger9", &envelope()).await.unwrap();
    strangers[9].relay.send("alice", &envelope()).await.unwrap();
    // Once alice reads, strangers may write again.
    let page = alice.relay.fetch(0, 100, Duration::ZERO).await.unwrap();
    alice
        .relay
        .ack(page.messages.last().unwrap().seq)
        .await
        .unwrap();
    strangers[8].relay.send("alice", &envelope()).await.unwrap();
    relay.shutdown().await;
}

/// The bytes of the database's pages in use, as the relay counts them.
fn used_bytes(db: &std::path::Path) -> u64 {
    let conn = rusqlite::Connection::open(db).unwrap();
    let pragma = |name: &str| -> u64 {
        conn.query_row(&format!("PRAGMA {name}"), [], |r| r.get::<_, i64>(0))
            .unwrap()
            .try_into()
            .unwrap()
    };
    (pragma("page_count") - pragma("freelist_count")) * pragma("page_size")
}

/// The relay's storage is bounded in all: past the bound, sends, uploads and new
/// registrations are refused (507) and store nothing, until messages are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_relays_storage_is_bounded() {
    const MAX: u64 = 256 * 1024;
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| c.max_store_bytes = MAX).await;
    let (alice, bob) = world(&relay).await;
    let big = envelope_of(&[7u8; 16 * 1024]);
    let mut full = None;
    for _ in 0..100 {
        if let Err(e) = bob.relay.send("alice", &big).await {
            full = Some(e);
            break;
        }
    }
    let full = full.expect("100 sends of 16 KiB fitted in 256 KiB");
    assert_eq!(full.code(), Some(ErrorCode::StoreFull), "{full}");
    let used = used_bytes(&db);
    assert!(used <= MAX + 2 * big.len() as u64, "{used} bytes stored");
    let before = snapshot(&db);
    // Everyone is refused, and nothing is stored.
    let e = alice.relay.send("bob", &envelope()).await.unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::StoreFull), "{e}");
    let e = alice
        .relay
        .upload_prekeys(&alice.bundles(50..52), None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::StoreFull), "{e}");
    let carol = User::new("carol", &relay);
    let e = carol
        .relay
        .register(carol.identity.public_key())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(ErrorCode::StoreFull), "{e}");
    assert_eq!(snapshot(&db), before);
    // Reading frees the room.
    loop {
        let page = alice.relay.fetch(0, 100, Duration::ZERO).await.unwrap();
        let Some(last) = page.messages.last() else {
            break;
        };
        alice.relay.ack(last.seq).await.unwrap();
    }
    bob.relay.send("alice", &big).await.unwrap();
    relay.shutdown().await;
}
