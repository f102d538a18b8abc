//! Prekeys of the client API: generation, ids (never reused, wrap-around, running out), bundles,
//! import, and deletion of a one-time prekey when a session is made from it.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::BTreeSet;

use common::{TestStorage, code_of, count_writes};
use proteus_client::{Client, ClientError, Table, Write};
use proteus_core::{OsRng, PreKeyBundle, PreKeyId};

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
fn an_absurd_prekey_count_is_refused_without_allocating_for_it() {
    let mut c = Client::in_memory().unwrap();
    let e = c.generate_prekeys(usize::MAX).unwrap_err();
    assert!(
        matches!(e, ClientError::PreKeyIdsExhausted { free: 65_535 }),
        "{e:?}"
    );
}

#[test]
fn topping_up_fills_the_stock_to_the_target_and_no_further() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let first = bob.top_up_prekeys(5).unwrap();
    assert_eq!(first.len(), 5);
    assert_eq!(bob.prekeys_remaining().unwrap(), 5);
    assert!(
        bob.top_up_prekeys(5).unwrap().is_empty(),
        "the stock is full"
    );
    assert!(
        bob.top_up_prekeys(3).unwrap().is_empty(),
        "above the target"
    );

    // Two are used up; the top-up makes two, with ids not handed out before.
    for (i, bundle) in first.iter().take(2).enumerate() {
        let mut sender = Client::in_memory().unwrap();
        sender.create_session("bob", &bundle.to_bytes()).unwrap();
        bob.decrypt(&format!("s{i}"), &sender.encrypt("bob", b"x").unwrap())
            .unwrap();
    }
    assert_eq!(bob.prekeys_remaining().unwrap(), 3);
    let more = bob.top_up_prekeys(5).unwrap();
    let ids: Vec<u16> = more.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(ids, [5, 6]);
    assert_eq!(bob.prekeys_remaining().unwrap(), 5);

    // Near the end of the id space it wraps around, skipping the ids still stored (2, 3, 4).
    storage.put_raw(Table::Meta, b"next_prekey_id", &65534u16.to_be_bytes());
    for bundle in &more {
        let mut sender = Client::in_memory().unwrap();
        sender.create_session("bob", &bundle.to_bytes()).unwrap();
        bob.decrypt(
            &format!("t{}", bundle.prekey_id().value()),
            &sender.encrypt("bob", b"x").unwrap(),
        )
        .unwrap();
    }
    let wrapped = bob.top_up_prekeys(5).unwrap();
    let ids: Vec<u16> = wrapped.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(ids, [65534, 0]);
    assert_eq!(
        code_of(&bob.top_up_prekeys(usize::from(u16::MAX) + 1)),
        110,
        "more one-time prekeys than there are ids"
    );
    assert_eq!(
        bob.prekeys_remaining().unwrap(),
        5,
        "and nothing was stored"
    );
}
