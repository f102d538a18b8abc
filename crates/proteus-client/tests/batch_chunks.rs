//! Batch results handed over in chunks (`decrypt_batch_chunked`), a callback that fails with
//! its own error, and the sender named on the results of a session's first messages.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::ops::ControlFlow;
use std::time::Duration;

use common::{TestStorage, code_of, connect, encrypt_n, queue};
use proteus_client::{BatchError, Chunking, Client, MessageId, claimed_sender};

/// Bob with a session from Alice and `n` messages from her queued.
fn queued(n: usize) -> (TestStorage, Client, Vec<(String, Vec<u8>)>) {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let items = encrypt_n(&mut alice, "bob", "m", n)
        .into_iter()
        .map(|e| ("alice".to_owned(), e))
        .collect();
    (storage, bob, items)
}

#[test]
fn chunks_cover_the_queue_in_order_with_their_progress() {
    let (_storage, mut bob, items) = queued(10);
    let mut chunks = Vec::new();
    let mut ids = Vec::new();
    let results = bob
        .decrypt_batch_chunked(&queue(&items), Chunking::every(4), |chunk, progress| {
            chunks.push((chunk.len(), progress.done, progress.total));
            ids.extend(chunk.iter().map(|d| d.message_id));
            Ok::<_, String>(ControlFlow::Continue(()))
        })
        .unwrap();
    assert_eq!(chunks, [(4, 4, 10), (4, 8, 10), (2, 10, 10)]);
    let want: Vec<MessageId> = items.iter().map(|(_, e)| MessageId::of(e)).collect();
    assert_eq!(ids, want);
    assert_eq!(results.len(), 10);
    assert!(results.iter().all(|d| d.outcome.is_ok()));
}

/// With an interval that has always passed, a chunk is due every 8 results (the clock is read
/// every 8), long before `max_len`.
#[test]
fn an_interval_hands_results_over_before_the_chunk_is_full() {
    let (_storage, mut bob, items) = queued(20);
    let mut lens = Vec::new();
    let chunking = Chunking::every(1000).with_interval(Duration::ZERO);
    bob.decrypt_batch_chunked(&queue(&items), chunking, |chunk, _| {
        lens.push(chunk.len());
        Ok::<_, String>(ControlFlow::Continue(()))
    })
    .unwrap();
    assert_eq!(lens, [8, 8, 4]);
}

#[test]
fn a_failing_callback_commits_nothing_and_its_error_comes_back() {
    let (storage, mut bob, items) = queued(10);
    let before = storage.dump();
    let commits = storage.commits();
    let mut calls = 0;
    let err = bob
        .decrypt_batch_chunked(&queue(&items), Chunking::every(3), |_, _| {
            calls += 1;
            if calls == 2 {
                Err("the app's database is full")
            } else {
                Ok(ControlFlow::Continue(()))
            }
        })
        .unwrap_err();
    assert!(
        matches!(err, BatchError::Delivery("the app's database is full")),
        "{err:?}"
    );
    assert_eq!(calls, 2, "no chunk is handed over after a failure");
    assert_eq!(storage.commits(), commits);
    assert_eq!(storage.dump(), before);
    // The same messages decrypt again.
    let again = bob.decrypt_batch(&queue(&items), |_, _| ControlFlow::Continue(()));
    assert!(again.unwrap().iter().all(|d| d.outcome.is_ok()));
}

#[test]
fn break_in_a_chunk_is_batch_aborted() {
    let (storage, mut bob, items) = queued(5);
    let commits = storage.commits();
    let err = bob
        .decrypt_batch_chunked(&queue(&items), Chunking::every(2), |_, _| {
            Ok::<_, String>(ControlFlow::Break(()))
        })
        .unwrap_err();
    match err {
        BatchError::Client(e) => assert_eq!(e.code(), 108),
        other => panic!("{other:?}"),
    }
    assert_eq!(storage.commits(), commits);
}

/// The first message of a session names its sender; a later one does not (its sender is the
/// session's); a first message claiming another identity than the session's names the claimed
/// one, refused with RemoteIdentityChanged.
#[test]
fn the_first_messages_of_a_session_name_their_sender() {
    let mut bob = Client::in_memory().unwrap();
    let mut alice = Client::in_memory().unwrap();
    let bundle = bob.generate_prekeys(2).unwrap();
    alice.create_session("bob", &bundle[0].to_bytes()).unwrap();
    let first = alice.encrypt("bob", b"first").unwrap();
    let reply_me = alice.encrypt("bob", b"second").unwrap();
    // Someone else, under the session id Bob keeps for Alice.
    let mut mallory = Client::in_memory().unwrap();
    mallory
        .create_session("bob", &bundle[1].to_bytes())
        .unwrap();
    let claim = mallory.encrypt("bob", b"it is me, alice").unwrap();

    let items = vec![
        ("alice".to_owned(), first.clone()),
        ("alice".to_owned(), claim.clone()),
    ];
    let results = bob
        .decrypt_batch(&queue(&items), |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(results[0].sender.as_ref(), Some(alice.identity()));
    assert_eq!(results[1].sender.as_ref(), Some(mallory.identity()));
    assert_eq!(code_of(&results[1].outcome), 204);

    // Once Bob answered, Alice's messages are CipherMessages: no sender on them.
    let answer = bob.encrypt("alice", b"hi").unwrap();
    alice.decrypt("bob", &answer).unwrap();
    let later = alice.encrypt("bob", b"later").unwrap();
    let items = vec![("alice".to_owned(), later.clone())];
    let results = bob
        .decrypt_batch(&queue(&items), |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(results[0].outcome.as_deref().unwrap(), b"later");
    assert_eq!(results[0].sender, None);

    // What an envelope claims, before decrypting it.
    assert_eq!(
        claimed_sender(&reply_me).unwrap().as_ref(),
        Some(alice.identity())
    );
    assert_eq!(
        claimed_sender(&claim).unwrap().as_ref(),
        Some(mallory.identity())
    );
    assert_eq!(claimed_sender(&later).unwrap(), None);
    assert!(claimed_sender(b"not an envelope").is_err());
}
