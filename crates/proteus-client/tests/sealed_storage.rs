//! `SealedStorage` over any `Storage` (here the in-memory one): a client works on it, and its
//! scans keep the inner store's key order and prefixes although keys are sealed.
#![cfg(feature = "sealed")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::connect;
use proteus_client::{Client, SealedStorage, Storage, StoreKey, Table};

fn key(b: u8) -> StoreKey {
    StoreKey::new([b; 32])
}

#[test]
fn sealed_memory_storage_works_like_any_storage() {
    let storage = SealedStorage::open(proteus_client::MemoryStorage::new(), &key(7)).unwrap();
    let mut bob = Client::with_storage(Box::new(storage)).unwrap();
    let mut alice = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let m = alice.encrypt("bob", b"x").unwrap();
    assert_eq!(bob.decrypt("alice", &m).unwrap(), b"x");
}

#[test]
fn sealed_scans_keep_key_order_and_prefixes() {
    use proteus_client::{MemoryStorage, Write};
    use zeroize::Zeroizing;
    let mut s = SealedStorage::open(MemoryStorage::new(), &key(8)).unwrap();
    let staged = |id: &str, n: u8| {
        let mut k = u16::try_from(id.len()).unwrap().to_be_bytes().to_vec();
        k.extend_from_slice(id.as_bytes());
        k.push(n);
        k
    };
    let put = |table, key: Vec<u8>| Write::Put {
        table,
        key,
        value: Zeroizing::new(b"v".to_vec()),
    };
    let mut writes = Vec::new();
    for id in ["b", "a", "ab", "c"] {
        writes.push(put(Table::Sessions, id.as_bytes().to_vec()));
        for n in [2, 1] {
            writes.push(put(Table::StagedKeys, staged(id, n)));
        }
    }
    s.commit(&writes).unwrap();
    let keys = |rows: Vec<proteus_client::Record>| -> Vec<Vec<u8>> {
        rows.into_iter().map(|(k, _)| k).collect()
    };
    assert_eq!(
        keys(s.scan(Table::Sessions, &[]).unwrap()),
        [&b"a"[..], b"ab", b"b", b"c"]
    );
    assert_eq!(
        keys(s.scan(Table::Sessions, b"a").unwrap()),
        [&b"a"[..], b"ab"]
    );
    let prefix_a = &staged("a", 0)[..3];
    assert_eq!(
        keys(s.scan(Table::StagedKeys, prefix_a).unwrap()),
        [staged("a", 1), staged("a", 2)]
    );
    assert_eq!(s.scan(Table::StagedKeys, &[]).unwrap().len(), 8);
    s.commit(&[Write::Delete {
        table: Table::StagedKeys,
        key: staged("ab", 1),
    }])
    .unwrap();
    assert_eq!(
        keys(s.scan(Table::StagedKeys, &staged("ab", 0)[..4]).unwrap()),
        [staged("ab", 2)]
    );
    assert!(s.get(Table::Sessions, b"ab").unwrap().is_some());
    assert!(s.get(Table::Sessions, b"abc").unwrap().is_none());
}
