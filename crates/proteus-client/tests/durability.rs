//! Durability: `encrypt` persists the advanced chain before it returns, and a failed commit
//! leaves both the store and the in-memory client unchanged.
//!
//! Failures are injected with `TestStorage` (tests/common), a `MemoryStorage` whose commits fail
//! on demand, given to the client through `Client::with_storage`. "Unchanged" is checked two
//! ways: the store's records are byte-identical to before the failure, and a *twin* client made
//! from a copy of the records taken before the failure (a client that never saw it) gives
//! identical results, byte for byte, for the same operations afterwards.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use common::{TestStorage, code_of, connect, counter_of, encrypt_n, queue, run_batch};
use proteus_client::{Client, ClientError, StoreError, Table};
use proteus_core::{IdentityKeyPair, OsRng};

fn assert_injected<T: std::fmt::Debug>(r: &Result<T, ClientError>) {
    match r {
        Err(ClientError::Store(StoreError::Backend(msg))) => {
            assert!(msg.contains("injected"), "{msg}")
        }
        other => panic!("expected the injected storage failure, got {other:?}"),
    }
    assert_eq!(code_of(r), 507);
}

/// Alice (on a TestStorage) and Bob (in memory), with a session both ways.
fn pair() -> (TestStorage, Client, Client) {
    let storage = TestStorage::new();
    let mut alice = storage.client();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let r = bob.encrypt("alice", b"reply").unwrap();
    alice.decrypt("bob", &r).unwrap();
    (storage, alice, bob)
}

/// What survives a crash right after `encrypt` returned is what the storage holds: a client
/// made from those records never gives out the counter of a returned envelope again.
#[test]
fn encrypt_commits_the_chain_before_returning() {
    let (storage, mut alice, mut bob) = pair();
    let mut returned = BTreeSet::new();
    for i in 0..5 {
        let before = storage.commits();
        let e = alice.encrypt("bob", format!("m{i}").as_bytes()).unwrap();
        assert_eq!(
            storage.commits(),
            before + 1,
            "encrypt committed once before returning"
        );
        assert!(returned.insert(counter_of(&e)));
        // "Crash": a new client from exactly what is stored.
        let mut after_crash = TestStorage::from_dump(&storage.dump()).client();
        let next = after_crash.encrypt("bob", b"after crash").unwrap();
        assert!(
            !returned.contains(&counter_of(&next)),
            "counter {} given out twice",
            counter_of(&next)
        );
        assert_eq!(counter_of(&next), counter_of(&e) + 1);
        assert_eq!(
            bob.decrypt("alice", &e).unwrap(),
            format!("m{i}").as_bytes()
        );
    }
}

/// The same with a real SQLite store: reopen after encrypt, the next envelope has the next
/// counter and both decrypt.
#[cfg(feature = "sqlite")]
#[test]
fn encrypt_is_durable_across_reopening_the_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alice.db");
    let mut bob = Client::in_memory().unwrap();
    let mut envelopes = Vec::new();
    {
        let mut alice = Client::open(&path).unwrap();
        connect(&mut alice, "alice", &mut bob, "bob");
        envelopes.push(alice.encrypt("bob", b"before").unwrap());
    }
    let mut counters = BTreeSet::new();
    for round in 0..3 {
        let mut alice = Client::open(&path).unwrap();
        let e = alice
            .encrypt("bob", format!("round {round}").as_bytes())
            .unwrap();
        envelopes.push(e);
    }
    for e in &envelopes {
        assert!(
            counters.insert(counter_of(e)),
            "counter {} reused",
            counter_of(e)
        );
        bob.decrypt("alice", e).unwrap();
    }
    assert_eq!(counters.len(), 4);
}

/// A failed encrypt commit returns an error and changes nothing; once the storage works again
/// the next encrypt is exactly what a client that never saw the failure produces, and no two
/// returned envelopes share a counter.
#[test]
fn a_failed_encrypt_commit_changes_nothing() {
    let (storage, mut alice, mut bob) = pair();
    let first = alice.encrypt("bob", b"first").unwrap();
    let before = storage.dump();
    let twin_storage = TestStorage::from_dump(&before);
    let mut twin = twin_storage.client();

    storage.set_fail_commits(true);
    for _ in 0..3 {
        assert_injected(&alice.encrypt("bob", b"second"));
    }
    assert_eq!(storage.dump(), before, "the store changed");
    storage.set_fail_commits(false);

    let second = alice.encrypt("bob", b"second").unwrap();
    assert_eq!(
        second,
        twin.encrypt("bob", b"second").unwrap(),
        "differs from a client that never failed"
    );
    assert_eq!(counter_of(&second), counter_of(&first) + 1);
    assert_eq!(storage.dump(), twin_storage.dump());
    let third = alice.encrypt("bob", b"third").unwrap();
    assert_eq!(third, twin.encrypt("bob", b"third").unwrap());
    for (e, text) in [(&first, "first"), (&second, "second"), (&third, "third")] {
        assert_eq!(bob.decrypt("alice", e).unwrap(), text.as_bytes());
    }
}

/// A failed commit of an in-chain decrypt: store and client unchanged; the retry gives the same
/// plaintext and the same records as a client that never failed.
#[test]
fn a_failed_decrypt_commit_changes_nothing() {
    let (storage, mut alice, mut bob) = pair();
    let msgs = encrypt_n(&mut bob, "alice", "b", 4);
    // Out of order: this one stages keys, which the failed commit must not leave behind.
    let before = storage.dump();
    let twin_storage = TestStorage::from_dump(&before);
    let mut twin = twin_storage.client();
    storage.set_fail_commits(true);
    assert_injected(&alice.decrypt("bob", &msgs[2]));
    assert_eq!(storage.dump(), before);
    storage.set_fail_commits(false);

    for i in [2, 0, 3, 1] {
        let got = alice.decrypt("bob", &msgs[i]).unwrap();
        assert_eq!(got, twin.decrypt("bob", &msgs[i]).unwrap());
        assert_eq!(got, format!("b {i}").as_bytes());
        assert_eq!(storage.dump(), twin_storage.dump(), "after message {i}");
    }
    for m in &msgs {
        assert_eq!(code_of(&alice.decrypt("bob", m)), 209);
    }
}

/// A failed commit of a decrypt that creates a session from a PreKeyMessage: no session, the
/// prekey is still there; the retry succeeds and consumes it.
#[test]
fn a_failed_commit_of_a_new_session_keeps_the_prekey() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let bundle = bob.generate_prekeys(1).unwrap().remove(0);
    let mut alice = Client::in_memory().unwrap();
    alice.create_session("bob", &bundle.to_bytes()).unwrap();
    let m0 = alice.encrypt("bob", b"hello").unwrap();
    let m1 = alice.encrypt("bob", b"again").unwrap();
    let before = storage.dump();

    storage.set_fail_commits(true);
    assert_injected(&bob.decrypt("alice", &m0));
    assert_eq!(storage.dump(), before);
    assert!(
        !bob.has_session("alice").unwrap(),
        "the uncommitted session is still in memory"
    );
    assert_eq!(bob.prekeys_remaining().unwrap(), 1);
    assert_eq!(bob.prekey_bundle(bundle.prekey_id()).unwrap(), bundle);
    assert!(bob.session_ids().unwrap().is_empty());
    storage.set_fail_commits(false);

    // Not even a later message of that session sees the uncommitted state.
    assert_eq!(
        bob.decrypt("alice", &m1).unwrap(),
        b"again",
        "m1 (a PreKeyMessage) creates the session now"
    );
    assert_eq!(bob.decrypt("alice", &m0).unwrap(), b"hello");
    assert_eq!(bob.prekeys_remaining().unwrap(), 0);
    let reply = bob.encrypt("alice", b"hi").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"hi");
}

/// A failed batch commit: an error, nothing committed, nothing kept in memory; the retry gives
/// the same results and the same records as a client that never failed.
#[test]
fn a_failed_batch_commit_changes_nothing() {
    let (storage, mut alice, mut bob) = pair();
    let mut carol = Client::in_memory().unwrap();
    let bundle = alice.generate_prekeys(1).unwrap().remove(0);
    carol.create_session("alice", &bundle.to_bytes()).unwrap();
    let mut items: Vec<(String, Vec<u8>)> = Vec::new();
    let from_bob = encrypt_n(&mut bob, "alice", "b", 6);
    let from_carol = encrypt_n(&mut carol, "alice", "c", 3);
    for i in [1, 0, 3, 2, 5, 4] {
        items.push(("bob".into(), from_bob[i].clone()));
    }
    for e in &from_carol {
        items.push(("carol".into(), e.clone()));
    }
    let before = storage.dump();
    let twin_storage = TestStorage::from_dump(&before);
    let mut twin = twin_storage.client();

    storage.set_fail_commits(true);
    let mut delivered = 0;
    let r = alice.decrypt_batch(&queue(&items), |_, _| {
        delivered += 1;
        ControlFlow::Continue(())
    });
    assert_injected(&r);
    assert_eq!(
        delivered,
        items.len(),
        "every result was delivered before the commit"
    );
    assert_eq!(storage.dump(), before);
    assert!(!alice.has_session("carol").unwrap());
    assert_eq!(alice.prekeys_remaining().unwrap(), 1);
    storage.set_fail_commits(false);

    let got = run_batch(&mut alice, &items).unwrap();
    let want = run_batch(&mut twin, &items).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.message_id, w.message_id);
        assert_eq!(g.outcome.as_ref().unwrap(), w.outcome.as_ref().unwrap());
    }
    // Session records differ only where randomness was drawn (Carol's new session); Bob's
    // in-chain session is byte-identical.
    let d = storage.dump();
    let t = twin_storage.dump();
    assert_eq!(
        d.get(&(Table::Sessions, b"bob".to_vec())),
        t.get(&(Table::Sessions, b"bob".to_vec()))
    );
    assert_eq!(d.keys().collect::<Vec<_>>(), t.keys().collect::<Vec<_>>());
    assert_eq!(alice.prekeys_remaining().unwrap(), 0);
    let again = run_batch(&mut alice, &items).unwrap();
    assert!(again.iter().all(proteus_client::Decrypted::is_already_seen));
}

/// A failed commit of `generate_prekeys`: nothing stored, and the retry hands out the same ids.
#[test]
fn a_failed_prekey_generation_changes_nothing() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    bob.generate_prekeys(3).unwrap();
    let before = storage.dump();
    storage.set_fail_commits(true);
    assert_injected(&bob.generate_prekeys(5));
    assert_eq!(storage.dump(), before);
    assert_eq!(bob.prekeys_remaining().unwrap(), 3);
    storage.set_fail_commits(false);
    let ids: Vec<u16> = bob
        .generate_prekeys(5)
        .unwrap()
        .iter()
        .map(|b| b.prekey_id().value())
        .collect();
    assert_eq!(ids, [3, 4, 5, 6, 7]);
}

/// Failed commits of session management and imports.
#[test]
fn failed_session_and_import_commits_change_nothing() {
    let (storage, mut alice, mut bob) = pair();
    let fingerprint = alice.fingerprint();
    let before = storage.dump();
    storage.set_fail_commits(true);

    // delete_session: the session is still there and still works.
    assert_injected(&alice.delete_session("bob"));
    // create_session / import_session: nothing appears.
    let mut dave = Client::in_memory().unwrap();
    let dave_bundle = dave.generate_prekeys(1).unwrap().remove(0);
    assert_injected(&alice.create_session("dave", &dave_bundle.to_bytes()));
    assert!(!alice.has_session("dave").unwrap());
    let exported = alice.export_session("bob").unwrap();
    assert_injected(&alice.import_session("bob-copy", &exported));
    assert!(!alice.has_session("bob-copy").unwrap());
    // import_prekey, import_identity.
    let pk = proteus_core::PreKey::generate(proteus_core::PreKeyId::new(500), &mut OsRng);
    assert_injected(&alice.import_prekey(&pk.to_bytes()));
    assert_eq!(
        code_of(&alice.prekey_bundle(proteus_core::PreKeyId::new(500))),
        101
    );
    assert_injected(&alice.delete_session("never-existed"));
    assert_eq!(storage.dump(), before);
    assert_eq!(alice.session_ids().unwrap(), ["bob"]);
    assert_eq!(alice.fingerprint(), fingerprint);
    storage.set_fail_commits(false);

    let e = alice.encrypt("bob", b"still here").unwrap();
    assert_eq!(bob.decrypt("alice", &e).unwrap(), b"still here");
    alice
        .create_session("dave", &dave_bundle.to_bytes())
        .unwrap();
    assert_eq!(
        dave.decrypt("alice", &alice.encrypt("dave", b"hi dave").unwrap())
            .unwrap(),
        b"hi dave"
    );
}

#[test]
fn a_failed_identity_import_keeps_the_identity() {
    let storage = TestStorage::new();
    let mut c = storage.client();
    let fingerprint = c.fingerprint();
    let other = IdentityKeyPair::generate(&mut OsRng);
    let before = storage.dump();
    storage.set_fail_commits(true);
    assert_injected(&c.import_identity(&other.to_bytes()));
    assert_eq!(
        c.fingerprint(),
        fingerprint,
        "the in-memory identity changed"
    );
    assert_eq!(storage.dump(), before);
    storage.set_fail_commits(false);
    assert_eq!(storage.client().fingerprint(), fingerprint);
    c.import_identity(&other.to_bytes()).unwrap();
    assert_eq!(c.fingerprint(), other.fingerprint());
    assert_eq!(storage.client().fingerprint(), other.fingerprint());
}

/// Creating a client on empty storage whose first commit fails: an error, nothing written; the
/// next attempt creates the identity.
#[test]
fn a_failed_first_commit_creates_nothing() {
    let storage = TestStorage::new();
    storage.set_fail_commits(true);
    let r = Client::with_storage(Box::new(storage.clone()));
    assert_injected(&r);
    assert!(storage.dump().is_empty());
    storage.set_fail_commits(false);
    let c = storage.client();
    assert_eq!(storage.client().fingerprint(), c.fingerprint());
}

/// A read failure during a batch aborts the batch with the storage error; nothing is committed
/// and the client works once reads work again.
#[test]
fn a_read_failure_fails_the_batch_and_changes_nothing() {
    let (storage, _alice, mut bob) = pair();
    let mut alice = storage.client(); // a fresh client: sessions are loaded from storage
    let msgs = encrypt_n(&mut bob, "alice", "b", 3);
    let items: Vec<(String, Vec<u8>)> =
        msgs.iter().map(|e| ("bob".to_owned(), e.clone())).collect();
    let before = storage.dump();
    storage.set_fail_reads(true);
    let r = run_batch(&mut alice, &items);
    assert!(
        matches!(r, Err(ClientError::Store(StoreError::Backend(_)))),
        "{r:?}"
    );
    storage.set_fail_reads(false);
    assert_eq!(storage.dump(), before);
    let got = run_batch(&mut alice, &items).unwrap();
    for (i, g) in got.iter().enumerate() {
        assert_eq!(g.outcome.as_ref().unwrap(), format!("b {i}").as_bytes());
    }
}

/// `encrypt_batch`: one commit for all envelopes, made before any is returned; a failure (a
/// bad message or a failed commit) returns no envelope and changes nothing, and the retry gives
/// exactly what a client that never failed gives.
#[test]
fn encrypt_batch_is_one_commit_and_all_or_nothing() {
    let (storage, mut alice, mut bob) = pair();
    let mut carol = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut carol, "carol");
    let too_long = vec![0u8; proteus_core::limits::MAX_PLAINTEXT_LEN + 1];
    let before = storage.dump();
    let twin_storage = TestStorage::from_dump(&before);
    let mut twin = twin_storage.client();

    // A bad message in the middle: an error, nothing committed, no counter used.
    let bad: Vec<(&str, &[u8])> = vec![
        ("bob", b"one"),
        ("carol", b"one"),
        ("bob", &too_long),
        ("carol", b"two"),
    ];
    assert_eq!(code_of(&alice.encrypt_batch(&bad)), 410);
    let unknown: Vec<(&str, &[u8])> = vec![("bob", b"one"), ("nobody", b"x")];
    assert_eq!(code_of(&alice.encrypt_batch(&unknown)), 104);
    // A failed commit.
    storage.set_fail_commits(true);
    let good: Vec<(&str, &[u8])> = vec![
        ("bob", b"one"),
        ("carol", b"one"),
        ("bob", b"two"),
        ("carol", b"two"),
        ("bob", b"three"),
    ];
    assert_injected(&alice.encrypt_batch(&good));
    storage.set_fail_commits(false);
    assert_eq!(storage.dump(), before);

    let commits = storage.commits();
    let envelopes = alice.encrypt_batch(&good).unwrap();
    assert_eq!(storage.commits(), commits + 1, "one commit for the batch");
    assert_eq!(envelopes, twin.encrypt_batch(&good).unwrap());
    assert_eq!(storage.dump(), twin_storage.dump());
    assert_eq!(envelopes.len(), good.len());
    for ((session, plaintext), envelope) in good.iter().zip(&envelopes) {
        let receiver = if *session == "bob" {
            &mut bob
        } else {
            &mut carol
        };
        assert_eq!(receiver.decrypt("alice", envelope).unwrap(), *plaintext);
    }
    // After a crash right after it returned, the next counters follow on.
    let mut after_crash = TestStorage::from_dump(&storage.dump()).client();
    let next = after_crash.encrypt("bob", b"four").unwrap();
    assert_eq!(counter_of(&next), counter_of(&envelopes[4]) + 1);
    assert!(alice.encrypt_batch(&[]).unwrap().is_empty());
}
