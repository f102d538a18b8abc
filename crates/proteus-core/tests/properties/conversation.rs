//! The two-party conversation model of the conversation properties (module docs of `main.rs`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proteus_core::limits::MAX_RECV_CHAINS;
use proteus_core::{
    Envelope, IdentityKey, IdentityKeyPair, Message, PreKey, PreKeyBundle, PreKeyId, Session,
};

use crate::rng::TestRng;

// ---------------------------------------------------------------------------------------------
// Error codes the model expects
// ---------------------------------------------------------------------------------------------

/// Already seen: `OutdatedMessage` (208) or `DuplicateMessage` (209).
const ALREADY_SEEN: [u16; 2] = [208, 209];

/// A message whose receive chain was dropped is taken for a new ratchet key and fails its MAC
/// (206 in sync, 207 ahead); a PreKeyMessage then falls back to a new state, whose one-time
/// prekey is gone (101). docs/protocol.md §7.2, §8.3.
const CHAIN_GONE: [u16; 3] = [101, 206, 207];

// ---------------------------------------------------------------------------------------------
// Conversation model
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Alice,
    Bob,
}

fn other(side: Side) -> Side {
    match side {
        Side::Alice => Side::Bob,
        Side::Bob => Side::Alice,
    }
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Alice), Just(Side::Bob)]
}

/// One step of a conversation. `to` is the recipient of the message acted on.
#[derive(Debug, Clone)]
pub(crate) enum Action {
    /// `from` encrypts a `len`-byte message (a no-op for Bob before he has a session).
    Send { from: Side, len: usize },
    /// `from` sends and the message is delivered at once: in-order traffic, which is what
    /// turns the DH ratchet often enough for receive chains to be dropped (more than five
    /// turns while an old message is still in flight).
    Ping { from: Side, len: usize },
    /// `rounds` in-order round trips, Alice first: each turns both ratchets once.
    Exchange { rounds: usize },
    /// Delivers one in-flight message to `to`, which takes it out of flight.
    Deliver { to: Side, pick: Index },
    /// Delivers an already delivered message again.
    Duplicate { to: Side, pick: Index },
    /// Delivers a copy of a message (in flight or delivered) with one bit flipped in its MAC or
    /// in the message bytes the MAC covers. The original is untouched.
    Tamper {
        to: Side,
        pick: Index,
        byte: Index,
        bit: u8,
    },
    /// Loses an in-flight message for good.
    Drop { to: Side, pick: Index },
    /// Serialises the whole party (identity, prekeys, session) and loads it back.
    Restore(Side),
}

pub(crate) fn action() -> impl Strategy<Value = Action> {
    prop_oneof![
        4 => (side(), 0usize..48).prop_map(|(from, len)| Action::Send { from, len }),
        3 => (side(), 0usize..48).prop_map(|(from, len)| Action::Ping { from, len }),
        1 => (1usize..4).prop_map(|rounds| Action::Exchange { rounds }),
        6 => (side(), any::<Index>()).prop_map(|(to, pick)| Action::Deliver { to, pick }),
        1 => (side(), any::<Index>()).prop_map(|(to, pick)| Action::Duplicate { to, pick }),
        2 => (side(), any::<Index>(), any::<Index>(), 0u8..8)
            .prop_map(|(to, pick, byte, bit)| Action::Tamper { to, pick, byte, bit }),
        1 => (side(), any::<Index>()).prop_map(|(to, pick)| Action::Drop { to, pick }),
        1 => side().prop_map(Action::Restore),
    ]
}

/// A sent message and what the model knows about it.
#[derive(Debug, Clone)]
pub(crate) struct Sent {
    id: u64,
    wire: Vec<u8>,
    plaintext: Vec<u8>,
    /// The sender's ratchet key, which names the receive chain it needs.
    ratchet_key: [u8; 32],
    prekey_message: bool,
}

/// Everything a party keeps, plus the model of its receive chains and its mailbox.
pub(crate) struct Party {
    identity: IdentityKeyPair,
    session: Option<Session>,
    prekeys: BTreeMap<PreKeyId, PreKey>,
    /// Ratchet keys of the receive chains the session holds, newest first (docs/protocol.md §7.2).
    held_chains: VecDeque<[u8; 32]>,
    /// Every ratchet key a receive chain was ever made for.
    seen_chains: BTreeSet<[u8; 32]>,
    /// Messages on their way to this party.
    in_flight: Vec<Sent>,
    /// Messages this party decrypted.
    delivered: Vec<Sent>,
}

/// A party's persistent state, byte for byte: the session and the prekey store.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    session: Option<Vec<u8>>,
    prekeys: Vec<Vec<u8>>,
}

impl Party {
    fn new(identity: IdentityKeyPair) -> Self {
        Self {
            identity,
            session: None,
            prekeys: BTreeMap::new(),
            held_chains: VecDeque::new(),
            seen_chains: BTreeSet::new(),
            in_flight: Vec::new(),
            delivered: Vec::new(),
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            session: self.session.as_ref().map(|s| s.to_bytes().to_vec()),
            prekeys: self
                .prekeys
                .values()
                .map(|p| p.to_bytes().to_vec())
                .collect(),
        }
    }

    fn learn_chain(&mut self, ratchet_key: [u8; 32]) {
        if !self.held_chains.contains(&ratchet_key) {
            self.held_chains.push_front(ratchet_key);
            self.held_chains.truncate(MAX_RECV_CHAINS);
        }
        self.seen_chains.insert(ratchet_key);
    }

    /// Whether the model says a first delivery of a message on this chain must decrypt.
    fn can_decrypt(&self, ratchet_key: &[u8; 32]) -> bool {
        self.session.is_none()
            || self.held_chains.contains(ratchet_key)
            || !self.seen_chains.contains(ratchet_key)
    }

    /// Decodes and decrypts as an app would: `init_from_message` without a session.
    fn receive(&mut self, rng: &mut TestRng, wire: &[u8]) -> Result<Vec<u8>, u16> {
        let envelope = Envelope::from_bytes(wire).map_err(|e| e.code())?;
        match &mut self.session {
            Some(session) => session
                .decrypt(rng, &self.identity, &mut self.prekeys, &envelope)
                .map_err(|e| e.code()),
            None => {
                let inbound =
                    Session::init_from_message(rng, &self.identity, &mut self.prekeys, &envelope)
                        .map_err(|e| e.code())?;
                self.session = Some(inbound.session);
                Ok(inbound.plaintext)
            }
        }
    }

    /// Serialises and reloads identity, prekeys and session; all must round-trip exactly.
    fn restore(&mut self) {
        let identity_bytes = self.identity.to_bytes();
        self.identity = IdentityKeyPair::from_bytes(&identity_bytes).unwrap();
        assert_eq!(*self.identity.to_bytes(), *identity_bytes);
        for prekey in self.prekeys.values_mut() {
            let bytes = prekey.to_bytes();
            *prekey = PreKey::from_bytes(&bytes).unwrap();
            assert_eq!(*prekey.to_bytes(), *bytes);
        }
        if let Some(session) = &mut self.session {
            *session = session_round_trip(self.identity.public_key(), session);
        }
    }
}

/// `Session::from_bytes(to_bytes(s))` re-encodes to the same bytes; returns the loaded copy.
pub(crate) fn session_round_trip(identity: &IdentityKey, session: &Session) -> Session {
    let bytes = session.to_bytes();
    let loaded = Session::from_bytes(identity, &bytes).unwrap();
    assert_eq!(*loaded.to_bytes(), *bytes, "session does not round-trip");
    assert_eq!(loaded.session_tag(), session.session_tag());
    assert_eq!(loaded.remote_identity(), session.remote_identity());
    assert_eq!(loaded.pending_prekey_id(), session.pending_prekey_id());
    assert_eq!(loaded.state_count(), session.state_count());
    loaded
}

pub(crate) fn plaintext(id: u64, len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = id.to_le_bytes().into_iter().chain(0..=255).collect();
    p.truncate(len);
    p
}

/// The start of a conversation: both identities, Bob's prekeys (the one-time prekey his bundle
/// names, a spare one and the last-resort prekey) and Alice's session from the bundle,
/// serialised. Making these costs more than a whole short conversation in an unoptimised build
/// (every key validation is a scalar multiplication), so a few are made once and shared.
pub(crate) struct Start {
    alice: IdentityKeyPair,
    bob: IdentityKeyPair,
    bundle_prekey: PreKeyId,
    prekeys: Vec<PreKey>,
    session: Vec<u8>,
}

pub(crate) fn starts() -> &'static [Start] {
    static STARTS: OnceLock<Vec<Start>> = OnceLock::new();
    STARTS.get_or_init(|| {
        // 0xfffe is one bit away from the last-resort id: a tampered PreKeyMessage can name it.
        [(0u16, 1u16), (1, 0), (0xfffe, 7)]
            .into_iter()
            .enumerate()
            .map(|(i, (id, spare))| {
                let rng = &mut TestRng(0x57a7 + i as u64);
                let alice = IdentityKeyPair::generate(rng);
                let bob = IdentityKeyPair::generate(rng);
                let prekey = PreKey::generate(PreKeyId::new(id), rng);
                let bundle = if i % 2 == 0 {
                    PreKeyBundle::new(bob.public_key(), &prekey)
                } else {
                    PreKeyBundle::signed(&bob, &prekey)
                };
                let session = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
                let prekeys = vec![
                    prekey,
                    PreKey::generate(PreKeyId::new(spare), rng),
                    PreKey::last_resort(rng),
                ];
                Start {
                    alice,
                    bob,
                    bundle_prekey: PreKeyId::new(id),
                    prekeys,
                    session: session.to_bytes().to_vec(),
                }
            })
            .collect()
    })
}

pub(crate) struct Conversation {
    rng: TestRng,
    alice: Party,
    bob: Party,
    /// The one-time prekey Alice's session uses.
    bundle_prekey: PreKeyId,
    next_id: u64,
}

impl Conversation {
    /// Starts from `starts()[start]`; the conversation's own randomness (ratchet keys) comes
    /// from `seed`.
    pub(crate) fn new(seed: u64, start: usize) -> Self {
        let start = &starts()[start];
        let mut alice = Party::new(start.alice.clone());
        let mut bob = Party::new(start.bob.clone());
        bob.prekeys = start.prekeys.iter().map(|p| (p.id(), p.clone())).collect();
        let session = Session::from_bytes(alice.identity.public_key(), &start.session).unwrap();
        assert_eq!(session.pending_prekey_id(), Some(start.bundle_prekey));
        alice.session = Some(session);
        // Alice's state starts with a receive chain on Bob's prekey (docs/protocol.md §6.3); Bob
        // never sends on it, but it takes one of the five places.
        let prekey = &bob.prekeys[&start.bundle_prekey];
        alice.learn_chain(*prekey.public_key().as_bytes());
        Self {
            rng: TestRng(seed),
            alice,
            bob,
            bundle_prekey: start.bundle_prekey,
            next_id: 0,
        }
    }

    fn party(&mut self, side: Side) -> &mut Party {
        match side {
            Side::Alice => &mut self.alice,
            Side::Bob => &mut self.bob,
        }
    }

    fn apply(&mut self, action: &Action) {
        match *action {
            Action::Send { from, len } => {
                self.send(from, len);
            }
            Action::Ping { from, len } => self.ping(from, len),
            Action::Exchange { rounds } => {
                for _ in 0..rounds {
                    self.ping(Side::Alice, 3);
                    self.ping(Side::Bob, 5);
                }
            }
            Action::Deliver { to, pick } => {
                let party = self.party(to);
                if !party.in_flight.is_empty() {
                    let message = party.in_flight.remove(pick.index(party.in_flight.len()));
                    self.deliver(to, message);
                }
            }
            Action::Duplicate { to, pick } => {
                let party = self.party(to);
                if !party.delivered.is_empty() {
                    let message = party.delivered[pick.index(party.delivered.len())].clone();
                    self.duplicate(to, &message);
                }
            }
            Action::Tamper {
                to,
                pick,
                byte,
                bit,
            } => {
                let party = self.party(to);
                let pool = party.in_flight.len() + party.delivered.len();
                if pool > 0 {
                    let i = pick.index(pool);
                    let message = match party.in_flight.get(i) {
                        Some(m) => m.clone(),
                        None => party.delivered[i - party.in_flight.len()].clone(),
                    };
                    self.tamper(to, &message, byte, bit);
                }
            }
            Action::Drop { to, pick } => {
                let party = self.party(to);
                if !party.in_flight.is_empty() {
                    party.in_flight.remove(pick.index(party.in_flight.len()));
                }
            }
            Action::Restore(side) => {
                self.party(side).restore();
            }
        }
        self.check_invariants();
    }

    /// Encrypts a message to the other side and puts it in flight; `None` if `from` has no
    /// session yet (Bob before Alice's first message arrived).
    fn send(&mut self, from: Side, len: usize) -> Option<u64> {
        let id = self.next_id;
        let plaintext = plaintext(id, len);
        let sender = self.party(from);
        let session = sender.session.as_mut()?;
        let pending = session.has_pending_prekey();
        let envelope = session.encrypt(&plaintext).unwrap();
        let wire = envelope.to_bytes();
        // encode(decode(x)) == x for every envelope the engine writes.
        let decoded = Envelope::from_bytes(&wire).unwrap();
        assert_eq!(decoded, envelope);
        assert_eq!(decoded.to_bytes(), wire);
        let prekey_message = matches!(envelope.message(), Message::PreKey(_));
        // Messages carry the prekey header exactly until Alice decrypted a reply (docs/protocol.md
        // §8.4).
        assert_eq!(prekey_message, pending);
        assert!(!prekey_message || from == Side::Alice);
        let ratchet_key = *envelope.message().cipher_message().ratchet_key.as_bytes();
        self.next_id += 1;
        self.party(other(from)).in_flight.push(Sent {
            id,
            wire,
            plaintext,
            ratchet_key,
            prekey_message,
        });
        Some(id)
    }

    /// Sends a message and delivers it at once.
    fn ping(&mut self, from: Side, len: usize) {
        if self.send(from, len).is_some() {
            let to = other(from);
            let message = self.party(to).in_flight.pop().unwrap();
            self.deliver(to, message);
        }
    }

    /// First delivery of an untampered message: it decrypts to its plaintext exactly when the
    /// model says its chain is there, and a rejection changes nothing.
    fn deliver(&mut self, to: Side, message: Sent) {
        let Self {
            rng,
            alice,
            bob,
            bundle_prekey,
            ..
        } = self;
        let party = match to {
            Side::Alice => alice,
            Side::Bob => bob,
        };
        if party.session.is_none() {
            // Bob can only hear from Alice's first chain before he has a session.
            assert!(
                message.prekey_message,
                "message {} is not a PreKeyMessage",
                message.id
            );
        }
        let expect_ok = party.can_decrypt(&message.ratchet_key);
        let before = party.snapshot();
        match party.receive(rng, &message.wire) {
            Ok(plaintext) => {
                assert!(
                    expect_ok,
                    "message {} decrypted although its chain was dropped",
                    message.id
                );
                assert_eq!(plaintext, message.plaintext, "message {}", message.id);
                party.learn_chain(message.ratchet_key);
                party.delivered.push(message);
                // Exactly the one-time prekey is gone once Bob has a session (docs/protocol.md
                // §8.5).
                if to == Side::Bob {
                    assert!(!party.prekeys.contains_key(bundle_prekey));
                    assert_eq!(party.prekeys.len(), 2);
                }
            }
            Err(code) => {
                assert!(
                    !expect_ok,
                    "message {} ({:?}, {} bytes) rejected with {code} although its chain is held",
                    message.id,
                    to,
                    message.plaintext.len()
                );
                assert!(
                    CHAIN_GONE.contains(&code),
                    "message {} of a dropped chain rejected with {code}",
                    message.id
                );
                assert_eq!(party.snapshot(), before, "a rejection changed state");
            }
        }
    }

    /// A message delivered before is rejected, and the rejection changes nothing.
    fn duplicate(&mut self, to: Side, message: &Sent) {
        let Self {
            rng, alice, bob, ..
        } = self;
        let party = match to {
            Side::Alice => alice,
            Side::Bob => bob,
        };
        let held = party.held_chains.contains(&message.ratchet_key);
        let before = party.snapshot();
        match party.receive(rng, &message.wire) {
            Ok(_) => panic!("duplicate of message {} decrypted again", message.id),
            Err(code) => {
                let allowed: &[u16] = if held { &ALREADY_SEEN } else { &CHAIN_GONE };
                assert!(
                    allowed.contains(&code),
                    "duplicate of message {} (chain held: {held}) rejected with {code}",
                    message.id
                );
            }
        }
        assert_eq!(
            party.snapshot(),
            before,
            "a rejected duplicate changed state"
        );
    }

    /// A copy with one bit flipped in the MAC or in the MAC-covered message bytes is rejected
    /// (by the decoder or by the session), and the rejection changes nothing.
    fn tamper(&mut self, to: Side, message: &Sent, byte: Index, bit: u8) {
        let Self {
            rng, alice, bob, ..
        } = self;
        let party = match to {
            Side::Alice => alice,
            Side::Bob => bob,
        };
        let envelope = Envelope::from_bytes(&message.wire).unwrap();
        let covered = envelope.message_bytes().len();
        // a3 00 01 01 a1 00 58 20 <mac:32> 02 <bstr header> <message bytes>: docs/protocol.md §5.1.
        assert_eq!(
            message.wire[..8],
            [0xa3, 0x00, 0x01, 0x01, 0xa1, 0x00, 0x58, 0x20]
        );
        let position = byte.index(32 + covered);
        let offset = if position < 32 {
            8 + position
        } else {
            message.wire.len() - covered + (position - 32)
        };
        let mut tampered = message.wire.clone();
        tampered[offset] ^= 1 << (bit % 8);
        let before = party.snapshot();
        if let Ok(plaintext) = party.receive(rng, &tampered) {
            panic!(
                "message {} with bit {bit} of byte {offset} flipped decrypted to {}",
                message.id,
                hex::encode(plaintext)
            );
        }
        assert_eq!(party.snapshot(), before, "a rejected forgery changed state");
    }

    fn check_invariants(&self) {
        for (party, peer) in [(&self.alice, &self.bob), (&self.bob, &self.alice)] {
            if let Some(session) = &party.session {
                session_round_trip(party.identity.public_key(), session);
                // A session stored for one identity does not load for another (code 300).
                let bytes = session.to_bytes();
                let err = Session::from_bytes(peer.identity.public_key(), &bytes).unwrap_err();
                assert_eq!(err.code(), 300);
                // One state per side: nobody initiated twice.
                assert_eq!(session.state_count(), 1);
            }
        }
        if let (Some(a), Some(b)) = (&self.alice.session, &self.bob.session) {
            assert_eq!(a.remote_identity(), self.bob.identity.public_key());
            assert_eq!(b.remote_identity(), self.alice.identity.public_key());
        }
    }

    /// Plays `actions`, then delivers everything still in flight and checks that both
    /// directions still work.
    pub(crate) fn run(mut self, actions: &[Action]) {
        for action in actions {
            self.apply(action);
        }
        self.finish();
    }

    fn finish(&mut self) {
        for to in [Side::Bob, Side::Alice] {
            while !self.party(to).in_flight.is_empty() {
                let message = self.party(to).in_flight.remove(0);
                self.deliver(to, message);
            }
        }
        for (from, to) in [(Side::Alice, Side::Bob), (Side::Bob, Side::Alice)] {
            let id = self.send(from, 11).unwrap();
            let message = self.party(to).in_flight.pop().unwrap();
            self.deliver(to, message);
            assert_eq!(self.party(to).delivered.last().map(|m| m.id), Some(id));
        }
        self.check_invariants();
    }
}
