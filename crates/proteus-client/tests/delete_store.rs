//! `delete_store`: a store and its side files go; a missing one is fine; anything else stays.

#![cfg(feature = "sqlite")]
#![allow(clippy::unwrap_used)]

use proteus_client::{Client, OpenMode, SqliteOptions, StoreError, delete_store};

#[test]
fn a_store_and_its_side_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let client = Client::open(&path).unwrap();
    drop(client);
    assert!(path.exists());
    delete_store(&path).unwrap();
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        assert!(!std::path::Path::new(&file).exists(), "{suffix}");
    }
    // Deleting again is fine, and the store is gone.
    delete_store(&path).unwrap();
    let missing = Client::open_with(&path, OpenMode::Existing, &SqliteOptions::default());
    assert_eq!(missing.err().map(|e| e.code()), Some(504));
}

#[test]
fn a_file_that_is_not_a_store_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    let junk: Vec<u8> = (0..8192u32).map(|i| (i * 13) as u8).collect();
    std::fs::write(&path, &junk).unwrap();
    assert!(matches!(delete_store(&path), Err(StoreError::Corrupt(_))));
    assert_eq!(std::fs::read(&path).unwrap(), junk);
}
