//! A session made from a PreKeyMessage holds the sending half of its ratchet step until its
//! first encryption (the lazy sending step). That encryption starts a new sending chain, so its
//! commit must store the whole session, never only a send chain record: a store reopened after
//! it must go on sending on the chain the peer expects. Checked with one and with several
//! threads (the fan-out's worker threads take sessions out of the cache).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use common::{TestStorage, connect};
use proteus_client::Client;

fn replies_survive_reopening(threads: usize) {
    let bob_storage = TestStorage::new();
    let mut bob = bob_storage.client();
    bob.set_batch_threads(threads);
    let mut alice = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    // Bob's sessions come from PreKeyMessages: each holds a pending sending step.
    connect(&mut alice, "alice", &mut bob, "bob");
    connect(&mut carol, "carol", &mut bob, "bob");
    let first = bob.encrypt_for(&["alice", "carol"], b"first").unwrap();
    drop(bob);

    let mut bob = bob_storage.client();
    bob.set_batch_threads(threads);
    let second = bob.encrypt_for(&["alice", "carol"], b"second").unwrap();
    for (peer, i) in [(&mut alice, 0), (&mut carol, 1)] {
        let first = first[i].as_ref().unwrap();
        let second = second[i].as_ref().unwrap();
        assert_eq!(peer.decrypt("bob", first).unwrap(), b"first");
        assert_eq!(peer.decrypt("bob", second).unwrap(), b"second");
        // And the other way, on the chains both sides now hold.
        let back = peer.encrypt("bob", b"back").unwrap();
        let from = if i == 0 { "alice" } else { "carol" };
        assert_eq!(bob.decrypt(from, &back).unwrap(), b"back");
    }
}

#[test]
fn the_first_reply_of_a_received_session_is_stored_whole_sequentially() {
    replies_survive_reopening(1);
}

#[test]
fn the_first_reply_of_a_received_session_is_stored_whole_on_worker_threads() {
    replies_survive_reopening(4);
}

/// An export is Wire's record (version 1), which Wire's implementations load, even while the
/// session holds a pending sending step (a version-2 state in our own records).
#[test]
fn an_export_takes_the_pending_sending_step() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let exported = bob.export_session("alice").unwrap();
    // `{0: version, ...}`: a map header, key 0, then the version.
    assert_eq!(exported.get(1..3), Some(&[0x00, 0x01][..]));
    // The export does not change the session: Bob still replies on the chain Alice expects.
    let reply = bob.encrypt("alice", b"reply").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"reply");
}
