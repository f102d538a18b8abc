//! The scenarios of "decrypt 1000 queued messages", built through the client API.
//!
//! A scenario is data only: the state of the receiving client(s) before the timed part, as a
//! [`ClientSeed`] that can be installed into any number of fresh clients (in memory or SQLite),
//! and the messages (or, for a conversation, the plaintexts) of the timed part. Building one is
//! setup and is never timed.

use std::fmt;

use proteus_client::{Client, QueuedMessage};
use proteus_core::{Envelope, IdentityKeyPair, Message, OsRng, PreKey, PreKeyBundle, PreKeyId};
use zeroize::Zeroizing;

use crate::fanout::{self, FanOut};
use crate::{BoxError, chat_plaintext};

/// How many messages every scenario has.
pub const QUEUE_LEN: usize = 1000;

/// The scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScenarioKind {
    /// `1x1000`: a fresh session; all 1000 messages are PreKeyMessages (the sender repeats the
    /// prekey header until it gets a reply), the first one creates the session.
    Fresh,
    /// `1x1000est`: an established session; 1000 CipherMessages.
    Established,
    /// `50x20`: 50 senders × 20 messages, each sender's first a PreKeyMessage for its own
    /// one-time prekey, delivered interleaved (round-robin over the senders).
    Senders,
    /// `conv10`: an established session and 1000 messages whose direction flips every 10; both
    /// sides encrypt and decrypt.
    Conversation,
    /// `fanout4000`: one plaintext encrypted for 4000 established sessions (see
    /// [`crate::fanout`]).
    FanOut,
}

impl ScenarioKind {
    /// Every scenario, in reporting order.
    pub const ALL: [Self; 5] = [
        Self::Fresh,
        Self::Established,
        Self::Senders,
        Self::Conversation,
        Self::FanOut,
    ];

    /// The scenario's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Fresh => "1x1000",
            Self::Established => "1x1000est",
            Self::Senders => "50x20",
            Self::Conversation => "conv10",
            Self::FanOut => "fanout4000",
        }
    }

    /// The scenario with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl fmt::Display for ScenarioKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a client holds before the timed part: identity, prekeys and sessions as serialised
/// records. [`install`](Self::install) puts exactly this state into a fresh client, so every run
/// starts from the same state whatever the store.
pub struct ClientSeed {
    identity: Zeroizing<Vec<u8>>,
    prekeys: Vec<Zeroizing<Vec<u8>>>,
    sessions: Vec<(String, Zeroizing<Vec<u8>>)>,
}

impl ClientSeed {
    /// Replaces the identity of `client` (which must have no sessions) and stores the prekeys
    /// (the last-resort prekey included, replacing the one the client made) and the sessions.
    pub fn install(&self, client: &mut Client) -> Result<(), BoxError> {
        client.import_identity(&self.identity)?;
        for prekey in &self.prekeys {
            client.import_prekey(prekey)?;
        }
        for (id, session) in &self.sessions {
            client.import_session(id, session)?;
        }
        Ok(())
    }

    /// How many sessions the seed holds.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// A fresh in-memory client holding this state.
    pub fn in_memory(&self) -> Result<Client, BoxError> {
        let mut client = Client::in_memory()?;
        self.install(&mut client)?;
        Ok(client)
    }
}

/// A party during setup: an in-memory client whose identity and prekeys we generated ourselves,
/// so that its state can be captured as a [`ClientSeed`].
pub struct SetupParty {
    identity: Zeroizing<Vec<u8>>,
    keys: IdentityKeyPair,
    prekeys: Vec<(PreKeyId, Zeroizing<Vec<u8>>)>,
    next_prekey_id: u16,
    /// The client, for handshakes and for encrypting the queue.
    pub client: Client,
}

impl SetupParty {
    /// A party with a new identity and a last-resort prekey.
    pub fn new() -> Result<Self, BoxError> {
        let keys = IdentityKeyPair::generate(&mut OsRng);
        let identity = keys.to_bytes();
        let last_resort = PreKey::last_resort(&mut OsRng);
        let mut client = Client::in_memory()?;
        client.import_identity(&identity)?;
        client.import_prekey(&last_resort.to_bytes())?;
        Ok(Self {
            identity,
            keys,
            prekeys: vec![(last_resort.id(), last_resort.to_bytes())],
            next_prekey_id: 1,
            client,
        })
    }

    /// Generates and stores `n` one-time prekeys; returns their bundles (CBOR, as published).
    pub fn add_prekeys(&mut self, n: usize) -> Result<Vec<Vec<u8>>, BoxError> {
        let mut bundles = Vec::with_capacity(n);
        for _ in 0..n {
            let id = PreKeyId::new(self.next_prekey_id);
            self.next_prekey_id = self
                .next_prekey_id
                .checked_add(1)
                .filter(|next| *next < u16::MAX)
                .ok_or("out of one-time prekey ids")?;
            let prekey = PreKey::generate(id, &mut OsRng);
            let bytes = prekey.to_bytes();
            self.client.import_prekey(&bytes)?;
            self.prekeys.push((id, bytes));
            bundles.push(PreKeyBundle::new(self.keys.public_key(), &prekey).to_bytes());
        }
        Ok(bundles)
    }

    /// The party's state now: the prekeys it still has and every session.
    pub fn seed(&mut self) -> Result<ClientSeed, BoxError> {
        let mut prekeys = Vec::new();
        for (id, bytes) in &self.prekeys {
            // Prekeys that a PreKeyMessage used up during setup are gone from the client.
            if self.client.prekey_bundle(*id).is_ok() {
                prekeys.push(bytes.clone());
            }
        }
        let mut sessions = Vec::new();
        for id in self.client.session_ids()? {
            let session = self.client.export_session(&id)?;
            sessions.push((id, session));
        }
        Ok(ClientSeed {
            identity: self.identity.clone(),
            prekeys,
            sessions,
        })
    }
}

/// Establishes a session between `a` and `b` as apps do: `a` starts it from a bundle of `b`'s,
/// `b` decrypts the PreKeyMessage and replies, `a` decrypts the reply (so it stops sending the
/// prekey header). `a` knows `b` as `b_id` and `b` knows `a` as `a_id`.
pub fn establish(
    a: &mut SetupParty,
    a_id: &str,
    b: &mut SetupParty,
    b_id: &str,
) -> Result<(), BoxError> {
    let bundle = b.add_prekeys(1)?.pop().ok_or("no bundle")?;
    a.client.create_session(b_id, &bundle)?;
    let hello = a.client.encrypt(b_id, b"hello")?;
    if b.client.decrypt(a_id, &hello)? != b"hello" {
        return Err("handshake: the PreKeyMessage decrypted to something else".into());
    }
    let reply = b.client.encrypt(a_id, b"hi")?;
    if a.client.decrypt(b_id, &reply)? != b"hi" {
        return Err("handshake: the reply decrypted to something else".into());
    }
    Ok(())
}

/// One queued message with what it must decrypt to.
pub struct Queued {
    /// The receiver's id of the sender's session.
    pub session_id: String,
    /// The envelope as received.
    pub envelope: Vec<u8>,
    /// The plaintext that was sent.
    pub plaintext: Vec<u8>,
}

/// What a scenario times.
pub enum Workload {
    /// The receiver, starting from `receiver`, decrypts `messages` in order.
    Queue {
        /// The receiver's state before the queue.
        receiver: ClientSeed,
        /// The queue, in delivery order.
        messages: Vec<Queued>,
    },
    /// Alice and Bob, starting from an established session, exchange `plaintexts`: Alice sends
    /// the first `flip_every`, Bob the next `flip_every`, and so on. Each block is encrypted by
    /// its sender and then decrypted by the other side.
    Conversation {
        /// Alice's state; she knows Bob as [`BOB`].
        alice: ClientSeed,
        /// Bob's state; he knows Alice as [`ALICE`].
        bob: ClientSeed,
        /// The messages, in sending order.
        plaintexts: Vec<Vec<u8>>,
        /// How many messages each side sends before the direction flips.
        flip_every: usize,
    },
    /// The sender, starting from `sender`, encrypts one plaintext for every recipient.
    FanOut {
        /// The sender's state, with a session to every recipient.
        sender: ClientSeed,
        /// The recipients, the plaintext and the checked sample.
        fan_out: FanOut,
    },
}

/// Bob's id for his session with Alice.
pub const ALICE: &str = "alice:phone";
/// Alice's id for her session with Bob.
pub const BOB: &str = "bob:laptop";

/// A built scenario.
pub struct Scenario {
    /// Which one.
    pub kind: ScenarioKind,
    /// What is timed.
    pub workload: Workload,
}

impl Scenario {
    /// Builds the scenario with fresh identities (setup; a few milliseconds).
    pub fn build(kind: ScenarioKind) -> Result<Self, BoxError> {
        let workload = match kind {
            ScenarioKind::Fresh => fresh()?,
            ScenarioKind::Established => established()?,
            ScenarioKind::Senders => senders(50, QUEUE_LEN / 50)?,
            ScenarioKind::Conversation => conversation(QUEUE_LEN, 10)?,
            ScenarioKind::FanOut => {
                let (sender, fan_out) = FanOut::build(fanout::RECIPIENTS)?;
                Workload::FanOut { sender, fan_out }
            }
        };
        if let Workload::Queue { messages, .. } = &workload {
            let prekey_messages = messages
                .iter()
                .map(|m| is_prekey_message(&m.envelope))
                .collect::<Result<Vec<bool>, BoxError>>()?;
            let count = prekey_messages.iter().filter(|p| **p).count();
            // Senders that never got a reply repeat the prekey header on every message.
            let expected = match kind {
                ScenarioKind::Established => 0,
                _ => messages.len(),
            };
            if count != expected {
                return Err(format!(
                    "{kind}: {count} PreKeyMessages in the queue, expected {expected}"
                )
                .into());
            }
        }
        Ok(Self { kind, workload })
    }
}

/// Whether an envelope holds a PreKeyMessage (rather than a CipherMessage).
pub fn is_prekey_message(envelope: &[u8]) -> Result<bool, BoxError> {
    Ok(matches!(
        Envelope::from_bytes(envelope)?.message(),
        Message::PreKey(_)
    ))
}

/// The queue as the client API takes it.
pub fn queued_messages(messages: &[Queued]) -> Vec<QueuedMessage<'_>> {
    messages
        .iter()
        .map(|m| QueuedMessage {
            session_id: &m.session_id,
            envelope: &m.envelope,
        })
        .collect()
}

/// Alice encrypts the queue for Bob, who is offline; Bob's state now is the run's start.
fn alice_queues_for(alice: &mut SetupParty, bob: &mut SetupParty) -> Result<Workload, BoxError> {
    let messages = (0..QUEUE_LEN)
        .map(|i| {
            let plaintext = chat_plaintext(i);
            let envelope = alice.client.encrypt(BOB, &plaintext)?;
            Ok(Queued {
                session_id: ALICE.to_owned(),
                envelope,
                plaintext,
            })
        })
        .collect::<Result<Vec<_>, BoxError>>()?;
    Ok(Workload::Queue {
        receiver: bob.seed()?,
        messages,
    })
}

fn fresh() -> Result<Workload, BoxError> {
    let mut bob = SetupParty::new()?;
    let mut alice = SetupParty::new()?;
    let bundle = bob.add_prekeys(1)?.pop().ok_or("no bundle")?;
    alice.client.create_session(BOB, &bundle)?;
    alice_queues_for(&mut alice, &mut bob)
}

fn established() -> Result<Workload, BoxError> {
    let mut bob = SetupParty::new()?;
    let mut alice = SetupParty::new()?;
    establish(&mut alice, ALICE, &mut bob, BOB)?;
    alice_queues_for(&mut alice, &mut bob)
}

/// The receiver's id of sender `i`'s session.
pub fn sender_id(i: usize) -> String {
    format!("sender-{i:04}:device")
}

fn senders(senders: usize, per_sender: usize) -> Result<Workload, BoxError> {
    let mut receiver = SetupParty::new()?;
    let bundles = receiver.add_prekeys(senders)?;
    let mut clients = Vec::with_capacity(senders);
    for bundle in &bundles {
        let mut sender = Client::in_memory()?;
        sender.create_session(BOB, bundle)?;
        clients.push(sender);
    }
    let mut messages = Vec::with_capacity(senders * per_sender);
    for _ in 0..per_sender {
        for (i, sender) in clients.iter_mut().enumerate() {
            let plaintext = chat_plaintext(messages.len());
            let envelope = sender.encrypt(BOB, &plaintext)?;
            messages.push(Queued {
                session_id: sender_id(i),
                envelope,
                plaintext,
            });
        }
    }
    Ok(Workload::Queue {
        receiver: receiver.seed()?,
        messages,
    })
}

fn conversation(len: usize, flip_every: usize) -> Result<Workload, BoxError> {
    let mut alice = SetupParty::new()?;
    let mut bob = SetupParty::new()?;
    establish(&mut alice, ALICE, &mut bob, BOB)?;
    Ok(Workload::Conversation {
        alice: alice.seed()?,
        bob: bob.seed()?,
        plaintexts: (0..len).map(chat_plaintext).collect(),
        flip_every,
    })
}
