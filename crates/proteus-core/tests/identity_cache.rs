//! The identity cache of `Session::decrypt_with_cache` / `init_from_message_with_cache`: a
//! sender's checked identity is reused for its next session, results are the same as without
//! it, and only senders whose message decrypted are kept.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeMap;

use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};
use proteus_core::{
    CheckedIdentity, DecryptError, Envelope, IdentityCache, IdentityKey, IdentityKeyPair, OsRng,
    PreKey, PreKeyBundle, PreKeyId, PublicKey, Session,
};

/// A cache that keeps everything, in order.
#[derive(Default)]
struct Recording {
    kept: Vec<CheckedIdentity>,
}

impl IdentityCache for Recording {
    fn get(&self, key: &IdentityKey) -> Option<&CheckedIdentity> {
        self.kept.iter().find(|c| c.key() == key)
    }

    fn keep(&mut self, checked: CheckedIdentity) {
        self.kept.push(checked);
    }
}

fn first_message(alice: &IdentityKeyPair, bob: &IdentityKeyPair, prekey: &PreKey) -> Vec<u8> {
    let bundle = PreKeyBundle::new(bob.public_key(), prekey);
    let mut session = Session::init_from_prekey(&mut OsRng, alice, &bundle).unwrap();
    session.encrypt(b"hello").unwrap().to_bytes()
}

#[test]
fn a_second_session_from_the_same_identity_reuses_its_check() {
    let (alice, bob) = (
        IdentityKeyPair::generate(&mut OsRng),
        IdentityKeyPair::generate(&mut OsRng),
    );
    let prekeys: Vec<PreKey> = (1..=2)
        .map(|id| PreKey::generate(PreKeyId::new(id), &mut OsRng))
        .collect();
    let mut store: BTreeMap<PreKeyId, PreKey> =
        prekeys.iter().map(|p| (p.id(), p.clone())).collect();
    let mut cache = Recording::default();

    // A new session: checked, and kept once it decrypted.
    let first = first_message(&alice, &bob, &prekeys[0]);
    let envelope = Envelope::from_bytes(&first).unwrap();
    let inbound =
        Session::init_from_message_with_cache(&mut OsRng, &bob, &mut store, &mut cache, &envelope)
            .unwrap();
    assert_eq!(inbound.plaintext, b"hello");
    assert_eq!(cache.kept.len(), 1);
    assert_eq!(cache.kept[0].key(), alice.public_key());

    // Alice starts another session (a reset): a new state in Bob's session, from the kept check.
    let mut session = inbound.session;
    let second = first_message(&alice, &bob, &prekeys[1]);
    let envelope = Envelope::from_bytes(&second).unwrap();
    let plaintext = session
        .decrypt_with_cache(&mut OsRng, &bob, &mut store, &mut cache, &envelope)
        .unwrap();
    assert_eq!(plaintext, b"hello");
    assert_eq!(session.state_count(), 2);
    assert_eq!(cache.kept.len(), 1, "nothing new to keep");
    assert!(store.is_empty(), "both one-time prekeys were used");
}

#[test]
fn a_message_that_does_not_decrypt_keeps_nothing() {
    let (alice, bob) = (
        IdentityKeyPair::generate(&mut OsRng),
        IdentityKeyPair::generate(&mut OsRng),
    );
    let prekey = PreKey::generate(PreKeyId::new(1), &mut OsRng);
    let mut store = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let bytes = first_message(&alice, &bob, &prekey);
    let envelope = Envelope::from_bytes(&bytes).unwrap();
    let mut mac = *envelope.mac();
    mac[0] ^= 1;
    let forged = Envelope::from_message(envelope.message().clone(), mac).to_bytes();
    let mut cache = Recording::default();
    let result = Session::init_from_message_with_cache(
        &mut OsRng,
        &bob,
        &mut store,
        &mut cache,
        &Envelope::from_bytes(&forged).unwrap(),
    );
    assert!(matches!(result, Err(DecryptError::InvalidSignature(_))));
    assert!(cache.kept.is_empty());
    assert_eq!(store.len(), 1, "the prekey is still there");
}

#[test]
fn a_degenerate_identity_fails_as_without_the_cache_and_is_not_kept() {
    let bob = IdentityKeyPair::generate(&mut OsRng);
    let alice = IdentityKeyPair::generate(&mut OsRng);
    let prekey = PreKey::generate(PreKeyId::new(1), &mut OsRng);
    let genuine = first_message(&alice, &bob, &prekey);
    let envelope = Envelope::from_bytes(&genuine).unwrap();
    let proteus_core::Message::PreKey(mut pkm) = envelope.message().clone() else {
        panic!("a first message is a PreKeyMessage");
    };
    // The same message claiming a mixed-order identity (a prime-order point plus one of order 2).
    let mixed = ED25519_BASEPOINT_POINT + EIGHT_TORSION[4];
    pkm.identity_key = IdentityKey::new(PublicKey::from_bytes(mixed.compress().to_bytes()));
    let hostile = Envelope::from_message(proteus_core::Message::PreKey(pkm), *envelope.mac());
    let hostile = hostile.to_bytes();
    let hostile = Envelope::from_bytes(&hostile).unwrap();

    let mut store = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let without = Session::init_from_message(&mut OsRng, &bob, &mut store, &hostile).err();
    let mut cache = Recording::default();
    let with =
        Session::init_from_message_with_cache(&mut OsRng, &bob, &mut store, &mut cache, &hostile)
            .err();
    assert!(without.is_some());
    assert_eq!(
        without.map(|e| e.code()),
        with.map(|e| e.code()),
        "the same error with and without the cache"
    );
    assert!(cache.kept.is_empty());
    assert_eq!(store.len(), 1);
}
