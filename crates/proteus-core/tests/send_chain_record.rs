//! The sending chain kept apart from its session record: what encryptions change, and only that.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use proteus_core::{
    DecodeError, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, SendChainRecord, Session,
};

struct Pair {
    alice: IdentityKeyPair,
    bob: IdentityKeyPair,
    a: Session,
    b: Session,
}

/// Alice and Bob with a session each; Bob has replied once and Alice has sent since, so her
/// next encryptions are on the chain of her latest ratchet key.
fn pair() -> Pair {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(7), rng);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let mut a =
        Session::init_from_prekey(rng, &alice, &PreKeyBundle::new(bob.public_key(), &prekey))
            .unwrap();
    let hello = a.encrypt(b"hello").unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &hello)
        .unwrap()
        .session;
    let reply = b.encrypt(b"reply").unwrap();
    a.decrypt(rng, &alice, &mut prekeys, &reply).unwrap();
    // The reply's ratchet step is completed by Alice's next message (on a new chain).
    a.encrypt(b"first on the new chain").unwrap();
    Pair { alice, bob, a, b }
}

#[test]
fn a_stored_session_plus_its_send_chain_record_is_the_session_after_encrypting() {
    let Pair {
        alice,
        bob,
        mut a,
        mut b,
    } = pair();
    let stored = a.to_bytes_without_staged_keys();
    let anchor = a.send_chain_record().unwrap();
    for i in 0..5 {
        a.encrypt(format!("m{i}").as_bytes()).unwrap();
    }
    let record = a.send_chain_record().unwrap();
    assert!(record.same_chain(&anchor));
    assert_eq!(record.index(), anchor.index() + 5);
    let bytes = record.to_bytes();
    assert_eq!(bytes.len(), SendChainRecord::LEN);

    let mut loaded = Session::from_bytes(alice.public_key(), &stored).unwrap();
    loaded
        .apply_send_chain_record(&SendChainRecord::from_bytes(&bytes).unwrap())
        .unwrap();
    assert_eq!(
        *loaded.to_bytes_without_staged_keys(),
        *a.to_bytes_without_staged_keys()
    );
    // The loaded session goes on where the other stopped: Bob reads its next message.
    let next = loaded.encrypt(b"after loading").unwrap();
    let plaintext = b
        .decrypt(&mut OsRng, &bob, &mut BTreeMap::new(), &next)
        .unwrap();
    assert_eq!(plaintext, b"after loading");
}

#[test]
fn a_record_behind_the_session_or_of_another_chain_is_refused_and_changes_nothing() {
    let Pair {
        alice,
        bob,
        mut a,
        mut b,
    } = pair();
    let old = a.send_chain_record().unwrap();
    let one = a.encrypt(b"one").unwrap();
    let before = a.to_bytes_without_staged_keys();
    assert!(matches!(
        a.apply_send_chain_record(&old),
        Err(DecodeError::InvalidKey(_))
    ));
    assert_eq!(*a.to_bytes_without_staged_keys(), *before);

    // Bob reads it and replies: Alice's next message starts a chain with a new ratchet key (until
    // then she has no chain ready).
    b.decrypt(&mut OsRng, &bob, &mut BTreeMap::new(), &one)
        .unwrap();
    let reply = b.encrypt(b"reply").unwrap();
    a.decrypt(&mut OsRng, &alice, &mut BTreeMap::new(), &reply)
        .unwrap();
    assert!(
        a.send_chain_record().is_none(),
        "the sending half is pending"
    );
    assert!(a.apply_send_chain_record(&old).is_err());
    a.encrypt(b"two").unwrap();
    let new = a.send_chain_record().unwrap();
    assert!(!new.same_chain(&old));
    let before = a.to_bytes_without_staged_keys();
    // Even far ahead, a record of the old chain does not apply to the new one.
    let mut ahead = old.to_bytes().to_vec();
    ahead[48..52].copy_from_slice(&1000u32.to_be_bytes());
    let ahead = SendChainRecord::from_bytes(&ahead).unwrap();
    assert_eq!(ahead.index(), 1000);
    assert!(matches!(
        a.apply_send_chain_record(&ahead),
        Err(DecodeError::InvalidKey(_))
    ));
    assert_eq!(*a.to_bytes_without_staged_keys(), *before);
}

#[test]
fn malformed_records_are_refused() {
    let record = pair().a.send_chain_record().unwrap().to_bytes();
    for len in [0, SendChainRecord::LEN - 1, SendChainRecord::LEN + 1] {
        let mut bytes = record.to_vec();
        bytes.resize(len, 0);
        assert!(matches!(
            SendChainRecord::from_bytes(&bytes),
            Err(DecodeError::InvalidLength { .. })
        ));
    }
}
