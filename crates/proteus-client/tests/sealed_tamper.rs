//! A sealed store cannot be rolled back record by record (issue 31, High): whoever can write
//! the file but has no key deletes a row, puts back an older row, moves a row to another key or
//! copies one from another store sealed with the same key. Each is refused with
//! `StoreTampered` (514) by the operation that reads the row (opening the store reads them
//! all), and no envelope is ever produced from the rolled-back state. A whole store put back
//! while a client has it open is refused too (`StoreRolledBack`, 511), with or without a guard.
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

use common::connect;
use proteus_client::{
    Client, ClientError, CommitCounter, CounterError, OpenMode, RollbackGuard, SealedStorage,
    SqliteOptions, SqliteStorage, StoreError, StoreKey, Tamper,
};
use rusqlite::{Connection, params};

const TAMPERED: u16 = 514;

/// An operation of a probe.
type Step = Box<dyn Fn(&mut Client) -> Result<(), ClientError>>;
/// A table's rows: (key, value).
type Rows = Vec<(Vec<u8>, Vec<u8>)>;
const ROLLED_BACK: u16 = 511;

fn key() -> StoreKey {
    StoreKey::new([0x42; 32])
}

fn open(path: &Path) -> Result<Client, ClientError> {
    Client::open_sealed(path, OpenMode::Existing, &SqliteOptions::default(), &key())
}

/// A row of a table, by what it holds.
#[derive(Clone, Copy, Debug)]
enum Row {
    Identity,
    NextPreKeyId,
    Manifest,
    PreKey,
    LastResort,
    Session,
    SendChain,
    MessageKey,
}

const ROWS: [Row; 8] = [
    Row::Identity,
    Row::NextPreKeyId,
    Row::Manifest,
    Row::PreKey,
    Row::LastResort,
    Row::Session,
    Row::SendChain,
    Row::MessageKey,
];

impl Row {
    fn table(self) -> &'static str {
        match self {
            Self::Identity | Self::NextPreKeyId | Self::Manifest => "meta",
            Self::PreKey | Self::LastResort => "prekeys",
            Self::Session => "sessions",
            Self::SendChain | Self::MessageKey => "staged_keys",
        }
    }

    /// Whether the row of stored key `k` is one of this kind.
    fn is(self, k: &[u8]) -> bool {
        match self {
            Self::Identity => k == b"identity",
            Self::NextPreKeyId => k == b"next_prekey_id",
            Self::Manifest => k == b"sealed_manifest",
            Self::PreKey => k == [0, 2],
            Self::LastResort => k == [0xff, 0xff],
            Self::Session => true,
            // The stored key of a send chain record is the session id's hash alone.
            Self::SendChain => k.len() == 32,
            Self::MessageKey => k.len() > 32,
        }
    }

    /// Whether using the session (encrypting) reads this row.
    fn holds_the_ratchet(self) -> bool {
        matches!(self, Self::Session | Self::SendChain | Self::MessageKey)
    }
}

fn rows(path: &Path, table: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let conn = Connection::open(path).unwrap();
    let mut stmt = conn
        .prepare(&format!("SELECT key, value FROM {table} ORDER BY key"))
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn row_of(path: &Path, row: Row) -> (Vec<u8>, Vec<u8>) {
    rows(path, row.table())
        .into_iter()
        .find(|(k, _)| row.is(k))
        .unwrap_or_else(|| panic!("no {row:?} row"))
}

fn rows_of(path: &Path, row: Row) -> Vec<(Vec<u8>, Vec<u8>)> {
    rows(path, row.table())
        .into_iter()
        .filter(|(k, _)| row.is(k))
        .collect()
}

fn put(path: &Path, table: &str, k: &[u8], v: &[u8]) {
    Connection::open(path)
        .unwrap()
        .execute(
            &format!("INSERT OR REPLACE INTO {table} (key, value) VALUES (?1, ?2)"),
            params![k, v],
        )
        .unwrap();
}

fn delete(path: &Path, table: &str, k: &[u8]) {
    let n = Connection::open(path)
        .unwrap()
        .execute(&format!("DELETE FROM {table} WHERE key = ?1"), [k])
        .unwrap();
    assert_eq!(n, 1);
}

/// A copy of the closed store at `from` in `dir`, under `name`.
fn copy(from: &Path, dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    for suffix in ["-wal", "-shm"] {
        let mut side = from.as_os_str().to_owned();
        side.push(suffix);
        assert!(!Path::new(&side).exists() || std::fs::metadata(&side).unwrap().len() == 0);
    }
    std::fs::copy(from, &to).unwrap();
    to
}

/// Bob's sealed store with every kind of row: a session with Alice (a send chain record after
/// Bob replied, two staged message keys), two prekeys of one commit and the last-resort one.
/// Returns Alice and the two messages whose keys Bob keeps.
fn bob_store(path: &Path) -> (Client, Vec<Vec<u8>>) {
    let mut bob =
        Client::open_sealed(path, OpenMode::New, &SqliteOptions::default(), &key()).unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    bob.generate_prekeys(2).unwrap();
    let reply = bob.encrypt("alice", b"reply").unwrap();
    alice.decrypt("bob", &reply).unwrap();
    let skipped: Vec<Vec<u8>> = (0..3)
        .map(|i| alice.encrypt("bob", format!("m{i}").as_bytes()).unwrap())
        .collect();
    bob.decrypt("alice", &skipped[2]).unwrap();
    // Bob replies again: his send chain moves on after the session record was written.
    for text in [&b"again"[..], b"and again"] {
        let reply = bob.encrypt("alice", text).unwrap();
        alice.decrypt("bob", &reply).unwrap();
    }
    drop(bob);
    assert_eq!(rows_of(path, Row::MessageKey).len(), 2);
    assert_eq!(rows_of(path, Row::SendChain).len(), 1);
    assert_eq!(rows_of(path, Row::PreKey).len(), 1);
    (alice, skipped[..2].to_vec())
}

/// What happened when a tampered store was used.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The store was refused when opened, with this code.
    RefusedAtOpen(u16),
    /// An operation was refused, with this code, after `envelopes` envelopes were produced.
    Refused { code: u16, envelopes: usize },
    /// Nothing was refused.
    Accepted,
}

/// Opens the store and uses every record: lists sessions and prekeys, encrypts, decrypts the
/// messages whose keys are staged, reads a prekey, makes a prekey.
fn probe(path: &Path, skipped: &[Vec<u8>]) -> Outcome {
    let mut bob = match open(path) {
        Ok(bob) => bob,
        Err(e) => return Outcome::RefusedAtOpen(e.code()),
    };
    let mut envelopes = 0;
    let refused = |r: Result<(), ClientError>, envelopes: usize| {
        r.err().map(|e| Outcome::Refused {
            code: e.code(),
            envelopes,
        })
    };
    if let Some(o) = refused(bob.encrypt("alice", b"probe").map(|_| ()), envelopes) {
        return o;
    }
    envelopes += 1;
    let steps: Vec<Step> = vec![
        Box::new(|b| b.session_ids().map(drop)),
        Box::new(|b| b.prekeys_remaining().map(drop)),
        Box::new(|b| b.last_resort_bundle().map(drop)),
        Box::new(|b| b.prekey_bundle(proteus_core::PreKeyId::new(2)).map(drop)),
        Box::new(|b| b.generate_prekeys(1).map(drop)),
    ];
    for step in &steps {
        if let Some(o) = refused(step(&mut bob), envelopes) {
            return o;
        }
    }
    for m in skipped {
        if let Some(o) = refused(bob.decrypt("alice", m).map(drop), envelopes) {
            return o;
        }
    }
    Outcome::Accepted
}

fn assert_refused(row: Row, what: &str, outcome: &Outcome) {
    match outcome {
        Outcome::RefusedAtOpen(TAMPERED) => {}
        Outcome::Refused {
            code: TAMPERED,
            envelopes,
        } => assert!(
            !row.holds_the_ratchet() || *envelopes == 0,
            "{what} {row:?}: an envelope was produced from rolled-back state"
        ),
        other => panic!("{what} {row:?}: {other:?}"),
    }
}

#[test]
fn a_deleted_row_of_each_kind_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.db");
    let (_alice, skipped) = bob_store(&base);
    // The untouched store is accepted.
    let pristine = copy(&base, dir.path(), "pristine.db");
    assert_eq!(probe(&pristine, &skipped), Outcome::Accepted);
    for row in ROWS {
        let path = copy(&base, dir.path(), &format!("{row:?}.db"));
        let (k, _) = row_of(&path, row);
        delete(&path, row.table(), &k);
        assert_refused(row, "deleted", &probe(&path, &skipped));
    }
}

/// The case: the send chain record deleted while the client has the store open (the
/// session record alone holds an older chain). The next encryption is refused instead of
/// repeating a (chain key, counter); a staged key deleted the same way is refused instead of
/// coming back as "already seen".
#[test]
fn a_row_deleted_under_a_running_client_is_refused_when_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, skipped) = bob_store(&path);
    let mut bob = open(&path).unwrap();
    let (chain, _) = row_of(&path, Row::SendChain);
    delete(&path, "staged_keys", &chain);
    assert_eq!(
        bob.encrypt("alice", b"x").map(drop).unwrap_err().code(),
        TAMPERED
    );
    drop(bob);

    let path = dir.path().join("bob2.db");
    let (_alice, skipped2) = bob_store(&path);
    let mut bob = open(&path).unwrap();
    for (k, _) in rows_of(&path, Row::MessageKey) {
        delete(&path, "staged_keys", &k);
    }
    let e = bob.decrypt("alice", &skipped2[0]).unwrap_err();
    assert_eq!(e.code(), TAMPERED, "{e:?}");
    let _ = skipped;
}

#[test]
fn an_older_row_of_each_table_put_back_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (mut alice, skipped) = bob_store(&path);
    let old: Vec<(&str, Rows)> = ["meta", "prekeys", "sessions", "staged_keys"]
        .into_iter()
        .map(|t| (t, rows(&path, t)))
        .collect();
    // Bob goes on: replies (send chain), reads a skipped message (a staged key deleted, the
    // session written), gets a new session from prekey 2 (consumed) and makes a prekey.
    {
        let mut bob = open(&path).unwrap();
        let reply = bob.encrypt("alice", b"later").unwrap();
        alice.decrypt("bob", &reply).unwrap();
        bob.decrypt("alice", &skipped[0]).unwrap();
        let mut carol = Client::in_memory().unwrap();
        let bundle = bob
            .prekey_bundle(proteus_core::PreKeyId::new(2))
            .unwrap()
            .to_bytes();
        carol.create_session("bob", &bundle).unwrap();
        let hello = carol.encrypt("bob", b"hi").unwrap();
        bob.decrypt("carol", &hello).unwrap();
        bob.generate_prekeys(1).unwrap();
    }
    let mut spliced = std::collections::BTreeMap::<&str, usize>::new();
    for (table, old_rows) in &old {
        let now = rows(&path, table);
        for (i, (k, v)) in old_rows.iter().enumerate() {
            if now.iter().any(|(nk, nv)| nk == k && nv == v) {
                continue;
            }
            let copy = copy(&path, dir.path(), &format!("{table}-{i}.db"));
            put(&copy, table, k, v);
            let row = ROWS
                .into_iter()
                .find(|r| r.table() == *table && r.is(k))
                .unwrap();
            assert_refused(row, "put back", &probe(&copy, &skipped[1..]));
            *spliced.entry(table).or_default() += 1;
        }
    }
    for table in ["meta", "prekeys", "sessions", "staged_keys"] {
        assert!(spliced.get(table).copied().unwrap_or(0) > 0, "{spliced:?}");
    }
}

#[test]
fn rows_swapped_between_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.db");
    let (_alice, skipped) = bob_store(&base);
    // Pairs of one table; the two prekeys of one commit and the two staged keys of one
    // commit share a commit, so only the binding to the key tells them apart.
    let pairs = [
        (Row::Identity, Row::NextPreKeyId),
        (Row::PreKey, Row::LastResort),
        (Row::SendChain, Row::MessageKey),
    ];
    for (a, b) in pairs {
        let path = copy(&base, dir.path(), &format!("{a:?}-{b:?}.db"));
        let (ka, va) = row_of(&path, a);
        let (kb, vb) = row_of(&path, b);
        put(&path, a.table(), &ka, &vb);
        put(&path, b.table(), &kb, &va);
        assert_refused(a, "swapped", &probe(&path, &skipped));
    }
    // The two staged message keys (one commit wrote both).
    let path = copy(&base, dir.path(), "message-keys.db");
    let keys = rows_of(&path, Row::MessageKey);
    put(&path, "staged_keys", &keys[0].0, &keys[1].1);
    put(&path, "staged_keys", &keys[1].0, &keys[0].1);
    assert_refused(Row::MessageKey, "swapped", &probe(&path, &skipped));
    // The prekeys 1 and 2 (one commit).
    let path = copy(&base, dir.path(), "prekeys.db");
    let prekeys = rows(&path, "prekeys");
    let (k2, v2) = prekeys.iter().find(|(k, _)| k == &[0, 2]).unwrap().clone();
    let (k3, v3) = prekeys.iter().find(|(k, _)| k == &[0, 1]).unwrap().clone();
    put(&path, "prekeys", &k2, &v3);
    put(&path, "prekeys", &k3, &v2);
    assert_refused(Row::PreKey, "swapped", &probe(&path, &skipped));
}

#[test]
fn a_row_from_another_store_with_the_same_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.db");
    let b = dir.path().join("b.db");
    // Two stores made the same way, with the same key: their rows have the same stored keys
    // and were written by the same commits.
    let (_alice_a, skipped) = bob_store(&a);
    let (_alice_b, _) = bob_store(&b);
    for row in ROWS {
        let path = copy(&a, dir.path(), &format!("{row:?}.db"));
        let (k, _) = row_of(&path, row);
        let Some((_, foreign)) = rows_of(&b, row).into_iter().find(|(kb, _)| *kb == k) else {
            continue;
        };
        put(&path, row.table(), &k, &foreign);
        assert_refused(row, "foreign", &probe(&path, &skipped));
    }
}

/// The errors are typed: the store layer says which table and what is wrong.
#[test]
fn the_error_names_the_table_and_the_fault() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let (_alice, _) = bob_store(&path);
    let prekeys = rows(&path, "prekeys");
    let (k2, v2) = prekeys.iter().find(|(k, _)| k == &[0, 2]).unwrap().clone();
    let (k3, v3) = prekeys.iter().find(|(k, _)| k == &[0, 1]).unwrap().clone();
    put(&path, "prekeys", &k2, &v3);
    put(&path, "prekeys", &k3, &v2);
    let bob = open(&path).unwrap();
    match bob.prekey_bundle(proteus_core::PreKeyId::new(2)) {
        Err(ClientError::Store(StoreError::Tampered { table, fault })) => {
            assert_eq!(table, Some(proteus_client::Table::PreKeys));
            assert_eq!(fault, Tamper::NotCommitted);
        }
        other => panic!("{other:?}"),
    }
    drop(bob);
    delete(&path, "prekeys", &k2);
    match open(&path) {
        Err(ClientError::Store(StoreError::Tampered { fault, .. })) => {
            assert_eq!(fault, Tamper::Manifest);
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

/// The application's counter, kept outside the store.
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

/// Replaces every record of the store at `path` with those of `older` (another connection,
/// one transaction: as a sync tool or a restore that writes through SQLite would).
fn replace_with(path: &Path, older: &Path) {
    let conn = Connection::open(path).unwrap();
    conn.execute("ATTACH DATABASE ?1 AS old", [older.to_str().unwrap()])
        .unwrap();
    let mut sql = String::from("BEGIN IMMEDIATE;");
    for t in ["meta", "prekeys", "sessions", "staged_keys"] {
        sql.push_str(&format!(
            "DELETE FROM main.{t}; INSERT INTO main.{t} SELECT * FROM old.{t};"
        ));
    }
    sql.push_str("COMMIT;");
    conn.execute_batch(&sql).unwrap();
}

/// A whole store put back from an older copy while a client has it open: refused at the next
/// operation, with a guard (its count) and without one (the manifest never goes back under an
/// open handle); no envelope from the old ratchet.
#[test]
fn a_store_replaced_under_a_running_client_is_refused() {
    for guarded in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bob.db");
        let keychain = Keychain::default();
        let open_bob = |path: &Path| -> Result<Client, ClientError> {
            let sqlite =
                SqliteStorage::open(path, OpenMode::ExistingOrNew, &SqliteOptions::default())?;
            let sealed = SealedStorage::open(sqlite, &key())?;
            if guarded {
                let guard = RollbackGuard::open(sealed, Box::new(keychain.clone()))?;
                Client::with_storage(Box::new(guard))
            } else {
                Client::with_storage(Box::new(sealed))
            }
        };
        let mut bob = open_bob(&path).unwrap();
        let mut alice = Client::in_memory().unwrap();
        connect(&mut alice, "alice", &mut bob, "bob");
        bob.encrypt("alice", b"one").unwrap();
        drop(bob);
        let older = copy(&path, dir.path(), "older.db");
        let mut bob = open_bob(&path).unwrap();
        bob.encrypt("alice", b"two").unwrap();
        replace_with(&path, &older);
        let e = bob.encrypt("alice", b"three").unwrap_err();
        assert_eq!(e.code(), ROLLED_BACK, "guarded: {guarded}: {e:?}");
        drop(bob);
        // Opened again: the guard refuses it; without one, the old copy is consistent with
        // itself (the guard's case).
        if guarded {
            assert_eq!(open_bob(&path).err().map(|e| e.code()), Some(ROLLED_BACK));
        }
    }
}
