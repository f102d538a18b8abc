//! `encrypt_for` on a thread pool gives exactly what one thread gives: the same envelopes byte
//! for byte (encryption draws no randomness), the same errors in the same places (missing and
//! invalid ids, a session listed twice), the same stored state; a failed commit stores nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use common::{Dump, TestStorage, connect};
use proteus_client::{Client, ClientError};

/// The sender's store with sessions to `n` peers, and the peers.
fn sender_with_peers(n: usize) -> (Dump, Vec<Client>) {
    let storage = TestStorage::new();
    let mut sender = storage.client();
    let peers = (0..n)
        .map(|i| {
            let mut peer = Client::in_memory().unwrap();
            connect(&mut sender, "sender", &mut peer, &format!("peer{i}"));
            peer
        })
        .collect();
    (storage.dump(), peers)
}

type Outcome = Vec<Result<Vec<u8>, u16>>;

fn fan_out(dump: &Dump, threads: usize, ids: &[&str]) -> (Outcome, Dump) {
    let storage = TestStorage::from_dump(dump);
    let mut sender = storage.client();
    sender.set_batch_threads(threads);
    let results = sender.encrypt_for(ids, b"to everyone").unwrap();
    let results = results
        .into_iter()
        .map(|r| r.map_err(|e| e.code()))
        .collect();
    (results, storage.dump())
}

fn recipients(n: usize) -> Vec<String> {
    let mut ids: Vec<String> = (0..n).map(|i| format!("peer{}", (i * 37) % n)).collect();
    ids.insert(5, "peer3".to_owned());
    ids.insert(9, "nobody".to_owned());
    ids.insert(20, String::new());
    ids.push("peer3".to_owned());
    ids
}

#[test]
fn a_parallel_fan_out_is_the_sequential_one() {
    let n = 80;
    let (dump, mut peers) = sender_with_peers(n);
    let ids = recipients(n);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let one = fan_out(&dump, 1, &ids);
    let many = fan_out(&dump, 3, &ids);
    assert_eq!(
        many.0, one.0,
        "the same envelopes and errors, in the same places"
    );
    assert_eq!(many.1, one.1, "the same stored state");
    assert_eq!(
        one.0[9],
        Err(ClientError::SessionNotFound(String::new()).code())
    );
    assert!(one.0[20].is_err());
    // peer3 got three envelopes, which decrypt in order.
    let for_peer3: Vec<&Vec<u8>> = ids
        .iter()
        .zip(&one.0)
        .filter(|(id, _)| **id == "peer3")
        .map(|(_, r)| r.as_ref().unwrap())
        .collect();
    assert_eq!(for_peer3.len(), 3);
    for envelope in for_peer3 {
        assert_eq!(
            peers[3].decrypt("sender", envelope).unwrap(),
            b"to everyone"
        );
    }
}

#[test]
fn a_failed_commit_of_a_parallel_fan_out_stores_nothing() {
    let n = 64;
    let (dump, _peers) = sender_with_peers(n);
    let ids = recipients(n);
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let storage = TestStorage::from_dump(&dump);
    let mut sender = storage.client();
    sender.set_batch_threads(3);
    storage.set_fail_commits(true);
    assert!(matches!(
        sender.encrypt_for(&ids, b"to everyone"),
        Err(ClientError::Store(_))
    ));
    storage.set_fail_commits(false);
    assert_eq!(storage.dump(), dump, "nothing was stored");
    // The same client then sends what a fresh one-thread client sends: no chain step was kept.
    let again: Outcome = sender
        .encrypt_for(&ids, b"to everyone")
        .unwrap()
        .into_iter()
        .map(|r| r.map_err(|e| e.code()))
        .collect();
    assert_eq!(again, fan_out(&dump, 1, &ids).0);
}
