//! The core-level scenario: an established Alice/Bob [`Session`] pair and a backlog of queued
//! messages, all in memory, with no store (the `decrypt_queue` bench).
//!
//! Everything here uses only the public API of `proteus-core`.

use std::collections::BTreeMap;

use proteus_core::{Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session};
use zeroize::Zeroizing;

use crate::{BoxError, chat_plaintext};

/// One side of a conversation: its identity and its session with the other side.
pub struct Party {
    /// The long-term identity.
    pub identity: IdentityKeyPair,
    /// The session with the peer.
    pub session: Session,
}

/// Alice and Bob with an established session: Alice's PreKeyMessage reached Bob, Bob replied
/// and Alice decrypted the reply, so her session no longer carries the prekey header.
pub struct EstablishedPair {
    /// The initiator.
    pub alice: Party,
    /// The responder.
    pub bob: Party,
}

/// Builds an [`EstablishedPair`] with fresh identities and one one-time prekey of Bob's.
pub fn established_pair() -> Result<EstablishedPair, BoxError> {
    let rng = &mut OsRng;
    let alice = IdentityKeyPair::generate(rng);
    let bob = IdentityKeyPair::generate(rng);
    let prekey = PreKey::generate(PreKeyId::new(1), rng);
    let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
    let mut bob_prekeys = BTreeMap::new();
    bob_prekeys.insert(prekey.id(), prekey);

    let mut to_bob = Session::init_from_prekey(rng, &alice, &bundle)?;
    let hello = to_bob.encrypt(b"hello bob")?.to_bytes();
    let inbound =
        Session::init_from_message(rng, &bob, &mut bob_prekeys, &Envelope::from_bytes(&hello)?)?;
    if inbound.plaintext != b"hello bob" {
        return Err("handshake plaintext mismatch".into());
    }
    let mut to_alice = inbound.session;
    let reply = to_alice.encrypt(b"hi alice")?.to_bytes();
    let got = to_bob.decrypt(
        rng,
        &alice,
        &mut BTreeMap::new(),
        &Envelope::from_bytes(&reply)?,
    )?;
    if got != b"hi alice" || to_bob.has_pending_prekey() {
        return Err("handshake reply did not establish the session".into());
    }
    Ok(EstablishedPair {
        alice: Party {
            identity: alice,
            session: to_bob,
        },
        bob: Party {
            identity: bob,
            session: to_alice,
        },
    })
}

/// `n` queued messages from Alice to Bob on an established session, and what Bob needs to
/// decrypt them: his identity and his session as saved before the backlog arrived.
pub struct Queue {
    /// Alice's identity.
    pub alice: IdentityKeyPair,
    /// Alice's session as saved before she encrypted the queue (restore it to encrypt again).
    pub alice_session: Zeroizing<Vec<u8>>,
    /// Bob's identity.
    pub bob: IdentityKeyPair,
    /// Bob's session as saved before the queue (restore it with [`Session::from_bytes`]).
    pub bob_session: Zeroizing<Vec<u8>>,
    /// The plaintexts, in sending order.
    pub plaintexts: Vec<Vec<u8>>,
    /// The envelopes on the wire, in sending order.
    pub wire: Vec<Vec<u8>>,
}

impl Queue {
    /// Bob's session as it was before the queue arrived.
    pub fn restore_bob(&self) -> Result<Session, BoxError> {
        Ok(Session::from_bytes(
            self.bob.public_key(),
            &self.bob_session,
        )?)
    }

    /// Alice's session as it was before she encrypted the queue.
    pub fn restore_alice(&self) -> Result<Session, BoxError> {
        Ok(Session::from_bytes(
            self.alice.public_key(),
            &self.alice_session,
        )?)
    }
}

/// Establishes a session and has Alice encrypt `n` chat-like messages (see [`chat_plaintext`])
/// while Bob is offline.
pub fn queue_of(n: usize) -> Result<Queue, BoxError> {
    let EstablishedPair { mut alice, bob } = established_pair()?;
    let alice_session = alice.session.to_bytes();
    let bob_session = bob.session.to_bytes();
    let plaintexts: Vec<Vec<u8>> = (0..n).map(chat_plaintext).collect();
    let wire = plaintexts
        .iter()
        .map(|p| Ok(alice.session.encrypt(p)?.to_bytes()))
        .collect::<Result<Vec<_>, BoxError>>()?;
    Ok(Queue {
        alice: alice.identity,
        alice_session,
        bob: bob.identity,
        bob_session,
        plaintexts,
        wire,
    })
}

/// Decrypts every queued message on `session` (Bob's), checking each against the plaintext
/// Alice sent. Returns the number of plaintext bytes.
pub fn decrypt_all(queue: &Queue, session: &mut Session) -> Result<usize, BoxError> {
    let mut no_prekeys = BTreeMap::new();
    let mut total = 0;
    for (wire, expected) in queue.wire.iter().zip(&queue.plaintexts) {
        let envelope = Envelope::from_bytes(wire)?;
        let plaintext = session.decrypt(&mut OsRng, &queue.bob, &mut no_prekeys, &envelope)?;
        if &plaintext != expected {
            return Err("decrypted plaintext differs from what was sent".into());
        }
        total += plaintext.len();
    }
    Ok(total)
}
