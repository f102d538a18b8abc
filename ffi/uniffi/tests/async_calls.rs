//! What the async exports add: cancellation, close, and the calls of issue 16 (sealed stores,
//! fan-out, identity key, range checks), from Rust. Kotlin and Swift test the same through
//! their bindings.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

mod support;

use std::future::Future;
use std::sync::{Arc, mpsc};
use std::task::{Context, Waker};
use std::time::Duration;

use proteus_uniffi::{
    BatchDelivery, BatchProgress, BatchResults, Client, ClientOptions, OpenMode, ProteusError,
    QueuedMessage, QueuedMessages, SecretBytes, client_delete_store, client_rekey_store,
    client_seal_store, prekey_message_fingerprint,
};
use support::Wait;

fn memory() -> Arc<Client> {
    Client::in_memory(ClientOptions::default()).wait().unwrap()
}

fn pair() -> (Arc<Client>, Arc<Client>) {
    let (alice, bob) = (memory(), memory());
    let bundle = bob.generate_prekeys(1).wait().unwrap().remove(0);
    alice
        .create_session("bob".into(), bundle.bytes)
        .wait()
        .unwrap();
    (alice, bob)
}

fn queue(alice: &Client, n: usize) -> QueuedMessages {
    (0..n)
        .map(|i| QueuedMessage {
            session_id: "alice".into(),
            envelope: alice
                .encrypt("bob".into(), format!("m{i}").into_bytes().into())
                .wait()
                .unwrap(),
        })
        .collect::<Vec<_>>()
        .into()
}

/// Tells the test when the first chunk arrives, then waits for its go.
struct Gated {
    arrived: mpsc::SyncSender<()>,
    go: std::sync::Mutex<mpsc::Receiver<()>>,
}

impl BatchDelivery for Gated {
    fn deliver(&self, _: BatchResults, _: BatchProgress) -> Result<bool, ProteusError> {
        let _ = self.arrived.try_send(());
        let _ = self
            .go
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(30));
        Ok(true)
    }
}

#[test]
fn dropping_a_batch_future_mid_batch_commits_nothing() {
    let (alice, bob) = pair();
    let queue = queue(&alice, 2000);
    let (arrived_tx, arrived) = mpsc::sync_channel(1);
    let (go, go_rx) = mpsc::channel();
    let delivery = Gated {
        arrived: arrived_tx,
        go: std::sync::Mutex::new(go_rx),
    };
    let mut batch = Box::pin(bob.decrypt_batch(queue.clone(), Box::new(delivery), 100, 0));
    // One poll starts it on a worker; then the caller gives up (a cancelled coroutine or Task).
    let mut cx = Context::from_waker(Waker::noop());
    assert!(batch.as_mut().poll(&mut cx).is_pending());
    arrived.recv_timeout(Duration::from_secs(30)).unwrap();
    drop(batch);
    go.send(()).unwrap();
    // The next call waits for the stopped batch; nothing of it was committed.
    assert!(!bob.has_session("alice".into()).wait().unwrap());
    assert_eq!(bob.prekeys_remaining().wait().unwrap(), 1);
    let summary = bob
        .decrypt_batch(queue, Box::new(NoOp), 1000, 0)
        .wait()
        .unwrap();
    assert_eq!(summary.decrypted, 2000);
}

struct NoOp;

impl BatchDelivery for NoOp {
    fn deliver(&self, _: BatchResults, _: BatchProgress) -> Result<bool, ProteusError> {
        Ok(true)
    }
}

#[test]
fn a_closed_client_refuses_calls_with_122() {
    let client = memory();
    client.close().wait().unwrap();
    let e = client.fingerprint().wait().unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (122, "ClientClosed"));
    assert!(matches!(e, ProteusError::Engine { .. }));
    client.close().wait().unwrap();
}

#[test]
fn integers_out_of_range_are_309() {
    let client = memory();
    for e in [
        client.generate_prekeys(-1).wait().unwrap_err(),
        client.prekey_bundle(65_536).wait().unwrap_err(),
        client.set_max_counter_gap(-1).wait().unwrap_err(),
        Client::in_memory(ClientOptions {
            busy_timeout_ms: 0,
            wait_timeout_ms: -1,
            ..ClientOptions::default()
        })
        .wait()
        .unwrap_err(),
        Client::in_memory(ClientOptions {
            batch_threads: Some(0),
            ..ClientOptions::default()
        })
        .wait()
        .unwrap_err(),
        Client::in_memory(ClientOptions {
            batch_threads: Some(257),
            ..ClientOptions::default()
        })
        .wait()
        .unwrap_err(),
    ] {
        assert_eq!((e.code(), e.kind().name()), (309, "IntegerOutOfRange"));
        assert!(matches!(e, ProteusError::Decode { .. }));
    }
}

#[test]
fn sealed_stores_open_with_their_key_and_rotate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    let (key, other) = (
        SecretBytes::from(vec![7; 32]),
        SecretBytes::from(vec![9; 32]),
    );
    let open = |key: Option<SecretBytes>| {
        Client::open(path.clone(), key, None, ClientOptions::default(), None).wait()
    };
    let fingerprint = open(Some(SecretBytes::from(vec![7; 32])))
        .unwrap()
        .fingerprint()
        .wait()
        .unwrap();
    assert_eq!(open(None).unwrap_err().code(), 510);
    assert_eq!(
        open(Some(SecretBytes::from(vec![9; 32])))
            .unwrap_err()
            .code(),
        508
    );
    let e = client_rekey_store(path.clone(), SecretBytes::from(vec![9; 32]), other)
        .wait()
        .unwrap_err();
    assert_eq!(e.code(), 508);
    client_rekey_store(path.clone(), key, SecretBytes::from(vec![9; 32]))
        .wait()
        .unwrap();
    let reopened = open(Some(SecretBytes::from(vec![9; 32]))).unwrap();
    assert_eq!(reopened.fingerprint().wait().unwrap(), fingerprint);
    drop(reopened);
    let e = client_seal_store(path.clone(), SecretBytes::from(vec![1; 32]))
        .wait()
        .unwrap_err();
    assert!(matches!(e, ProteusError::System { .. }), "{e}");
    client_delete_store(path.clone()).wait().unwrap();
    let e = Client::open(
        path,
        None,
        Some(OpenMode::Existing),
        ClientOptions::default(),
        None,
    )
    .wait()
    .unwrap_err();
    assert_eq!(e.code(), 504);
}

#[test]
fn fan_out_gives_a_result_per_recipient() {
    let (alice, bob) = pair();
    let ids = vec!["bob".to_owned(), "nobody".to_owned(), "bob".to_owned()];
    let results = alice
        .encrypt_for(ids.clone(), b"to all"[..].into())
        .wait()
        .unwrap();
    assert_eq!(
        results.iter().map(|r| &r.session_id).collect::<Vec<_>>(),
        ids.iter().collect::<Vec<_>>()
    );
    assert_eq!(results[1].error.as_ref().unwrap().code(), 104);
    let first = results[0].envelope.clone().unwrap();
    assert_eq!(
        prekey_message_fingerprint(first.clone()).unwrap(),
        Some(alice.fingerprint().wait().unwrap())
    );
    for r in [&results[0], &results[2]] {
        let plaintext = bob
            .decrypt("alice".into(), r.envelope.clone().unwrap())
            .wait()
            .unwrap();
        assert_eq!(&*plaintext, b"to all");
    }
    let key = alice.identity_key().wait().unwrap();
    let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
    assert_eq!(hex, alice.fingerprint().wait().unwrap());
}
