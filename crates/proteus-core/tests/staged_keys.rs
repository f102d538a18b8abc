//! Staged keys kept apart from their session record round-trip exactly.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use proteus_core::staged::StagedKeyId;
use proteus_core::{Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session};

#[test]
fn a_session_split_from_its_staged_keys_loads_back_identically() {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(3), rng);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let mut a =
        Session::init_from_prekey(rng, &alice, &PreKeyBundle::new(bob.public_key(), &prekey))
            .unwrap();
    let sent: Vec<Envelope> = (0..40)
        .map(|i| a.encrypt(format!("m{i}").as_bytes()).unwrap())
        .collect();
    // Bob receives the last one first: 39 keys are staged.
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &sent[39])
        .unwrap()
        .session;
    assert_eq!(b.staged_keys().count(), 39);

    let core = b.to_bytes_without_staged_keys();
    assert!(
        core.len() < b.to_bytes().len() / 4,
        "the record without staged keys is small"
    );
    let rows: Vec<(StagedKeyId, Vec<u8>)> = b
        .staged_keys()
        .map(|(id, k)| (id, k.to_bytes().to_vec()))
        .collect();
    for (id, _) in &rows {
        assert_eq!(StagedKeyId::from_bytes(&id.to_bytes()).unwrap(), *id);
    }
    // Rows may come back in any order.
    let mut shuffled = rows.clone();
    shuffled.reverse();
    let restored = Session::from_bytes_with_staged_keys(
        bob.public_key(),
        &core,
        shuffled.iter().map(|(id, k)| (*id, k.as_slice())),
    )
    .unwrap();
    assert_eq!(restored.to_bytes(), b.to_bytes());

    // And the restored session decrypts a late message with a staged key.
    let mut restored = restored;
    assert_eq!(
        restored.decrypt(rng, &bob, &mut prekeys, &sent[5]).unwrap(),
        b"m5"
    );
    assert_eq!(restored.staged_keys().count(), 38);
    b.decrypt(rng, &bob, &mut prekeys, &sent[5]).unwrap();
    assert_eq!(restored.to_bytes(), b.to_bytes());
}
