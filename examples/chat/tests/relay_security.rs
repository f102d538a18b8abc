//! The relay refuses forged, replayed, oversized, misdirected and malformed requests with a
//! clear error, and each refusal leaves everything it stores exactly as it was.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod relay_support;

use std::sync::Arc;
use std::time::Duration;

use hyper::Method;
use proteus_chat::api::{self, ErrorCode, QueuePage};
use proteus_chat::relay::limits::MAX_WAIT;
use proteus_core::{OsRng, PreKey, PreKeyBundle, PreKeyId};
use relay_support::{T, User, assert_refused, envelope, snapshot, start, world};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_replayed_misdirected_oversized_and_garbage_requests_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |_| {}).await;
    let (alice, bob) = world(&relay).await;
    let before = snapshot(&db);
    assert!(before.contains("queue: "), "{before}");
    let env = envelope();

    // Wrong signature: bob's key, alice's name.
    let r = bob
        .forge("alice", Method::POST, "/v1/queues/bob", &env, &env)
        .await;
    assert_refused(&r, 401, "bad_signature");
    let r = bob
        .forge("alice", Method::GET, "/v1/queues/alice", b"", b"")
        .await;
    assert_refused(&r, 401, "bad_signature");
    let r = bob
        .forge(
            "alice",
            Method::DELETE,
            "/v1/queues/alice?up_to=99",
            b"",
            b"",
        )
        .await;
    assert_refused(&r, 401, "bad_signature");
    // A signature over another body, or another path.
    let r = bob
        .forge("bob", Method::POST, "/v1/queues/alice", b"other", &env)
        .await;
    assert_refused(&r, 401, "bad_signature");
    let headers = bob
        .relay
        .sign(&Method::DELETE, "/v1/queues/bob?up_to=1", b"")
        .await
        .unwrap();
    let r = bob
        .relay
        .raw(
            Method::DELETE,
            "/v1/queues/bob?up_to=99",
            &headers,
            Vec::new(),
            T,
        )
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_signature");
    // A signature that is not one.
    let nonce = bob.relay.nonce().await.unwrap();
    let r = bob
        .relay
        .raw(
            Method::GET,
            "/v1/queues/bob",
            &[
                (api::HEADER_USER, "bob".into()),
                (api::HEADER_NONCE, nonce),
                (api::HEADER_SIGNATURE, "!!not base64!!".into()),
            ],
            Vec::new(),
            T,
        )
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_signature");

    // Another user's queue and prekeys, correctly signed by bob.
    let (r, _) = bob.signed(Method::GET, "/v1/queues/alice", b"").await;
    assert_refused(&r, 403, "forbidden");
    let (r, _) = bob
        .signed(Method::DELETE, "/v1/queues/alice?up_to=99", b"")
        .await;
    assert_refused(&r, 403, "forbidden");
    let upload = serde_json::to_vec(&api::UploadPreKeys {
        prekeys: bob
            .bundles(10..12)
            .iter()
            .map(|b| api::b64(&b.to_bytes()))
            .collect(),
        last_resort: None,
    })
    .unwrap();
    let (r, _) = bob.signed(Method::PUT, "/v1/prekeys/alice", &upload).await;
    assert_refused(&r, 403, "forbidden");
    // Alice's bundles published under bob's name.
    let stolen = serde_json::to_vec(&api::UploadPreKeys {
        prekeys: alice
            .bundles(20..21)
            .iter()
            .map(|b| api::b64(&b.to_bytes()))
            .collect(),
        last_resort: None,
    })
    .unwrap();
    let (r, _) = bob.signed(Method::PUT, "/v1/prekeys/bob", &stolen).await;
    assert_refused(&r, 400, "bad_bundle");
    // Alice's name registered with bob's key.
    let register = serde_json::to_vec(&api::RegisterRequest {
        identity: api::b64(bob.identity.public_key().public_key().as_bytes()),
    })
    .unwrap();
    let r = bob
        .forge(
            "alice",
            Method::POST,
            "/v1/users/alice",
            &register,
            &register,
        )
        .await;
    assert_refused(&r, 409, "identity_conflict");
    let r = bob
        .forge("bob", Method::POST, "/v1/users/alice", &register, &register)
        .await;
    assert_refused(&r, 403, "forbidden");
    // Unknown users, missing authentication.
    let r = bob
        .forge("mallory", Method::GET, "/v1/queues/mallory", b"", b"")
        .await;
    assert_refused(&r, 401, "unknown_user");
    let r = bob
        .relay
        .raw(Method::GET, "/v1/queues/bob", &[], Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "missing_auth");
    let (r, _) = bob.signed(Method::POST, "/v1/queues/mallory", &env).await;
    assert_refused(&r, 404, "unknown_user");

    // Replays: a request that worked is refused the second time, and so is a made-up nonce.
    let (first, headers) = bob.signed(Method::GET, "/v1/queues/bob", b"").await;
    assert!(first.status.is_success());
    let again = bob
        .relay
        .raw(Method::GET, "/v1/queues/bob", &headers, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&again, 401, "bad_nonce");
    let mut forged = headers.clone();
    forged[1].1 = "00112233445566778899aabbccddeeff".into();
    let r = bob
        .relay
        .raw(Method::GET, "/v1/queues/bob", &forged, Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 401, "bad_nonce");

    // Oversized: an envelope over the message limit, a body over the request limit.
    let big = vec![0u8; 70 * 1024];
    let (r, _) = bob.signed(Method::POST, "/v1/queues/alice", &big).await;
    assert_refused(&r, 413, "too_large");
    let huge = vec![b'x'; 300 * 1024];
    let (r, _) = bob.signed(Method::PUT, "/v1/prekeys/bob", &huge).await;
    assert_refused(&r, 413, "too_large");

    // Garbage, correctly signed.
    let (r, _) = bob
        .signed(Method::POST, "/v1/queues/alice", b"garbage")
        .await;
    assert_refused(&r, 400, "bad_envelope");
    let (r, _) = bob
        .signed(Method::POST, "/v1/queues/alice", &[0xa1, 0xff, 0x00])
        .await;
    assert_refused(&r, 400, "bad_envelope");
    let (r, _) = bob
        .signed(Method::PUT, "/v1/prekeys/bob", b"{not json")
        .await;
    assert_refused(&r, 400, "bad_request");
    let junk = br#"{"prekeys": ["%%%"], "last_resort": null}"#;
    let (r, _) = bob.signed(Method::PUT, "/v1/prekeys/bob", junk).await;
    assert_refused(&r, 400, "bad_bundle");
    let junk = format!(r#"{{"prekeys": ["{}"]}}"#, api::b64(b"\xa5\x00\x01"));
    let (r, _) = bob
        .signed(Method::PUT, "/v1/prekeys/bob", junk.as_bytes())
        .await;
    assert_refused(&r, 400, "bad_bundle");
    // One good bundle and one bad: all or nothing.
    let half = serde_json::to_vec(&api::UploadPreKeys {
        prekeys: vec![api::b64(&bob.bundles(5..6)[0].to_bytes()), "AAAA".into()],
        last_resort: None,
    })
    .unwrap();
    let (r, _) = bob.signed(Method::PUT, "/v1/prekeys/bob", &half).await;
    assert_refused(&r, 400, "bad_bundle");
    let last_as_one_time = serde_json::to_vec(&api::UploadPreKeys {
        prekeys: vec![api::b64(
            &PreKeyBundle::new(bob.identity.public_key(), &PreKey::last_resort(&mut OsRng))
                .to_bytes(),
        )],
        last_resort: None,
    })
    .unwrap();
    let (r, _) = bob
        .signed(Method::PUT, "/v1/prekeys/bob", &last_as_one_time)
        .await;
    assert_refused(&r, 400, "bad_bundle");
    let (r, _) = bob.signed(Method::GET, "/v1/queues/bob?after=x", b"").await;
    assert_refused(&r, 400, "bad_request");
    let (r, _) = bob.signed(Method::DELETE, "/v1/queues/bob", b"").await;
    assert_refused(&r, 400, "bad_request");
    let (r, _) = bob.signed(Method::POST, "/v1/queues/Alice", &env).await;
    assert_refused(&r, 400, "bad_request");
    let (r, _) = bob.signed(Method::POST, "/v1/queues/a%2Fb", &env).await;
    assert_refused(&r, 400, "bad_request");
    let (r, _) = bob.signed(Method::PATCH, "/v1/queues/bob", b"").await;
    assert_refused(&r, 405, "bad_request");
    let r = bob
        .relay
        .raw(Method::POST, "/v2/anything", &[], Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 404, "not_found");
    let r = bob
        .relay
        .raw(
            Method::POST,
            "/v1/queues/alice",
            &[(api::HEADER_USER, "bob".into())],
            b"\xff\xfe".to_vec(),
            T,
        )
        .await
        .unwrap();
    assert_refused(&r, 401, "missing_auth");

    assert_eq!(
        snapshot(&db),
        before,
        "a refused request changed what the relay stores"
    );
    drop(alice);
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_time_prekey_is_handed_out_once_then_the_last_resort() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |_| {}).await;
    let (_alice, bob) = world(&relay).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (bundle, last_resort) = bob.relay.claim("alice").await.unwrap();
        assert!(!last_resort);
        ids.push(
            PreKeyBundle::from_bytes(&bundle)
                .unwrap()
                .prekey_id()
                .value(),
        );
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2, 3]);
    for _ in 0..2 {
        let (bundle, last_resort) = bob.relay.claim("alice").await.unwrap();
        assert!(last_resort);
        assert_eq!(
            PreKeyBundle::from_bytes(&bundle).unwrap().prekey_id(),
            PreKeyId::LAST_RESORT
        );
    }
    assert!(!snapshot(&db).contains("prekeys: Text(\"alice\") | Integer(1) "));
    // Nobody published anything: a clear error.
    let err = alice_less_claim(&bob).await;
    assert_eq!(err.as_deref(), Some("unknown_user"));
    relay.shutdown().await;
}

async fn alice_less_claim(bob: &User) -> Option<String> {
    bob.relay
        .claim("nobody")
        .await
        .err()
        .and_then(|e| e.code().map(|c| c.as_str().to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queues_are_ordered_acknowledged_and_pushed_to_a_waiting_client() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, _db) = start(dir.path(), |_| {}).await;
    let (alice, bob) = world(&relay).await;
    for _ in 0..3 {
        bob.relay.send("alice", &envelope()).await.unwrap();
    }
    let page = alice.relay.fetch(0, 100, Duration::ZERO).await.unwrap();
    let seqs: Vec<u64> = page.messages.iter().map(|m| m.seq).collect();
    assert_eq!(seqs, [1, 2, 3, 4]);
    assert!(page.messages.iter().all(|m| m.from == "bob"));
    let page = alice.relay.fetch(0, 2, Duration::ZERO).await.unwrap();
    assert_eq!((page.messages.len(), page.remaining), (2, 2));
    assert_eq!(alice.relay.ack(2).await.unwrap(), 2);
    let page = alice.relay.fetch(0, 100, Duration::ZERO).await.unwrap();
    assert_eq!(
        page.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [3, 4]
    );
    assert_eq!(alice.relay.ack(4).await.unwrap(), 2);

    // Long-poll: a waiting fetch returns as soon as a message is queued. A wait that ends
    // unwoken answers what the relay saw before it (nothing here), so the message in the answer
    // shows the wait was woken, however long that took.
    let alice = Arc::new(alice);
    let waiting = {
        let alice = alice.clone();
        tokio::spawn(async move {
            let page: QueuePage = alice.relay.fetch(4, 100, MAX_WAIT).await.unwrap();
            page
        })
    };
    // Time for the fetch to start waiting (were it later, it would find the message at once:
    // the same answer, without the wake-up).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let seq = bob.relay.send("alice", &envelope()).await.unwrap();
    let page = waiting.await.unwrap();
    assert_eq!(
        page.messages.iter().map(|m| m.seq).collect::<Vec<_>>(),
        [seq]
    );
    // With nothing queued, the wait ends empty.
    let page = alice
        .relay
        .fetch(seq, 100, Duration::from_secs(1))
        .await
        .unwrap();
    assert!(page.messages.is_empty());
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_user_is_rate_limited_and_a_limited_request_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| {
        c.burst = 8.0;
        // No refill: the budget is the burst alone, however long the test takes.
        c.rate_per_second = 0.0;
    })
    .await;
    let (alice, bob) = world(&relay).await; // bob: register + send = 2 of 8
    let mut limited = None;
    for i in 0..10 {
        let (r, _) = bob
            .signed(Method::POST, "/v1/queues/alice", &envelope())
            .await;
        if !r.status.is_success() {
            limited = Some((i, r));
            break;
        }
    }
    let (i, r) = limited.expect("never limited");
    assert_eq!(i, 6);
    assert_refused(&r, 429, "rate_limited");
    let before = snapshot(&db);
    let (r, _) = bob
        .signed(Method::POST, "/v1/queues/alice", &envelope())
        .await;
    assert_refused(&r, 429, "rate_limited");
    assert_eq!(snapshot(&db), before);
    // Others are not held back by bob.
    assert!(alice.relay.fetch(0, 10, Duration::ZERO).await.is_ok());
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_and_prekey_quotas_hold() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| {
        c.max_queue = 3;
        c.max_prekeys = 5;
    })
    .await;
    let (alice, bob) = world(&relay).await; // one queued for alice, 3 prekeys
    bob.relay.send("alice", &envelope()).await.unwrap();
    bob.relay.send("alice", &envelope()).await.unwrap();
    let before = snapshot(&db);
    let err = bob.relay.send("alice", &envelope()).await.unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::QueueFull));
    let err = alice
        .relay
        .upload_prekeys(&alice.bundles(10..13), None)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(ErrorCode::TooManyPrekeys));
    assert_eq!(snapshot(&db), before);
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_files_are_served_from_the_web_directory_only() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web");
    std::fs::create_dir(&web).unwrap();
    std::fs::write(web.join("index.html"), "<h1>chat</h1>").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
    let (relay, _) = start(dir.path(), |c| c.web_dir = Some(web.clone())).await;
    let visitor = User::new("visitor", &relay);
    let r = visitor
        .relay
        .raw(Method::GET, "/", &[], Vec::new(), T)
        .await
        .unwrap();
    assert_eq!(
        (r.status.as_u16(), &r.body[..]),
        (200, &b"<h1>chat</h1>"[..])
    );
    for path in ["/../secret.txt", "/%2e%2e/secret.txt", "/nothing.js"] {
        let r = visitor
            .relay
            .raw(Method::GET, path, &[], Vec::new(), T)
            .await
            .unwrap();
        assert_refused(&r, 404, "not_found");
    }
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_package_is_served_under_pkg_with_its_content_types() {
    let dir = tempfile::tempdir().unwrap();
    let (web, pkg) = (dir.path().join("web"), dir.path().join("pkg"));
    std::fs::create_dir(&web).unwrap();
    std::fs::create_dir(&pkg).unwrap();
    std::fs::write(web.join("index.html"), "<h1>chat</h1>").unwrap();
    std::fs::write(web.join("chat.js"), "export {};").unwrap();
    std::fs::write(pkg.join("index.js"), "export const pkg = 1;").unwrap();
    std::fs::write(pkg.join("proteus_web_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(dir.path().join("secret.txt"), "no").unwrap();
    let (relay, _) = start(dir.path(), |c| {
        c.web_dir = Some(web.clone());
        c.web_pkg_dir = Some(pkg.clone());
    })
    .await;
    let visitor = User::new("visitor", &relay);
    let get = |path: &'static str| {
        let relay = &visitor.relay;
        async move {
            relay
                .raw(Method::GET, path, &[], Vec::new(), T)
                .await
                .unwrap()
        }
    };
    for (path, body, ty) in [
        ("/", &b"<h1>chat</h1>"[..], "text/html; charset=utf-8"),
        ("/chat.js", b"export {};", "text/javascript; charset=utf-8"),
        (
            "/pkg/index.js",
            b"export const pkg = 1;",
            "text/javascript; charset=utf-8",
        ),
        (
            "/pkg/proteus_web_bg.wasm",
            b"\0asm\x01\0\0\0",
            "application/wasm",
        ),
    ] {
        let r = get(path).await;
        assert_eq!((r.status.as_u16(), &r.body[..]), (200, body), "{path}");
        assert_eq!(r.headers["content-type"], ty, "{path}");
        assert_eq!(r.headers["x-content-type-options"], "nosniff", "{path}");
    }
    for path in [
        "/pkg/../secret.txt",
        "/pkg/../web/index.html",
        "/pkg/%2e%2e/secret.txt",
        "/pkg/",
        "/pkg",
        "/index.js",
        "/../secret.txt",
        "/.hidden",
    ] {
        assert_refused(&get(path).await, 404, "not_found");
    }
    // Files are read-only: other methods on them are no route.
    let r = visitor
        .relay
        .raw(Method::POST, "/pkg/index.js", &[], b"x".to_vec(), T)
        .await
        .unwrap();
    assert_refused(&r, 404, "not_found");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_package_directory_pkg_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web");
    std::fs::create_dir_all(web.join("pkg")).unwrap();
    std::fs::write(web.join("pkg").join("index.js"), "shadowed").unwrap();
    let (relay, _) = start(dir.path(), |c| c.web_dir = Some(web.clone())).await;
    let visitor = User::new("visitor", &relay);
    let r = visitor
        .relay
        .raw(Method::GET, "/pkg/index.js", &[], Vec::new(), T)
        .await
        .unwrap();
    assert_refused(&r, 404, "not_found");
    relay.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stranger_claiming_a_name_does_not_spend_its_owners_rate() {
    let dir = tempfile::tempdir().unwrap();
    let (relay, db) = start(dir.path(), |c| {
        c.burst = 4.0;
        // No refill: the budget is the burst alone, however long the test takes.
        c.rate_per_second = 0.0;
    })
    .await;
    let alice = User::new("alice", &relay);
    alice
        .relay
        .register(alice.identity.public_key())
        .await
        .unwrap(); // 1 of alice's 4
    let before = snapshot(&db);
    // Mallory signs "register alice" with her own key, again and again (bounded: 10 tries).
    let mallory = User::new("mallory", &relay);
    let register = serde_json::to_vec(&api::RegisterRequest {
        identity: api::b64(mallory.identity.public_key().public_key().as_bytes()),
    })
    .unwrap();
    for _ in 0..10 {
        let r = mallory
            .forge(
                "alice",
                Method::POST,
                "/v1/users/alice",
                &register,
                &register,
            )
            .await;
        assert_refused(&r, 409, "identity_conflict");
    }
    assert_eq!(snapshot(&db), before);
    // Alice's own budget is untouched: her next requests go through.
    for _ in 0..3 {
        let page = alice.relay.fetch(0, 10, Duration::ZERO).await;
        assert!(page.is_ok(), "alice was rate-limited by mallory: {page:?}");
    }
    relay.shutdown().await;
}
