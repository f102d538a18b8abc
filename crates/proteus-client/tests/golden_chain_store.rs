//! Record compatibility of the two session forms added after the first golden store: a send
//! chain record beside a session record (a session only sent on since it was stored), and a
//! version-2 session record holding a pending sending step (a new ratchet key received, no
//! reply yet). Both must load, forever, and continue their chains.
//!
//! `tests/golden/store-v1-chains.sqlite` is Bob's store: Alice's session with Bob's three
//! replies since its record was written (a chain record), Carol's session right after her first
//! message (a version-2 record). `store-v1-chains.json` holds Bob's three replies to Alice and
//! the peers' identities and sessions. Made once by `generate_golden_chain_store` (ignored):
//!
//! ```text
//! PROTEUS_WRITE_GOLDEN=1 cargo test -p proteus-client --test golden_chain_store -- --ignored
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

use common::{array_of, chain_key_of, golden_dir, hex_of, peer_with_identity};
use proteus_client::{Client, OpenMode, SqliteOptions};
use serde_json::{Value, json};

const STORE: &str = "store-v1-chains.sqlite";
const DOC: &str = "store-v1-chains.json";

/// What the raw file holds for the two sessions: whether Alice's has a chain record, and the
/// format version of each session record (a CBOR map whose key 0 comes first: `map, 0, version`).
fn raw_forms(path: &Path) -> (bool, u8, u8) {
    let conn =
        rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let has_chain: bool = conn
        .query_row(
            "SELECT count(*) FROM staged_keys WHERE key = ?1",
            [chain_key_of("alice")],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
        == 1;
    let version = |id: &str| -> u8 {
        let record: Vec<u8> = conn
            .query_row(
                "SELECT value FROM sessions WHERE key = ?1",
                [id.as_bytes()],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(record[1], 0, "key 0 first");
        record[2]
    };
    (has_chain, version("alice"), version("carol"))
}

#[test]
#[ignore = "writes tests/golden/store-v1-chains.*; run once to create the golden files"]
fn generate_golden_chain_store() {
    let out = golden_dir();
    if (out.join(STORE).exists() || out.join(DOC).exists())
        && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1")
    {
        println!("the golden chain files exist; set PROTEUS_WRITE_GOLDEN=1 to overwrite them");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STORE);
    let mut bob = Client::open_with(&path, OpenMode::New, &SqliteOptions::default()).unwrap();
    let bundles = bob.generate_prekeys(2).unwrap();
    let (mut alice, alice_id) = peer_with_identity();
    let (mut carol, carol_id) = peer_with_identity();

    // Alice and Bob: a round trip, Alice's next message (Bob's record is written whole when he
    // receives it), then three replies by Bob on that chain: chain records only.
    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let hello = alice.encrypt("bob", b"hello bob").unwrap();
    bob.decrypt("alice", &hello).unwrap();
    let hi = bob.encrypt("alice", b"hi alice").unwrap();
    alice.decrypt("bob", &hi).unwrap();
    let next = alice.encrypt("bob", b"next").unwrap();
    bob.decrypt("alice", &next).unwrap();
    let replies: Vec<Vec<u8>> = (0..3)
        .map(|i| {
            bob.encrypt("alice", format!("reply {i}").as_bytes())
                .unwrap()
        })
        .collect();

    // Carol's first message: Bob's sending step is pending (a version-2 record).
    carol.create_session("bob", &bundles[1].to_bytes()).unwrap();
    let c0 = carol.encrypt("bob", b"carol 0").unwrap();
    bob.decrypt("carol", &c0).unwrap();
    drop(bob);
    assert_eq!(raw_forms(&path), (true, 1, 2), "the store has both forms");

    let export = |c: &mut Client, id: Vec<u8>| {
        json!({
            "identity_keypair": hex::encode(id),
            "session": hex::encode(&*c.export_session("bob").unwrap()),
        })
    };
    let doc = json!({
        "description": "Bob's store with a send chain record (alice) and a version-2 session \
            record with a pending sending step (carol). Made by tests/golden_chain_store.rs \
            generate_golden_chain_store; do not regenerate.",
        "replies_to_alice": replies.iter().map(hex::encode).collect::<Vec<_>>(),
        "peers": { "alice": export(&mut alice, alice_id), "carol": export(&mut carol, carol_id) },
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

fn peer(doc: &Value, name: &str) -> Client {
    let p = &doc["peers"][name];
    let mut c = Client::in_memory().unwrap();
    c.import_identity(&hex_of(&p["identity_keypair"])).unwrap();
    c.import_session("bob", &hex_of(&p["session"])).unwrap();
    c
}

#[test]
fn the_golden_store_holds_a_chain_record_and_a_pending_step() {
    let (_dir, path) = golden_copy();
    assert_eq!(raw_forms(&path), (true, 1, 2));
}

/// Bob continues both sessions: Alice reads his three stored replies and the next one (which
/// must follow them on the chain record's counter, not the session record's); Carol reads the
/// reply that completes the pending step; both answer and Bob reads them.
fn check_chains(path: &Path, open: impl Fn(&Path) -> Client) {
    let doc = load_doc();
    let mut bob = open(path);
    let mut alice = peer(&doc, "alice");
    let mut carol = peer(&doc, "carol");

    let after = bob.encrypt("alice", b"after load").unwrap();
    for (i, reply) in array_of(&doc["replies_to_alice"]).iter().enumerate() {
        let text = format!("reply {i}");
        assert_eq!(
            alice.decrypt("bob", &hex_of(reply)).unwrap(),
            text.as_bytes()
        );
    }
    assert_eq!(alice.decrypt("bob", &after).unwrap(), b"after load");

    let to_carol = bob.encrypt("carol", b"hi carol").unwrap();
    assert_eq!(carol.decrypt("bob", &to_carol).unwrap(), b"hi carol");

    for (name, peer) in [("alice", &mut alice), ("carol", &mut carol)] {
        let back = peer.encrypt("bob", b"and back").unwrap();
        assert_eq!(bob.decrypt(name, &back).unwrap(), b"and back");
    }
    drop(bob);
    // Reopened, what the replies wrote loads too.
    let mut bob = open(path);
    let again = bob.encrypt("alice", b"again").unwrap();
    assert_eq!(alice.decrypt("bob", &again).unwrap(), b"again");
}

#[test]
fn the_golden_chain_store_continues_both_sessions() {
    let (_dir, path) = golden_copy();
    check_chains(&path, |p| {
        Client::open_with(p, OpenMode::Existing, &SqliteOptions::default()).unwrap()
    });
}

#[cfg(feature = "sealed")]
#[test]
fn the_golden_chain_store_sealed_continues_both_sessions() {
    let (_dir, path) = golden_copy();
    let key = proteus_client::StoreKey::new([0x3c; 32]);
    proteus_client::seal_store(&path, &key).unwrap();
    check_chains(&path, |p| {
        Client::open_sealed(p, OpenMode::Existing, &SqliteOptions::default(), &key).unwrap()
    });
}
