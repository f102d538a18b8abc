//! Property tests of the protocol engine (docs/protocol.md §7, §8).
//!
//! * **Conversations**: random two-party conversations (sends both ways, reordering, drops,
//!   duplicates, tampered bytes, serialise/restore of either side at random points) are
//!   checked against an exact model of which receive chains each side still holds:
//!   - an untampered message delivered for the first time decrypts to its plaintext when its
//!     chain is held (or new), and is rejected when its chain was dropped (docs/protocol.md §7.2);
//!   - a duplicate is rejected (`DuplicateMessage`/`OutdatedMessage` while its chain is held);
//!   - a tampered envelope (any bit of the MAC or of the MAC-covered message bytes) is rejected;
//!   - every rejection leaves the session and the prekey store byte for byte as they were.
//!
//!   The envelope's version and outer map keys are not covered by the MAC and are not checked by
//!   receivers (docs/protocol.md §5.1), so flipping them is not tampering; the mutated-envelope
//!   property below covers every byte with the right criterion.
//! * **Decoders**: every decoder returns an error, never panics, on arbitrary bytes and on
//!   mutated valid encodings (bit flips, truncations, byte edits); whatever they accept
//!   re-encodes to something they decode to the same value. A mutated envelope is only ever
//!   accepted by a session if its MAC and MAC-covered bytes are intact. A corrupted stored
//!   session fails to load or works without panicking, atomically.
//! * **Round trips**: `encode(decode(x)) == x` for identities, identity keys, prekeys, bundles
//!   (unsigned, signed in either encoding), envelopes and sessions at random points of a
//!   conversation.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::convert::Infallible;
use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use proteus_core::limits::MAX_RECV_CHAINS;
use proteus_core::{
    BundleSignature, BundleVerification, Envelope, IdentityKey, IdentityKeyPair, Message, PreKey,
    PreKeyBundle, PreKeyId, Session,
};

// ---------------------------------------------------------------------------------------------
// Deterministic randomness
// ---------------------------------------------------------------------------------------------

/// SplitMix64 from a proptest-chosen seed, so that every case (and its shrinking) replays the
/// same keys. Not cryptographically strong, which a test does not need.
#[derive(Debug, Clone)]
struct TestRng(u64);

impl TestRng {
    fn step(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl rand_core::TryRng for TestRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.step() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.step())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let word = self.step().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        Ok(())
    }
}

impl rand_core::TryCryptoRng for TestRng {}

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
enum Side {
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
enum Action {
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

fn action() -> impl Strategy<Value = Action> {
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
struct Sent {
    id: u64,
    wire: Vec<u8>,
    plaintext: Vec<u8>,
    /// The sender's ratchet key, which names the receive chain it needs.
    ratchet_key: [u8; 32],
    prekey_message: bool,
}

/// Everything a party keeps, plus the model of its receive chains and its mailbox.
struct Party {
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
struct Snapshot {
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
fn session_round_trip(identity: &IdentityKey, session: &Session) -> Session {
    let bytes = session.to_bytes();
    let loaded = Session::from_bytes(identity, &bytes).unwrap();
    assert_eq!(*loaded.to_bytes(), *bytes, "session does not round-trip");
    assert_eq!(loaded.session_tag(), session.session_tag());
    assert_eq!(loaded.remote_identity(), session.remote_identity());
    assert_eq!(loaded.pending_prekey_id(), session.pending_prekey_id());
    assert_eq!(loaded.state_count(), session.state_count());
    loaded
}

fn plaintext(id: u64, len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = id.to_le_bytes().into_iter().chain(0..=255).collect();
    p.truncate(len);
    p
}

/// The start of a conversation: both identities, Bob's prekeys (the one-time prekey his bundle
/// names, a spare one and the last-resort prekey) and Alice's session from the bundle,
/// serialised. Making these costs more than a whole short conversation in an unoptimised build
/// (every key validation is a scalar multiplication), so a few are made once and shared.
struct Start {
    alice: IdentityKeyPair,
    bob: IdentityKeyPair,
    bundle_prekey: PreKeyId,
    prekeys: Vec<PreKey>,
    session: Vec<u8>,
}

fn starts() -> &'static [Start] {
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

struct Conversation {
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
    fn new(seed: u64, start: usize) -> Self {
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
    fn run(mut self, actions: &[Action]) {
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

// ---------------------------------------------------------------------------------------------
// Decoders
// ---------------------------------------------------------------------------------------------

/// Runs every decoder on `bytes`. None may panic; what one accepts must re-encode to bytes it
/// decodes to the same value (and the same bytes again).
fn decode_everything(bytes: &[u8], identities: &[IdentityKey]) {
    if let Ok(envelope) = Envelope::from_bytes(bytes) {
        let again = envelope.to_bytes();
        assert_eq!(Envelope::from_bytes(&again).unwrap(), envelope);
    }
    if let Ok(bundle) = PreKeyBundle::from_bytes(bytes) {
        let again = bundle.to_bytes();
        assert_eq!(PreKeyBundle::from_bytes(&again).unwrap(), bundle);
        let _ = bundle.verify();
    }
    if let Ok(prekey) = PreKey::from_bytes(bytes) {
        let again = prekey.to_bytes();
        let reloaded = PreKey::from_bytes(&again).unwrap();
        assert_eq!(*reloaded.to_bytes(), *again);
        assert_eq!(reloaded.id(), prekey.id());
    }
    if let Ok(identity) = IdentityKeyPair::from_bytes(bytes) {
        let again = identity.to_bytes();
        let reloaded = IdentityKeyPair::from_bytes(&again).unwrap();
        assert_eq!(*reloaded.to_bytes(), *again);
        assert_eq!(reloaded.public_key(), identity.public_key());
    }
    if let Ok(key) = IdentityKey::from_bytes(bytes) {
        assert_eq!(IdentityKey::from_bytes(&key.to_bytes()).unwrap(), key);
    }
    for identity in identities {
        if let Ok(mut session) = Session::from_bytes(identity, bytes) {
            let again = session.to_bytes();
            let reloaded = Session::from_bytes(identity, &again).unwrap();
            assert_eq!(*reloaded.to_bytes(), *again);
            // A session that loads must also be usable without panicking.
            let _ = session.encrypt(b"probe");
        }
    }
}

/// A message with the state its recipient had just before it arrived.
struct Target {
    wire: Vec<u8>,
    plaintext: Vec<u8>,
    recipient_seed: [u8; 32],
    session: Option<Vec<u8>>,
    prekeys: Vec<Vec<u8>>,
}

impl Target {
    fn load_prekeys(&self) -> BTreeMap<PreKeyId, PreKey> {
        self.prekeys
            .iter()
            .map(|b| {
                let p = PreKey::from_bytes(b).unwrap();
                (p.id(), p)
            })
            .collect()
    }

    fn assert_prekeys_unchanged(&self, prekeys: &BTreeMap<PreKeyId, PreKey>) {
        let after: Vec<Vec<u8>> = prekeys.values().map(|p| p.to_bytes().to_vec()).collect();
        assert_eq!(
            after, self.prekeys,
            "a rejected message changed the prekeys"
        );
    }
}

/// Valid encodings of every kind, from a fixed short conversation.
struct Fixtures {
    identities: Vec<IdentityKey>,
    encodings: Vec<Vec<u8>>,
    targets: Vec<Target>,
}

const ALICE_SEED: [u8; 32] = [0xa1; 32];
const BOB_SEED: [u8; 32] = [0xb0; 32];

fn fixtures() -> &'static Fixtures {
    static FIXTURES: OnceLock<Fixtures> = OnceLock::new();
    FIXTURES.get_or_init(|| {
        let rng = &mut TestRng(0x5eed);
        let alice = IdentityKeyPair::from_seed(&ALICE_SEED);
        let bob = IdentityKeyPair::from_seed(&BOB_SEED);
        let prekey = PreKey::generate(PreKeyId::new(42), rng);
        let last_resort = PreKey::last_resort(rng);
        let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
        let signed = PreKeyBundle::signed(&bob, &prekey);
        let mut bob_prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
        let store_bytes =
            |s: &BTreeMap<PreKeyId, PreKey>| s.values().map(|p| p.to_bytes().to_vec()).collect();

        let mut to_bob = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
        let m1 = to_bob.encrypt(b"first").unwrap();
        let m2 = to_bob.encrypt(b"second").unwrap();
        let m3 = to_bob.encrypt(b"third").unwrap();
        let mut targets = vec![Target {
            wire: m1.to_bytes(),
            plaintext: b"first".to_vec(),
            recipient_seed: BOB_SEED,
            session: None,
            prekeys: store_bytes(&bob_prekeys),
        }];
        let mut to_alice = Session::init_from_message(rng, &bob, &mut bob_prekeys, &m1)
            .unwrap()
            .session;
        // m3 arrives ahead of m2: a counter gap.
        targets.push(Target {
            wire: m3.to_bytes(),
            plaintext: b"third".to_vec(),
            recipient_seed: BOB_SEED,
            session: Some(to_alice.to_bytes().to_vec()),
            prekeys: store_bytes(&bob_prekeys),
        });
        to_alice.decrypt(rng, &bob, &mut bob_prekeys, &m3).unwrap();
        // m2 is late: its key is staged.
        targets.push(Target {
            wire: m2.to_bytes(),
            plaintext: b"second".to_vec(),
            recipient_seed: BOB_SEED,
            session: Some(to_alice.to_bytes().to_vec()),
            prekeys: store_bytes(&bob_prekeys),
        });
        to_alice.decrypt(rng, &bob, &mut bob_prekeys, &m2).unwrap();
        let r1 = to_alice.encrypt(b"reply").unwrap();
        // r1 makes Alice do a DH ratchet step.
        targets.push(Target {
            wire: r1.to_bytes(),
            plaintext: b"reply".to_vec(),
            recipient_seed: ALICE_SEED,
            session: Some(to_bob.to_bytes().to_vec()),
            prekeys: Vec::new(),
        });
        to_bob
            .decrypt(rng, &alice, &mut BTreeMap::new(), &r1)
            .unwrap();
        let c1 = to_bob.encrypt(b"cipher message").unwrap();
        assert!(matches!(c1.message(), Message::Cipher(_)));
        targets.push(Target {
            wire: c1.to_bytes(),
            plaintext: b"cipher message".to_vec(),
            recipient_seed: BOB_SEED,
            session: Some(to_alice.to_bytes().to_vec()),
            prekeys: store_bytes(&bob_prekeys),
        });

        let mut encodings = vec![
            alice.to_bytes().to_vec(),
            bob.public_key().to_bytes(),
            prekey.to_bytes().to_vec(),
            last_resort.to_bytes().to_vec(),
            bundle.to_bytes(),
            signed.to_bytes(),
            wrapped_signature(&signed),
            to_bob.to_bytes().to_vec(),
        ];
        encodings.extend(targets.iter().map(|t| t.wire.clone()));
        encodings.extend(targets.iter().filter_map(|t| t.session.clone()));
        Fixtures {
            identities: vec![*alice.public_key(), *bob.public_key()],
            encodings,
            targets,
        }
    })
}

/// A signed bundle re-encoded with Wire's Rust signature form `{0: bstr(64)}` (docs/protocol.md
/// §4.7).
fn wrapped_signature(signed: &PreKeyBundle) -> Vec<u8> {
    let bare = signed.to_bytes();
    let Some(BundleSignature::Bare(signature)) = signed.signature() else {
        panic!("PreKeyBundle::signed writes the bare form");
    };
    // The bare signature is the last item: 58 40 <64 bytes>.
    let (head, tail) = bare.split_at(bare.len() - 66);
    assert_eq!(tail[..2], [0x58, 0x40]);
    assert_eq!(tail[2..], signature[..]);
    let mut wrapped = head.to_vec();
    wrapped.extend_from_slice(&[0xa1, 0x00]);
    wrapped.extend_from_slice(tail);
    wrapped
}

#[derive(Debug, Clone)]
enum Mutation {
    FlipBit { at: Index, bit: u8 },
    SetByte { at: Index, value: u8 },
    Insert { at: Index, value: u8 },
    Remove { at: Index },
    Truncate { at: Index },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(at, value)| Mutation::SetByte { at, value }),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, value)| Mutation::Insert { at, value }),
        1 => any::<Index>().prop_map(|at| Mutation::Remove { at }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match *mutation {
        Mutation::FlipBit { at, bit } => {
            let i = at.index(bytes.len());
            bytes[i] ^= 1 << bit;
        }
        Mutation::SetByte { at, value } => {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        Mutation::Insert { at, value } => bytes.insert(at.index(bytes.len() + 1), value),
        Mutation::Remove { at } => {
            bytes.remove(at.index(bytes.len()));
        }
        Mutation::Truncate { at } => bytes.truncate(at.index(bytes.len())),
    }
}

/// Delivers a mutated envelope to its recipient's state: it may only decrypt if the MAC and
/// the MAC-covered bytes are intact (then to the original plaintext), and a rejection changes
/// nothing.
fn deliver_mutated(target: &Target, mutated: &[u8]) {
    let Ok(envelope) = Envelope::from_bytes(mutated) else {
        return;
    };
    let original = Envelope::from_bytes(&target.wire).unwrap();
    let authentic =
        envelope.mac() == original.mac() && envelope.message_bytes() == original.message_bytes();
    let identity = IdentityKeyPair::from_seed(&target.recipient_seed);
    let mut prekeys = target.load_prekeys();
    let rng = &mut TestRng(7);
    let result = match &target.session {
        None => Session::init_from_message(rng, &identity, &mut prekeys, &envelope)
            .map(|inbound| inbound.plaintext),
        Some(bytes) => {
            let mut session = Session::from_bytes(identity.public_key(), bytes).unwrap();
            let result = session.decrypt(rng, &identity, &mut prekeys, &envelope);
            if result.is_err() {
                assert_eq!(
                    *session.to_bytes(),
                    bytes[..],
                    "a rejected envelope changed the session"
                );
            }
            result
        }
    };
    match result {
        Ok(plaintext) => {
            assert!(authentic, "a forged envelope decrypted");
            assert_eq!(plaintext, target.plaintext);
        }
        Err(_) => target.assert_prekeys_unchanged(&prekeys),
    }
}

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Proptest settings; failures are saved next to this file (`properties.proptest-regressions`)
/// since an integration test has no `lib.rs` for proptest's default location.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// Random conversations against the exact receive-chain model (module docs).
    #[test]
    fn conversations_deliver_each_message_exactly_once(
        seed in any::<u64>(),
        start in any::<Index>(),
        actions in vec(action(), 1..64),
    ) {
        Conversation::new(seed, start.index(starts().len())).run(&actions);
    }
}

proptest! {
    #![proptest_config(config(64))]

    /// Long conversations: messages of both first chains are left in flight, then at least six
    /// round trips drop those chains on both sides (docs/protocol.md §7.2), so the late messages
    /// must be rejected, atomically; everything else as in the random conversations.
    #[test]
    fn late_messages_of_dropped_chains_are_rejected(
        seed in any::<u64>(),
        start in any::<Index>(),
        before in vec(action(), 0..6),
        rounds in 6usize..8,
        after in vec(action(), 0..6),
    ) {
        let mut actions = vec![
            Action::Send { from: Side::Alice, len: 7 },
            Action::Ping { from: Side::Alice, len: 1 },
            Action::Send { from: Side::Bob, len: 9 },
        ];
        actions.extend(before);
        actions.push(Action::Exchange { rounds });
        actions.extend(after);
        Conversation::new(seed, start.index(starts().len())).run(&actions);
    }
}

proptest! {
    #![proptest_config(config(512))]

    /// No decoder panics on arbitrary bytes.
    #[test]
    fn decoders_never_panic_on_arbitrary_bytes(bytes in vec(any::<u8>(), 0..256)) {
        decode_everything(&bytes, &fixtures().identities);
    }

    /// No decoder panics on mutated valid encodings, and what they accept re-encodes stably.
    #[test]
    fn decoders_never_panic_on_mutated_encodings(
        which in any::<Index>(),
        mutations in vec(mutation(), 1..4),
    ) {
        let fixtures = fixtures();
        let mut bytes = fixtures.encodings[which.index(fixtures.encodings.len())].clone();
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        decode_everything(&bytes, &fixtures.identities);
    }

    /// A mutated envelope decrypts only if its MAC and MAC-covered bytes are intact; otherwise
    /// it is rejected and neither the session nor the prekey store changes.
    #[test]
    fn mutated_envelopes_are_rejected_atomically(
        which in any::<Index>(),
        mutations in vec(mutation(), 1..3),
    ) {
        let fixtures = fixtures();
        let target = &fixtures.targets[which.index(fixtures.targets.len())];
        let mut bytes = target.wire.clone();
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        deliver_mutated(target, &bytes);
    }
}

proptest! {
    // A ratchet step costs tens of milliseconds in unoptimised builds.
    #![proptest_config(config(256))]

    /// A corrupted stored session either fails to load or loads into a session that encrypts
    /// and decrypts without panicking, and that a rejected message leaves as it was.
    #[test]
    fn mutated_sessions_never_panic(
        which in any::<Index>(),
        mutations in vec(mutation(), 1..3),
    ) {
        let targets: Vec<&Target> =
            fixtures().targets.iter().filter(|t| t.session.is_some()).collect();
        let target = targets[which.index(targets.len())];
        let mut bytes = target.session.clone().unwrap();
        for m in &mutations {
            mutate(&mut bytes, m);
        }
        let identity = IdentityKeyPair::from_seed(&target.recipient_seed);
        let Ok(mut session) = Session::from_bytes(identity.public_key(), &bytes) else {
            return Ok(());
        };
        let loaded = session.to_bytes();
        let envelope = Envelope::from_bytes(&target.wire).unwrap();
        let mut prekeys = target.load_prekeys();
        if session.decrypt(&mut TestRng(3), &identity, &mut prekeys, &envelope).is_err() {
            prop_assert_eq!(&*session.to_bytes(), &*loaded);
            target.assert_prekeys_unchanged(&prekeys);
        }
        let _ = session.encrypt(b"probe");
    }
}

proptest! {
    // Key generation and Ed25519 signing are slow in unoptimised builds.
    #![proptest_config(config(32))]

    /// encode(decode(x)) == x for identities, identity keys, prekeys and bundles.
    #[test]
    fn keys_and_bundles_round_trip(
        identity_seed in any::<[u8; 32]>(),
        prekey_seed in any::<[u8; 32]>(),
        prekey_id in any::<u16>(),
    ) {
        let identity = IdentityKeyPair::from_seed(&identity_seed);
        let bytes = identity.to_bytes();
        let loaded = IdentityKeyPair::from_bytes(&bytes).unwrap();
        prop_assert_eq!(&*loaded.to_bytes(), &*bytes);
        prop_assert_eq!(loaded.public_key(), identity.public_key());

        let public = identity.public_key().to_bytes();
        let key = IdentityKey::from_bytes(&public).unwrap();
        prop_assert_eq!(&key, identity.public_key());
        prop_assert_eq!(key.to_bytes(), public);

        let prekey = PreKey::from_seed(PreKeyId::new(prekey_id), &prekey_seed);
        let bytes = prekey.to_bytes();
        let loaded = PreKey::from_bytes(&bytes).unwrap();
        prop_assert_eq!(&*loaded.to_bytes(), &*bytes);
        prop_assert_eq!(loaded.id(), prekey.id());
        prop_assert_eq!(loaded.public_key(), prekey.public_key());

        let unsigned = PreKeyBundle::new(identity.public_key(), &prekey);
        let signed = PreKeyBundle::signed(&identity, &prekey);
        for (bundle, verification) in [
            (&unsigned, BundleVerification::Unsigned),
            (&signed, BundleVerification::Valid),
        ] {
            let bytes = bundle.to_bytes();
            let loaded = PreKeyBundle::from_bytes(&bytes).unwrap();
            prop_assert_eq!(&loaded, bundle);
            prop_assert_eq!(loaded.to_bytes(), bytes);
            prop_assert_eq!(loaded.verify(), verification);
        }
        let wrapped = wrapped_signature(&signed);
        let loaded = PreKeyBundle::from_bytes(&wrapped).unwrap();
        prop_assert!(matches!(loaded.signature(), Some(BundleSignature::Wrapped(_))));
        prop_assert_eq!(loaded.to_bytes(), wrapped);
        prop_assert_eq!(loaded.verify(), BundleVerification::Valid);
    }
}
