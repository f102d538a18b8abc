//! Schema compatibility: a store written by schema version 1 (committed under tests/golden/)
//! must open and work with every later version of this library.
//!
//! `tests/golden/store-v1.sqlite` is Bob's store: his identity, one-time prekeys, the
//! last-resort prekey, a session with Alice holding four staged keys. `store-v1-queue.json`
//! holds the envelopes queued for it (from Alice, and from Carol and Dave who have no session
//! yet), the expected outcomes, and the peers' identities and sessions so they can read Bob's
//! replies. Both were made once by `generate_golden_store_v1` (ignored; run it only to make a
//! new golden pair for a NEW schema version, never to overwrite v1):
//!
//! ```text
//! PROTEUS_WRITE_GOLDEN=1 cargo test -p proteus-client --test golden_store -- --ignored generate_golden_store_v1
//! ```
//!
//! Without `PROTEUS_WRITE_GOLDEN=1` the generator does nothing when the files exist, so a run
//! of all ignored tests (`--include-ignored`) cannot replace the committed golden store.

#![cfg(feature = "sqlite")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use common::{array_of, code_of, golden_dir, hex_of, peer_with_identity as peer, str_of, u64_of};
#[cfg(feature = "sealed")]
use proteus_client::StoreKey;
use proteus_client::{Client, OpenMode, QueuedMessage, SqliteOptions};
use serde_json::{Value, json};

fn wal_of(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push("-wal");
    PathBuf::from(p)
}

#[test]
#[ignore = "writes tests/golden/store-v1.*; run once to create the golden files"]
fn generate_golden_store_v1() {
    let out = golden_dir();
    let exists = out.join("store-v1.sqlite").exists() || out.join("store-v1-queue.json").exists();
    if exists && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1") {
        println!("the golden v1 files exist; set PROTEUS_WRITE_GOLDEN=1 to overwrite them");
        return;
    }
    assert_eq!(
        proteus_client::SCHEMA_VERSION,
        1,
        "this generator makes the v1 golden store"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store-v1.sqlite");
    let mut bob = Client::open_with(&path, OpenMode::New, &SqliteOptions::default()).unwrap();
    let bundles = bob.generate_prekeys(5).unwrap();

    let (mut alice, alice_id) = peer();
    let (mut carol, carol_id) = peer();
    let (mut dave, dave_id) = peer();
    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let hello = alice.encrypt("bob", b"hello bob").unwrap();
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello bob");
    let reply = bob.encrypt("alice", b"hi alice").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"hi alice");
    let a: Vec<Vec<u8>> = (0..7)
        .map(|i| {
            alice
                .encrypt("bob", format!("alice {i}").as_bytes())
                .unwrap()
        })
        .collect();
    // Bob gets a[5] only: a[0..5] stay staged in the store.
    assert_eq!(bob.decrypt("alice", &a[5]).unwrap(), b"alice 5");
    assert_eq!(bob.decrypt("alice", &a[0]).unwrap(), b"alice 0");

    carol.create_session("bob", &bundles[1].to_bytes()).unwrap();
    let c: Vec<Vec<u8>> = (0..2)
        .map(|i| {
            carol
                .encrypt("bob", format!("carol {i}").as_bytes())
                .unwrap()
        })
        .collect();
    dave.create_session("bob", &bob.last_resort_bundle().unwrap().to_bytes())
        .unwrap();
    let d0 = dave.encrypt("bob", "dave 0 ✓".as_bytes()).unwrap();

    let ok = |s: &str, e: &[u8], p: &[u8]| json!({"session_id": s, "envelope": hex::encode(e), "plaintext": hex::encode(p)});
    let err = |s: &str, e: &[u8], code: u16| json!({"session_id": s, "envelope": hex::encode(e), "code": code});
    let queue = vec![
        ok("alice", &a[2], b"alice 2"),
        ok("carol", &c[1], b"carol 1"),
        ok("alice", &a[1], b"alice 1"),
        ok("alice", &a[6], b"alice 6"),
        ok("dave", &d0, "dave 0 ✓".as_bytes()),
        err("alice", &a[5], 209),
        ok("carol", &c[0], b"carol 0"),
        ok("alice", &a[4], b"alice 4"),
        err("alice", &a[0], 208), // below the oldest staged key: outdated
        ok("alice", &a[3], b"alice 3"),
    ];
    let export = |c: &mut Client, id: Vec<u8>| json!({"identity_keypair": hex::encode(id), "session": hex::encode(&*c.export_session("bob").unwrap()), "fingerprint": c.fingerprint()});
    let doc = json!({
        "description": "Bob's store written by proteus-client schema version 1, and the messages queued for it. \
            Made by tests/golden_store.rs generate_golden_store_v1; do not regenerate.",
        "schema_version": 1,
        "bob": {
            "fingerprint": bob.fingerprint(),
            "session_ids": bob.session_ids().unwrap(),
            "prekeys_remaining": bob.prekeys_remaining().unwrap(),
            "prekey_ids": bundles[1..].iter().map(|b| b.prekey_id().value()).collect::<Vec<_>>(),
            "last_resort_bundle": hex::encode(bob.last_resort_bundle().unwrap().to_bytes()),
            "staged_keys": 4,
        },
        "peers": {
            "alice": export(&mut alice, alice_id),
            "carol": export(&mut carol, carol_id),
            "dave": export(&mut dave, dave_id),
        },
        "queue": queue,
    });
    drop(bob);
    assert!(
        !wal_of(&path).exists(),
        "closing must checkpoint the WAL into the file"
    );
    std::fs::create_dir_all(&out).unwrap();
    std::fs::copy(&path, out.join("store-v1.sqlite")).unwrap();
    std::fs::write(
        out.join("store-v1-queue.json"),
        serde_json::to_string_pretty(&doc).unwrap() + "\n",
    )
    .unwrap();
}

/// The key of the sealed golden store.
#[cfg(feature = "sealed")]
const GOLDEN_STORE_KEY: [u8; 32] = [0x5e; 32];

#[cfg(feature = "sealed")]
#[test]
#[ignore = "writes tests/golden/store-v1-sealed.sqlite; run once to create it"]
fn generate_golden_sealed_store_v1() {
    // The v1 store sealed by `seal_store` as it was before session ids were keyed-hashed
    // (sealed record format 1, session ids in the clear).
    let out = golden_dir().join("store-v1-sealed.sqlite");
    if out.exists() && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1") {
        println!("the sealed golden file exists; set PROTEUS_WRITE_GOLDEN=1 to overwrite it");
        return;
    }
    let (_dir, path) = golden_copy();
    proteus_client::seal_store(&path, &StoreKey::new(GOLDEN_STORE_KEY)).unwrap();
    assert!(!wal_of(&path).exists());
    std::fs::copy(&path, out).unwrap();
}

/// The v1 store sealed in record format 2 (session ids keyed-hashed, no commit binding), as
/// `seal_store` wrote it before sealed stores bound every record to the commit that wrote it.
#[cfg(feature = "sealed")]
#[test]
#[ignore = "writes tests/golden/store-v1-sealed-v2.sqlite; run once to create it"]
fn generate_golden_sealed_store_v2() {
    let out = golden_dir().join("store-v1-sealed-v2.sqlite");
    if out.exists() && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1") {
        println!("the sealed golden file exists; set PROTEUS_WRITE_GOLDEN=1 to overwrite it");
        return;
    }
    let (_dir, path) = golden_copy();
    proteus_client::seal_store(&path, &StoreKey::new(GOLDEN_STORE_KEY)).unwrap();
    assert!(!wal_of(&path).exists());
    std::fs::copy(&path, out).unwrap();
}

fn load_doc() -> Value {
    let text = std::fs::read_to_string(golden_dir().join("store-v1-queue.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// A copy of the golden store in a fresh folder.
fn golden_copy() -> (tempfile::TempDir, PathBuf) {
    let golden = golden_dir().join("store-v1.sqlite");
    assert!(
        !wal_of(&golden).exists(),
        "the golden store must be self-contained (no -wal file)"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(&golden, &path).unwrap();
    (dir, path)
}

#[test]
fn the_golden_store_is_schema_version_1() {
    let (_dir, path) = golden_copy();
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let staged: i64 = conn
        .query_row("SELECT count(*) FROM staged_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(staged, 4);
}

/// Open a copy of the v1 store with the current code, decrypt the queue, reply to every peer.
#[test]
fn the_golden_v1_store_opens_and_decrypts_its_queue() {
    let (_dir, path) = golden_copy();
    check_golden(&path, "store-v1.sqlite", |p| {
        Client::open_with(p, OpenMode::Existing, &SqliteOptions::default()).unwrap()
    });
}

/// The same with the v1 store sealed in the first sealed record format (session ids in the
/// clear): it opens, and afterwards no session id is left in the clear in the file.
#[cfg(feature = "sealed")]
#[test]
fn the_sealed_golden_v1_store_opens_and_decrypts_its_queue() {
    let golden = golden_dir().join("store-v1-sealed.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(&golden, &path).unwrap();
    assert!(contains(&std::fs::read(&path).unwrap(), b"alice"));
    let key = StoreKey::new(GOLDEN_STORE_KEY);
    check_golden(&path, "store-v1-sealed.sqlite", |p| {
        Client::open_sealed(p, OpenMode::Existing, &SqliteOptions::default(), &key).unwrap()
    });
    let bytes = std::fs::read(&path).unwrap();
    for id in ["alice", "carol", "dave"] {
        assert!(!contains(&bytes, id.as_bytes()), "{id} is in the clear");
    }
}

/// The v1 store sealed in record format 2 (session ids hashed, records not yet bound to a
/// commit) opens with the current code, which brings it to format 3 in one commit, and
/// decrypts its queue; opened again, it is bound (a record deleted since is refused).
#[cfg(feature = "sealed")]
#[test]
fn the_sealed_golden_v2_store_opens_and_decrypts_its_queue() {
    let golden = golden_dir().join("store-v1-sealed-v2.sqlite");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    std::fs::copy(&golden, &path).unwrap();
    let key = StoreKey::new(GOLDEN_STORE_KEY);
    check_golden(&path, "store-v1-sealed-v2.sqlite", |p| {
        Client::open_sealed(p, OpenMode::Existing, &SqliteOptions::default(), &key).unwrap()
    });
    let conn = rusqlite::Connection::open(&path).unwrap();
    let versions: Vec<u8> = conn
        .prepare("SELECT value FROM sessions")
        .unwrap()
        .query_map([], |r| r.get::<_, Vec<u8>>(0))
        .unwrap()
        .map(|v| v.unwrap()[0])
        .collect();
    assert!(
        !versions.is_empty() && versions.iter().all(|v| *v == 3),
        "{versions:?}"
    );
    let deleted = conn
        .execute(
            "DELETE FROM prekeys WHERE key = (SELECT min(key) FROM prekeys)",
            [],
        )
        .unwrap();
    assert_eq!(deleted, 1);
    drop(conn);
    let reopened = Client::open_sealed(&path, OpenMode::Existing, &SqliteOptions::default(), &key);
    assert_eq!(reopened.err().map(|e| e.code()), Some(514));
}

#[cfg(feature = "sealed")]
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn check_golden(path: &Path, golden_name: &str, open: impl Fn(&Path) -> Client) {
    let doc = load_doc();
    let golden_bytes = std::fs::read(golden_dir().join(golden_name)).unwrap();
    let mut bob = open(path);
    let b = &doc["bob"];
    assert_eq!(bob.fingerprint(), str_of(&b["fingerprint"]));
    let ids: Vec<String> = array_of(&b["session_ids"])
        .iter()
        .map(|s| str_of(s).to_owned())
        .collect();
    assert_eq!(bob.session_ids().unwrap(), ids);
    assert_eq!(
        bob.prekeys_remaining().unwrap(),
        usize::try_from(u64_of(&b["prekeys_remaining"])).unwrap()
    );
    for id in array_of(&b["prekey_ids"]) {
        bob.prekey_bundle(proteus_core::PreKeyId::new(
            u16::try_from(u64_of(id)).unwrap(),
        ))
        .unwrap();
    }
    assert_eq!(
        bob.last_resort_bundle().unwrap().to_bytes(),
        hex_of(&b["last_resort_bundle"])
    );

    let items: Vec<(String, Vec<u8>)> = array_of(&doc["queue"])
        .iter()
        .map(|q| (str_of(&q["session_id"]).to_owned(), hex_of(&q["envelope"])))
        .collect();
    let queue: Vec<QueuedMessage> = items
        .iter()
        .map(|(s, e)| QueuedMessage {
            session_id: s,
            envelope: e,
        })
        .collect();
    let results = bob
        .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert_eq!(results.len(), items.len());
    for (i, (r, q)) in results.iter().zip(array_of(&doc["queue"])).enumerate() {
        match q.get("plaintext") {
            Some(p) => assert_eq!(r.outcome.as_ref().unwrap(), &hex_of(p), "#{i}"),
            None => assert_eq!(u64::from(code_of(&r.outcome)), u64_of(&q["code"]), "#{i}"),
        }
    }
    assert_eq!(bob.session_ids().unwrap(), ["alice", "carol", "dave"]);
    assert_eq!(
        bob.prekeys_remaining().unwrap(),
        usize::try_from(u64_of(&b["prekeys_remaining"])).unwrap() - 1
    );

    // Every peer reads Bob's reply from its own imported identity and session.
    for (name, p) in doc["peers"].as_object().unwrap() {
        let mut peer = Client::in_memory().unwrap();
        peer.import_identity(&hex_of(&p["identity_keypair"]))
            .unwrap();
        assert_eq!(peer.fingerprint(), str_of(&p["fingerprint"]));
        peer.import_session("bob", &hex_of(&p["session"])).unwrap();
        let text = format!("reply to {name}");
        let e = bob.encrypt(name, text.as_bytes()).unwrap();
        assert_eq!(peer.decrypt("bob", &e).unwrap(), text.as_bytes());
        let back = peer.encrypt("bob", b"and back").unwrap();
        assert_eq!(bob.decrypt(name, &back).unwrap(), b"and back");
    }

    // Reopened, the batch comes back as already seen.
    drop(bob);
    let mut bob = open(path);
    let again = bob
        .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert!(again.iter().all(proteus_client::Decrypted::is_already_seen));
    drop(bob);
    assert!(!wal_of(path).exists());
    assert_eq!(
        std::fs::read(golden_dir().join(golden_name)).unwrap(),
        golden_bytes,
        "the golden file itself changed"
    );
}
