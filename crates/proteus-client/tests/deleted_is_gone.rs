//! What is deleted is gone from disk: after a commit, no byte of a consumed one-time prekey, a
//! superseded session state, a used staged message key or a deleted session may remain in the
//! SQLite files (main file, `-wal`, `-shm`), plain or sealed, nor plaintext after `seal_store`,
//! nor the old ciphertext after `rekey_store`. Otherwise whoever later gets the file (and the
//! archived envelopes) reads messages already read: forward secrecy would not hold at rest.
#![cfg(all(feature = "sqlite", feature = "sealed"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{connect, encrypt_n, run_batch};
use proteus_client::{
    Client, Freshness, OpenMode, Record, SealedStorage, SqliteOptions, SqliteStorage, Storage,
    StoreError, StoreKey, Table, Write, rekey_store, seal_store,
};
use zeroize::Zeroizing;

/// Every value ever put, with its table and key.
type Log = Arc<Mutex<Vec<(Table, Vec<u8>, Vec<u8>)>>>;

/// A storage that remembers every value put through it.
struct Recording<S> {
    inner: S,
    log: Log,
}

impl<S: Storage> Recording<S> {
    fn new(inner: S) -> (Self, Log) {
        let log = Log::default();
        (
            Self {
                inner,
                log: log.clone(),
            },
            log,
        )
    }
}

impl<S: Storage> Storage for Recording<S> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        self.inner.get(table, key)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        self.inner.scan(table, prefix)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        self.inner.commit(writes)?;
        let mut log = self.log.lock().unwrap();
        for w in writes {
            if let Write::Put { table, key, value } = w {
                log.push((*table, key.clone(), value.to_vec()));
            }
        }
        Ok(())
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        self.inner.begin()
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.inner.end()
    }

    fn erase_deleted(&mut self) -> Result<bool, StoreError> {
        self.inner.erase_deleted()
    }
}

/// The secrets in a Proteus CBOR record: every 32-byte byte string (chain, root and message
/// keys; public keys too, which is harmless) and the seed half of every 64-byte secret key.
fn secrets_in(record: &[u8]) -> Vec<[u8; 32]> {
    let mut out = Vec::new();
    for i in 0..record.len().saturating_sub(33) {
        if record[i] == 0x58 && matches!(record[i + 1], 0x20 | 0x40) {
            out.push(record[i + 2..i + 34].try_into().unwrap());
        }
    }
    out
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The live records, as `storage` reads them.
fn live(storage: &dyn Storage) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for table in Table::ALL {
        for (_, v) in storage.scan(table, &[]).unwrap() {
            out.push(v.to_vec());
        }
    }
    out
}

/// The chain key of a send chain record (`1 ‖ tag ‖ ratchet key ‖ index ‖ chain key`, stored in
/// the staged-keys table under the session's prefix alone), which is no CBOR.
fn send_chain_key_in(table: Table, key: &[u8], value: &[u8]) -> Option<[u8; 32]> {
    let prefix_only =
        key.len() >= 2 && usize::from(u16::from_be_bytes([key[0], key[1]])) == key.len() - 2;
    if table != Table::StagedKeys || !prefix_only || value.len() != 85 || value[0] != 1 {
        return None;
    }
    Some(value[53..85].try_into().unwrap())
}

/// The secrets that were written at some point but are in no live record any more.
fn deleted_secrets(log: &Log, live: &[Vec<u8>]) -> Vec<(Table, [u8; 32])> {
    let mut out: Vec<(Table, [u8; 32])> = Vec::new();
    for (table, key, value) in log.lock().unwrap().iter() {
        let chain_key = send_chain_key_in(*table, key, value);
        for s in secrets_in(value).into_iter().chain(chain_key) {
            if !live.iter().any(|l| contains(l, &s)) && !out.iter().any(|(_, o)| *o == s) {
                out.push((*table, s));
            }
        }
    }
    out
}

/// 32-byte pieces of every sealed value that was written but is not stored any more.
fn deleted_sealed_pieces(log: &Log, live: &[Vec<u8>]) -> Vec<(Table, [u8; 32])> {
    let mut out = Vec::new();
    for (table, _, value) in log.lock().unwrap().iter() {
        if !live.contains(value) {
            for piece in value.chunks_exact(32) {
                out.push((*table, piece.try_into().unwrap()));
            }
        }
    }
    out
}

fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(suffix);
    PathBuf::from(p)
}

/// The raw bytes of the store's files that exist: the main file, `-wal` and `-shm`.
fn raw_files(path: &Path) -> Vec<(String, Vec<u8>)> {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|s| {
            std::fs::read(sibling(path, s))
                .ok()
                .map(|b| (format!("file{s}"), b))
        })
        .collect()
}

fn per_table(pieces: &[(Table, [u8; 32])]) -> Vec<(Table, usize)> {
    Table::ALL
        .iter()
        .map(|t| (*t, pieces.iter().filter(|(p, _)| p == t).count()))
        .collect()
}

/// Bob consumes a one-time prekey, ratchets a few times, stages and then uses skipped message
/// keys, decrypts a batch, and deletes a second session.
fn converse(bob: &mut Client) {
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", bob, "bob");
    for round in 0..3 {
        for e in encrypt_n(bob, "alice", &format!("bob {round}"), 2) {
            alice.decrypt("bob", &e).unwrap();
        }
        for e in encrypt_n(&mut alice, "bob", &format!("alice {round}"), 2) {
            bob.decrypt("alice", &e).unwrap();
        }
    }
    // Out of order: the last first stages four keys, the others use them up one by one.
    let skipped = encrypt_n(&mut alice, "bob", "skipped", 5);
    bob.decrypt("alice", &skipped[4]).unwrap();
    for e in &skipped[..4] {
        bob.decrypt("alice", e).unwrap();
    }
    let batch: Vec<(String, Vec<u8>)> = encrypt_n(&mut alice, "bob", "batch", 3)
        .into_iter()
        .map(|e| ("alice".to_owned(), e))
        .collect();
    assert!(
        run_batch(bob, &batch)
            .unwrap()
            .iter()
            .all(|d| d.outcome.is_ok())
    );
    // Sending only: the commits write send chain records, each superseding the last.
    for round in 0..3 {
        let results = bob
            .encrypt_for(&["alice", "alice"], format!("to all {round}").as_bytes())
            .unwrap();
        assert!(results.iter().all(Result::is_ok));
    }
    let mut carol = Client::in_memory().unwrap();
    connect(&mut carol, "carol", bob, "bob");
    bob.delete_session("carol").unwrap();
}

/// How many superseded send chain keys `log` holds: the scenario must have some.
fn superseded_chain_keys(log: &Log, deleted: &[(Table, [u8; 32])]) -> usize {
    log.lock()
        .unwrap()
        .iter()
        .filter_map(|(table, key, value)| send_chain_key_in(*table, key, value))
        .filter(|k| deleted.iter().any(|(_, d)| d == k))
        .count()
}

/// Files as they are now: taken right after a commit while the store is still open.
fn snapshot(path: &Path, when: &str) -> Vec<(String, Vec<u8>)> {
    raw_files(path)
        .into_iter()
        .map(|(name, bytes)| (format!("{name} ({when})"), bytes))
        .collect()
}

/// Asserts that none of `pieces` occurs in any of the file snapshots.
fn assert_gone(pieces: &[(Table, [u8; 32])], snapshots: &[(String, Vec<u8>)], what: &str) {
    let counts = per_table(pieces);
    let mut found = Vec::new();
    for (table, piece) in pieces {
        let places: Vec<&str> = snapshots
            .iter()
            .filter(|(_, bytes)| contains(bytes, piece))
            .map(|(name, _)| name.as_str())
            .collect();
        if !places.is_empty() {
            found.push(format!("{table:?} in {places:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "{what}: {} of {} deleted 32-byte pieces ({counts:?}) are still on disk: {found:#?}",
        found.len(),
        pieces.len()
    );
}

/// The scenario must delete secrets of every kind, or the test proves nothing.
fn assert_meaningful(pieces: &[(Table, [u8; 32])], tables: &[Table], at_least: usize) {
    let counts = per_table(pieces);
    assert!(pieces.len() >= at_least, "too few secrets: {counts:?}");
    for table in tables {
        assert!(
            pieces.iter().any(|(t, _)| t == table),
            "no deleted {table:?} secret: {counts:?}"
        );
    }
}

fn sqlite(path: &Path, mode: OpenMode) -> SqliteStorage {
    SqliteStorage::open(path, mode, &SqliteOptions::default()).unwrap()
}

fn key(b: u8) -> StoreKey {
    StoreKey::new([b; 32])
}

const DELETING: [Table; 3] = [Table::PreKeys, Table::Sessions, Table::StagedKeys];

#[test]
fn deleted_secrets_are_gone_from_a_plain_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (recording, log) = Recording::new(sqlite(&path, OpenMode::New));
    let mut bob = Client::with_storage(Box::new(recording)).unwrap();
    converse(&mut bob);
    let mut files = snapshot(&path, "open");
    drop(bob);
    files.extend(snapshot(&path, "closed"));
    // Closing changes no record: what is live now was live after the last commit.
    let deleted = deleted_secrets(&log, &live(&sqlite(&path, OpenMode::Existing)));
    assert_meaningful(&deleted, &DELETING, 20);
    assert!(superseded_chain_keys(&log, &deleted) >= 3);
    assert_gone(&deleted, &files, "plain store");
}

/// Shared by two processes (an app, open and idle, and its extension at work): the idle one
/// holds no lock, so the checkpoint after each commit still empties the WAL.
#[test]
fn deleted_secrets_are_gone_while_another_client_has_the_store_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (recording, log) = Recording::new(sqlite(&path, OpenMode::New));
    let mut bob = Client::with_storage(Box::new(recording)).unwrap();
    let idle = Client::with_storage(Box::new(sqlite(&path, OpenMode::Existing))).unwrap();
    assert_eq!(idle.fingerprint(), bob.fingerprint());
    converse(&mut bob);
    let files = snapshot(&path, "open twice");
    let deleted = deleted_secrets(&log, &live(&sqlite(&path, OpenMode::Existing)));
    assert_meaningful(&deleted, &DELETING, 20);
    assert!(superseded_chain_keys(&log, &deleted) >= 3);
    assert_gone(&deleted, &files, "shared store");
    drop(idle);
}

#[test]
fn deleted_records_are_gone_from_a_sealed_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    // Outside the seal the plaintext is recorded, inside it the sealed bytes.
    let (inner, sealed_log) = Recording::new(sqlite(&path, OpenMode::New));
    let sealed = SealedStorage::open(inner, &key(1)).unwrap();
    let (recording, log) = Recording::new(sealed);
    let mut bob = Client::with_storage(Box::new(recording)).unwrap();
    converse(&mut bob);
    let mut files = snapshot(&path, "open");
    drop(bob);
    files.extend(snapshot(&path, "closed"));
    let raw = sqlite(&path, OpenMode::Existing);
    let live_sealed = live(&raw);
    let live_plain = live(&SealedStorage::open(raw, &key(1)).unwrap());
    let deleted = deleted_secrets(&log, &live_plain);
    assert_meaningful(&deleted, &DELETING, 20);
    assert!(superseded_chain_keys(&log, &deleted) >= 3);
    assert_gone(&deleted, &files, "sealed store, plaintext");
    // With the store key, old sealed records would open: their bytes must be gone too.
    let pieces = deleted_sealed_pieces(&sealed_log, &live_sealed);
    assert_meaningful(&pieces, &DELETING, 20);
    assert_gone(&pieces, &files, "sealed store, sealed records");
}

#[test]
fn no_plaintext_remains_after_seal_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let mut bob = Client::open(&path).unwrap();
    converse(&mut bob);
    drop(bob);
    let plain: Vec<(Table, [u8; 32])> = {
        let raw = sqlite(&path, OpenMode::Existing);
        let mut out = Vec::new();
        for table in Table::ALL {
            for (_, v) in raw.scan(table, &[]).unwrap() {
                out.extend(secrets_in(&v).into_iter().map(|s| (table, s)));
            }
        }
        out
    };
    assert_meaningful(&plain, &[Table::Meta, Table::PreKeys, Table::Sessions], 10);
    seal_store(&path, &key(2)).unwrap();
    assert_gone(&plain, &snapshot(&path, "sealed"), "after seal_store");
    assert!(
        Client::open_sealed(
            &path,
            OpenMode::Existing,
            &SqliteOptions::default(),
            &key(2)
        )
        .is_ok()
    );
}

#[test]
fn no_old_ciphertext_remains_after_rekey_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let mut bob =
        Client::open_sealed(&path, OpenMode::New, &SqliteOptions::default(), &key(3)).unwrap();
    converse(&mut bob);
    drop(bob);
    let old: Vec<(Table, [u8; 32])> = {
        let raw = sqlite(&path, OpenMode::Existing);
        let mut out = Vec::new();
        for table in Table::ALL {
            for (_, v) in raw.scan(table, &[]).unwrap() {
                out.extend(v.chunks_exact(32).map(|c| (table, c.try_into().unwrap())));
            }
        }
        out
    };
    assert_meaningful(&old, &[Table::Meta, Table::PreKeys, Table::Sessions], 20);
    rekey_store(&path, &key(3), &key(4)).unwrap();
    assert_gone(&old, &snapshot(&path, "rekeyed"), "after rekey_store");
    assert!(
        Client::open_sealed(
            &path,
            OpenMode::Existing,
            &SqliteOptions::default(),
            &key(4)
        )
        .is_ok()
    );
}

/// A store written before `secure_delete` was on (the golden v1 store) may hold old records in
/// free pages: after `seal_store` no plaintext piece of the old file may remain.
#[test]
fn no_plaintext_of_an_old_store_remains_after_seal_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let golden = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/store-v1.sqlite");
    std::fs::copy(golden, &path).unwrap();
    let old = std::fs::read(&path).unwrap();
    let plain: Vec<(Table, [u8; 32])> = secrets_in(&old)
        .into_iter()
        .map(|s| (Table::Meta, s))
        .collect();
    assert!(plain.len() >= 20, "{}", plain.len());
    seal_store(&path, &key(5)).unwrap();
    // Record keys stay in the clear (staged-key ids hold the chain's public ratchet key).
    let keys: Vec<Vec<u8>> = {
        let raw = sqlite(&path, OpenMode::Existing);
        let mut keys = Vec::new();
        for table in Table::ALL {
            keys.extend(raw.scan(table, &[]).unwrap().into_iter().map(|(k, _)| k));
        }
        keys
    };
    let plain: Vec<(Table, [u8; 32])> = plain
        .into_iter()
        .filter(|(_, s)| !keys.iter().any(|k| contains(k, s)))
        .collect();
    assert!(plain.len() >= 20, "{}", plain.len());
    assert_gone(
        &plain,
        &snapshot(&path, "sealed"),
        "old store after seal_store",
    );
}

/// Issue 31, Medium 1: a reader (a backup agent, the other process) holds a snapshot from
/// before the commit that consumes a one-time prekey, so that commit's checkpoint cannot
/// complete and the prekey's secret stays on disk. Once the reader lets go, the next call of
/// the client, a read-only one too, completes the checkpoint; `erase_deleted` forces it,
/// reporting `false` while the reader holds on and `true` once it has let go.
#[test]
fn deleted_secrets_are_gone_once_a_reader_of_an_older_snapshot_lets_go() {
    for forced in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bob.db");
        let options = SqliteOptions {
            busy_timeout: std::time::Duration::from_millis(200),
        };
        let (recording, log) =
            Recording::new(SqliteStorage::open(&path, OpenMode::New, &options).unwrap());
        let mut bob = Client::with_storage(Box::new(recording)).unwrap();
        let mut alice = Client::in_memory().unwrap();
        let bundle = common::bundle_of(&mut bob);
        alice.create_session("bob", &bundle).unwrap();
        let hello = alice.encrypt("bob", b"hello").unwrap();

        // The reader's snapshot: before the prekey is consumed.
        let reader = rusqlite::Connection::open(&path).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        let prekeys: i64 = reader
            .query_row("SELECT count(*) FROM prekeys", [], |r| r.get(0))
            .unwrap();
        assert_eq!(prekeys, 2);
        assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello");

        let live_now = {
            let conn = rusqlite::Connection::open(&path).unwrap();
            let mut out = Vec::new();
            for table in Table::ALL {
                let mut stmt = conn
                    .prepare(&format!("SELECT value FROM {}", table.name()))
                    .unwrap();
                out.extend(
                    stmt.query_map([], |r| r.get::<_, Vec<u8>>(0))
                        .unwrap()
                        .map(Result::unwrap),
                );
            }
            out
        };
        let deleted = deleted_secrets(&log, &live_now);
        assert_meaningful(&deleted, &[Table::PreKeys], 1);
        // The exception: while the reader holds its snapshot, the secret is on disk.
        let held = snapshot(&path, "reader holds");
        assert!(
            deleted
                .iter()
                .any(|(_, s)| held.iter().any(|(_, b)| contains(b, s))),
            "the reader did not hold up the checkpoint: the test proves nothing"
        );
        if forced {
            assert!(
                !bob.erase_deleted().unwrap(),
                "reported done under a reader"
            );
        }

        reader.execute_batch("COMMIT").unwrap();
        drop(reader);
        if forced {
            assert!(bob.erase_deleted().unwrap());
        } else {
            // Any later call: this one reads only.
            assert!(bob.has_session("alice").unwrap());
        }
        assert_gone(
            &deleted,
            &snapshot(&path, "reader gone"),
            &format!("after the reader let go (forced: {forced})"),
        );
        drop(bob);
    }
}
