//! Encryption at rest of the SQLite store: sealed records, wrong keys, swapped records,
//! rotation and migration.
#![cfg(all(feature = "sqlite", feature = "sealed"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::connect;
use proteus_client::{
    Client, ClientError, OpenMode, SqliteOptions, SqliteStorage, Storage, StoreError, StoreKey,
    Table, rekey_store, seal_store,
};

fn key(b: u8) -> StoreKey {
    StoreKey::new([b; 32])
}

fn open_sealed(path: &std::path::Path, k: &StoreKey) -> Result<Client, ClientError> {
    Client::open_sealed(path, OpenMode::ExistingOrNew, &SqliteOptions::default(), k)
}

fn store_error<T>(r: Result<T, ClientError>) -> StoreError {
    match r {
        Err(ClientError::Store(e)) => e,
        Err(other) => panic!("expected a store error, got {other:?}"),
        Ok(_) => panic!("expected a store error"),
    }
}

/// Bob's sealed store with a session to Alice; returns the message Alice sends next.
fn sealed_bob(path: &std::path::Path, k: &StoreKey) -> (Client, Vec<u8>) {
    let mut bob = open_sealed(path, k).unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let next = alice.encrypt("bob", b"sealed hello").unwrap();
    (alice, next)
}

#[test]
fn no_record_is_stored_in_the_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, _) = sealed_bob(&path, &key(1));
    let bob = open_sealed(&path, &key(1)).unwrap();
    let identity = bob.export_identity();
    drop(bob);
    // Read the raw records: none contains the identity record or its secret key.
    let raw = SqliteStorage::open(&path, OpenMode::Existing, &SqliteOptions::default()).unwrap();
    for table in Table::ALL {
        for (_, value) in raw.scan(table, &[]).unwrap() {
            assert!(
                !value
                    .windows(32)
                    .any(|w| identity.windows(32).any(|s| s == w)),
                "{table:?} holds plaintext"
            );
        }
    }
    assert!(!raw.scan(Table::Sessions, &[]).unwrap().is_empty());
}

#[test]
fn the_right_key_reopens_and_decrypts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, next) = sealed_bob(&path, &key(1));
    let mut bob = open_sealed(&path, &key(1)).unwrap();
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"sealed hello");
}

#[test]
fn a_wrong_key_is_a_clear_error_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, next) = sealed_bob(&path, &key(1));
    let before = std::fs::read(&path).unwrap();
    let e = store_error(open_sealed(&path, &key(2)));
    assert!(matches!(e, StoreError::WrongKey), "{e:?}");
    assert_eq!(e.code(), 508);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // Opening a sealed store without its key says so.
    let plain = Client::open_with(&path, OpenMode::Existing, &SqliteOptions::default());
    let e = store_error(plain);
    assert!(matches!(e, StoreError::KeyRequired), "{e:?}");
    assert_eq!(e.code(), 510);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    let mut bob = open_sealed(&path, &key(1)).unwrap();
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"sealed hello");
}

#[test]
fn swapped_records_do_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, _) = sealed_bob(&path, &key(1));
    let mut bob = open_sealed(&path, &key(1)).unwrap();
    let mut carol = Client::in_memory().unwrap();
    connect(&mut carol, "carol", &mut bob, "bob");
    drop(bob);
    {
        // Swap the two session records, as an attacker with the file could (the stored keys
        // are keyed hashes of the session ids).
        let mut raw =
            SqliteStorage::open(&path, OpenMode::Existing, &SqliteOptions::default()).unwrap();
        let rows = raw.scan(Table::Sessions, &[]).unwrap();
        assert_eq!(rows.len(), 2);
        raw.commit(&[
            proteus_client::Write::Put {
                table: Table::Sessions,
                key: rows[0].0.clone(),
                value: rows[1].1.clone(),
            },
            proteus_client::Write::Put {
                table: Table::Sessions,
                key: rows[1].0.clone(),
                value: rows[0].1.clone(),
            },
        ])
        .unwrap();
    }
    // Each record is bound to its key and to the commit that wrote it: the swapped pair is
    // refused when the store is opened (the two were written by different commits) or, at
    // the latest, when a session is read.
    match open_sealed(&path, &key(1)) {
        Err(e) => assert_eq!(e.code(), 514, "{e:?}"),
        Ok(mut bob) => {
            for id in ["alice", "carol"] {
                let e = store_error(bob.remote_fingerprint(id));
                assert!(matches!(e, StoreError::Tampered { .. }), "{e:?}");
            }
        }
    }
}

#[test]
fn session_ids_are_not_stored_in_the_clear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (mut alice, _) = sealed_bob(&path, &key(1));
    let mut bob = open_sealed(&path, &key(1)).unwrap();
    // Staged keys too: their keys start with the session id.
    let skipped: Vec<Vec<u8>> = (0..3)
        .map(|_| alice.encrypt("bob", b"s").unwrap())
        .collect();
    bob.decrypt("alice", &skipped[2]).unwrap();
    assert_eq!(bob.session_ids().unwrap(), ["alice"]);
    drop(bob);
    let raw = SqliteStorage::open(&path, OpenMode::Existing, &SqliteOptions::default()).unwrap();
    let mut keys = 0;
    for table in [Table::Sessions, Table::StagedKeys] {
        for (k, _) in raw.scan(table, &[]).unwrap() {
            assert!(!k.windows(5).any(|w| w == b"alice"), "{table:?} key {k:?}");
            keys += 1;
        }
    }
    assert!(keys >= 3, "{keys}");
    drop(raw);
    assert!(
        !std::fs::read(&path)
            .unwrap()
            .windows(5)
            .any(|w| w == b"alice")
    );
    let mut bob = open_sealed(&path, &key(1)).unwrap();
    assert_eq!(bob.decrypt("alice", &skipped[0]).unwrap(), b"s");
}

#[test]
fn the_key_can_be_rotated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, next) = sealed_bob(&path, &key(1));
    rekey_store(&path, &key(1), &key(3)).unwrap();
    assert!(matches!(
        store_error(open_sealed(&path, &key(1))),
        StoreError::WrongKey
    ));
    let mut bob = open_sealed(&path, &key(3)).unwrap();
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"sealed hello");
    drop(bob);
    // A wrong old key rotates nothing.
    assert!(matches!(
        rekey_store(&path, &key(9), &key(4)),
        Err(StoreError::WrongKey)
    ));
    assert!(open_sealed(&path, &key(3)).is_ok());
}

#[test]
fn an_unencrypted_store_can_be_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let mut bob = Client::open(&path).unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let fingerprint = bob.fingerprint();
    drop(bob);
    let next = alice.encrypt("bob", b"after sealing").unwrap();
    // A key on an unsealed store is refused, and changes nothing.
    assert!(matches!(
        store_error(open_sealed(&path, &key(5))),
        StoreError::NotSealed
    ));
    seal_store(&path, &key(5)).unwrap();
    let mut bob = open_sealed(&path, &key(5)).unwrap();
    assert_eq!(bob.fingerprint(), fingerprint);
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"after sealing");
}
