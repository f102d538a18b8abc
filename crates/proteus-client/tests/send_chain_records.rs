//! Commits after sending only write each session's sending chain (a send chain record, stored
//! in the staged-keys table under the session's prefix), not the whole session; the session
//! loads as its record with the chain record applied, and any other change writes the whole
//! session and drops the chain record.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TestStorage, chain_key_of, code_of, connect, count_writes, counter_of};
use proteus_client::{Client, ClientError, StoreError, Table, Write};

/// Alice (on `storage`) with sessions to Bob and Carol; each has replied once and Alice has
/// sent since, so she sends on the chain her stored session records hold.
fn group() -> (TestStorage, Client, Client, Client) {
    let storage = TestStorage::new();
    let mut alice = storage.client();
    let mut bob = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    connect(&mut alice, "alice", &mut carol, "carol");
    for (peer, id) in [(&mut bob, "bob"), (&mut carol, "carol")] {
        let reply = peer.encrypt("alice", b"hi").unwrap();
        alice.decrypt(id, &reply).unwrap();
    }
    // The replies' ratchet steps are completed by Alice's next message (new sending chains,
    // written with the whole sessions).
    let ready = alice.encrypt_for(&["bob", "carol"], b"ready").unwrap();
    assert_eq!(
        bob.decrypt("alice", ready[0].as_ref().unwrap()).unwrap(),
        b"ready"
    );
    assert_eq!(
        carol.decrypt("alice", ready[1].as_ref().unwrap()).unwrap(),
        b"ready"
    );
    (storage, alice, bob, carol)
}

fn puts(writes: &[Write]) -> Vec<(Table, Vec<u8>, usize)> {
    writes
        .iter()
        .filter_map(|w| match w {
            Write::Put { table, key, value } => Some((*table, key.clone(), value.len())),
            Write::Delete { .. } => None,
        })
        .collect()
}

#[test]
fn sending_commits_write_send_chain_records_instead_of_sessions() {
    let (storage, mut alice, mut bob, mut carol) = group();
    let before = storage.commits();
    let results = alice.encrypt_for(&["bob", "carol"], b"to all").unwrap();
    let commits = storage.commits_since(before);
    assert_eq!(commits.len(), 1);
    assert_eq!(
        puts(&commits[0]),
        vec![
            (Table::StagedKeys, chain_key_of("bob"), 85),
            (Table::StagedKeys, chain_key_of("carol"), 85),
        ],
        "a fan-out writes 85 bytes per session, no session record"
    );
    assert_eq!(count_writes(&commits[0]).staged_deletes, 0);
    assert_eq!(
        bob.decrypt("alice", results[0].as_ref().unwrap()).unwrap(),
        b"to all"
    );
    assert_eq!(
        carol
            .decrypt("alice", results[1].as_ref().unwrap())
            .unwrap(),
        b"to all"
    );

    // So do single encryptions and batches.
    let before = storage.commits();
    alice.encrypt("bob", b"one").unwrap();
    alice
        .encrypt_batch(&[("bob", b"two"), ("carol", b"three")])
        .unwrap();
    for commit in storage.commits_since(before) {
        assert!(
            puts(&commit)
                .iter()
                .all(|(t, _, len)| *t == Table::StagedKeys && *len == 85)
        );
    }
}

#[test]
fn a_reloaded_session_continues_its_chain_from_the_chain_record() {
    let (storage, mut alice, mut bob, _carol) = group();
    let sent: Vec<Vec<u8>> = (0..3)
        .map(|i| alice.encrypt("bob", format!("m{i}").as_bytes()).unwrap())
        .collect();
    let session_record = storage.dump()[&(Table::Sessions, b"bob".to_vec())].clone();
    drop(alice);

    // Another client on the same records: the session record is the one before the three
    // messages, the chain record moves it on.
    let mut again = storage.client();
    let next = again.encrypt("bob", b"after reopening").unwrap();
    assert_eq!(counter_of(&next), counter_of(&sent[2]) + 1);
    assert_eq!(
        storage.dump()[&(Table::Sessions, b"bob".to_vec())],
        session_record
    );
    for (i, e) in sent.iter().enumerate() {
        assert_eq!(bob.decrypt("alice", e).unwrap(), format!("m{i}").as_bytes());
    }
    assert_eq!(bob.decrypt("alice", &next).unwrap(), b"after reopening");
}

#[test]
fn any_other_change_writes_the_session_and_drops_its_chain_record() {
    let (storage, mut alice, mut bob, _carol) = group();
    let to_bob = alice
        .encrypt_for(&["bob", "carol"], b"one")
        .unwrap()
        .remove(0)
        .unwrap();
    assert_eq!(storage.count(Table::StagedKeys), 2);

    // Bob replies from a new ratchet key: Alice's decrypt changes more than her sending chain.
    bob.decrypt("alice", &to_bob).unwrap();
    let reply = bob.encrypt("alice", b"reply").unwrap();
    let before = storage.commits();
    alice.decrypt("bob", &reply).unwrap();
    let commit = &storage.commits_since(before)[0];
    assert_eq!(count_writes(commit).session_puts, 1);
    assert!(commit.contains(&Write::Delete {
        table: Table::StagedKeys,
        key: chain_key_of("bob"),
    }));
    assert_eq!(
        storage.count(Table::StagedKeys),
        1,
        "only carol's chain record is left"
    );

    // Her next messages are on her new sending chain, stored with the session record (or, if
    // the ratchet step's sending half waits for the first message, by it): chain records
    // follow.
    let before = storage.commits();
    let first = alice.encrypt("bob", b"new chain").unwrap();
    let second = alice.encrypt("bob", b"same chain").unwrap();
    let commits = storage.commits_since(before);
    let first_puts = puts(&commits[0]);
    assert!(
        first_puts == vec![(Table::StagedKeys, chain_key_of("bob"), 85)]
            || count_writes(&commits[0]).session_puts == 1,
        "{first_puts:?}"
    );
    assert_eq!(
        puts(&commits[1]),
        vec![(Table::StagedKeys, chain_key_of("bob"), 85)]
    );
    assert_eq!(bob.decrypt("alice", &first).unwrap(), b"new chain");
    assert_eq!(bob.decrypt("alice", &second).unwrap(), b"same chain");

    // Deleting the session deletes its chain record.
    alice.delete_session("bob").unwrap();
    assert!(
        !storage
            .dump()
            .contains_key(&(Table::StagedKeys, chain_key_of("bob")))
    );
}

#[test]
fn a_damaged_chain_record_is_a_corrupt_store_and_changes_nothing() {
    let (storage, mut alice, _bob, _carol) = group();
    alice.encrypt("bob", b"one").unwrap();
    drop(alice);

    let mut unknown_version = storage.dump()[&(Table::StagedKeys, chain_key_of("bob"))].clone();
    unknown_version[0] = 2;
    let mut truncated = unknown_version.clone();
    truncated[0] = 1;
    truncated.pop();
    let mut of_another_chain = truncated.clone();
    of_another_chain.push(0);
    of_another_chain[20] ^= 1; // a byte of the ratchet key
    for bad in [unknown_version, truncated, of_another_chain] {
        storage.put_raw(Table::StagedKeys, &chain_key_of("bob"), &bad);
        let before = storage.dump();
        let mut client = storage.client();
        let result = client.encrypt("bob", b"never sent");
        assert!(
            matches!(result, Err(ClientError::Store(StoreError::Corrupt(_)))),
            "{result:?}"
        );
        assert_eq!(code_of(&result), 503);
        assert_eq!(storage.dump(), before);
        // The other sessions still work.
        client.encrypt("carol", b"fine").unwrap();
    }
}
