//! Opening a client and its identity: creation, reopening, the first commit, identity import
//! and export.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TestStorage, connect};
use proteus_client::{Client, ClientError, Table};
#[cfg(feature = "sqlite")]
use proteus_client::{OpenMode, SqliteOptions};
use proteus_core::{IdentityKeyPair, OsRng, PreKeyId};

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
fn an_exported_identity_imports_into_a_new_client() {
    let a = Client::in_memory().unwrap();
    let mut b = Client::in_memory().unwrap();
    b.import_identity(&a.export_identity()).unwrap();
    assert_eq!(b.fingerprint(), a.fingerprint());
}
