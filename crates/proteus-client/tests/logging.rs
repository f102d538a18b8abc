//! The client's log (issue 35): each event is logged at its level, and nothing logged holds a
//! session id, a fingerprint, key material or plaintext. Also the batch's outcome counts.
#![cfg(all(feature = "sqlite", feature = "sealed"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::sync::{Arc, Mutex};

use common::{bundle_of, connect, encrypt_n, run_batch};
use log::{Level, LevelFilter, Log, Metadata, Record};
use proteus_client::{
    Client, CommitCounter, CounterError, LOG_TARGET, OpenMode, PREKEY_LOW_WATER, SqliteOptions,
    StoreError,
};

/// Every record logged in this test binary (one logger per process: the tests share it and
/// run one at a time through `LOCK`).
static LINES: Mutex<Vec<(Level, String, String)>> = Mutex::new(Vec::new());
static LOCK: Mutex<()> = Mutex::new(());

struct Collect;

impl Log for Collect {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &Record<'_>) {
        LINES.lock().unwrap().push((
            record.level(),
            record.target().to_owned(),
            record.args().to_string(),
        ));
    }
    fn flush(&self) {}
}

fn start() -> std::sync::MutexGuard<'static, ()> {
    let guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let _ = log::set_logger(&Collect);
    log::set_max_level(LevelFilter::Trace);
    LINES.lock().unwrap().clear();
    guard
}

fn lines() -> Vec<(Level, String, String)> {
    LINES.lock().unwrap().clone()
}

fn has(level: Level, text: &str) -> bool {
    lines()
        .iter()
        .any(|(l, target, line)| *l == level && target == LOG_TARGET && line.contains(text))
}

fn assert_no_secret(secrets: &[&[u8]]) {
    for (_, _, line) in lines() {
        for secret in secrets {
            let hex = hex::encode(secret);
            let text = String::from_utf8_lossy(secret);
            let named = line.contains(hex.as_str()) || line.contains(text.as_ref());
            assert!(!named, "a log line holds a secret or an id: {line}");
        }
    }
}

#[derive(Clone, Default)]
struct Keychain(Arc<Mutex<u64>>);

impl CommitCounter for Keychain {
    fn load(&mut self) -> Result<u64, CounterError> {
        Ok(*self.0.lock().unwrap())
    }
    fn store(&mut self, count: u64) -> Result<(), CounterError> {
        *self.0.lock().unwrap() = count;
        Ok(())
    }
}

#[test]
fn each_event_is_logged_at_its_level_without_ids_keys_or_plaintext() {
    let _guard = start();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let options = SqliteOptions::default();
    let keychain = Keychain::default();
    let open = |keychain: &Keychain| {
        Client::open_guarded(
            &path,
            OpenMode::ExistingOrNew,
            &options,
            None,
            Some(Box::new(keychain.clone())),
        )
    };

    // Opened, new then existing.
    let mut bob = open(&keychain).unwrap();
    assert!(has(Level::Info, "SQLite store created"));
    assert!(has(Level::Info, "client opened: new identity"));
    let mut alice = Client::in_memory().unwrap();
    let alice_id = "alice-unique-session-id";
    connect(&mut alice, alice_id, &mut bob, "bob-unique-session-id");

    // A batch: its summary, and the prekey stock below the low water.
    let mut items: Vec<(String, Vec<u8>)> =
        encrypt_n(&mut alice, "bob-unique-session-id", "secret plaintext", 5)
            .into_iter()
            .map(|e| (alice_id.to_owned(), e))
            .collect();
    items.push(items[0].clone());
    run_batch(&mut bob, &items).unwrap();
    assert!(has(
        Level::Info,
        "batch: 6 messages: 5 decrypted, 1 already seen, 0 key evicted, 0 failed"
    ));
    let summary = bob.last_batch_summary().unwrap();
    assert_eq!(
        (summary.total, summary.decrypted, summary.already_seen),
        (6, 5, 1)
    );
    assert!(summary.failed.is_empty());

    // A new sender's first message uses up a one-time prekey: the stock is low.
    let mut carol = Client::in_memory().unwrap();
    connect(&mut carol, "carol-unique-session-id", &mut bob, "bob-2");
    assert!(bob.prekeys_remaining().unwrap() < PREKEY_LOW_WATER);
    assert!(has(Level::Warn, "one-time prekeys left"));

    // A reset, tagged, not named.
    let fresh = bundle_of(&mut alice);
    bob.reset_session(alice_id, &fresh).unwrap();
    assert!(has(Level::Info, "reset: the same identity"));

    // Another process commits: the next call reloads.
    let mut other = open(&keychain).unwrap();
    assert!(has(Level::Info, "client opened: existing identity"));
    other.generate_prekeys(1).unwrap();
    bob.generate_prekeys(1).unwrap();
    assert!(has(
        Level::Info,
        "another process or tab committed: reloading"
    ));
    drop((bob, other));

    // A store rolled back: refused, and logged as an error.
    let copy = dir.path().join("copy.db");
    std::fs::copy(&path, &copy).unwrap();
    let mut bob = open(&keychain).unwrap();
    bob.generate_prekeys(1).unwrap();
    drop(bob);
    std::fs::copy(&copy, &path).unwrap();
    let _ = std::fs::remove_file(dir.path().join("bob.db-wal"));
    let refused = open(&keychain);
    assert!(matches!(
        refused,
        Err(proteus_client::ClientError::Store(
            StoreError::RolledBack { .. }
        ))
    ));
    assert!(has(Level::Error, "store refused: it was rolled back"));

    // Never an id, a fingerprint, a key or a plaintext.
    let fingerprint = alice.fingerprint();
    assert_no_secret(&[
        alice_id.as_bytes(),
        b"carol-unique-session-id",
        fingerprint.as_bytes(),
        alice.identity().public_key().as_bytes(),
        b"secret plaintext",
        path.to_string_lossy().as_bytes(),
    ]);
    let tagged = lines()
        .into_iter()
        .find(|(_, _, l)| l.contains("reset"))
        .unwrap()
        .2;
    assert!(tagged.contains("session s:"), "{tagged}");
}

#[test]
fn with_the_log_off_nothing_is_formatted() {
    let _guard = start();
    log::set_max_level(LevelFilter::Off);
    let mut bob = Client::in_memory().unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let items: Vec<(String, Vec<u8>)> = encrypt_n(&mut alice, "bob", "m", 3)
        .into_iter()
        .map(|e| ("alice".to_owned(), e))
        .collect();
    run_batch(&mut bob, &items).unwrap();
    assert!(lines().is_empty(), "{:?}", lines());
    // The counts are kept whether or not anything is logged.
    assert_eq!(bob.last_batch_summary().unwrap().decrypted, 3);
}
