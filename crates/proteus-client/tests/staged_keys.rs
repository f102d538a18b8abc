//! Staged (skipped-message) keys are stored as records of their own, so a session holding a
//! thousand of them is not rewritten whole for every message: a commit writes the session
//! record plus only the staged keys that came or went.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{CommitCounts, TestStorage, code_of, connect, count_writes, encrypt_n};
use proteus_client::{Client, Table, Write};

/// Alice sends 1001 messages after the handshake; Bob receives only the last (1000 staged).
fn thousand_staged() -> (TestStorage, Client, Client, Vec<Vec<u8>>) {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let msgs = encrypt_n(&mut alice, "bob", "m", 1001);
    let before = storage.commits();
    assert_eq!(bob.decrypt("alice", &msgs[1000]).unwrap(), b"m 1000");
    let c = storage.commits_since(before);
    assert_eq!(c.len(), 1);
    assert_eq!(
        count_writes(&c[0]),
        CommitCounts {
            session_puts: 1,
            staged_puts: 1000,
            ..CommitCounts::default()
        },
        "the commit that staged the keys writes each once"
    );
    assert_eq!(storage.count(Table::StagedKeys), 1000);
    (storage, alice, bob, msgs)
}

fn session_record_len(writes: &[Write]) -> usize {
    writes
        .iter()
        .find_map(|w| match w {
            Write::Put {
                table: Table::Sessions,
                value,
                ..
            } => Some(value.len()),
            _ => None,
        })
        .unwrap()
}

#[test]
fn an_in_chain_message_does_not_rewrite_the_staged_keys() {
    let (storage, mut alice, mut bob, _) = thousand_staged();
    for i in 0..3 {
        let e = alice
            .encrypt("bob", format!("next {i}").as_bytes())
            .unwrap();
        let before = storage.commits();
        assert_eq!(
            bob.decrypt("alice", &e).unwrap(),
            format!("next {i}").as_bytes()
        );
        let c = storage.commits_since(before);
        assert_eq!(c.len(), 1);
        let counts = count_writes(&c[0]);
        assert_eq!(counts.session_puts, 1, "{counts:?}");
        assert!(
            counts.staged_puts + counts.staged_deletes <= 2,
            "an in-chain message rewrote staged keys: {counts:?}"
        );
        assert_eq!(
            counts.other + counts.prekey_puts + counts.prekey_deletes,
            0,
            "{counts:?}"
        );
        // The session record itself does not carry the thousand keys (each is ~100 bytes).
        assert!(
            session_record_len(&c[0]) < 4096,
            "session record of {} bytes",
            session_record_len(&c[0])
        );
    }
    assert_eq!(storage.count(Table::StagedKeys), 1000);
}

#[test]
fn a_late_message_deletes_exactly_its_staged_key() {
    let (storage, _alice, mut bob, msgs) = thousand_staged();
    for i in [0usize, 500, 999, 1, 250] {
        let before = storage.commits();
        assert_eq!(
            bob.decrypt("alice", &msgs[i]).unwrap(),
            format!("m {i}").as_bytes()
        );
        let c = storage.commits_since(before);
        assert_eq!(c.len(), 1);
        assert_eq!(
            count_writes(&c[0]),
            CommitCounts {
                session_puts: 1,
                staged_deletes: 1,
                ..CommitCounts::default()
            },
            "message {i}"
        );
    }
    assert_eq!(storage.count(Table::StagedKeys), 995);
    // A rejected (duplicate) late message commits nothing.
    let before = storage.commits();
    assert_eq!(code_of(&bob.decrypt("alice", &msgs[500])), 209);
    assert_eq!(storage.commits(), before);
}

/// In a batch, keys staged and consumed within the batch are never written; the commit writes
/// only the net change.
#[test]
fn a_batch_writes_only_the_net_change_of_staged_keys() {
    let (storage, mut alice, mut bob, msgs) = thousand_staged();
    let newer = encrypt_n(&mut alice, "bob", "n", 10);
    // Late messages 0..10 (10 staged keys consumed), then newer[9] (stages newer[0..9]), then
    // newer[0..5] (consumed again within the batch).
    let mut items: Vec<(String, Vec<u8>)> = (0..10)
        .map(|i| ("alice".to_owned(), msgs[i].clone()))
        .collect();
    items.push(("alice".to_owned(), newer[9].clone()));
    items.extend((0..5).map(|i| ("alice".to_owned(), newer[i].clone())));
    let before = storage.commits();
    let r = common::run_batch(&mut bob, &items).unwrap();
    assert!(r.iter().all(|m| m.outcome.is_ok()));
    let c = storage.commits_since(before);
    assert_eq!(c.len(), 1);
    assert_eq!(
        count_writes(&c[0]),
        CommitCounts {
            session_puts: 1,
            staged_puts: 4,
            staged_deletes: 10,
            ..CommitCounts::default()
        }
    );
    assert_eq!(storage.count(Table::StagedKeys), 1000 - 10 + 4);
}

/// Staged keys are loaded back with their session: a new client on the same records decrypts
/// the late messages, and eviction beyond the limit is reflected in storage.
#[test]
fn staged_keys_are_reloaded_and_evictions_are_stored() {
    let (storage, mut alice, mut bob, msgs) = thousand_staged();
    // Two more skipped: the chain holds at most 1000 staged keys, so the two oldest are evicted.
    let more = encrypt_n(&mut alice, "bob", "more", 3);
    let before = storage.commits();
    bob.decrypt("alice", &more[2]).unwrap();
    let c = storage.commits_since(before);
    assert_eq!(
        count_writes(&c[0]),
        CommitCounts {
            session_puts: 1,
            staged_puts: 2,
            staged_deletes: 2,
            ..CommitCounts::default()
        }
    );
    assert_eq!(storage.count(Table::StagedKeys), 1000);
    drop(bob);

    let mut bob = storage.client();
    assert_eq!(
        code_of(&bob.decrypt("alice", &msgs[0])),
        214,
        "evicted, never decrypted: MessageKeyEvicted, not outdated"
    );
    assert_eq!(code_of(&bob.decrypt("alice", &msgs[1])), 214);
    for i in [2usize, 700, 999] {
        assert_eq!(
            bob.decrypt("alice", &msgs[i]).unwrap(),
            format!("m {i}").as_bytes()
        );
    }
    assert_eq!(bob.decrypt("alice", &more[0]).unwrap(), b"more 0");
    assert_eq!(code_of(&bob.decrypt("alice", &msgs[1000])), 209);
    assert_eq!(storage.count(Table::StagedKeys), 1000 - 4);
}

/// The same with SQLite: the thousand staged keys survive reopening the file.
#[cfg(feature = "sqlite")]
#[test]
fn staged_keys_survive_reopening_the_sqlite_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let mut alice = Client::in_memory().unwrap();
    let msgs = {
        let mut bob = Client::open(&path).unwrap();
        connect(&mut alice, "alice", &mut bob, "bob");
        let msgs = encrypt_n(&mut alice, "bob", "m", 1001);
        bob.decrypt("alice", &msgs[1000]).unwrap();
        msgs
    };
    let mut bob = Client::open(&path).unwrap();
    for i in [999usize, 0, 500] {
        assert_eq!(
            bob.decrypt("alice", &msgs[i]).unwrap(),
            format!("m {i}").as_bytes()
        );
    }
    drop(bob);
    let mut bob = Client::open(&path).unwrap();
    assert_eq!(code_of(&bob.decrypt("alice", &msgs[500])), 209);
    assert_eq!(bob.decrypt("alice", &msgs[501]).unwrap(), b"m 501");
    let exported = bob.export_session("alice").unwrap();
    assert!(
        exported.len() > 997 * 32,
        "the export carries the staged keys ({} bytes)",
        exported.len()
    );
}

/// Staged keys of one session are not touched by another session's commits, even when one
/// session id is a prefix of the other.
#[test]
fn staged_keys_are_kept_per_session() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut a = Client::in_memory().unwrap();
    let mut b = Client::in_memory().unwrap();
    connect(&mut a, "al", &mut bob, "bob");
    connect(&mut b, "alice", &mut bob, "bob");
    let from_a = encrypt_n(&mut a, "bob", "a", 4);
    let from_b = encrypt_n(&mut b, "bob", "b", 6);
    bob.decrypt("al", &from_a[3]).unwrap();
    bob.decrypt("alice", &from_b[5]).unwrap();
    assert_eq!(storage.count(Table::StagedKeys), 3 + 5);
    bob.delete_session("al").unwrap();
    assert_eq!(storage.count(Table::StagedKeys), 5);
    let mut bob = storage.client();
    for (i, m) in from_b.iter().take(5).enumerate() {
        assert_eq!(
            bob.decrypt("alice", m).unwrap(),
            format!("b {i}").as_bytes()
        );
    }
    assert_eq!(storage.count(Table::StagedKeys), 0);
}
