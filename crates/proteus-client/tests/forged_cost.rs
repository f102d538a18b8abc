//! A forged message costs at most one fast-forward of its chain, whichever way it comes in: a
//! CipherMessage or a PreKeyMessage, through `decrypt` or through `decrypt_batch`. Counted in
//! chain steps (`proteus_core::chain_steps`, this thread's; the batches run inline), not timed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::ops::ControlFlow;

use proteus_client::{Client, ClientError, QueuedMessage};
use proteus_core::{DecryptError, Envelope, Message, chain_steps};

/// How far ahead the forged counters are: the fast-forward a rejection may cost once.
const GAP: u32 = 5_000;
/// Steps beyond the fast-forward itself (the message's own step, a sibling message's).
const SLACK: u64 = 4;

/// `envelope` with its counter moved `GAP` ahead and a MAC that cannot verify.
fn forged(envelope: &[u8]) -> Vec<u8> {
    let decoded = Envelope::from_bytes(envelope).unwrap();
    let mut message = decoded.message().clone();
    match &mut message {
        Message::Cipher(m) => m.counter += GAP,
        Message::PreKey(m) => m.message.counter += GAP,
    }
    Envelope::from_message(message, [7; 32]).to_bytes()
}

/// The chain steps `f` takes on this thread.
fn steps(f: impl FnOnce()) -> u64 {
    let before = chain_steps();
    f();
    chain_steps() - before
}

fn rejected(outcome: &Result<Vec<u8>, ClientError>) -> bool {
    matches!(
        outcome,
        Err(ClientError::Decrypt(DecryptError::InvalidSignature(_)))
    )
}

fn one(bob: &mut Client, envelope: &[u8]) -> u64 {
    steps(|| {
        let outcome = bob.decrypt("alice", envelope);
        assert!(rejected(&outcome), "{outcome:?}");
    })
}

fn batch(bob: &mut Client, envelope: &[u8]) -> u64 {
    let queue = [QueuedMessage {
        session_id: "alice",
        envelope,
    }];
    steps(|| {
        let results = bob
            .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
            .unwrap();
        assert!(rejected(&results[0].outcome), "{:?}", results[0].outcome);
    })
}

/// `envelope`, rejected through `decrypt` and through `decrypt_batch`, costs Bob at most one
/// fast-forward each time.
fn costs_one_fast_forward(bob: &mut Client, envelope: &[u8]) {
    let single = one(bob, envelope);
    let batched = batch(bob, envelope);
    eprintln!("chain steps at a gap of {GAP}: decrypt {single}, decrypt_batch {batched}");
    assert!(single <= u64::from(GAP) + SLACK, "decrypt: {single} steps");
    assert!(
        batched <= u64::from(GAP) + SLACK,
        "decrypt_batch: {batched} steps"
    );
}

/// Bob's session with Alice made from her first PreKeyMessage, on Bob's last-resort prekey
/// (which stays: a new state could be made from it again); Alice has not heard back, so her
/// next messages are PreKeyMessages too.
fn pending() -> (Client, Client) {
    let (mut alice, mut bob) = (Client::in_memory().unwrap(), Client::in_memory().unwrap());
    let bundle = bob.last_resort_bundle().unwrap().to_bytes();
    alice.create_session("bob", &bundle).unwrap();
    let hello = alice.encrypt("bob", b"hello").unwrap();
    assert_eq!(bob.decrypt("alice", &hello).unwrap(), b"hello");
    (alice, bob)
}

/// Both sides have heard from each other: Alice's messages are CipherMessages, on a chain
/// Bob already holds (so that a batch plans them).
fn established() -> (Client, Client) {
    let (mut alice, mut bob) = pending();
    let reply = bob.encrypt("alice", b"hi").unwrap();
    assert_eq!(alice.decrypt("bob", &reply).unwrap(), b"hi");
    let again = alice.encrypt("bob", b"again").unwrap();
    assert_eq!(bob.decrypt("alice", &again).unwrap(), b"again");
    (alice, bob)
}

#[test]
fn a_forged_cipher_message_costs_one_fast_forward() {
    let (mut alice, mut bob) = established();
    let envelope = forged(&alice.encrypt("bob", b"x").unwrap());
    assert!(matches!(
        Envelope::from_bytes(&envelope).unwrap().message(),
        Message::Cipher(_)
    ));
    costs_one_fast_forward(&mut bob, &envelope);
}

#[test]
fn a_forged_prekey_message_costs_one_fast_forward() {
    let (mut alice, mut bob) = pending();
    let envelope = forged(&alice.encrypt("bob", b"x").unwrap());
    assert!(matches!(
        Envelope::from_bytes(&envelope).unwrap().message(),
        Message::PreKey(_)
    ));
    costs_one_fast_forward(&mut bob, &envelope);
}

/// A forged PreKeyMessage for a session that does not exist: one fast-forward on the state
/// it would make.
#[test]
fn a_forged_first_message_costs_one_fast_forward() {
    let (mut alice, mut bob) = (Client::in_memory().unwrap(), Client::in_memory().unwrap());
    let bundle = bob.generate_prekeys(1).unwrap().remove(0).to_bytes();
    alice.create_session("bob", &bundle).unwrap();
    let envelope = forged(&alice.encrypt("bob", b"x").unwrap());
    costs_one_fast_forward(&mut bob, &envelope);
}

/// A forged PreKeyMessage whose session tag Bob's state holds, on a chain that state has
/// dropped since (the conversation moved on for more turns than it keeps receive chains): the
/// state cannot open it, so only the state the prekey would make is tried, once.
#[test]
fn a_forged_prekey_message_on_a_dropped_chain_costs_one_fast_forward() {
    let (mut alice, mut bob) = pending();
    let early = alice.encrypt("bob", b"early").unwrap();
    for turn in 0..12 {
        let to_alice = bob.encrypt("alice", b"turn").unwrap();
        alice.decrypt("bob", &to_alice).unwrap();
        let to_bob = alice
            .encrypt("bob", format!("turn {turn}").as_bytes())
            .unwrap();
        bob.decrypt("alice", &to_bob).unwrap();
    }
    let envelope = forged(&early);
    assert!(matches!(
        Envelope::from_bytes(&envelope).unwrap().message(),
        Message::PreKey(_)
    ));
    costs_one_fast_forward(&mut bob, &envelope);
}
