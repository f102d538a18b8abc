//! Opening a store never wipes, rewrites or recreates anything: what cannot be opened is
//! reported with a typed error (Corrupt 503, NotFound 504, AlreadyExists 505,
//! UnsupportedSchema 506) and the file is left byte for byte as it was.

#![cfg(feature = "sqlite")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proteus_client::{Client, ClientError, OpenMode, SqliteOptions, SqliteStorage, StoreError};

/// Every file of the folder with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
        .collect()
}

fn open(path: &Path, mode: OpenMode) -> Result<Client, ClientError> {
    Client::open_with(path, mode, &SqliteOptions::default())
}

fn store_error(r: Result<Client, ClientError>) -> StoreError {
    match r {
        Err(ClientError::Store(e)) => e,
        other => panic!("expected a store error, got {other:?}"),
    }
}

/// Opening `path` in every mode that may open an existing file fails with Corrupt, and the
/// folder (the file and any side files) is exactly as before.
fn assert_corrupt_and_untouched(path: &Path) {
    let dir = path.parent().unwrap();
    let before = snapshot(dir);
    for mode in [OpenMode::Existing, OpenMode::ExistingOrNew] {
        let e = store_error(open(path, mode));
        assert!(matches!(e, StoreError::Corrupt(_)), "{mode:?}: {e:?}");
        assert_eq!(e.code(), 503);
        let e = SqliteStorage::open(path, mode, &SqliteOptions::default()).unwrap_err();
        assert!(matches!(e, StoreError::Corrupt(_)), "{mode:?}: {e:?}");
        let after = snapshot(dir);
        assert_eq!(
            after.keys().collect::<Vec<_>>(),
            before.keys().collect::<Vec<_>>(),
            "files were added or removed"
        );
        for (p, bytes) in &before {
            assert!(
                after[p] == *bytes,
                "{} was modified by a failed open ({mode:?})",
                p.display()
            );
        }
    }
    let e = store_error(Client::open(path));
    assert_eq!(e.code(), 503);
}

#[test]
fn a_garbage_file_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.db");
    let mut state = 0x1234_5678_9abc_def0_u64;
    let bytes: Vec<u8> = (0..8192)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state.to_le_bytes()[0]
        })
        .collect();
    std::fs::write(&path, &bytes).unwrap();
    assert_corrupt_and_untouched(&path);
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[test]
fn a_small_text_file_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, b"my important notes, not a database\n").unwrap();
    assert_corrupt_and_untouched(&path);
}

#[test]
fn a_store_with_a_damaged_header_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(Client::open(&path).unwrap());
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..16].copy_from_slice(b"not SQLite here!");
    std::fs::write(&path, &bytes).unwrap();
    assert_corrupt_and_untouched(&path);
}

/// An empty file is not a store (it was never initialised) and is not turned into one: the
/// file is checked before the journal is switched to WAL, which would write a header page.
#[test]
fn an_empty_file_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    assert_corrupt_and_untouched(&path);
}

#[test]
fn a_missing_store_with_existing_mode_is_not_found_and_not_created() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.db");
    let e = store_error(open(&path, OpenMode::Existing));
    assert!(matches!(e, StoreError::NotFound(_)), "{e:?}");
    assert_eq!(e.code(), 504);
    assert!(
        snapshot(dir.path()).is_empty(),
        "a failed open created files"
    );
    // A missing folder: an error, nothing created.
    let nested = dir.path().join("no/such/folder/store.db");
    assert!(open(&nested, OpenMode::ExistingOrNew).is_err());
    assert!(!dir.path().join("no").exists());
}

/// An SQLite database of another application (it has tables, rollback journal as SQLite
/// creates by default) is refused as Corrupt and left byte for byte as it was: in particular
/// it is not switched to WAL, which would rewrite its header (bytes 18-19, change counter).
#[test]
fn another_applications_database_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other-app.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE contacts (name TEXT, phone TEXT); INSERT INTO contacts VALUES ('ann', '123');").unwrap();
    }
    assert_corrupt_and_untouched(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let name: String = conn
        .query_row("SELECT name FROM contacts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(name, "ann");
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        mode, "delete",
        "the other application's journal mode was changed"
    );
}

/// The same for another application's database that uses WAL itself.
#[test]
fn another_applications_wal_database_is_corrupt_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other-wal.db");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        let _: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (42);")
            .unwrap();
    }
    assert_corrupt_and_untouched(&path);
    let conn = rusqlite::Connection::open(&path).unwrap();
    let x: i64 = conn.query_row("SELECT x FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(x, 42);
}

#[test]
fn new_mode_on_an_existing_store_is_already_exists() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let fingerprint = Client::open(&path).unwrap().fingerprint();
    let before = std::fs::read(&path).unwrap();
    let e = store_error(open(&path, OpenMode::New));
    assert!(matches!(e, StoreError::AlreadyExists(_)), "{e:?}");
    assert_eq!(e.code(), 505);
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        open(&path, OpenMode::Existing).unwrap().fingerprint(),
        fingerprint
    );
    // Also for a file that is not a store.
    let other = dir.path().join("other");
    std::fs::write(&other, b"x").unwrap();
    assert_eq!(store_error(open(&other, OpenMode::New)).code(), 505);
    assert_eq!(std::fs::read(&other).unwrap(), b"x");
}

/// Runs SQL on a store's file directly (as a damaged or future store would look).
fn tamper(path: &Path, sql: &str) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch(sql).unwrap();
}

#[test]
fn a_store_from_a_newer_version_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    drop(Client::open(&path).unwrap());
    tamper(&path, "PRAGMA user_version = 2;");
    let before = snapshot(dir.path());
    let e = store_error(open(&path, OpenMode::Existing));
    assert_eq!(
        e,
        StoreError::UnsupportedSchema {
            found: 2,
            supported: proteus_client::SCHEMA_VERSION
        }
    );
    assert_eq!(e.code(), 506);
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_store_that_lost_its_identity_is_corrupt_and_not_reinitialised() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    {
        let mut c = Client::open(&path).unwrap();
        c.generate_prekeys(3).unwrap();
    }
    tamper(
        &path,
        "DELETE FROM meta WHERE key = CAST('identity' AS BLOB);",
    );
    let before = snapshot(dir.path());
    let e = store_error(open(&path, OpenMode::ExistingOrNew));
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    assert_eq!(snapshot(dir.path()), before, "a new identity was written");
}

#[test]
fn a_store_with_a_damaged_identity_record_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(Client::open(&path).unwrap());
    tamper(
        &path,
        "UPDATE meta SET value = X'a1' WHERE key = CAST('identity' AS BLOB);",
    );
    let before = snapshot(dir.path());
    assert_eq!(store_error(open(&path, OpenMode::Existing)).code(), 503);
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn a_store_missing_a_table_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    drop(Client::open(&path).unwrap());
    tamper(&path, "DROP TABLE staged_keys;");
    let before = snapshot(dir.path());
    assert_eq!(store_error(open(&path, OpenMode::Existing)).code(), 503);
    assert_eq!(snapshot(dir.path()), before);
}

/// A damaged session record is reported as Corrupt when the session is used, and only for that
/// session: the others keep working.
#[test]
fn a_damaged_session_record_is_corrupt_for_that_session_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let mut alice = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    {
        let mut bob = Client::open(&path).unwrap();
        common::connect(&mut alice, "alice", &mut bob, "bob");
        common::connect(&mut carol, "carol", &mut bob, "bob");
    }
    tamper(
        &path,
        "UPDATE sessions SET value = X'00' WHERE key = CAST('alice' AS BLOB);",
    );
    let mut bob = Client::open(&path).unwrap();
    let e = alice.encrypt("bob", b"x").unwrap();
    let r = bob.decrypt("alice", &e);
    assert!(
        matches!(r, Err(ClientError::Store(StoreError::Corrupt(_)))),
        "{r:?}"
    );
    assert_eq!(common::code_of(&bob.encrypt("alice", b"x")), 503);
    let e = carol.encrypt("bob", b"fine").unwrap();
    assert_eq!(bob.decrypt("carol", &e).unwrap(), b"fine");
}

/// A client on Storage that holds records but no identity refuses to start (it never
/// reinitialises): the MemoryStorage flavour of the test above.
#[test]
fn storage_with_records_but_no_identity_is_refused() {
    let storage = common::TestStorage::new();
    storage.put_raw(proteus_client::Table::PreKeys, &[0, 1], b"something");
    let r = Client::with_storage(Box::new(storage.clone()));
    assert!(
        matches!(r, Err(ClientError::Store(StoreError::Corrupt(_)))),
        "{r:?}"
    );
    assert_eq!(storage.commits(), 0);
    assert_eq!(storage.dump().len(), 1);
}
