//! Identity pinning (`Client::set_identity_pinning`): the first identity seen for a session id
//! is pinned in the commit that stores the session, survives the session's deletion and reset,
//! and another one, in a PreKeyMessage or a bundle, is refused with `RemoteIdentityChanged`
//! (204), changing nothing, until `accept_identity`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::ops::ControlFlow;

use common::{TestStorage, bundle_of, code_of, queue};
use proteus_client::{Client, ClientError, QueuedMessage, Table, Write};
use proteus_core::DecryptError;

const REMOTE_IDENTITY_CHANGED: u16 = 204;

/// Bob on a test storage, with pinning on.
fn pinned_bob() -> (TestStorage, Client) {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    bob.set_identity_pinning(true);
    (storage, bob)
}

/// A first message from `from` to `to`'s fresh bundle.
fn first_message(from: &mut Client, to: &mut Client) -> Vec<u8> {
    let bundle = bundle_of(to);
    from.create_session("bob", &bundle).unwrap();
    from.encrypt("bob", b"hello").unwrap()
}

fn is_pin_put(write: &Write, session_id: &str) -> bool {
    matches!(write, Write::Put { table: Table::Meta, key, .. }
        if key.as_slice() == [b"pinned/".as_slice(), session_id.as_bytes()].concat())
}

#[test]
fn the_first_identity_is_pinned_in_the_commit_that_stores_the_session() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    assert_eq!(bob.pinned_identity("alice").unwrap(), None);
    let before = storage.commits();
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello");
    let commits = storage.commits_since(before);
    assert_eq!(commits.len(), 1);
    assert!(commits[0].iter().any(|w| is_pin_put(w, "alice")));
    assert!(
        commits[0].iter().any(
            |w| matches!(w, Write::Put { table: Table::Sessions, key, .. } if key == b"alice")
        )
    );
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );
    // Later commits of the session write no pin again.
    let before = storage.commits();
    let reply = bob.encrypt("alice", b"hi").unwrap();
    alice.decrypt("bob", &reply).unwrap();
    let next = alice.encrypt("bob", b"next").unwrap();
    bob.decrypt("alice", &next).unwrap();
    for commit in storage.commits_since(before) {
        assert!(!commit.iter().any(|w| is_pin_put(w, "alice")));
    }
}

#[test]
fn without_pinning_nothing_is_pinned_and_a_new_identity_makes_the_session() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    assert!(!bob.identity_pinning());
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    assert_eq!(bob.pinned_identity("alice").unwrap(), None);
    bob.delete_session("alice").unwrap();
    let mut other = Client::in_memory().unwrap();
    let hello = first_message(&mut other, &mut bob);
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello");
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        other.fingerprint()
    );
    assert!(
        storage
            .dump()
            .keys()
            .all(|(t, k)| *t != Table::Meta || !k.starts_with(b"pinned/"))
    );
}

#[test]
fn a_deleted_session_keeps_its_pin_and_another_identity_waits_for_accept() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    bob.delete_session("alice").unwrap();
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );

    // Someone else, under Alice's session id: refused, nothing changes (the prekey stays).
    let mut mallory = Client::in_memory().unwrap();
    let forged = first_message(&mut mallory, &mut bob);
    let before = storage.dump();
    let refused = bob.decrypt("alice", &forged);
    assert_eq!(code_of(&refused), REMOTE_IDENTITY_CHANGED);
    assert!(matches!(
        refused,
        Err(ClientError::Decrypt(DecryptError::RemoteIdentityChanged))
    ));
    assert_eq!(storage.dump(), before);
    assert!(!bob.has_session("alice").unwrap());

    // Alice again, with her own identity: welcome back.
    alice.delete_session("bob").unwrap();
    let back = first_message(&mut alice, &mut bob);
    assert_eq!(bob.decrypt("alice", &back).unwrap(), b"hello");
}

#[test]
fn a_forgotten_session_id_loses_its_session_staged_keys_and_pin_in_one_commit() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    // A skipped message leaves a staged key.
    let _skipped = alice.encrypt("bob", b"skipped").unwrap();
    let later = alice.encrypt("bob", b"later").unwrap();
    bob.decrypt("alice", &later).unwrap();
    let alice_records = |storage: &TestStorage| {
        storage
            .dump()
            .into_iter()
            .filter(|((table, key), _)| {
                key.windows(5).any(|w| w == b"alice") && *table != Table::PreKeys
            })
            .count()
    };
    assert!(alice_records(&storage) >= 3, "session, pin and staged key");

    let commits = storage.commits();
    bob.forget_session("alice").unwrap();
    assert_eq!(storage.commits(), commits + 1, "one commit");
    assert_eq!(alice_records(&storage), 0);
    assert!(!bob.has_session("alice").unwrap());
    assert_eq!(bob.pinned_identity("alice").unwrap(), None);

    // The id is as one never seen: another identity under it is pinned anew.
    let mut carol = Client::in_memory().unwrap();
    let from_carol = first_message(&mut carol, &mut bob);
    assert_eq!(bob.decrypt("alice", &from_carol).unwrap(), b"hello");
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(carol.fingerprint())
    );

    // Forgetting an id with neither a session nor a pin changes nothing; bad ids are typed.
    let before = storage.dump();
    bob.forget_session("nobody").unwrap();
    assert_eq!(storage.dump(), before);
    assert_eq!(code_of(&bob.forget_session("")), 106);
}

#[test]
fn a_failed_forget_changes_nothing() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    let before = storage.dump();
    storage.set_fail_commits(true);
    assert!(bob.forget_session("alice").is_err());
    storage.set_fail_commits(false);
    assert_eq!(storage.dump(), before);
    assert!(bob.has_session("alice").unwrap());
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );
    let next = alice.encrypt("bob", b"still here").unwrap();
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"still here");
}

#[test]
fn accept_identity_lets_the_held_message_decrypt() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();

    // Alice reinstalls: a new identity under the same session id, while the old session exists.
    let mut new_alice = Client::in_memory().unwrap();
    let held = first_message(&mut new_alice, &mut bob);
    assert_eq!(
        code_of(&bob.decrypt("alice", &held)),
        REMOTE_IDENTITY_CHANGED
    );
    let before = storage.commits();
    bob.accept_identity("alice", &new_alice.fingerprint())
        .unwrap();
    // One commit: the new pin, and the old identity's session gone.
    let commits = storage.commits_since(before);
    assert_eq!(commits.len(), 1);
    assert!(commits[0].iter().any(|w| is_pin_put(w, "alice")));
    assert!(
        commits[0]
            .iter()
            .any(|w| matches!(w, Write::Delete { table: Table::Sessions, key } if key == b"alice"))
    );
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(new_alice.fingerprint())
    );
    assert_eq!(bob.decrypt("alice", &held).unwrap(), b"hello");
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        new_alice.fingerprint()
    );
    // Accepting the identity the session has changes no session.
    let before = storage.commits();
    bob.accept_identity("alice", &new_alice.fingerprint().to_uppercase())
        .unwrap();
    let commits = storage.commits_since(before);
    assert!(!commits[0].iter().any(|w| matches!(w, Write::Delete { .. })));
    assert!(bob.has_session("alice").unwrap());
}

#[test]
fn in_a_batch_the_refusal_is_the_message_result_and_it_decrypts_after_accept() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    bob.delete_session("alice").unwrap();

    let mut new_alice = Client::in_memory().unwrap();
    let mut items = Vec::new();
    let held = first_message(&mut new_alice, &mut bob);
    items.push(("alice".to_owned(), held));
    items.push((
        "alice".to_owned(),
        new_alice.encrypt("bob", b"second").unwrap(),
    ));
    items.push(("carol".to_owned(), first_message(&mut carol, &mut bob)));
    for i in 0..3 {
        items.push((
            "carol".to_owned(),
            carol.encrypt("bob", format!("c{i}").as_bytes()).unwrap(),
        ));
    }
    let results = bob
        .decrypt_batch(&queue(&items), |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(code_of(&results[0].outcome), REMOTE_IDENTITY_CHANGED);
    assert_eq!(
        results[0].sender.map(|k| k.fingerprint()),
        Some(new_alice.fingerprint())
    );
    // Her next message is a PreKeyMessage too (she has had no reply).
    assert_eq!(code_of(&results[1].outcome), REMOTE_IDENTITY_CHANGED);
    assert!(results[2..].iter().all(|r| r.outcome.is_ok()));
    assert_eq!(
        bob.pinned_identity("carol").unwrap(),
        Some(carol.fingerprint())
    );
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );

    bob.accept_identity("alice", &new_alice.fingerprint())
        .unwrap();
    let before = storage.commits();
    let again = bob
        .decrypt_batch(&queue(&items[..2]), |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(again[0].message_id, results[0].message_id);
    assert_eq!(again[0].outcome.as_deref().unwrap(), b"hello");
    assert_eq!(again[1].outcome.as_deref().unwrap(), b"second");
    assert_eq!(storage.commits_since(before).len(), 1);
}

#[test]
fn a_batch_of_runs_refuses_a_new_identity_for_a_pinned_session_id() {
    let (_storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    bob.decrypt("alice", &hello).unwrap();
    bob.delete_session("alice").unwrap();
    // Two sessions, no handshake shared: both go as runs.
    let mut mallory = Client::in_memory().unwrap();
    let mut dave = Client::in_memory().unwrap();
    let items = [
        ("alice".to_owned(), first_message(&mut mallory, &mut bob)),
        ("dave".to_owned(), first_message(&mut dave, &mut bob)),
    ];
    let batch: Vec<QueuedMessage<'_>> = queue(&items);
    let results = bob
        .decrypt_batch(&batch, |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(code_of(&results[0].outcome), REMOTE_IDENTITY_CHANGED);
    assert!(results[1].outcome.is_ok());
    assert!(!bob.has_session("alice").unwrap());

    // Two session ids whose messages name one prekey: the ordinary way, in queue order.
    let bundle = bundle_of(&mut bob);
    let mut erin = Client::in_memory().unwrap();
    erin.create_session("bob", &bundle).unwrap();
    mallory.delete_session("bob").unwrap();
    mallory.create_session("bob", &bundle).unwrap();
    let items = [
        ("alice".to_owned(), mallory.encrypt("bob", b"m").unwrap()),
        ("erin".to_owned(), erin.encrypt("bob", b"e").unwrap()),
    ];
    let results = bob
        .decrypt_batch(&queue(&items), |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(code_of(&results[0].outcome), REMOTE_IDENTITY_CHANGED);
    assert_eq!(results[1].outcome.as_deref().unwrap(), b"e");
    assert!(!bob.has_session("alice").unwrap());
}

#[test]
fn a_bundle_of_another_identity_is_refused_until_accepted() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let mut new_alice = Client::in_memory().unwrap();
    bob.create_session("alice", &bundle_of(&mut alice)).unwrap();
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );

    // Reset to the pinned identity: fine, and the identity did not change.
    assert!(!bob.reset_session("alice", &bundle_of(&mut alice)).unwrap());
    // Reset to another: refused, nothing changed.
    let before = storage.dump();
    let refused = bob.reset_session("alice", &bundle_of(&mut new_alice));
    assert_eq!(code_of(&refused), REMOTE_IDENTITY_CHANGED);
    assert_eq!(storage.dump(), before);
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        alice.fingerprint()
    );

    // Deleted, then a bundle of another identity: refused too.
    bob.delete_session("alice").unwrap();
    let bundle = bundle_of(&mut new_alice);
    let before = storage.dump();
    assert_eq!(
        code_of(&bob.create_session("alice", &bundle)),
        REMOTE_IDENTITY_CHANGED
    );
    assert_eq!(storage.dump(), before);

    bob.accept_identity("alice", &new_alice.fingerprint())
        .unwrap();
    bob.create_session("alice", &bundle).unwrap();
    let to_new = bob.encrypt("alice", b"hi again").unwrap();
    assert_eq!(new_alice.decrypt("bob", &to_new).unwrap(), b"hi again");
}

#[test]
fn accept_identity_deletes_a_session_of_the_old_identity_so_reset_gives_way_to_create() {
    let (_storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let mut new_alice = Client::in_memory().unwrap();
    bob.create_session("alice", &bundle_of(&mut alice)).unwrap();
    let bundle = bundle_of(&mut new_alice);
    assert_eq!(
        code_of(&bob.reset_session("alice", &bundle)),
        REMOTE_IDENTITY_CHANGED
    );
    bob.accept_identity("alice", &new_alice.fingerprint())
        .unwrap();
    assert!(!bob.has_session("alice").unwrap());
    assert_eq!(code_of(&bob.reset_session("alice", &bundle)), 104);
    bob.create_session("alice", &bundle).unwrap();
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        new_alice.fingerprint()
    );
}

#[test]
fn a_session_made_before_pinning_is_pinned_when_it_is_used_deleted_or_reset() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut alice = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    let mut dave = Client::in_memory().unwrap();
    bob.create_session("alice", &bundle_of(&mut alice)).unwrap();
    bob.create_session("carol", &bundle_of(&mut carol)).unwrap();
    bob.create_session("dave", &bundle_of(&mut dave)).unwrap();
    bob.set_identity_pinning(true);
    assert!(bob.identity_pinning());
    assert_eq!(bob.pinned_identity("alice").unwrap(), None);

    // Used: pinned at its next commit.
    bob.encrypt("alice", b"x").unwrap();
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );
    // Deleted: pinned as it goes.
    bob.delete_session("carol").unwrap();
    assert_eq!(
        bob.pinned_identity("carol").unwrap(),
        Some(carol.fingerprint())
    );
    let mut other = Client::in_memory().unwrap();
    assert_eq!(
        code_of(&bob.create_session("carol", &bundle_of(&mut other))),
        REMOTE_IDENTITY_CHANGED
    );
    // Reset: checked against its session's identity, and pinned.
    assert_eq!(
        code_of(&bob.reset_session("dave", &bundle_of(&mut other))),
        REMOTE_IDENTITY_CHANGED
    );
    assert_eq!(bob.pinned_identity("dave").unwrap(), None);
    assert!(!bob.reset_session("dave", &bundle_of(&mut dave)).unwrap());
    assert_eq!(
        bob.pinned_identity("dave").unwrap(),
        Some(dave.fingerprint())
    );
}

#[test]
fn an_imported_session_of_another_identity_is_refused() {
    let (_storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let mut other = Client::in_memory().unwrap();
    bob.create_session("alice", &bundle_of(&mut alice)).unwrap();
    bob.create_session("other", &bundle_of(&mut other)).unwrap();
    let exported = bob.export_session("other").unwrap();
    bob.delete_session("alice").unwrap();
    assert_eq!(
        code_of(&bob.import_session("alice", &exported)),
        REMOTE_IDENTITY_CHANGED
    );
    bob.delete_session("other").unwrap();
    bob.import_session("other", &exported).unwrap();
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing() {
    let (storage, mut bob) = pinned_bob();
    let fp = Client::in_memory().unwrap().fingerprint();
    let before = storage.dump();
    let long = "x".repeat(proteus_client::MAX_SESSION_ID_LEN + 1);
    assert_eq!(code_of(&bob.accept_identity("", &fp)), 106);
    assert_eq!(code_of(&bob.accept_identity(&long, &fp)), 106);
    assert_eq!(code_of(&bob.pinned_identity("")), 106);
    assert_eq!(code_of(&bob.pinned_identity(&long)), 106);
    for bad in [
        "",
        "abc",
        &fp[..63],
        &format!("{fp}0"),
        &format!("{}z", &fp[..63]),
        &format!(" {}", &fp[1..]),
        &"00".repeat(32),
    ] {
        let result = bob.accept_identity("alice", bad);
        assert_eq!(code_of(&result), 411, "{bad:?}");
        assert!(matches!(result, Err(ClientError::InvalidFingerprint(_))));
    }
    assert_eq!(storage.dump(), before);
}

#[test]
fn a_failed_commit_leaves_the_pin_as_it_was() {
    let (storage, mut bob) = pinned_bob();
    let mut alice = Client::in_memory().unwrap();
    let hello = first_message(&mut alice, &mut bob);
    storage.set_fail_commits(true);
    assert!(bob.decrypt("alice", &hello).is_err());
    assert!(
        bob.accept_identity("alice", &Client::in_memory().unwrap().fingerprint())
            .is_err()
    );
    storage.set_fail_commits(false);
    assert_eq!(bob.pinned_identity("alice").unwrap(), None);
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello");
    assert_eq!(
        bob.pinned_identity("alice").unwrap(),
        Some(alice.fingerprint())
    );
}

#[test]
fn a_damaged_pin_record_is_reported_as_corrupt() {
    let (storage, bob) = pinned_bob();
    storage.put_raw(Table::Meta, b"pinned/alice", &[2; 33]);
    storage.put_raw(Table::Meta, b"pinned/carol", &[1; 5]);
    assert_eq!(code_of(&bob.pinned_identity("alice")), 503);
    assert_eq!(code_of(&bob.pinned_identity("carol")), 503);
}

#[cfg(all(feature = "sqlite", feature = "sealed"))]
#[test]
fn pins_survive_reopening_and_hide_their_session_id_when_sealed() {
    use proteus_client::{OpenMode, SqliteOptions, StoreKey};
    let dir = tempfile::tempdir().unwrap();
    let key = StoreKey::new([7; 32]);
    let id = "alice-the-session-id";
    let mut alice = Client::in_memory().unwrap();
    for sealed in [false, true] {
        let path = dir.path().join(format!("store-{sealed}.sqlite"));
        let open = || {
            let mut c = match sealed {
                true => Client::open_sealed(
                    &path,
                    OpenMode::ExistingOrNew,
                    &SqliteOptions::default(),
                    &key,
                ),
                false => {
                    Client::open_with(&path, OpenMode::ExistingOrNew, &SqliteOptions::default())
                }
            }
            .unwrap();
            c.set_identity_pinning(true);
            c
        };
        let mut bob = open();
        bob.create_session(id, &bundle_of(&mut alice)).unwrap();
        bob.delete_session(id).unwrap();
        drop(bob);
        let mut bob = open();
        assert_eq!(bob.pinned_identity(id).unwrap(), Some(alice.fingerprint()));
        let mut other = Client::in_memory().unwrap();
        assert_eq!(
            code_of(&bob.create_session(id, &bundle_of(&mut other))),
            REMOTE_IDENTITY_CHANGED
        );
        drop(bob);
        let bytes = std::fs::read(&path).unwrap();
        let clear = bytes.windows(id.len()).any(|w| w == id.as_bytes());
        assert_eq!(clear, !sealed, "sealed {sealed}");
    }
}

#[cfg(all(feature = "sqlite", feature = "sealed"))]
#[test]
fn sealing_and_rekeying_a_store_hide_and_keep_its_pins() {
    use proteus_client::{OpenMode, SqliteOptions, StoreKey};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let id = "carol-the-session-id";
    let mut carol = Client::in_memory().unwrap();
    let mut bob = Client::open(&path).unwrap();
    bob.set_identity_pinning(true);
    bob.create_session(id, &bundle_of(&mut carol)).unwrap();
    bob.delete_session(id).unwrap();
    drop(bob);
    let (k1, k2) = (StoreKey::new([1; 32]), StoreKey::new([2; 32]));
    proteus_client::seal_store(&path, &k1).unwrap();
    proteus_client::rekey_store(&path, &k1, &k2).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(id.len()).any(|w| w == id.as_bytes()));
    let bob =
        Client::open_sealed(&path, OpenMode::Existing, &SqliteOptions::default(), &k2).unwrap();
    assert_eq!(bob.pinned_identity(id).unwrap(), Some(carol.fingerprint()));
}
