//! `Client::sign`: the identity key signs an application's challenge, and the identity (public)
//! verifies it, across a restart of the store.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proteus_client::Client;

#[test]
fn a_client_signs_with_its_identity_key() {
    let alice = Client::in_memory().unwrap();
    let bob = Client::in_memory().unwrap();
    let challenge = b"example-auth-v1\nnonce 42";
    let signature = alice.sign(challenge);
    assert!(alice.identity().verify(challenge, &signature));
    assert!(!bob.identity().verify(challenge, &signature));
    assert!(
        !alice
            .identity()
            .verify(b"example-auth-v1\nnonce 43", &signature)
    );
}

#[cfg(feature = "sqlite")]
#[test]
fn the_signing_key_survives_reopening_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alice.db");
    let (identity, signature) = {
        let alice = Client::open(&path).unwrap();
        (*alice.identity(), alice.sign(b"ctx\nmessage"))
    };
    let alice = Client::open(&path).unwrap();
    assert_eq!(alice.sign(b"ctx\nmessage"), signature);
    assert!(identity.verify(b"ctx\nmessage", &signature));
}
