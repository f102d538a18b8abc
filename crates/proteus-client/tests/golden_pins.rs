//! Record compatibility of pinned identities: a store holding pin records (format version 1)
//! must load, forever, and keep refusing the identities they do not name.
//!
//! `tests/golden/store-v1-pins.sqlite` is Bob's store, made with pinning on: Alice's session id
//! pinned to her identity with her session deleted since, and Carol's session with its pin.
//! `store-v1-pins.json` holds the peers' identities, Carol's session and a PreKeyMessage from
//! someone else under Alice's session id. Made once by `generate_golden_pin_store` (ignored):
//!
//! ```text
//! PROTEUS_WRITE_GOLDEN=1 cargo test -p proteus-client --test golden_pins -- --ignored
//! ```

#![cfg(feature = "sqlite")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::path::{Path, PathBuf};

use common::{code_of, golden_dir, hex_of, peer_with_identity, str_of};
use proteus_client::{Client, OpenMode, SqliteOptions};
use serde_json::{Value, json};

const STORE: &str = "store-v1-pins.sqlite";
const DOC: &str = "store-v1-pins.json";

#[test]
#[ignore = "writes tests/golden/store-v1-pins.*; run once to create the golden files"]
fn generate_golden_pin_store() {
    let out = golden_dir();
    if (out.join(STORE).exists() || out.join(DOC).exists())
        && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1")
    {
        println!("the golden pin files exist; set PROTEUS_WRITE_GOLDEN=1 to overwrite them");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STORE);
    let mut bob = Client::open_with(&path, OpenMode::New, &SqliteOptions::default()).unwrap();
    bob.set_identity_pinning(true);
    let bundles = bob.generate_prekeys(3).unwrap();
    let (mut alice, alice_id) = peer_with_identity();
    let (mut carol, carol_id) = peer_with_identity();
    let (mut mallory, _) = peer_with_identity();

    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let hello = alice.encrypt("bob", b"hello bob").unwrap();
    bob.decrypt("alice", &hello).unwrap();
    bob.delete_session("alice").unwrap();

    carol.create_session("bob", &bundles[1].to_bytes()).unwrap();
    let c0 = carol.encrypt("bob", b"carol 0").unwrap();
    bob.decrypt("carol", &c0).unwrap();

    mallory
        .create_session("bob", &bundles[2].to_bytes())
        .unwrap();
    let forged = mallory.encrypt("bob", b"I am alice").unwrap();
    assert_eq!(code_of(&bob.decrypt("alice", &forged)), 204);
    drop(bob);

    let doc = json!({
        "description": "Bob's store with pinned identities (format 1): alice's session deleted, \
            carol's live. Made by tests/golden_pins.rs generate_golden_pin_store; do not \
            regenerate.",
        "alice": { "identity_keypair": hex::encode(alice_id), "fingerprint": alice.fingerprint() },
        "carol": {
            "identity_keypair": hex::encode(carol_id),
            "fingerprint": carol.fingerprint(),
            "session": hex::encode(&*carol.export_session("bob").unwrap()),
        },
        "mallory": { "fingerprint": mallory.fingerprint(), "as_alice": hex::encode(&forged) },
    });
    std::fs::copy(&path, out.join(STORE)).unwrap();
    std::fs::write(
        out.join(DOC),
        serde_json::to_string_pretty(&doc).unwrap() + "\n",
    )
    .unwrap();
}

fn load_doc() -> Value {
    serde_json::from_str(&std::fs::read_to_string(golden_dir().join(DOC)).unwrap()).unwrap()
}

fn golden_copy() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(golden_dir().join(STORE), &path).unwrap();
    (dir, path)
}

/// The raw pin record of a session id, as the unsealed file holds it.
fn raw_pin(path: &Path, session_id: &str) -> Vec<u8> {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row(
        "SELECT value FROM meta WHERE key = ?1",
        [[b"pinned/".as_slice(), session_id.as_bytes()].concat()],
        |r| r.get(0),
    )
    .unwrap()
}

#[test]
fn the_golden_pin_records_are_version_1_and_the_identity_key() {
    let doc = load_doc();
    let (_dir, path) = golden_copy();
    for name in ["alice", "carol"] {
        let mut expected = vec![1];
        expected.extend(hex::decode(str_of(&doc[name]["fingerprint"])).unwrap());
        assert_eq!(raw_pin(&path, name), expected, "{name}");
    }
}

fn check_pins(path: &Path, open: impl Fn(&Path) -> Client) {
    let doc = load_doc();
    let mut bob = open(path);
    bob.set_identity_pinning(true);
    for name in ["alice", "carol"] {
        assert_eq!(
            bob.pinned_identity(name).unwrap().as_deref(),
            Some(str_of(&doc[name]["fingerprint"]))
        );
    }
    // Someone else under Alice's session id: still refused.
    let forged = hex_of(&doc["mallory"]["as_alice"]);
    assert_eq!(code_of(&bob.decrypt("alice", &forged)), 204);
    // Alice herself makes a new session; Carol's goes on.
    let mut alice = Client::in_memory().unwrap();
    alice
        .import_identity(&hex_of(&doc["alice"]["identity_keypair"]))
        .unwrap();
    let bundle = bob.generate_prekeys(1).unwrap().remove(0);
    alice.create_session("bob", &bundle.to_bytes()).unwrap();
    let back = alice.encrypt("bob", b"back").unwrap();
    assert_eq!(bob.decrypt("alice", &back).unwrap(), b"back");
    let mut carol = Client::in_memory().unwrap();
    carol
        .import_identity(&hex_of(&doc["carol"]["identity_keypair"]))
        .unwrap();
    carol
        .import_session("bob", &hex_of(&doc["carol"]["session"]))
        .unwrap();
    let to_carol = bob.encrypt("carol", b"hi carol").unwrap();
    assert_eq!(carol.decrypt("bob", &to_carol).unwrap(), b"hi carol");
    // Accepting Mallory's identity lets the held message decrypt.
    bob.accept_identity("alice", str_of(&doc["mallory"]["fingerprint"]))
        .unwrap();
    assert_eq!(bob.decrypt("alice", &forged).unwrap(), b"I am alice");
}

#[test]
fn the_golden_pin_store_keeps_refusing_what_its_pins_do_not_name() {
    let (_dir, path) = golden_copy();
    check_pins(&path, |p| {
        Client::open_with(p, OpenMode::Existing, &SqliteOptions::default()).unwrap()
    });
}

#[cfg(feature = "sealed")]
#[test]
fn the_golden_pin_store_sealed_keeps_its_pins() {
    let (_dir, path) = golden_copy();
    let key = proteus_client::StoreKey::new([0x5a; 32]);
    proteus_client::seal_store(&path, &key).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert!(!bytes.windows(12).any(|w| w == b"pinned/alice"));
    check_pins(&path, |p| {
        Client::open_sealed(p, OpenMode::Existing, &SqliteOptions::default(), &key).unwrap()
    });
}
