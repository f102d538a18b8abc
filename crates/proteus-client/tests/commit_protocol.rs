//! The commit protocol, driven by a property test: two clients of one identity (Bob, as an app
//! and its extension) on one shared in-memory store with a commit counter, and peers talking to
//! them, in random interleavings of encrypt, encrypt_batch, decrypt, decrypt_batch,
//! generate_prekeys and create_session from both clients.
//!
//! Checked after every step: a fresh message decrypts (nothing either client committed was lost
//! or unseen), a message delivered again is "already seen" (exactly once), no two envelopes of
//! one session share a (ratchet key, counter), every envelope Bob sent decrypts at the peer,
//! either client knows every session the other made, a call of the other client during a
//! batch's `deliver` is refused with `Busy` and changes nothing, and each call begins exactly
//! one operation (one freshness check).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, MutexGuard};

use proptest::prelude::*;
use proteus_client::{
    Client, ClientError, Freshness, MemoryStorage, QueuedMessage, Record, Storage, StoreError,
    Table, Write,
};
use proteus_core::Envelope;
use zeroize::Zeroizing;

// --- a shared in-memory store with a commit counter ------------------------------------------

#[derive(Default)]
struct Shared {
    mem: MemoryStorage,
    /// Commits so far: what `begin` compares with the count a handle saw last.
    commits: u64,
    /// The handle whose operation is open, if any.
    holder: Option<usize>,
    /// `begin` calls per handle.
    begins: [usize; 2],
}

/// One handle on the shared store (handle 0 or 1), as a process would have one.
struct SharedStorage {
    shared: Arc<Mutex<Shared>>,
    handle: usize,
    seen: u64,
    in_operation: bool,
}

impl SharedStorage {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Storage for SharedStorage {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        self.lock().mem.get(table, key)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        self.lock().mem.scan(table, prefix)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        if !self.in_operation {
            let _ = self.begin()?;
        }
        self.in_operation = false;
        let mut shared = self.lock();
        shared.holder = None;
        shared.mem.commit(writes)?;
        shared.commits += 1;
        let commits = shared.commits;
        drop(shared);
        // Our own commit does not make our caches stale.
        self.seen = commits;
        Ok(())
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        assert!(!self.in_operation, "begin inside an operation");
        let seen = self.seen;
        let mut shared = self.lock();
        shared.begins[self.handle] += 1;
        if shared.holder.is_some() {
            return Err(StoreError::Busy);
        }
        shared.holder = Some(self.handle);
        let commits = shared.commits;
        drop(shared);
        self.in_operation = true;
        self.seen = commits;
        Ok(if commits == seen {
            Freshness::Fresh
        } else {
            Freshness::Stale
        })
    }

    fn end(&mut self) -> Result<(), StoreError> {
        if self.in_operation {
            self.in_operation = false;
            self.lock().holder = None;
        }
        Ok(())
    }
}

// --- the world ---------------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Action {
    /// Bob's client `bob` encrypts for a peer.
    Encrypt { bob: usize, peer: usize },
    /// ... for several peers in one call.
    EncryptBatch { bob: usize, peers: Vec<usize> },
    /// ... decrypts one pending message.
    Decrypt { bob: usize, pick: usize },
    /// ... decrypts up to `n` pending messages in one batch; if `other_tries`, the other client
    /// tries to encrypt from inside `deliver`.
    DecryptBatch {
        bob: usize,
        n: usize,
        other_tries: bool,
    },
    /// ... is given a message it decrypted before.
    Redeliver { bob: usize, pick: usize },
    /// ... publishes `n` prekeys.
    GeneratePrekeys { bob: usize, n: usize },
    /// ... starts a session with a new peer from the peer's bundle.
    CreateSession { bob: usize },
    /// A new peer starts a session from a published bundle (the last-resort one if none is left).
    PeerJoins,
    /// A peer sends to Bob.
    PeerSends { peer: usize },
    /// A peer decrypts one of Bob's envelopes.
    PeerReceives { peer: usize, pick: usize },
}

fn action() -> impl Strategy<Value = Action> {
    let bob = 0..2usize;
    let any = any::<usize>();
    prop_oneof![
        (bob.clone(), any).prop_map(|(bob, peer)| Action::Encrypt { bob, peer }),
        (bob.clone(), prop::collection::vec(any, 1..4))
            .prop_map(|(bob, peers)| Action::EncryptBatch { bob, peers }),
        (bob.clone(), any).prop_map(|(bob, pick)| Action::Decrypt { bob, pick }),
        (bob.clone(), 1..6usize, prop::bool::weighted(0.3)).prop_map(|(bob, n, other_tries)| {
            Action::DecryptBatch {
                bob,
                n,
                other_tries,
            }
        }),
        (bob.clone(), any).prop_map(|(bob, pick)| Action::Redeliver { bob, pick }),
        (bob.clone(), 1..3usize).prop_map(|(bob, n)| Action::GeneratePrekeys { bob, n }),
        bob.prop_map(|bob| Action::CreateSession { bob }),
        Just(Action::PeerJoins),
        any.prop_map(|peer| Action::PeerSends { peer }),
        (any, any).prop_map(|(peer, pick)| Action::PeerReceives { peer, pick }),
    ]
}

struct Peer {
    id: String,
    client: Client,
    /// Whether the peer has a session with Bob (it may have to receive Bob's first message).
    has_session: bool,
}

struct World {
    shared: Arc<Mutex<Shared>>,
    bobs: [Client; 2],
    peers: Vec<Peer>,
    /// Whether Bob has a session with each peer (once either client made or accepted it).
    bob_has: Vec<bool>,
    to_bob: Vec<(usize, Vec<u8>, Vec<u8>)>,
    delivered: Vec<(usize, Vec<u8>)>,
    to_peer: Vec<(usize, Vec<u8>, Vec<u8>)>,
    positions: HashSet<(usize, [u8; 32], u32)>,
    bundles: Vec<Vec<u8>>,
    published: HashSet<u16>,
    next: usize,
}

fn position(envelope: &[u8]) -> ([u8; 32], u32) {
    let envelope = Envelope::from_bytes(envelope).unwrap();
    let m = envelope.message().cipher_message();
    (*m.ratchet_key.as_bytes(), m.counter)
}

impl World {
    fn new() -> Self {
        let shared = Arc::new(Mutex::new(Shared::default()));
        let handle = |handle| SharedStorage {
            shared: shared.clone(),
            handle,
            seen: 0,
            in_operation: false,
        };
        let b0 = Client::with_storage(Box::new(handle(0))).unwrap();
        // The second opener finds the identity the first made.
        let b1 = Client::with_storage(Box::new(handle(1))).unwrap();
        assert_eq!(b0.fingerprint(), b1.fingerprint());
        let mut world = Self {
            shared,
            bobs: [b0, b1],
            peers: Vec::new(),
            bob_has: Vec::new(),
            to_bob: Vec::new(),
            delivered: Vec::new(),
            to_peer: Vec::new(),
            positions: HashSet::new(),
            bundles: Vec::new(),
            published: HashSet::new(),
            next: 0,
        };
        world.step(&Action::GeneratePrekeys { bob: 0, n: 2 });
        world.step(&Action::PeerJoins);
        world.step(&Action::CreateSession { bob: 1 });
        world
    }

    fn begins(&self, bob: usize) -> usize {
        self.shared.lock().unwrap().begins[bob]
    }

    fn text(&mut self, what: &str) -> Vec<u8> {
        self.next += 1;
        format!("{what} {}", self.next).into_bytes()
    }

    /// Records an envelope Bob sent to `peer`, checking its chain position is new.
    fn sent(&mut self, peer: usize, envelope: Vec<u8>, plaintext: Vec<u8>) {
        let (key, counter) = position(&envelope);
        assert!(
            self.positions.insert((peer, key, counter)),
            "two envelopes to {} share counter {counter} of one chain",
            self.peers[peer].id
        );
        self.to_peer.push((peer, envelope, plaintext));
    }

    fn new_peer(&mut self, client: Client, has_session: bool) -> usize {
        self.peers.push(Peer {
            id: format!("peer-{}", self.peers.len()),
            client,
            has_session,
        });
        self.bob_has.push(false);
        self.peers.len() - 1
    }

    fn step(&mut self, action: &Action) {
        let acting = match action {
            Action::Encrypt { bob, .. }
            | Action::EncryptBatch { bob, .. }
            | Action::Decrypt { bob, .. }
            | Action::DecryptBatch { bob, .. }
            | Action::Redeliver { bob, .. }
            | Action::GeneratePrekeys { bob, .. }
            | Action::CreateSession { bob } => Some(*bob),
            _ => None,
        };
        let begins = acting.map(|b| (b, self.begins(b), self.begins(1 - b)));
        let calls = self.run(action);
        // One call, one operation: the freshness check happens once per call.
        if let Some((b, before, other_before)) = begins {
            assert_eq!(self.begins(b) - before, calls, "{action:?}");
            let other_tried = usize::from(
                matches!(
                    action,
                    Action::DecryptBatch {
                        other_tries: true,
                        ..
                    }
                ) && calls > 0,
            );
            assert!(
                self.begins(1 - b) - other_before <= other_tried,
                "{action:?}"
            );
        }
        assert!(
            self.shared.lock().unwrap().holder.is_none(),
            "a lock left held"
        );
    }

    /// Runs an action; returns how many calls the acting Bob client made.
    fn run(&mut self, action: &Action) -> usize {
        let peers = self.peers.len();
        match action {
            Action::Encrypt { bob, peer } => {
                let p = peer % peers;
                let plaintext = self.text("to peer");
                let id = self.peers[p].id.clone();
                match self.bobs[*bob].encrypt(&id, &plaintext) {
                    Ok(envelope) => {
                        assert!(self.bob_has[p], "encrypted without a session");
                        self.sent(p, envelope, plaintext);
                    }
                    Err(ClientError::SessionNotFound(_)) => {
                        assert!(!self.bob_has[p], "client {bob} does not see {id}'s session");
                    }
                    Err(e) => panic!("encrypt: {e:?}"),
                }
                1
            }
            Action::EncryptBatch { bob, peers: picks } => {
                let targets: Vec<usize> = picks
                    .iter()
                    .map(|p| p % peers)
                    .filter(|&p| self.bob_has[p])
                    .collect();
                let plaintexts: Vec<Vec<u8>> = targets.iter().map(|_| self.text("batch")).collect();
                let ids: Vec<String> = targets.iter().map(|&p| self.peers[p].id.clone()).collect();
                let messages: Vec<(&str, &[u8])> = ids
                    .iter()
                    .zip(&plaintexts)
                    .map(|(id, p)| (id.as_str(), p.as_slice()))
                    .collect();
                let envelopes = self.bobs[*bob].encrypt_batch(&messages).unwrap();
                for ((p, envelope), plaintext) in targets.into_iter().zip(envelopes).zip(plaintexts)
                {
                    self.sent(p, envelope, plaintext);
                }
                1
            }
            Action::Decrypt { bob, pick } => {
                if self.to_bob.is_empty() {
                    return 0;
                }
                let (p, envelope, plaintext) = self.to_bob.remove(pick % self.to_bob.len());
                let id = self.peers[p].id.clone();
                let got = self.bobs[*bob].decrypt(&id, &envelope);
                assert_eq!(got.as_deref().ok(), Some(plaintext.as_slice()), "{got:?}");
                self.bob_has[p] = true;
                self.delivered.push((p, envelope));
                1
            }
            Action::DecryptBatch {
                bob,
                n,
                other_tries,
            } => {
                let take = (*n).min(self.to_bob.len());
                if take == 0 {
                    return 0;
                }
                let items: Vec<(usize, Vec<u8>, Vec<u8>)> = self.to_bob.drain(..take).collect();
                let ids: Vec<String> = items
                    .iter()
                    .map(|(p, _, _)| self.peers[*p].id.clone())
                    .collect();
                let queue: Vec<QueuedMessage> = items
                    .iter()
                    .zip(&ids)
                    .map(|((_, e, _), id)| QueuedMessage {
                        session_id: id,
                        envelope: e,
                    })
                    .collect();
                let (first, second) = self.bobs.split_at_mut(1);
                let (me, other) = if *bob == 0 {
                    (&mut first[0], &mut second[0])
                } else {
                    (&mut second[0], &mut first[0])
                };
                let other_target = ids[0].clone();
                let mut tried = !*other_tries;
                let results = me
                    .decrypt_batch(&queue, |_, _| {
                        if !tried {
                            tried = true;
                            // The extension wakes up while the app is in its batch.
                            let r = other.encrypt(&other_target, b"while you were busy");
                            assert!(
                                matches!(r, Err(ClientError::Store(StoreError::Busy))),
                                "{r:?}"
                            );
                        }
                        ControlFlow::Continue(())
                    })
                    .unwrap();
                for ((p, envelope, plaintext), result) in items.into_iter().zip(results) {
                    assert_eq!(
                        result.outcome.as_deref().ok(),
                        Some(plaintext.as_slice()),
                        "{:?}",
                        result.outcome
                    );
                    self.bob_has[p] = true;
                    self.delivered.push((p, envelope));
                }
                1
            }
            Action::Redeliver { bob, pick } => {
                if self.delivered.is_empty() {
                    return 0;
                }
                let (p, envelope) = self.delivered[pick % self.delivered.len()].clone();
                let id = self.peers[p].id.clone();
                let got = self.bobs[*bob].decrypt(&id, &envelope);
                match got {
                    Err(ClientError::Decrypt(e)) if e.is_already_seen() => {}
                    other => panic!("a message decrypted twice (state lost?): {other:?}"),
                }
                1
            }
            Action::GeneratePrekeys { bob, n } => {
                for bundle in self.bobs[*bob].generate_prekeys(*n).unwrap() {
                    assert!(
                        self.published.insert(bundle.prekey_id().value()),
                        "prekey id {} handed out twice",
                        bundle.prekey_id().value()
                    );
                    self.bundles.push(bundle.to_bytes());
                }
                1
            }
            Action::CreateSession { bob } => {
                let mut client = Client::in_memory().unwrap();
                let bundle = client.generate_prekeys(1).unwrap().remove(0).to_bytes();
                let p = self.new_peer(client, false);
                let id = self.peers[p].id.clone();
                self.bobs[*bob].create_session(&id, &bundle).unwrap();
                self.bob_has[p] = true;
                // Bob's first message, so that the peer can answer.
                let plaintext = self.text("welcome");
                let envelope = self.bobs[*bob].encrypt(&id, &plaintext).unwrap();
                self.sent(p, envelope, plaintext);
                2
            }
            Action::PeerJoins => {
                let bundle = match self.bundles.pop() {
                    Some(bundle) => bundle,
                    None => self.bobs[0].last_resort_bundle().unwrap().to_bytes(),
                };
                let mut client = Client::in_memory().unwrap();
                client.create_session("bob", &bundle).unwrap();
                let p = self.new_peer(client, true);
                self.step(&Action::PeerSends { peer: p });
                0
            }
            Action::PeerSends { peer } => {
                let p = peer % peers.max(1);
                if p >= self.peers.len() || !self.peers[p].has_session {
                    return 0;
                }
                let plaintext = self.text("to bob");
                let envelope = self.peers[p].client.encrypt("bob", &plaintext).unwrap();
                self.to_bob.push((p, envelope, plaintext));
                0
            }
            Action::PeerReceives { peer, pick } => {
                let p = peer % peers;
                let mine: Vec<usize> = (0..self.to_peer.len())
                    .filter(|&i| self.to_peer[i].0 == p)
                    .collect();
                if mine.is_empty() {
                    return 0;
                }
                let (_, envelope, plaintext) = self.to_peer.remove(mine[pick % mine.len()]);
                let got = self.peers[p].client.decrypt("bob", &envelope);
                assert_eq!(got.as_deref().ok(), Some(plaintext.as_slice()), "{got:?}");
                self.peers[p].has_session = true;
                0
            }
        }
    }

    /// Everything still in flight is decrypted; everything delivered is a duplicate now.
    fn drain(&mut self) {
        while !self.to_bob.is_empty() {
            let bob = self.to_bob.len() % 2;
            self.step(&Action::DecryptBatch {
                bob,
                n: 5,
                other_tries: false,
            });
        }
        while let Some((p, _, _)) = self.to_peer.first() {
            let p = *p;
            self.step(&Action::PeerReceives { peer: p, pick: 0 });
        }
        let ids: Vec<String> = self
            .delivered
            .iter()
            .map(|(p, _)| self.peers[*p].id.clone())
            .collect();
        let queue: Vec<QueuedMessage> = self
            .delivered
            .iter()
            .zip(&ids)
            .map(|((_, e), id)| QueuedMessage {
                session_id: id,
                envelope: e,
            })
            .collect();
        for bob in &mut self.bobs {
            for m in bob
                .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
                .unwrap()
            {
                assert!(m.is_already_seen(), "{:?}", m.outcome);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn two_clients_on_one_store_in_any_interleaving(
        actions in prop::collection::vec(action(), 1..60)
    ) {
        let mut world = World::new();
        for action in &actions {
            world.step(action);
        }
        world.drain();
    }
}

/// The plain case, spelled out: what one client commits, the other sees at its next call.
#[test]
fn a_client_sees_what_the_other_committed() {
    let mut world = World::new();
    // Client 1 made the session with peer-1 (in `new`); client 0 has never seen it.
    world.step(&Action::Encrypt { bob: 0, peer: 1 });
    world.step(&Action::Encrypt { bob: 1, peer: 1 });
    world.step(&Action::Encrypt { bob: 0, peer: 1 });
    world.step(&Action::PeerReceives { peer: 1, pick: 0 });
    world.step(&Action::PeerSends { peer: 1 });
    world.step(&Action::Decrypt { bob: 1, pick: 0 });
    world.step(&Action::Redeliver { bob: 0, pick: 0 });
    world.drain();
}

/// A panic in a batch's `deliver` (the app's code) ends the operation: the store is not left
/// locked for the other client, and nothing of the batch is committed.
#[test]
fn a_panic_in_deliver_leaves_the_store_unlocked_and_unchanged() {
    let mut world = World::new();
    let (p, envelope, plaintext) = world.to_bob[0].clone();
    let id = world.peers[p].id.clone();
    let queue = [QueuedMessage {
        session_id: &id,
        envelope: &envelope,
    }];
    let bob = &mut world.bobs[0];
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bob.decrypt_batch(&queue, |_, _| panic!("the app's callback failed"))
    }));
    assert!(panicked.is_err());
    assert!(world.shared.lock().unwrap().holder.is_none(), "left locked");
    assert_eq!(world.bobs[1].decrypt(&id, &envelope).unwrap(), plaintext);
    match world.bobs[0].decrypt(&id, &envelope) {
        Err(ClientError::Decrypt(e)) if e.is_already_seen() => {}
        other => panic!("{other:?}"),
    }
}
