//! Batch decryption: one result per message (plaintext or typed error), progress, delivery
//! before the single commit, aborting with `ControlFlow::Break`, and re-delivery.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::HashSet;
use std::ops::ControlFlow;

use common::{TestStorage, code_of, connect, encrypt_n, queue, run_batch};
use proteus_client::{Client, ClientError, MessageId, Progress};
use proteus_core::Envelope;
use sha2::{Digest, Sha256};

enum Want {
    Plain(String),
    Code(u16),
}

/// Bob's queue after a while offline: existing senders (in order, out of order, duplicated),
/// new senders whose PreKeyMessages create sessions (one from the last-resort prekey, two that
/// race for the same one-time prekey), garbage, a tampered message, a CipherMessage for an
/// unknown session.
struct Scenario {
    storage: TestStorage,
    bob: Client,
    items: Vec<(String, Vec<u8>)>,
    want: Vec<Want>,
    prekeys_before: usize,
}

fn scenario() -> Scenario {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut alice = Client::in_memory().unwrap();
    let mut carol = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    connect(&mut carol, "carol", &mut bob, "bob");
    // Alice hears back, so her messages are CipherMessages.
    let r = bob.encrypt("alice", b"hi alice").unwrap();
    alice.decrypt("bob", &r).unwrap();

    let bundles = bob.generate_prekeys(2).unwrap();
    let mut dave = Client::in_memory().unwrap();
    dave.create_session("bob", &bundles[0].to_bytes()).unwrap();
    let mut erin = Client::in_memory().unwrap();
    erin.create_session("bob", &bundles[0].to_bytes()).unwrap(); // the same prekey as Dave
    let mut frank = Client::in_memory().unwrap();
    frank
        .create_session("bob", &bob.last_resort_bundle().unwrap().to_bytes())
        .unwrap();
    let stray = {
        // A CipherMessage from a session Bob does not have.
        let mut x = Client::in_memory().unwrap();
        let mut y = Client::in_memory().unwrap();
        connect(&mut x, "x", &mut y, "y");
        let r = y.encrypt("x", b"r").unwrap();
        x.decrypt("y", &r).unwrap();
        x.encrypt("y", b"stray").unwrap()
    };

    let a = encrypt_n(&mut alice, "bob", "alice", 5);
    let c = encrypt_n(&mut carol, "bob", "carol", 3);
    let d = encrypt_n(&mut dave, "bob", "dave", 3);
    let e = encrypt_n(&mut erin, "bob", "erin", 1);
    let f = encrypt_n(&mut frank, "bob", "frank", 2);
    let garbage = b"\xa1\x00garbage".to_vec();
    let mut tampered = a[4].clone();
    let n = tampered.len();
    tampered[n - 3] ^= 0x40;

    let mut items = Vec::new();
    let mut want = Vec::new();
    let mut push = |s: &str, env: &Vec<u8>, w: Want| {
        items.push((s.to_owned(), env.clone()));
        want.push(w);
    };
    let p = |s: &str| Want::Plain(s.to_owned());
    push("alice", &a[0], p("alice 0"));
    push("dave", &d[1], p("dave 1")); // a new sender, second message first: creates the session
    push("carol", &c[0], p("carol 0"));
    push("alice", &a[2], p("alice 2")); // out of order: stages alice 1
    push("frank", &f[0], p("frank 0")); // new, from the last-resort prekey
    push("alice", &a[1], p("alice 1")); // late, from the staged key
    push("erin", &e[0], Want::Code(101)); // Dave used that prekey earlier in this batch
    push("alice", &a[0], Want::Code(209)); // duplicate within the batch
    push("nobody", &stray, Want::Code(104)); // no such session
    push("dave", &d[0], p("dave 0"));
    push("carol", &garbage, Want::Code(301));
    push("alice", &tampered, Want::Code(207)); // MAC fails (counter ahead); the real one still decrypts
    push("alice", &a[4], p("alice 4"));
    push("carol", &c[2], p("carol 2"));
    push("dave", &d[2], p("dave 2"));
    push("frank", &f[1], p("frank 1"));
    push("carol", &c[1], p("carol 1"));
    push("alice", &a[3], p("alice 3"));
    push("", &a[3], Want::Code(106));
    push("carol", &c[1], Want::Code(209));
    let prekeys_before = bob.prekeys_remaining().unwrap();
    assert_eq!(prekeys_before, 2);
    Scenario {
        storage,
        bob,
        items,
        want,
        prekeys_before,
    }
}

fn check(results: &[proteus_client::Decrypted], s: &Scenario) {
    assert_eq!(results.len(), s.items.len(), "one result per message");
    for (i, ((r, (session, envelope)), want)) in
        results.iter().zip(&s.items).zip(&s.want).enumerate()
    {
        assert_eq!(r.message_id, MessageId::of(envelope), "#{i}");
        assert_eq!(&r.session_id, session, "#{i}");
        match want {
            Want::Plain(p) => assert_eq!(
                r.outcome.as_ref().map_err(ClientError::code),
                Ok(&p.as_bytes().to_vec()),
                "#{i}"
            ),
            Want::Code(c) => assert_eq!(code_of(&r.outcome), *c, "#{i}: {:?}", r.outcome),
        }
    }
}

#[test]
fn a_mixed_queue_gives_one_result_per_message() {
    let mut s = scenario();
    let commits = s.storage.commits();
    let mut progress = Vec::new();
    let mut commits_seen_in_deliver = HashSet::new();
    let storage = s.storage.clone();
    let results = s
        .bob
        .decrypt_batch(&queue(&s.items), |_, p| {
            progress.push(p);
            commits_seen_in_deliver.insert(storage.commits());
            ControlFlow::Continue(())
        })
        .unwrap();
    check(&results, &s);
    let n = s.items.len();
    assert_eq!(
        progress,
        (1..=n)
            .map(|done| Progress { done, total: n })
            .collect::<Vec<_>>()
    );
    assert_eq!(
        commits_seen_in_deliver,
        HashSet::from([commits]),
        "every delivery came before the commit"
    );
    assert_eq!(s.storage.commits(), commits + 1, "the batch is one commit");

    // Sessions created, Dave's prekey used, the last resort kept, Erin turned away.
    assert_eq!(
        s.bob.session_ids().unwrap(),
        ["alice", "carol", "dave", "frank"]
    );
    assert_eq!(s.bob.prekeys_remaining().unwrap(), s.prekeys_before - 1);
    s.bob.last_resort_bundle().unwrap();

    // Re-delivery after the commit: every message that decrypted is now already seen (209).
    let again = run_batch(&mut s.bob, &s.items).unwrap();
    for ((r, want), (session, _)) in again.iter().zip(&s.want).zip(&s.items) {
        match want {
            Want::Plain(_) => assert_eq!(code_of(&r.outcome), 209, "{session}: {:?}", r.outcome),
            Want::Code(c) if *c == 101 => assert_eq!(code_of(&r.outcome), 101),
            Want::Code(_) => assert!(r.outcome.is_err()),
        }
    }
    assert_eq!(
        s.storage.commits(),
        commits + 1,
        "a batch without any success commits nothing"
    );
}

#[test]
fn the_same_results_come_from_a_reopened_store() {
    // The committed batch is complete in storage: a new client on the records sees duplicates.
    let mut s = scenario();
    run_batch(&mut s.bob, &s.items).unwrap();
    let mut fresh = s.storage.client();
    let again = run_batch(&mut fresh, &s.items).unwrap();
    for (r, want) in again.iter().zip(&s.want) {
        if matches!(want, Want::Plain(_)) {
            assert_eq!(code_of(&r.outcome), 209);
        }
    }
}

/// `ControlFlow::Break` stops the batch with BatchAborted (108) and commits nothing: running the
/// batch again decrypts everything again, with the same ids and plaintexts.
#[test]
fn break_aborts_the_batch_and_commits_nothing() {
    let mut s = scenario();
    let before = s.storage.dump();
    let commits = s.storage.commits();
    for stop_at in [1, 5, 12, s.items.len()] {
        let mut delivered = Vec::new();
        let r = s.bob.decrypt_batch(&queue(&s.items), |m, p| {
            delivered.push((m.message_id, m.outcome.as_ref().ok().cloned()));
            if p.done == stop_at {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        let err = r.unwrap_err();
        assert!(matches!(err, ClientError::BatchAborted), "{err:?}");
        assert_eq!(err.code(), 108);
        assert_eq!(delivered.len(), stop_at, "nothing is delivered after Break");
        assert_eq!(s.storage.commits(), commits, "an aborted batch committed");
        assert_eq!(s.storage.dump(), before);
        // Nothing of the batch stayed in memory either.
        assert!(!s.bob.has_session("dave").unwrap());
        assert!(!s.bob.has_session("frank").unwrap());
        assert_eq!(s.bob.prekeys_remaining().unwrap(), s.prekeys_before);
    }
    // After aborting, a whole run decrypts everything again.
    let results = run_batch(&mut s.bob, &s.items).unwrap();
    check(&results, &s);
    assert_eq!(s.storage.commits(), commits + 1);
}

/// An aborted batch leaves the sessions it advanced as they were: single decrypts that follow
/// see the committed state, not the aborted one.
#[test]
fn after_an_abort_single_decrypts_see_the_committed_state() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let msgs = encrypt_n(&mut alice, "bob", "m", 6);
    let items: Vec<(String, Vec<u8>)> = msgs
        .iter()
        .map(|e| ("alice".to_owned(), e.clone()))
        .collect();
    let r = bob.decrypt_batch(&queue(&items), |_, p| {
        if p.done == 4 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert_eq!(code_of(&r), 108);
    for (i, e) in msgs.iter().enumerate().rev() {
        assert_eq!(
            bob.decrypt("alice", e).unwrap(),
            format!("m {i}").as_bytes()
        );
    }
    // And encryption from Bob is unaffected.
    let reply = bob.encrypt("alice", b"ok").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"ok");
}

#[test]
fn an_empty_batch_does_nothing() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let commits = storage.commits();
    let mut called = false;
    let r = bob
        .decrypt_batch(&[], |_, _| {
            called = true;
            ControlFlow::Continue(())
        })
        .unwrap();
    assert!(r.is_empty());
    assert!(!called);
    assert_eq!(storage.commits(), commits);
}

/// A message id is the envelope's MAC: the same envelope has the same id in every run and
/// every client, envelopes with different MACs have different ids (a tampered copy keeps the
/// MAC, and so the id, of the original), bytes that are not an envelope get SHA-256 of the
/// bytes, and `Display` is lowercase hex.
#[test]
fn message_ids_are_the_envelope_macs() {
    let s = scenario();
    let env = &s.items[0].1;
    let id = MessageId::of(env);
    assert_eq!(id, MessageId::of(&env.clone()));
    assert_eq!(id.as_bytes(), Envelope::from_bytes(env).unwrap().mac());
    assert_eq!(id.to_string(), hex::encode(id.as_bytes()));
    assert_eq!(id.hex().as_slice(), id.to_string().as_bytes());
    assert_eq!(id.to_string().len(), 64);
    for (_, e) in &s.items {
        let expected: [u8; 32] = match Envelope::from_bytes(e) {
            Ok(decoded) => *decoded.mac(),
            Err(_) => Sha256::digest(e).into(),
        };
        assert_eq!(MessageId::of(e).as_bytes(), &expected);
    }
    let ids: HashSet<MessageId> = s.items.iter().map(|(_, e)| MessageId::of(e)).collect();
    // The scenario's tampered message shares its original's MAC; the garbage has no MAC.
    assert!(ids.len() < s.items.iter().map(|(_, e)| e).collect::<HashSet<_>>().len());

    // The batch reports the same ids, for every result.
    let mut bob = s.storage.client();
    let results = run_batch(&mut bob, &s.items).unwrap();
    for ((_, e), r) in s.items.iter().zip(&results) {
        assert_eq!(r.message_id, MessageId::of(e));
    }
}

/// An envelope re-encoded on the way (its fields in another order) is the same message: it
/// decrypts to the same plaintext under the same id, so an app recognises it.
#[test]
fn a_reencoded_envelope_keeps_its_id() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    let envelope = alice.encrypt("bob", b"once").unwrap();
    // a3 | 00 01 | 01 a1 00 58 20 <mac> | 02 <message>  ->  a3 | 01 ... | 02 ... | 00 01
    assert_eq!(envelope[..3], [0xa3, 0x00, 0x01]);
    let mut reordered = vec![0xa3];
    reordered.extend_from_slice(&envelope[3..]);
    reordered.extend_from_slice(&[0x00, 0x01]);
    assert_ne!(reordered, envelope);
    assert_eq!(MessageId::of(&reordered), MessageId::of(&envelope));

    let items = [("alice".to_owned(), reordered)];
    let first = bob
        .decrypt_batch(&queue(&items), |_, _| ControlFlow::Break(()))
        .unwrap_err();
    assert!(matches!(first, ClientError::BatchAborted));
    let results = run_batch(&mut bob, &items).unwrap();
    assert_eq!(results[0].outcome.as_deref().unwrap(), b"once");
    assert_eq!(results[0].message_id, MessageId::of(&envelope));
    // The original, delivered after the commit, is a duplicate with that same id.
    let again = run_batch(&mut bob, &[("alice".to_owned(), envelope.clone())]).unwrap();
    assert!(again[0].is_already_seen());
    assert_eq!(again[0].message_id, results[0].message_id);
}

/// Decrypted::is_already_seen covers duplicates (209) and outdated messages (208), never a
/// message whose key was evicted (214): that one was not decrypted.
#[test]
fn already_seen_covers_duplicates_and_outdated_not_evicted_keys() {
    let mut alice = Client::in_memory().unwrap();
    let mut bob = Client::in_memory().unwrap();
    connect(&mut alice, "alice", &mut bob, "bob");
    // Counters 1..=1004 (the handshake message was 0).
    let msgs = encrypt_n(&mut alice, "bob", "m", 1004);
    // Counter 1001 stages 1..=1000 (a gap of exactly the limit); counter 1004 stages two more,
    // and the two oldest (counters 1 and 2) are evicted: those messages were never decrypted.
    bob.decrypt("alice", &msgs[1000]).unwrap();
    bob.decrypt("alice", &msgs[1003]).unwrap();
    let items: Vec<(String, Vec<u8>)> = [0usize, 1, 2, 2, 1003]
        .iter()
        .map(|&i| ("alice".to_owned(), msgs[i].clone()))
        .collect();
    let r = run_batch(&mut bob, &items).unwrap();
    assert_eq!(code_of(&r[0].outcome), 214);
    assert_eq!(code_of(&r[1].outcome), 214);
    assert_eq!(r[2].outcome.as_ref().unwrap(), b"m 2");
    // Counter 3, the oldest staged key, used: again it is older than the window (208).
    assert_eq!(code_of(&r[3].outcome), 208);
    assert_eq!(code_of(&r[4].outcome), 209);
    assert!(r[3].is_already_seen() && r[4].is_already_seen());
    assert!(!r[0].is_already_seen() && !r[1].is_already_seen() && !r[2].is_already_seen());
}

/// A big batch from many senders is still one commit, with one session record per sender.
#[test]
fn a_large_batch_is_one_commit() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let bundles = bob.generate_prekeys(20).unwrap();
    let mut senders: Vec<Client> = Vec::new();
    for b in &bundles {
        let mut s = Client::in_memory().unwrap();
        s.create_session("bob", &b.to_bytes()).unwrap();
        senders.push(s);
    }
    let mut items = Vec::new();
    for round in 0..25 {
        for (i, s) in senders.iter_mut().enumerate() {
            items.push((
                format!("sender{i}"),
                s.encrypt("bob", format!("{round}").as_bytes()).unwrap(),
            ));
        }
    }
    let commits = storage.commits();
    let r = run_batch(&mut bob, &items).unwrap();
    assert!(r.iter().all(|m| m.outcome.is_ok()));
    assert_eq!(storage.commits(), commits + 1);
    let c = common::count_writes(&storage.commits_since(commits)[0]);
    assert_eq!(c.session_puts, 20);
    assert_eq!(c.prekey_deletes, 20);
    assert_eq!(c.staged_puts, 0);
    assert_eq!(bob.prekeys_remaining().unwrap(), 0);
}

/// A session whose stored record is damaged fails its own messages (Corrupt, 503); the rest of
/// the batch decrypts and commits.
#[test]
fn a_damaged_session_record_fails_only_its_own_messages() {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let (mut alice, mut carol) = (Client::in_memory().unwrap(), Client::in_memory().unwrap());
    connect(&mut alice, "alice", &mut bob, "bob");
    connect(&mut carol, "carol", &mut bob, "bob");
    let from_alice = encrypt_n(&mut alice, "bob", "a", 2);
    let from_carol = encrypt_n(&mut carol, "bob", "c", 2);
    drop(bob);
    storage.put_raw(proteus_client::Table::Sessions, b"alice", b"\xa1\x00\x00");
    let mut bob = storage.client();
    let items: Vec<(String, Vec<u8>)> = from_alice
        .iter()
        .map(|e| ("alice".to_owned(), e.clone()))
        .chain(from_carol.iter().map(|e| ("carol".to_owned(), e.clone())))
        .collect();
    let results = run_batch(&mut bob, &items).unwrap();
    assert_eq!(code_of(&results[0].outcome), 503);
    assert_eq!(code_of(&results[1].outcome), 503);
    assert_eq!(results[2].outcome.as_deref().unwrap(), b"c 0");
    assert_eq!(results[3].outcome.as_deref().unwrap(), b"c 1");
    // Carol's messages were committed.
    assert!(
        run_batch(&mut bob, &items[2..])
            .unwrap()
            .iter()
            .all(|m| m.is_already_seen())
    );
}
