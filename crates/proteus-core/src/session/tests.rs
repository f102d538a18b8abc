//! Boundary tests of the session limits and rejection paths.

use std::collections::BTreeMap;

use super::*;
use crate::keys::PreKey;
use crate::limits::{MAX_FAST_FORWARD, MAX_RECV_CHAINS, MAX_SESSION_STATES};
use crate::rng::OsRng;

struct Pair {
    alice: IdentityKeyPair,
    bob: IdentityKeyPair,
    a: Session,
    b: Session,
    prekeys: BTreeMap<PreKeyId, PreKey>,
}

/// Alice and Bob after one message each way.
fn established() -> Pair {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(1), rng);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let mut a =
        Session::init_from_prekey(rng, &alice, &PreKeyBundle::new(bob.public_key(), &prekey))
            .unwrap();
    let first = a.encrypt(b"0").unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    let reply = b.encrypt(b"1").unwrap();
    a.decrypt(rng, &alice, &mut prekeys, &reply).unwrap();
    Pair {
        alice,
        bob,
        a,
        b,
        prekeys,
    }
}

impl Pair {
    fn deliver_to_bob(&mut self, envelope: &Envelope) -> Result<Vec<u8>, DecryptError> {
        self.b
            .decrypt(&mut OsRng, &self.bob, &mut self.prekeys, envelope)
    }

    fn deliver_to_alice(&mut self, envelope: &Envelope) -> Result<Vec<u8>, DecryptError> {
        self.a
            .decrypt(&mut OsRng, &self.alice, &mut self.prekeys, envelope)
    }

    /// Decrypting must fail and leave Bob's session byte-for-byte as it was.
    fn rejected_by_bob(&mut self, envelope: &Envelope) -> DecryptError {
        let before = self.b.to_bytes();
        let err = self.deliver_to_bob(envelope).unwrap_err();
        assert_eq!(
            self.b.to_bytes(),
            before,
            "a rejected message changed the session"
        );
        err
    }
}

/// Envelope `i` of `n` that Alice encrypts (the others are encrypted and dropped).
fn alice_sends(p: &mut Pair, n: u32, keep: &[u32]) -> BTreeMap<u32, Envelope<'static>> {
    let mut kept = BTreeMap::new();
    for i in 0..n {
        let envelope = p.a.encrypt(&i.to_be_bytes()).unwrap();
        if keep.contains(&i) {
            kept.insert(i, envelope);
        }
    }
    kept
}

fn tampered(envelope: &Envelope) -> Envelope<'static> {
    let mut bytes = envelope.to_bytes();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    Envelope::from_bytes(&bytes).unwrap().into_owned()
}

#[test]
fn a_gap_of_exactly_max_fast_forward_is_accepted_and_one_more_is_not() {
    let mut p = established();
    let max = MAX_FAST_FORWARD;
    let staged = MAX_COUNTER_GAP;
    let sent = alice_sends(
        &mut p,
        max + 3,
        &[0, 5, max - staged, max + 1 - staged, max, max + 1, max + 2],
    );
    // Bob's chain is in use at index 1: counter max + 2 skips max + 1.
    p.deliver_to_bob(&sent[&0]).unwrap();
    let err = p.rejected_by_bob(&sent[&(max + 2)]);
    assert!(
        matches!(err, DecryptError::TooDistantFuture { gap, chain_start: false } if gap == u64::from(max) + 1),
        "{err:?}"
    );
    assert_eq!(err.code(), 212);
    // A forged message at the largest distance costs the steps and changes nothing.
    assert_eq!(p.rejected_by_bob(&tampered(&sent[&(max + 1)])).code(), 207);
    // The genuine one decrypts; only the newest skipped keys are staged.
    assert_eq!(
        p.deliver_to_bob(&sent[&(max + 1)]).unwrap(),
        (max + 1).to_be_bytes()
    );
    assert_eq!(p.b.staged_keys().count(), staged as usize);
    assert_eq!(
        p.deliver_to_bob(&sent[&(max + 1 - staged)]).unwrap(),
        (max + 1 - staged).to_be_bytes()
    );
    for lost in [max - staged, 5] {
        let err = p.rejected_by_bob(&sent[&lost]);
        assert_eq!(err.code(), 214, "{lost}");
        assert!(!err.is_already_seen());
    }
    // The gap-(max + 1) message is now in order.
    assert_eq!(
        p.deliver_to_bob(&sent[&(max + 2)]).unwrap(),
        (max + 2).to_be_bytes()
    );
}

#[test]
fn a_client_back_after_20000_messages_decrypts_the_next_one() {
    let mut p = established();
    let sent = alice_sends(&mut p, 20_001, &[0, 19_000, 19_999, 20_000]);
    assert_eq!(
        p.deliver_to_bob(&sent[&20_000]).unwrap(),
        20_000u32.to_be_bytes()
    );
    assert_eq!(
        p.deliver_to_bob(&sent[&19_999]).unwrap(),
        19_999u32.to_be_bytes()
    );
    assert_eq!(
        p.deliver_to_bob(&sent[&19_000]).unwrap(),
        19_000u32.to_be_bytes()
    );
    assert_eq!(p.rejected_by_bob(&sent[&0]).code(), 214);
    // The session goes on both ways.
    let reply = p.b.encrypt(b"welcome back").unwrap();
    assert_eq!(p.deliver_to_alice(&reply).unwrap(), b"welcome back");
    let next = p.a.encrypt(b"thanks").unwrap();
    assert_eq!(p.deliver_to_bob(&next).unwrap(), b"thanks");
}

#[test]
fn a_raised_gap_limit_accepts_more() {
    let mut p = established();
    p.b.set_max_counter_gap(1500);
    let sent: Vec<Envelope> = (0..1300u32)
        .map(|i| p.a.encrypt(&i.to_be_bytes()).unwrap())
        .collect();
    assert!(p.deliver_to_bob(&sent[1299]).is_ok());
    assert_eq!(p.deliver_to_bob(&sent[3]).unwrap(), 3u32.to_be_bytes());
}

#[test]
fn keys_older_than_the_staged_window_are_evicted_not_already_seen() {
    let mut p = established();
    let sent: Vec<Envelope> = (0..1500u32)
        .map(|i| p.a.encrypt(&i.to_be_bytes()).unwrap())
        .collect();
    p.deliver_to_bob(&sent[900]).unwrap();
    p.deliver_to_bob(&sent[10]).unwrap();
    p.deliver_to_bob(&sent[1499]).unwrap();
    // 899 + 598 keys were staged; the oldest 497 (0..=497 but 10) were evicted to keep 1000.
    assert_eq!(p.b.staged_keys().count(), MAX_COUNTER_GAP as usize);
    // Counter 0 was never decrypted: its key is gone, and it must not pass for a duplicate.
    let err = p.rejected_by_bob(&sent[0]);
    assert_eq!((err.code(), err.kind()), (214, "MessageKeyEvicted"));
    assert!(
        !err.is_already_seen(),
        "an evicted message reported as seen"
    );
    // Below the watermark the engine cannot tell decrypted from evicted: still not "seen".
    assert!(!p.rejected_by_bob(&sent[10]).is_already_seen());
    // Above it, a message decrypted before is a duplicate.
    assert_eq!(p.deliver_to_bob(&sent[499]).unwrap(), 499u32.to_be_bytes());
    assert_eq!(p.rejected_by_bob(&sent[499]).code(), 209);
    assert_eq!(
        p.deliver_to_bob(&sent[1400]).unwrap(),
        1400u32.to_be_bytes()
    );
    // The watermark (498) is stored with the session: 499 stays a duplicate after a reload.
    let reloaded = Session::from_bytes(p.b.local_identity(), &p.b.to_bytes()).unwrap();
    assert_eq!(reloaded.to_bytes(), p.b.to_bytes());
    p.b = reloaded;
    assert_eq!(p.rejected_by_bob(&sent[499]).code(), 209);
    assert_eq!(p.rejected_by_bob(&sent[0]).code(), 214);
    // A record without it (Wire's format) assumes the worst below idx - 1000 (500).
    p.b = Session::from_bytes(p.b.local_identity(), &p.b.to_wire_bytes()).unwrap();
    assert_eq!(p.rejected_by_bob(&sent[499]).code(), 214);
    assert_eq!(p.rejected_by_bob(&sent[1400]).code(), 209);
}

#[test]
fn at_most_five_receive_chains_are_kept() {
    let mut p = established();
    let mut late = Vec::new();
    for turn in 0..(MAX_RECV_CHAINS + 1) {
        let early = p.a.encrypt(b"early").unwrap();
        let late_one = p.a.encrypt(format!("late {turn}").as_bytes()).unwrap();
        p.deliver_to_bob(&early).unwrap();
        late.push(late_one);
        let reply = p.b.encrypt(b"reply").unwrap();
        p.deliver_to_alice(&reply).unwrap();
    }
    // The chain of the first late message was dropped: its MAC no longer verifies.
    assert!(matches!(
        p.rejected_by_bob(&late[0]),
        DecryptError::InvalidSignature(_)
    ));
    // The late messages of the chains still kept decrypt.
    for (turn, envelope) in late.iter().enumerate().skip(2) {
        assert_eq!(
            p.deliver_to_bob(envelope).unwrap(),
            format!("late {turn}").as_bytes()
        );
    }
}

#[test]
fn tampering_is_rejected_without_changes() {
    let mut p = established();
    let env = p.a.encrypt(b"hello").unwrap();
    let mut bytes = env.to_bytes();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let tampered = Envelope::from_bytes(&bytes).unwrap();
    assert_eq!(p.rejected_by_bob(&tampered).code(), 206);
    assert_eq!(p.deliver_to_bob(&env).unwrap(), b"hello");
}

#[test]
fn an_unknown_session_tag_and_a_changed_identity_are_rejected() {
    let mut p = established();
    let rng = &mut OsRng;
    // Carol starts a session from one of Bob's prekeys with Bob's session for Alice.
    let carol = IdentityKeyPair::generate(rng);
    let prekey = PreKey::generate(PreKeyId::new(2), rng);
    p.prekeys.insert(prekey.id(), prekey.clone());
    let mut c =
        Session::init_from_prekey(rng, &carol, &PreKeyBundle::new(p.bob.public_key(), &prekey))
            .unwrap();
    let from_carol = c.encrypt(b"hi").unwrap();
    assert!(matches!(
        p.rejected_by_bob(&from_carol),
        DecryptError::RemoteIdentityChanged
    ));
    assert!(
        p.prekeys.contains_key(&PreKeyId::new(2)),
        "no prekey is consumed by a rejection"
    );
    // A CipherMessage whose tag Bob does not know: 205.
    let mut c2 = Session::init_from_prekey(
        rng,
        &p.alice,
        &PreKeyBundle::new(p.bob.public_key(), &prekey),
    )
    .unwrap();
    c2.clear_pending_prekey();
    let unknown_tag = c2.encrypt(b"?").unwrap();
    assert_eq!(p.rejected_by_bob(&unknown_tag).code(), 205);
}

#[test]
fn the_prekey_header_repeats_until_the_first_reply() {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(9), rng);
    let mut a =
        Session::init_from_prekey(rng, &alice, &PreKeyBundle::new(bob.public_key(), &prekey))
            .unwrap();
    for _ in 0..3 {
        assert!(matches!(
            a.encrypt(b"x").unwrap().message(),
            Message::PreKey(_)
        ));
    }
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey)]);
    let first = a.encrypt(b"x").unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    a.decrypt(rng, &alice, &mut prekeys, &b.encrypt(b"y").unwrap())
        .unwrap();
    assert!(matches!(
        a.encrypt(b"z").unwrap().message(),
        Message::Cipher(_)
    ));
}

#[test]
fn the_last_resort_prekey_is_never_removed() {
    let rng = &mut OsRng;
    let bob = IdentityKeyPair::generate(rng);
    let last_resort = PreKey::last_resort(rng);
    let mut prekeys = BTreeMap::from([(last_resort.id(), last_resort.clone())]);
    for _ in 0..2 {
        let alice = IdentityKeyPair::generate(rng);
        let mut a = Session::init_from_prekey(
            rng,
            &alice,
            &PreKeyBundle::new(bob.public_key(), &last_resort),
        )
        .unwrap();
        let inbound =
            Session::init_from_message(rng, &bob, &mut prekeys, &a.encrypt(b"x").unwrap()).unwrap();
        assert_eq!(inbound.plaintext, b"x");
    }
    assert!(prekeys.contains_key(&PreKeyId::LAST_RESORT));
}

#[test]
fn states_are_evicted_below_the_limit() {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let last_resort = PreKey::last_resort(rng);
    let mut prekeys = BTreeMap::from([(last_resort.id(), last_resort.clone())]);
    let bundle = PreKeyBundle::new(bob.public_key(), &last_resort);
    let mut first = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &first.encrypt(b"0").unwrap())
        .unwrap()
        .session;
    // Alice re-initiates again and again (each a new state at Bob's).
    for i in 1..(MAX_SESSION_STATES + 5) {
        let mut a = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
        b.decrypt(
            rng,
            &bob,
            &mut prekeys,
            &a.encrypt(format!("{i}").as_bytes()).unwrap(),
        )
        .unwrap();
        assert!(b.state_count() < MAX_SESSION_STATES);
    }
    assert_eq!(b.state_count(), MAX_SESSION_STATES - 1);
    // The first state was the oldest: it is gone. Its handshake's base key is remembered, so
    // its PreKeyMessages no longer build a state again (that is what a replay does). This one
    // was never decrypted, so it is MessageKeyEvicted, not a duplicate.
    let again = first.encrypt(b"again").unwrap();
    assert_eq!(
        b.decrypt(rng, &bob, &mut prekeys, &again)
            .unwrap_err()
            .code(),
        214
    );
}

#[test]
fn error_codes_are_stable() {
    assert_eq!(DecryptError::DegeneratedKey.code(), 100);
    assert_eq!(DecryptError::PreKeyNotFound(PreKeyId::new(1)).code(), 101);
    assert_eq!(EncryptError::NoSessionForTag.code(), 102);
    assert_eq!(DecryptError::NotAPreKeyMessage.code(), 201);
    assert_eq!(DecryptError::RemoteIdentityChanged.code(), 204);
    assert_eq!(DecryptError::UnknownSessionTag.code(), 205);
    assert_eq!(
        DecryptError::InvalidSignature(crate::CounterPosition::InSync).code(),
        206
    );
    assert_eq!(
        DecryptError::InvalidSignature(crate::CounterPosition::Ahead).code(),
        207
    );
    assert_eq!(
        DecryptError::InvalidSignature(crate::CounterPosition::Behind).code(),
        210
    );
    assert_eq!(DecryptError::OutdatedMessage.code(), 208);
    assert_eq!(DecryptError::DuplicateMessage.code(), 209);
    assert_eq!(DecryptError::MessageKeyEvicted.code(), 214);
    assert!(DecryptError::OutdatedMessage.is_already_seen());
    assert!(!DecryptError::MessageKeyEvicted.is_already_seen());
    assert_eq!(DecodeError::LocalIdentityChanged.code(), 300);
    assert_eq!(DecodeError::UnknownMessageType(3).code(), 302);
    assert_eq!(DecodeError::InvalidKey("x").code(), 409);
}

#[test]
fn decoded_envelopes_borrow_their_bytes_and_owned_ones_still_decrypt() {
    use std::borrow::Cow;
    let mut p = established();
    let wire = p.a.encrypt(b"borrowed").unwrap().to_bytes();
    let decoded = Envelope::from_bytes(&wire).unwrap();
    let text = &decoded.message().cipher_message().cipher_text;
    assert!(
        matches!(text, Cow::Borrowed(_)),
        "the ciphertext was copied"
    );
    // The borrowed ciphertext is the tail of the wire bytes, not a copy of it.
    assert_eq!(
        text.as_ptr_range().end,
        wire.as_ptr_range().end,
        "the ciphertext is not a view of the input"
    );
    let owned: Envelope<'static> = decoded.clone().into_owned();
    drop(wire);
    assert!(matches!(
        owned.message().cipher_message().cipher_text,
        Cow::Owned(_)
    ));
    assert_eq!(
        p.b.decrypt(&mut OsRng, &p.bob, &mut p.prekeys, &owned)
            .unwrap(),
        b"borrowed"
    );
}

/// Alice starts a session on Bob's last-resort prekey: her first message, which Bob decrypts,
/// and a second one (`then`) sent before any reply and not delivered.
fn last_resort_handshake(then: &[u8]) -> (Pair, Envelope<'static>, Envelope<'static>) {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let last_resort = PreKey::last_resort(rng);
    let mut prekeys = BTreeMap::from([(last_resort.id(), last_resort.clone())]);
    let bundle = PreKeyBundle::new(bob.public_key(), &last_resort);
    let mut a = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
    let first = a.encrypt(b"first").unwrap();
    let second = a.encrypt(then).unwrap();
    let b = Session::init_from_message(rng, &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    let pair = Pair {
        b,
        alice,
        bob,
        a,
        prekeys,
    };
    (pair, first, second)
}

/// More ratchet turns than receive chains are kept: the first chain is gone at Bob's.
fn turn_past_every_receive_chain(p: &mut Pair) {
    for turn in 0..=MAX_RECV_CHAINS {
        let to_alice = p.b.encrypt(format!("b{turn}").as_bytes()).unwrap();
        p.deliver_to_alice(&to_alice).unwrap();
        let to_bob = p.a.encrypt(format!("a{turn}").as_bytes()).unwrap();
        p.deliver_to_bob(&to_bob).unwrap();
    }
}

#[test]
fn a_replayed_last_resort_prekey_message_never_replaces_a_live_state() {
    // `first` was recorded by a relay or an observer.
    let (mut p, first, _) = last_resort_handshake(b"");
    turn_past_every_receive_chain(&mut p);
    // The replay authenticates but its handshake made the live state: a duplicate.
    let err = p.rejected_by_bob(&first);
    assert!(matches!(err, DecryptError::DuplicateMessage), "{err:?}");
    assert!(p.prekeys.contains_key(&PreKeyId::LAST_RESORT));
    // Both directions still work.
    let next = p.a.encrypt(b"still here").unwrap();
    assert_eq!(p.deliver_to_bob(&next).unwrap(), b"still here");
    let back = p.b.encrypt(b"me too").unwrap();
    assert_eq!(p.deliver_to_alice(&back).unwrap(), b"me too");
    // The base key is stored with the session; a record in Wire's format still has the tag.
    let Message::PreKey(pkm) = first.message() else {
        panic!("the first message carries the prekey header");
    };
    let base_key = pkm.base_key;
    for (bytes, has_base_key) in [(p.b.to_bytes(), true), (p.b.to_wire_bytes(), false)] {
        p.b = Session::from_bytes(p.b.local_identity(), &bytes).unwrap();
        assert_eq!(p.b.has_seen_base_key(&base_key), has_base_key);
        // Without the base key the engine cannot tell which message made the state: refused,
        // but never called "already seen".
        let expected = if has_base_key { 209 } else { 214 };
        assert_eq!(p.rejected_by_bob(&first).code(), expected);
    }
}

#[test]
fn a_delayed_prekey_message_of_a_known_handshake_is_evicted_not_already_seen() {
    // `delayed` was sent before any reply, so it carries the prekey header too; held up on the
    // way.
    let (mut p, first, delayed) = last_resort_handshake(b"delayed");
    turn_past_every_receive_chain(&mut p);
    // Its chain is gone and it was never decrypted: refused, but not as a duplicate.
    let err = p.rejected_by_bob(&delayed);
    assert!(matches!(err, DecryptError::MessageKeyEvicted), "{err:?}");
    assert!(!err.is_already_seen());
    // The message that made the state is a duplicate; the session is unchanged by either.
    assert!(p.rejected_by_bob(&first).is_already_seen());
    let next = p.a.encrypt(b"still here").unwrap();
    assert_eq!(p.deliver_to_bob(&next).unwrap(), b"still here");
}

#[test]
fn a_replay_is_refused_after_its_state_was_evicted() {
    let rng = &mut OsRng;
    let (alice, bob) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let last_resort = PreKey::last_resort(rng);
    let mut prekeys = BTreeMap::from([(last_resort.id(), last_resort.clone())]);
    let bundle = PreKeyBundle::new(bob.public_key(), &last_resort);
    let mut first_session = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
    let first = first_session.encrypt(b"0").unwrap();
    let mut b = Session::init_from_message(rng, &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    for i in 1..(MAX_SESSION_STATES + 5) {
        let mut a = Session::init_from_prekey(rng, &alice, &bundle).unwrap();
        b.decrypt(rng, &bob, &mut prekeys, &a.encrypt(&[i as u8]).unwrap())
            .unwrap();
    }
    // The first state is gone; its base key is still known.
    let before = b.to_bytes();
    let err = b.decrypt(rng, &bob, &mut prekeys, &first).unwrap_err();
    assert_eq!(err.code(), 209);
    assert_eq!(b.to_bytes(), before);
}

/// A bundle whose identity key has a small-order or mixed-order point is refused before anything
/// is drawn (each bundle key is validated once, in `init_from_prekey`).
#[test]
fn a_degenerate_bundle_identity_is_refused_before_drawing() {
    use curve25519_dalek::constants::{ED25519_BASEPOINT_POINT, EIGHT_TORSION};

    let alice = IdentityKeyPair::generate(&mut OsRng);
    let prekey = PreKey::generate(PreKeyId::new(1), &mut OsRng);
    let mixed = ED25519_BASEPOINT_POINT + EIGHT_TORSION[4];
    for point in [EIGHT_TORSION[1], mixed] {
        let identity = IdentityKey::new(PublicKey::from_bytes(point.compress().to_bytes()));
        let bundle = PreKeyBundle::new(&identity, &prekey);
        let mut rng = crate::recorded_rng::RecordedRng::new([vec![1; 32], vec![2; 32]]);
        let result = Session::init_from_prekey(&mut rng, &alice, &bundle);
        assert!(matches!(result, Err(SessionCreationError::DegeneratedKey)));
        assert_eq!(rng.remaining(), 2, "nothing was drawn");
    }
}
