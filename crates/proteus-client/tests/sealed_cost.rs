//! What sealing costs per commit, per batch and per open, on a sealed SQLite store: a timing
//! harness run by hand (`cargo test --release -p proteus-client --test sealed_cost -- --ignored
//! --nocapture`), built the same against two versions for a paired A/B. Uses public API only.
#![cfg(all(feature = "sqlite", feature = "sealed"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic,
    clippy::print_stdout
)]

use std::ops::ControlFlow;
use std::time::Instant;

use proteus_client::{
    Client, MemoryStorage, OpenMode, QueuedMessage, SealedStorage, SqliteOptions, StoreKey,
};

/// Sessions in the store besides the one measured (the store's size).
const SESSIONS: usize = 200;
const ENCRYPTS: usize = 300;
const BATCHES: usize = 20;
const BATCH: usize = 100;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Bob with `SESSIONS` other sessions and one with Alice, on `bob`'s storage.
fn populate(bob: &mut Client) -> Client {
    let mut alice = Client::in_memory().unwrap();
    let bundles = bob.generate_prekeys(SESSIONS + 1).unwrap();
    let mut others = Client::in_memory().unwrap();
    for (i, b) in bundles.iter().enumerate().skip(1) {
        let id = format!("peer{i}");
        others.create_session(&id, &b.to_bytes()).unwrap();
        let hello = others.encrypt(&id, b"hi").unwrap();
        bob.decrypt(&format!("other{i}"), &hello).unwrap();
    }
    alice.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let hello = alice.encrypt("bob", b"hello").unwrap();
    bob.decrypt("alice", &hello).unwrap();
    alice
}

/// Medians: µs per encryption (one commit each), ms per batch of `BATCH` (one commit).
fn measure(bob: &mut Client, alice: &mut Client) -> (f64, f64) {
    let mut per_commit = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        for _ in 0..ENCRYPTS / 5 {
            bob.encrypt("alice", b"a chat message of ordinary length")
                .unwrap();
        }
        per_commit.push(start.elapsed().as_secs_f64() * 1e6 / (ENCRYPTS / 5) as f64);
    }
    let mut per_batch = Vec::new();
    for _ in 0..BATCHES {
        let envelopes: Vec<Vec<u8>> = (0..BATCH)
            .map(|_| {
                alice
                    .encrypt("bob", b"a chat message of ordinary length")
                    .unwrap()
            })
            .collect();
        let queue: Vec<QueuedMessage<'_>> = envelopes
            .iter()
            .map(|e| QueuedMessage {
                session_id: "alice",
                envelope: e,
            })
            .collect();
        let start = Instant::now();
        let results = bob
            .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
            .unwrap();
        per_batch.push(start.elapsed().as_secs_f64() * 1e3);
        assert!(results.iter().all(|r| r.outcome.is_ok()));
    }
    (median(per_commit), median(per_batch))
}

#[test]
#[ignore = "a timing harness, run by hand"]
fn sealed_store_costs() {
    let key = StoreKey::new([7; 32]);
    // In memory: the CPU cost of sealing alone.
    let storage = SealedStorage::open(MemoryStorage::new(), &key).unwrap();
    let mut bob = Client::with_storage(Box::new(storage)).unwrap();
    let mut alice = populate(&mut bob);
    let (mem_commit, mem_batch) = measure(&mut bob, &mut alice);
    drop(bob);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let options = SqliteOptions::default();
    let mut bob = Client::open_sealed(&path, OpenMode::New, &options, &key).unwrap();
    let mut alice = populate(&mut bob);
    let (commit, batch) = measure(&mut bob, &mut alice);
    drop(bob);
    // Per open: the store with SESSIONS + 1 sessions.
    let mut per_open = Vec::new();
    for _ in 0..10 {
        let start = Instant::now();
        let bob = Client::open_sealed(&path, OpenMode::Existing, &options, &key).unwrap();
        per_open.push(start.elapsed().as_secs_f64() * 1e3);
        drop(bob);
    }
    println!(
        "SEALED-COST memory: per-commit-us {mem_commit:.1} per-batch{BATCH}-ms {mem_batch:.3} | \
         sqlite: per-commit-us {commit:.1} per-batch{BATCH}-ms {batch:.2} per-open{}-ms {:.2}",
        SESSIONS + 1,
        median(per_open)
    );
}
