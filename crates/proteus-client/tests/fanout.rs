//! `Client::encrypt_for`: one plaintext to many sessions, a result per recipient, one commit
//! made before any envelope is returned.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TestStorage, connect, counter_of};
use proteus_client::{Client, ClientError};

/// Alice (on `storage`) with sessions to Bob and Carol, each of whom has heard from her.
fn group() -> (TestStorage, Client, Client, Client) {
    let storage = TestStorage::new();
    let mut alice = storage.client();
    let mut bob = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    connect(&mut alice, "alice", &mut carol, "carol");
    (storage, alice, bob, carol)
}

#[test]
fn every_recipient_gets_its_own_envelope_and_a_missing_session_is_a_result() {
    let (storage, mut alice, mut bob, mut carol) = group();
    let commits = storage.commits();

    let results = alice
        .encrypt_for(&["bob", "nobody", "carol", ""], b"to the group")
        .unwrap();

    assert_eq!(results.len(), 4);
    let to_bob = results[0].as_ref().unwrap();
    let to_carol = results[2].as_ref().unwrap();
    assert_eq!(bob.decrypt("alice", to_bob).unwrap(), b"to the group");
    assert_eq!(carol.decrypt("alice", to_carol).unwrap(), b"to the group");
    assert!(matches!(results[1], Err(ClientError::SessionNotFound(_))));
    assert!(matches!(results[3], Err(ClientError::InvalidSessionId(_))));
    assert_eq!(
        storage.commits(),
        commits + 1,
        "one commit for the whole fan-out"
    );
}

#[test]
fn an_id_listed_twice_gets_two_envelopes_on_two_chain_steps() {
    let (_storage, mut alice, mut bob, _carol) = group();
    let results = alice.encrypt_for(&["bob", "bob"], b"twice").unwrap();
    let first = results[0].as_ref().unwrap();
    let second = results[1].as_ref().unwrap();
    assert_eq!(counter_of(second), counter_of(first) + 1);
    assert_eq!(bob.decrypt("alice", first).unwrap(), b"twice");
    assert_eq!(bob.decrypt("alice", second).unwrap(), b"twice");
}

#[test]
fn a_failed_commit_returns_no_envelope_and_changes_nothing() {
    let (storage, mut alice, mut bob, _carol) = group();
    let before = storage.dump();

    storage.set_fail_commits(true);
    assert!(alice.encrypt_for(&["bob", "carol"], b"lost").is_err());
    assert_eq!(storage.dump(), before);

    // The chains did not move: the next message has the counter the lost one would have had,
    // and Bob reads it.
    storage.set_fail_commits(false);
    let retry = alice
        .encrypt_for(&["bob"], b"again")
        .unwrap()
        .remove(0)
        .unwrap();
    assert_eq!(bob.decrypt("alice", &retry).unwrap(), b"again");
    let next = alice.encrypt("bob", b"next").unwrap();
    assert_eq!(counter_of(&next), counter_of(&retry) + 1);
}

#[test]
fn the_advance_is_stored_before_the_envelopes_leave() {
    let (storage, mut alice, mut bob, _carol) = group();
    let sent = alice
        .encrypt_for(&["bob"], b"one")
        .unwrap()
        .remove(0)
        .unwrap();

    // A client opened on the store afterwards (a restart) continues after the sent message.
    drop(alice);
    let mut restarted = storage.client();
    let after = restarted.encrypt("bob", b"two").unwrap();
    assert_eq!(counter_of(&after), counter_of(&sent) + 1);
    assert_eq!(bob.decrypt("alice", &sent).unwrap(), b"one");
    assert_eq!(bob.decrypt("alice", &after).unwrap(), b"two");
}

#[test]
fn no_recipients_commits_nothing() {
    let (storage, mut alice, _bob, _carol) = group();
    let commits = storage.commits();
    assert!(alice.encrypt_for(&[], b"nobody").unwrap().is_empty());
    assert!(alice.encrypt_for(&["gone"], b"nobody").unwrap()[0].is_err());
    assert_eq!(storage.commits(), commits);
}
