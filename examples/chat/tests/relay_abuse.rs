//! Strangers and greedy users cannot starve anyone: every resource a request can take at the
//! relay is bounded (memory per unauthenticated request, registrations per address, prekey
//! claims per requester and target, queued messages per sender, connections per address, the
//! time to send headers and bodies, nonces). Each test is a request loop on 127.0.0.1,
//! bounded in count, against a relay with small test limits.
//!
//! Nothing here depends on the machine's speed: a loop is bounded by its count, never by how
//! fast it runs; a wait for the relay to do something is bounded by [`CUT_WITHIN`] or
//! [`SETTLE_WITHIN`], generous enough for a machine ten times slower than ours (the relay does
//! each in milliseconds); and a window that must have passed is waited out in full.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod relay_support;

use std::time::Duration;

use hyper::Method;
use proteus_chat::api::ErrorCode;
use proteus_core::{PreKeyBundle, PreKeyId};
use relay_support::{T, User, assert_refused, envelope, snapshot, start, world};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The longest a test waits for the relay to cut off a slow or silent client (its header and
/// body timeouts are 300 ms here). Far below a connection's lifetime in those tests
/// ([`PAST_ANY_WAIT`]), so only the timeouts under test can close a connection within it.
const CUT_WITHIN: Duration = Duration::from_secs(60);
/// A relay limit set past every wait of these tests: the longest poll in the cut-off test (a
/// connection then lives this plus the timeouts plus 30 s, far past [`CUT_WITHIN`]), the header
/// timeout in the connection-count test (its held connections send nothing).
const PAST_ANY_WAIT: Duration = Duration::from_secs(600);
/// The longest a test waits for the relay to notice closed connections.
const SETTLE_WITHIN: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_fetches_keep_nothing_at_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |_| {}).await;
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
        // No refill: the budget is the burst alone, however long the test takes.
        c.register_per_second = 0.0;
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
        // No refill: the budget is the burst alone, however long the test takes.
        c.claim_per_second = 0.0;
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

/// Reads until the relay closes the connection: what it answered, if it closed it within
/// `within`.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let read_to_close = async {
        let mut answer = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return answer,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(within, read_to_close).await.ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_silent_clients_are_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.header_timeout = Duration::from_millis(300);
        c.body_timeout = Duration::from_millis(300);
        c.max_wait = PAST_ANY_WAIT;
    })
    .await;
    let addr = relay.local_addr();

    // Silent: connects and sends nothing.
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let closed = closed_within(&mut silent, CUT_WITHIN).await;
    assert!(closed.is_some(), "a silent connection stayed open");

    // Slowloris: headers one byte every 50 ms, never finished, for as long as the connection
    // stays open (a header timeout that each byte restarted would never cut it).
    let (mut reader, mut writer) = TcpStream::connect(addr).await.unwrap().into_split();
    let trickle = async move {
        let head = b"GET /v1/nonce HTTP/1.1\r\nHost: x\r\nX-Slow: ".iter();
        for b in head.chain(std::iter::repeat(&b'a')) {
            if writer.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let read_to_close = async move {
        let mut buf = [0u8; 4096];
        while matches!(reader.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    let cut = tokio::time::timeout(CUT_WITHIN, async {
        tokio::select! {
            () = trickle => {}
            () = read_to_close => {}
        }
    })
    .await;
    assert!(cut.is_ok(), "trickled headers kept the connection open");

    // A body that never comes: 100 bytes announced, 10 sent. Only the body timeout answers
    // 408 (the connection's lifetime would close it without an answer).
    let mut stalled = TcpStream::connect(addr).await.unwrap();
    stalled
        .write_all(
            b"POST /v1/queues/alice HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
        )
        .await
        .unwrap();
    let answer = closed_within(&mut stalled, CUT_WITHIN)
        .await
        .expect("a stalled body kept the connection open");
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("\"timeout\""), "{answer}");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_are_limited_per_address() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |c| {
        c.max_connections_per_ip = 4;
        // The held connections send nothing: no header timeout may close them during the test.
        c.header_timeout = PAST_ANY_WAIT;
    })
    .await;
    let visitor = User::new("visitor", &relay);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(TcpStream::connect(relay.local_addr()).await.unwrap());
    }
    // The relay accepts connections in the order they were made: these four take the four
    // slots before the visitor's is looked at, however late the relay gets to them.
    let refused = visitor.relay.ping().await;
    assert!(
        refused.is_err(),
        "a fifth connection from one address was served"
    );
    drop(held);
    // The slots are given back: served again (bounded wait for the relay to see the closes).
    let settled = tokio::time::timeout(SETTLE_WITHIN, async {
        while visitor.relay.ping().await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(settled.is_ok(), "the relay kept the closed slots");
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
    // However long the flood takes, alice's nonce stays within its window (the default, 300 s).
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
    // Alice registers at a relay with the default window...
    let (relay, _db) = start(dir.path(), |_| {}).await;
    let alice = User::new("alice", &relay);
    alice
        .relay
        .register(alice.identity.public_key())
        .await
        .unwrap();
    relay.shutdown().await;
    // ...and signs a request with a nonce of the same relay restarted with a 50 ms window, then
    // sends it 100 ms later. No request has to fit in the short window: the test does not
    // depend on how fast it runs.
    let (relay, _db) = start(dir.path(), |c| c.nonce_ttl = Duration::from_millis(50)).await;
    let alice = alice.at("alice", &relay);
    // Past the window a nonce is refused by its age alone: forgetting a used one after the
    // window re-admits nothing.
    let path = "/v1/queues/alice?wait=0";
    let late = alice.relay.sign(&Method::GET, path, b"").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let r = alice
        .relay
        .raw(Method::GET, path, &late, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_nonce");
    relay.shutdown().await;
}
