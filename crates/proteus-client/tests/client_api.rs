//! The client API: opening, identity, prekeys, sessions, encrypt/decrypt, fingerprints and the
//! typed errors with their codes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::BTreeSet;

use common::{TestStorage, bundle_of, code_of, connect, count_writes, encrypt_n};
use proteus_client::{Client, ClientError, MAX_SESSION_ID_LEN, SessionConfig, Table, Write};
#[cfg(feature = "sqlite")]
use proteus_client::{OpenMode, SqliteOptions};
use proteus_core::{IdentityKeyPair, OsRng, PreKeyBundle, PreKeyId};

#[cfg(feature = "sqlite")]
#[test]
fn open_creates_an_identity_that_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (fingerprint, identity, last_resort) = {
        let bob = Client::open(&path).unwrap();
        (
            bob.fingerprint(),
            *bob.identity(),
            bob.last_resort_bundle().unwrap().to_bytes(),
        )
    };
    assert!(path.exists());
    assert_eq!(fingerprint.len(), 64);
    assert!(
        fingerprint
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{fingerprint}"
    );
    assert_eq!(fingerprint, identity.fingerprint());

    for mode in [OpenMode::Existing, OpenMode::ExistingOrNew] {
        let bob = Client::open_with(&path, mode, &SqliteOptions::default()).unwrap();
        assert_eq!(bob.fingerprint(), fingerprint);
        assert_eq!(*bob.identity(), identity);
        assert_eq!(
            bob.last_resort_bundle().unwrap().to_bytes(),
            last_resort,
            "the last-resort prekey is kept"
        );
        assert_eq!(bob.prekeys_remaining().unwrap(), 0);
    }
    let bob = Client::open(&path).unwrap();
    assert_eq!(bob.fingerprint(), fingerprint);
}

#[cfg(feature = "sqlite")]
#[test]
fn open_new_creates_a_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    let fingerprint = Client::open_with(&path, OpenMode::New, &SqliteOptions::default())
        .unwrap()
        .fingerprint();
    assert_eq!(
        Client::open_with(&path, OpenMode::Existing, &SqliteOptions::default())
            .unwrap()
            .fingerprint(),
        fingerprint
    );
}

#[test]
fn in_memory_clients_have_their_own_identity_and_a_last_resort_prekey() {
    let a = Client::in_memory().unwrap();
    let b = Client::in_memory().unwrap();
    assert_ne!(a.fingerprint(), b.fingerprint());
    let lr = a.last_resort_bundle().unwrap();
    assert_eq!(lr.prekey_id(), PreKeyId::LAST_RESORT);
    assert_eq!(lr.identity_key(), a.identity());
    assert_eq!(a.prekeys_remaining().unwrap(), 0);
    assert!(a.session_ids().unwrap().is_empty());
}

#[test]
fn a_new_client_writes_identity_last_resort_and_counter_in_one_commit() {
    let storage = TestStorage::new();
    let client = storage.client();
    let log = storage.commits_since(0);
    assert_eq!(log.len(), 1, "creating a client is one commit");
    assert_eq!(storage.count(Table::Meta), 2);
    assert_eq!(storage.count(Table::PreKeys), 1);
    // A second client on the same records loads the same identity and writes nothing.
    let again = storage.client();
    assert_eq!(again.fingerprint(), client.fingerprint());
    assert_eq!(storage.commits(), 1);
}

#[test]
fn generated_prekeys_have_distinct_ids_and_are_counted() {
    let mut bob = Client::in_memory().unwrap();
    let bundles = bob.generate_prekeys(10).unwrap();
    assert_eq!(bundles.len(), 10);
    let ids: BTreeSet<u16> = bundles.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(ids.len(), 10);
    assert!(!ids.contains(&PreKeyId::LAST_RESORT.value()));
    assert_eq!(bob.prekeys_remaining().unwrap(), 10);
    for b in &bundles {
        assert_eq!(b.identity_key(), bob.identity());
        assert_eq!(
            &bob.prekey_bundle(b.prekey_id()).unwrap(),
            b,
            "the stored prekey is the published one"
        );
    }
    assert!(bob.generate_prekeys(0).unwrap().is_empty());
    assert_eq!(bob.prekeys_remaining().unwrap(), 10);
}

/// Generate, consume some, generate more: no new id collides with a stored (published) one,
/// and no published prekey is overwritten.
#[test]
fn prekey_ids_are_never_reused_while_published() {
    let mut bob = Client::in_memory().unwrap();
    let first = bob.generate_prekeys(6).unwrap();
    // Consume three of them: three senders start sessions.
    for (i, bundle) in first.iter().enumerate().filter(|(i, _)| i % 2 == 0) {
        let mut sender = Client::in_memory().unwrap();
        sender.create_session("bob", &bundle.to_bytes()).unwrap();
        let m = sender.encrypt("bob", b"hi").unwrap();
        bob.decrypt(&format!("sender{i}"), &m).unwrap();
        assert_eq!(
            code_of(&bob.prekey_bundle(bundle.prekey_id())),
            101,
            "used prekey is gone"
        );
    }
    assert_eq!(bob.prekeys_remaining().unwrap(), 3);
    let consumed: BTreeSet<u16> = first
        .iter()
        .step_by(2)
        .map(|b| b.prekey_id().value())
        .collect();
    let still: Vec<&PreKeyBundle> = first.iter().skip(1).step_by(2).collect();

    let second = bob.generate_prekeys(6).unwrap();
    let second_ids: BTreeSet<u16> = second.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(second_ids.len(), 6);
    for b in &still {
        assert!(
            !second_ids.contains(&b.prekey_id().value()),
            "id {} is still published",
            b.prekey_id()
        );
        assert_eq!(
            &bob.prekey_bundle(b.prekey_id()).unwrap(),
            *b,
            "a published prekey was overwritten"
        );
    }
    // Consumed ids are not handed out again right away either (they come round after 65,535).
    assert!(
        second_ids.is_disjoint(&consumed),
        "{second_ids:?} reuses one of {consumed:?}"
    );
    assert_eq!(bob.prekeys_remaining().unwrap(), 9);
}

/// The id counter wraps around below the last-resort id and skips ids still stored.
#[test]
fn prekey_ids_wrap_around_and_skip_stored_ones() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let first = bob.generate_prekeys(3).unwrap();
    assert_eq!(
        first
            .iter()
            .map(|b| b.prekey_id().value())
            .collect::<Vec<_>>(),
        [0, 1, 2]
    );
    // Consume id 1.
    let mut sender = Client::in_memory().unwrap();
    sender.create_session("bob", &first[1].to_bytes()).unwrap();
    bob.decrypt("sender", &sender.encrypt("bob", b"x").unwrap())
        .unwrap();
    // Move the counter close to the end of the id space (the `next_prekey_id` meta record, u16 BE).
    storage.put_raw(Table::Meta, b"next_prekey_id", &65533u16.to_be_bytes());
    let more = bob.generate_prekeys(4).unwrap();
    let ids: Vec<u16> = more.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(
        ids,
        [65533, 65534, 1, 3],
        "wraps below 65535 and skips the stored ids 0 and 2"
    );
    assert_eq!(&bob.prekey_bundle(PreKeyId::new(0)).unwrap(), &first[0]);
    assert_eq!(&bob.prekey_bundle(PreKeyId::new(2)).unwrap(), &first[2]);
    assert_eq!(
        bob.last_resort_bundle().unwrap().prekey_id(),
        PreKeyId::LAST_RESORT
    );
    assert_eq!(bob.prekeys_remaining().unwrap(), 6);
}

#[test]
fn prekey_bundle_of_an_unknown_id_is_prekey_not_found() {
    let bob = Client::in_memory().unwrap();
    let err = bob.prekey_bundle(PreKeyId::new(7)).unwrap_err();
    assert!(matches!(err, ClientError::PreKeyNotFound(7)), "{err:?}");
    assert_eq!(err.code(), 101);
}

#[cfg(feature = "sqlite")]
#[test]
fn sessions_encrypt_and_decrypt_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let mut alice = Client::open(dir.path().join("alice.db")).unwrap();
    let mut bob = Client::open(dir.path().join("bob.db")).unwrap();
    let bundle = bob.generate_prekeys(1).unwrap().remove(0);
    alice
        .create_session("bob:phone", &bundle.to_bytes())
        .unwrap();
    assert!(alice.has_session("bob:phone").unwrap());
    assert_eq!(alice.session_ids().unwrap(), ["bob:phone"]);

    for turn in 0..4 {
        for i in 0..3 {
            let text = format!("alice turn {turn} message {i}");
            let e = alice.encrypt("bob:phone", text.as_bytes()).unwrap();
            assert_eq!(bob.decrypt("alice:laptop", &e).unwrap(), text.as_bytes());
        }
        for i in 0..2 {
            let text = format!("bob turn {turn} message {i}");
            let e = bob.encrypt("alice:laptop", text.as_bytes()).unwrap();
            assert_eq!(alice.decrypt("bob:phone", &e).unwrap(), text.as_bytes());
        }
    }
    // Empty and large plaintexts.
    let e = alice.encrypt("bob:phone", b"").unwrap();
    assert_eq!(bob.decrypt("alice:laptop", &e).unwrap(), b"");
    let big = vec![0x5a_u8; 100_000];
    let e = bob.encrypt("alice:laptop", &big).unwrap();
    assert_eq!(alice.decrypt("bob:phone", &e).unwrap(), big);

    // Both reopen and carry on.
    drop(alice);
    drop(bob);
    let mut alice = Client::open(dir.path().join("alice.db")).unwrap();
    let mut bob = Client::open(dir.path().join("bob.db")).unwrap();
    let e = alice.encrypt("bob:phone", b"after restart").unwrap();
    assert_eq!(bob.decrypt("alice:laptop", &e).unwrap(), b"after restart");
    let e = bob.encrypt("alice:laptop", b"welcome back").unwrap();
    assert_eq!(alice.decrypt("bob:phone", &e).unwrap(), b"welcome back");
}

#[test]
fn fingerprints_local_and_remote() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    assert_eq!(alice.remote_fingerprint("bob").unwrap(), bob.fingerprint());
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        alice.fingerprint()
    );
    assert_eq!(alice.fingerprint(), alice.identity().fingerprint());
    assert_eq!(code_of(&alice.remote_fingerprint("carol")), 104);
    assert_eq!(code_of(&alice.remote_fingerprint("")), 106);
}

/// A PreKeyMessage that creates a session deletes its one-time prekey in the very commit that
/// stores the session.
#[test]
fn session_from_a_prekey_message_deletes_the_one_time_prekey_in_the_same_commit() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let bundles = bob.generate_prekeys(2).unwrap();
    let mut alice = Client::in_memory().unwrap();
    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let m = alice.encrypt("bob", b"first").unwrap();

    let before = storage.commits();
    assert_eq!(bob.decrypt("alice", &m).unwrap(), b"first");
    let commits = storage.commits_since(before);
    assert_eq!(commits.len(), 1, "one commit for the whole step");
    let c = &commits[0];
    assert!(
        c.iter().any(
            |w| matches!(w, Write::Put { table: Table::Sessions, key, .. } if key == b"alice")
        ),
        "{c:?}"
    );
    let prekey_key = bundles[0].prekey_id().value().to_be_bytes().to_vec();
    assert!(
        c.iter().any(
            |w| matches!(w, Write::Delete { table: Table::PreKeys, key } if *key == prekey_key)
        ),
        "{c:?}"
    );
    assert_eq!(count_writes(c).prekey_deletes, 1);
    assert_eq!(bob.prekeys_remaining().unwrap(), 1);
    assert_eq!(code_of(&bob.prekey_bundle(bundles[0].prekey_id())), 101);

    // The next PreKeyMessage of the same session (Alice has not heard back) deletes nothing.
    let before = storage.commits();
    let m2 = alice.encrypt("bob", b"second").unwrap();
    assert_eq!(bob.decrypt("alice", &m2).unwrap(), b"second");
    assert_eq!(
        count_writes(&storage.commits_since(before)[0]).prekey_deletes,
        0
    );

    // A second sender using the consumed bundle is rejected (101) and nothing is stored.
    let mut mallory = Client::in_memory().unwrap();
    mallory
        .create_session("bob", &bundles[0].to_bytes())
        .unwrap();
    let before = storage.commits();
    let r = bob.decrypt("mallory", &mallory.encrypt("bob", b"late").unwrap());
    assert_eq!(code_of(&r), 101);
    assert_eq!(storage.commits(), before);
    assert!(!bob.has_session("mallory").unwrap());
    assert_eq!(bob.prekeys_remaining().unwrap(), 1);
}

/// A peer that starts over from a second bundle under the same session id: the new state is
/// added and that prekey too is deleted in the same commit.
#[test]
fn a_second_handshake_in_an_existing_session_deletes_its_prekey() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let bundles = bob.generate_prekeys(2).unwrap();
    let mut alice = Client::in_memory().unwrap();
    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    bob.decrypt("alice", &alice.encrypt("bob", b"one").unwrap())
        .unwrap();
    alice.delete_session("bob").unwrap();
    alice.create_session("bob", &bundles[1].to_bytes()).unwrap();
    let before = storage.commits();
    assert_eq!(
        bob.decrypt("alice", &alice.encrypt("bob", b"two").unwrap())
            .unwrap(),
        b"two"
    );
    let c = storage.commits_since(before);
    assert_eq!(c.len(), 1);
    assert_eq!(count_writes(&c[0]).prekey_deletes, 1);
    assert_eq!(count_writes(&c[0]).session_puts, 1);
    assert_eq!(bob.prekeys_remaining().unwrap(), 0);
    let reply = bob.encrypt("alice", b"got both").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"got both");
}

/// The last-resort prekey makes sessions but is never deleted.
#[test]
fn the_last_resort_prekey_is_never_deleted() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let last_resort = bob.last_resort_bundle().unwrap();
    for name in ["carol", "dave"] {
        let mut sender = Client::in_memory().unwrap();
        sender
            .create_session("bob", &last_resort.to_bytes())
            .unwrap();
        let before = storage.commits();
        assert_eq!(
            bob.decrypt(name, &sender.encrypt("bob", name.as_bytes()).unwrap())
                .unwrap(),
            name.as_bytes()
        );
        let c = storage.commits_since(before);
        assert_eq!(c.len(), 1);
        assert_eq!(
            count_writes(&c[0]).prekey_deletes,
            0,
            "the last-resort prekey was deleted"
        );
        assert_eq!(bob.last_resort_bundle().unwrap(), last_resort);
        let reply = bob.encrypt(name, b"hello").unwrap();
        assert_eq!(sender.decrypt("bob", &reply).unwrap(), b"hello");
    }
    assert_eq!(bob.prekeys_remaining().unwrap(), 0);
    assert_eq!(bob.session_ids().unwrap(), ["carol", "dave"]);
}

#[test]
fn delete_session_and_session_ids() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut peers: Vec<(String, Client)> = Vec::new();
    for name in ["zoe", "alice", "mike"] {
        let mut peer = Client::in_memory().unwrap();
        connect(&mut peer, name, &mut bob, "bob");
        peers.push((name.to_owned(), peer));
    }
    assert_eq!(bob.session_ids().unwrap(), ["alice", "mike", "zoe"]);

    // Give "mike" staged keys, so deleting has something more to remove.
    let (_, mike) = peers.iter_mut().find(|(n, _)| n == "mike").unwrap();
    let msgs = encrypt_n(mike, "bob", "m", 5);
    bob.decrypt("mike", &msgs[4]).unwrap();
    assert_eq!(storage.count(Table::StagedKeys), 4);

    bob.delete_session("mike").unwrap();
    assert_eq!(bob.session_ids().unwrap(), ["alice", "zoe"]);
    assert!(!bob.has_session("mike").unwrap());
    assert_eq!(
        storage.count(Table::StagedKeys),
        0,
        "the staged keys went with the session"
    );
    assert_eq!(code_of(&bob.encrypt("mike", b"x")), 104);
    // Mike never heard back, so his messages are PreKeyMessages; their prekey is used up (101).
    assert_eq!(code_of(&bob.decrypt("mike", &msgs[0])), 101);
    assert!(!bob.has_session("mike").unwrap());
    assert_eq!(code_of(&bob.export_session("mike")), 104);
    // Deleting what is not there is fine.
    bob.delete_session("mike").unwrap();
    bob.delete_session("nobody").unwrap();

    // A new session under the same id.
    let (_, mike) = peers.iter_mut().find(|(n, _)| n == "mike").unwrap();
    mike.delete_session("bob").unwrap();
    connect(mike, "mike", &mut bob, "bob");
    assert_eq!(bob.session_ids().unwrap(), ["alice", "mike", "zoe"]);

    // The other sessions are untouched.
    for (name, peer) in &mut peers {
        let e = peer.encrypt("bob", name.as_bytes()).unwrap();
        assert_eq!(bob.decrypt(name, &e).unwrap(), name.as_bytes());
    }
    // And all of it is in storage: a fresh client on the same records agrees.
    let again = storage.client();
    assert_eq!(again.session_ids().unwrap(), ["alice", "mike", "zoe"]);
}

#[test]
fn session_ids_are_checked() {
    let mut bob = Client::in_memory().unwrap();
    let bundle = bundle_of(&mut bob);
    let mut alice = Client::in_memory().unwrap();
    let max = "x".repeat(MAX_SESSION_ID_LEN);
    let too_long = "x".repeat(MAX_SESSION_ID_LEN + 1);
    for bad in ["", too_long.as_str()] {
        assert!(matches!(
            alice.create_session(bad, &bundle),
            Err(ClientError::InvalidSessionId(_))
        ));
        assert_eq!(code_of(&alice.create_session(bad, &bundle)), 106);
        assert_eq!(code_of(&alice.encrypt(bad, b"x")), 106);
        assert_eq!(code_of(&alice.decrypt(bad, b"x")), 106);
        assert_eq!(code_of(&alice.delete_session(bad)), 106);
        assert_eq!(code_of(&alice.export_session(bad)), 106);
        assert_eq!(code_of(&alice.import_session(bad, b"x")), 106);
    }
    // Exactly MAX_SESSION_ID_LEN bytes, and non-ASCII UTF-8, are fine.
    alice.create_session(&max, &bundle).unwrap();
    let e = alice.encrypt(&max, b"long id").unwrap();
    assert_eq!(bob.decrypt("älice:📱", &e).unwrap(), b"long id");
    assert_eq!(bob.session_ids().unwrap(), ["älice:📱"]);
}

#[test]
fn session_errors_have_their_codes() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    let bundle = bundle_of(&mut bob);

    // No session.
    let err = alice.encrypt("bob", b"x").unwrap_err();
    assert!(
        matches!(&err, ClientError::SessionNotFound(id) if id == "bob"),
        "{err:?}"
    );
    assert_eq!(err.code(), 104);
    assert_eq!(code_of(&alice.export_session("bob")), 104);

    alice.create_session("bob", &bundle).unwrap();
    // Exists already.
    let err = alice.create_session("bob", &bundle).unwrap_err();
    assert!(
        matches!(&err, ClientError::SessionExists(id) if id == "bob"),
        "{err:?}"
    );
    assert_eq!(err.code(), 105);

    // A garbage bundle is a decode error (3xx) and creates nothing.
    let r = alice.create_session("other", b"\x01\x02\x03");
    assert!(matches!(r, Err(ClientError::Decode(_))), "{r:?}");
    assert!((300..400).contains(&code_of(&r)));
    assert!(!alice.has_session("other").unwrap());

    let m1 = alice.encrypt("bob", b"one").unwrap();
    let m2 = alice.encrypt("bob", b"two").unwrap();
    assert_eq!(bob.decrypt("alice", &m1).unwrap(), b"one");
    // Duplicate.
    let err = bob.decrypt("alice", &m1).unwrap_err();
    assert!(
        matches!(
            &err,
            ClientError::Decrypt(proteus_core::DecryptError::DuplicateMessage)
        ),
        "{err:?}"
    );
    assert_eq!(err.code(), 209);
    // Garbage: a decode error.
    assert_eq!(code_of(&bob.decrypt("alice", b"\xff\x00garbage")), 308);
    assert_eq!(code_of(&bob.decrypt("alice", &m2[..m2.len() / 2])), 306);
    assert_eq!(bob.decrypt("alice", &m2).unwrap(), b"two");

    // Alice hears back: her messages become CipherMessages.
    let reply = bob.encrypt("alice", b"r").unwrap();
    let m3 = alice.encrypt("bob", b"three").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"r");
    let m4 = alice.encrypt("bob", b"four").unwrap();
    let m5 = alice.encrypt("bob", b"five").unwrap();
    assert!(matches!(
        proteus_core::Envelope::from_bytes(&m4).unwrap().message(),
        proteus_core::Message::Cipher(_)
    ));

    // A CipherMessage for a session that does not exist: the client says SessionNotFound
    // (104). (Wire's JS reports InvalidMessage 201 for the same situation; see import_wire.rs.)
    let mut carol = Client::in_memory().unwrap();
    let err = carol.decrypt("alice", &m4).unwrap_err();
    assert!(
        matches!(&err, ClientError::SessionNotFound(id) if id == "alice"),
        "{err:?}"
    );

    assert_eq!(bob.decrypt("alice", &m3).unwrap(), b"three");
    assert_eq!(bob.decrypt("alice", &m4).unwrap(), b"four");
    // A tampered CipherMessage: MAC failure (206 in sync), and the session is unchanged.
    let mut tampered = m5.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 1;
    assert_eq!(code_of(&bob.decrypt("alice", &tampered)), 206);
    assert_eq!(bob.decrypt("alice", &m5).unwrap(), b"five");

    // A PreKeyMessage from another identity under an existing session id: 204.
    let mut impostor = Client::in_memory().unwrap();
    impostor
        .create_session("bob", &bundle_of(&mut bob))
        .unwrap();
    let fake = impostor.encrypt("bob", b"it's me, alice").unwrap();
    assert_eq!(code_of(&bob.decrypt("alice", &fake)), 204);
    assert_eq!(
        bob.prekeys_remaining().unwrap(),
        1,
        "a rejected PreKeyMessage consumes no prekey"
    );
    let m6 = alice.encrypt("bob", b"six").unwrap();
    assert_eq!(bob.decrypt("alice", &m6).unwrap(), b"six");
}

#[test]
fn import_identity_is_refused_while_sessions_exist() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let other = IdentityKeyPair::generate(&mut OsRng);
    let err = bob.import_identity(&other.to_bytes()).unwrap_err();
    assert!(matches!(err, ClientError::IdentityInUse(1)), "{err:?}");
    assert_eq!(err.code(), 107);
    assert_ne!(bob.fingerprint(), other.fingerprint());
    // After deleting the session it is allowed.
    bob.delete_session("alice").unwrap();
    bob.import_identity(&other.to_bytes()).unwrap();
    assert_eq!(bob.fingerprint(), other.fingerprint());
    assert_eq!(
        bob.last_resort_bundle().unwrap().identity_key(),
        other.public_key()
    );
}

#[cfg(feature = "sqlite")]
#[test]
fn import_identity_persists_and_garbage_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.db");
    let imported = IdentityKeyPair::generate(&mut OsRng);
    {
        let mut c = Client::open(&path).unwrap();
        let before = c.fingerprint();
        let r = c.import_identity(b"not an identity");
        assert!(matches!(r, Err(ClientError::Decode(_))), "{r:?}");
        assert_eq!(c.fingerprint(), before);
        c.import_identity(&imported.to_bytes()).unwrap();
        assert_eq!(c.fingerprint(), imported.fingerprint());
    }
    let c = Client::open(&path).unwrap();
    assert_eq!(c.fingerprint(), imported.fingerprint());
}

#[test]
fn import_prekey_stores_and_replaces() {
    let mut bob = Client::in_memory().unwrap();
    let prekey = proteus_core::PreKey::generate(PreKeyId::new(42), &mut OsRng);
    assert_eq!(
        bob.import_prekey(&prekey.to_bytes()).unwrap(),
        PreKeyId::new(42)
    );
    assert_eq!(bob.prekeys_remaining().unwrap(), 1);
    assert_eq!(
        bob.prekey_bundle(PreKeyId::new(42)).unwrap().public_key(),
        prekey.public_key()
    );
    // Same id again replaces it.
    let replacement = proteus_core::PreKey::generate(PreKeyId::new(42), &mut OsRng);
    bob.import_prekey(&replacement.to_bytes()).unwrap();
    assert_eq!(bob.prekeys_remaining().unwrap(), 1);
    assert_eq!(
        bob.prekey_bundle(PreKeyId::new(42)).unwrap().public_key(),
        replacement.public_key()
    );
    assert!(matches!(
        bob.import_prekey(b"\x00"),
        Err(ClientError::Decode(_))
    ));
    // generate_prekeys does not hand out 42 while it is stored.
    let ids: BTreeSet<u16> = bob
        .generate_prekeys(100)
        .unwrap()
        .iter()
        .map(|b| b.prekey_id().value())
        .collect();
    assert!(!ids.contains(&42));
    // A session from the imported prekey works.
    let mut alice = Client::in_memory().unwrap();
    alice
        .create_session(
            "bob",
            &bob.prekey_bundle(PreKeyId::new(42)).unwrap().to_bytes(),
        )
        .unwrap();
    assert_eq!(
        bob.decrypt("alice", &alice.encrypt("bob", b"via 42").unwrap())
            .unwrap(),
        b"via 42"
    );
    assert_eq!(code_of(&bob.prekey_bundle(PreKeyId::new(42))), 101);
}

/// A session exported by one client loads into another client with the same identity,
/// staged keys included.
#[test]
fn export_and_import_session_between_clients_of_one_identity() {
    let identity = IdentityKeyPair::generate(&mut OsRng);
    let mut bob = Client::in_memory().unwrap();
    bob.import_identity(&identity.to_bytes()).unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let msgs = encrypt_n(&mut alice, "bob", "m", 6);
    assert_eq!(bob.decrypt("alice", &msgs[5]).unwrap(), b"m 5"); // stages 0..=4
    let exported = bob.export_session("alice").unwrap();

    let mut bob2 = Client::in_memory().unwrap();
    // The wrong identity: refused (the session belongs to another local identity).
    let r = bob2.import_session("alice", &exported);
    assert_eq!(code_of(&r), 300);
    assert!(!bob2.has_session("alice").unwrap());
    bob2.import_identity(&identity.to_bytes()).unwrap();
    bob2.import_session("alice", &exported).unwrap();
    assert_eq!(code_of(&bob2.import_session("alice", &exported)), 105);
    assert_eq!(
        bob2.remote_fingerprint("alice").unwrap(),
        alice.fingerprint()
    );
    assert!(matches!(
        bob2.import_session("x", b"junk"),
        Err(ClientError::Decode(_))
    ));
    for i in [0, 2, 4, 1, 3] {
        assert_eq!(
            bob2.decrypt("alice", &msgs[i]).unwrap(),
            format!("m {i}").as_bytes()
        );
    }
    assert_eq!(code_of(&bob2.decrypt("alice", &msgs[5])), 209);
    let reply = bob2.encrypt("alice", b"from the copy").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"from the copy");
}

#[test]
fn max_counter_gap_is_configurable() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let msgs = encrypt_n(&mut alice, "bob", "m", 2204);
    // A gap of 1101 is fast-forwarded; only the newest 1000 skipped keys are kept by default.
    assert_eq!(bob.decrypt("alice", &msgs[1101]).unwrap(), b"m 1101");
    assert_eq!(code_of(&bob.decrypt("alice", &msgs[0])), 214);
    assert_eq!(bob.decrypt("alice", &msgs[101]).unwrap(), b"m 101");
    // Raised, the limit keeps more of them.
    bob.set_session_config(SessionConfig::default().with_max_counter_gap(2000));
    assert_eq!(bob.decrypt("alice", &msgs[2203]).unwrap(), b"m 2203");
    assert_eq!(bob.decrypt("alice", &msgs[1102]).unwrap(), b"m 1102");
    assert_eq!(bob.decrypt("alice", &msgs[204]).unwrap(), b"m 204");
}

/// The session settings are the client's: set before any session exists, they apply to a
/// session made by an incoming message and to one loaded from the store later.
#[test]
fn session_config_applies_to_sessions_that_enter_later() {
    let config = SessionConfig::default().with_max_counter_gap(2000);
    let storage = TestStorage::new();
    let mut bob = storage.client();
    bob.set_session_config(config);
    assert_eq!(bob.session_config(), config);
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let msgs = encrypt_n(&mut alice, "bob", "m", 1502);
    assert_eq!(bob.decrypt("alice", &msgs[1501]).unwrap(), b"m 1501");
    // 1500 keys were skipped: the 2000 allowed keep the first one.
    assert_eq!(bob.decrypt("alice", &msgs[1]).unwrap(), b"m 1");
    drop(bob);
    let mut reopened = storage.client();
    reopened.set_session_config(config);
    assert_eq!(reopened.decrypt("alice", &msgs[2]).unwrap(), b"m 2");
}

/// When (almost) all 65,535 one-time ids are stored, generation takes exactly the free ones,
/// and asking for more than are free fails without storing anything.
#[test]
fn prekey_generation_with_few_free_ids() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    for id in 0..PreKeyId::LAST_RESORT.value() {
        if id != 100 && id != 40_000 {
            storage.put_raw(Table::PreKeys, &id.to_be_bytes(), b"placeholder");
        }
    }
    let before = storage.dump();
    assert!(bob.generate_prekeys(3).is_err(), "only two ids are free");
    assert_eq!(storage.dump(), before);
    let ids: Vec<u16> = bob
        .generate_prekeys(2)
        .unwrap()
        .iter()
        .map(|b| b.prekey_id().value())
        .collect();
    assert_eq!(ids, [100, 40_000]);
    assert_eq!(
        bob.prekeys_remaining().unwrap(),
        usize::from(PreKeyId::LAST_RESORT.value())
    );
    assert!(bob.generate_prekeys(1).is_err());
}

/// An encrypt that fails (plaintext too long, 410) changes nothing: the next envelope has the
/// next counter.
#[test]
fn a_rejected_encrypt_changes_nothing() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let a = alice.encrypt("bob", b"a").unwrap();
    let too_long = vec![0u8; proteus_core::limits::MAX_PLAINTEXT_LEN + 1];
    assert_eq!(code_of(&alice.encrypt("bob", &too_long)), 410);
    let b = alice.encrypt("bob", b"b").unwrap();
    assert_eq!(common::counter_of(&b), common::counter_of(&a) + 1);
    assert_eq!(bob.decrypt("alice", &b).unwrap(), b"b");
    assert_eq!(bob.decrypt("alice", &a).unwrap(), b"a");
}

#[test]
fn running_out_of_prekey_ids_is_a_typed_error_and_stores_nothing() {
    let mut c = Client::in_memory().unwrap();
    c.generate_prekeys(65_530).unwrap();
    let e = c.generate_prekeys(10).unwrap_err();
    assert!(
        matches!(e, ClientError::PreKeyIdsExhausted { free: 5 }),
        "{e:?}"
    );
    assert_eq!(e.code(), 110);
    assert_eq!(c.prekeys_remaining().unwrap(), 65_530);
    assert_eq!(c.generate_prekeys(5).unwrap().len(), 5);
}

#[test]
fn an_exported_identity_imports_into_a_new_client() {
    let a = Client::in_memory().unwrap();
    let mut b = Client::in_memory().unwrap();
    b.import_identity(&a.export_identity()).unwrap();
    assert_eq!(b.fingerprint(), a.fingerprint());
}

#[test]
fn an_absurd_prekey_count_is_refused_without_allocating_for_it() {
    let mut c = Client::in_memory().unwrap();
    let e = c.generate_prekeys(usize::MAX).unwrap_err();
    assert!(
        matches!(e, ClientError::PreKeyIdsExhausted { free: 65_535 }),
        "{e:?}"
    );
}
