//! Sessions of the client API: encrypt/decrypt, fingerprints, session ids, deletion, export and
//! import, session config, and the typed errors with their codes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TestStorage, bundle_of, code_of, connect, encrypt_n};
use proteus_client::{Client, ClientError, MAX_SESSION_ID_LEN, SessionConfig, Table};
use proteus_core::{IdentityKeyPair, OsRng};

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
fn a_reset_session_starts_over_and_says_whether_the_identity_changed() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let old = encrypt_n(&mut bob, "alice", "old", 2);

    // The same Bob, a fresh bundle: his identity is the same.
    assert!(!alice.reset_session("bob", &bundle_of(&mut bob)).unwrap());
    let hello = alice.encrypt("bob", b"new session").unwrap();
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"new session");
    let reply = bob.encrypt("alice", b"reply").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"reply");
    // Bob's messages on the old session fail with a stable code, never silently.
    assert_eq!(code_of(&alice.decrypt("bob", &old[0])), 205);

    // Someone else behind the id now: the identity changed, and the session is theirs.
    let mut mallory = Client::in_memory().unwrap();
    assert!(
        alice
            .reset_session("bob", &bundle_of(&mut mallory))
            .unwrap()
    );
    assert_eq!(
        alice.remote_fingerprint("bob").unwrap(),
        mallory.fingerprint()
    );
}

#[test]
fn a_reset_leaves_no_staged_key_of_the_old_session() {
    let storage = TestStorage::new();
    let mut alice = storage.client();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    // Out of order: the two skipped messages' keys are staged.
    let sent = encrypt_n(&mut bob, "alice", "m", 3);
    alice.decrypt("bob", &sent[2]).unwrap();
    assert!(storage.count(Table::StagedKeys) > 0);
    alice.reset_session("bob", &bundle_of(&mut bob)).unwrap();
    assert_eq!(storage.count(Table::StagedKeys), 0);
    assert_eq!(code_of(&alice.decrypt("bob", &sent[0])), 205);
}

#[test]
fn a_reset_that_cannot_be_done_changes_nothing() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    assert_eq!(
        code_of(&alice.reset_session("bob", &bundle_of(&mut bob))),
        104
    );
    connect(&mut alice, "alice", &mut bob, "bob");
    assert_eq!(code_of(&alice.reset_session("bob", b"not a bundle")), 301);
    // The old session still works.
    let m = bob.encrypt("alice", b"still here").unwrap();
    assert_eq!(alice.decrypt("bob", &m).unwrap(), b"still here");
}
