//! The sending half of a ratchet step on receipt is taken on the first encryption, not when the
//! message arrives (crates/proteus-core/src/session/sending.rs). These tests hold the lazy
//! state to the eager one Wire's implementations keep: the same envelopes, the same Wire
//! record, sessions that talk to each other, and records of the new format (version 2) that
//! load forever (tests/golden/session-v2.json).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeMap;

use proptest::prelude::*;
use proteus_core::{
    DecodeError, DecryptError, Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId,
    RecordedRng, Session,
};
use serde_json::Value;

/// The record format version: a record is a CBOR map whose key 0 holds it.
fn version(record: &[u8]) -> u8 {
    assert_eq!(record[1], 0x00, "key 0 comes first");
    record[2]
}

struct Parties {
    alice_id: IdentityKeyPair,
    bob_id: IdentityKeyPair,
    alice: Session,
    /// Bob after decrypting Alice's first message: his sending step is pending.
    bob: Session,
    prekeys: BTreeMap<PreKeyId, PreKey>,
}

/// Alice writes to Bob once; Bob has not answered.
fn first_contact() -> Parties {
    let rng = &mut OsRng;
    let (alice_id, bob_id) = (
        IdentityKeyPair::generate(rng),
        IdentityKeyPair::generate(rng),
    );
    let prekey = PreKey::generate(PreKeyId::new(1), rng);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let bundle = PreKeyBundle::new(bob_id.public_key(), &prekey);
    let mut alice = Session::init_from_prekey(rng, &alice_id, &bundle).unwrap();
    let hello = alice.encrypt(b"hello bob").unwrap();
    let inbound = Session::init_from_message(rng, &bob_id, &mut prekeys, &hello).unwrap();
    assert_eq!(inbound.plaintext, b"hello bob");
    Parties {
        alice_id,
        bob_id,
        alice,
        bob: inbound.session,
        prekeys,
    }
}

/// Bob's session as Wire's implementations hold it: every pending step taken.
fn eager(bob_id: &IdentityKeyPair, session: &Session) -> Session {
    Session::from_bytes(bob_id.public_key(), &session.to_wire_bytes()).unwrap()
}

fn reload(bob_id: &IdentityKeyPair, session: &Session) -> Session {
    Session::from_bytes(bob_id.public_key(), &session.to_bytes()).unwrap()
}

#[test]
fn a_new_session_takes_its_sending_step_on_the_first_encryption() {
    let mut p = first_contact();
    assert_eq!(version(&p.bob.to_bytes()), Session::VERSION_PENDING_SEND);
    assert_eq!(version(&p.bob.to_wire_bytes()), Session::VERSION);
    // The pending state survives a reload unchanged.
    assert_eq!(
        reload(&p.bob_id, &p.bob).to_bytes().as_slice(),
        p.bob.to_bytes().as_slice()
    );
    let reply = p.bob.encrypt(b"hi alice").unwrap();
    assert_eq!(version(&p.bob.to_bytes()), Session::VERSION);
    let plaintext = p
        .alice
        .decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &reply)
        .unwrap();
    assert_eq!(plaintext, b"hi alice");
}

#[test]
fn lazy_and_eager_sessions_send_the_same_envelopes_and_records() {
    let mut p = first_contact();
    let mut eager_bob = eager(&p.bob_id, &p.bob);
    assert_eq!(
        eager_bob.to_wire_bytes().as_slice(),
        p.bob.to_wire_bytes().as_slice()
    );
    for i in 0..3u8 {
        let lazy = p.bob.encrypt(&[i; 5]).unwrap().to_bytes();
        let eager = eager_bob.encrypt(&[i; 5]).unwrap().to_bytes();
        assert_eq!(lazy, eager, "message {i}");
        let env = Envelope::from_bytes(&lazy).unwrap();
        let plaintext = p
            .alice
            .decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &env)
            .unwrap();
        assert_eq!(plaintext, [i; 5]);
    }
    assert_eq!(
        eager_bob.to_wire_bytes().as_slice(),
        p.bob.to_wire_bytes().as_slice()
    );
}

/// The peer ratchets again before we sent anything on a pending state (it read a message from
/// another copy of our state): the pending step's root and key are needed to follow, and the
/// result is the state an eager engine reaches.
#[test]
fn a_second_ratchet_step_arrives_before_the_first_was_taken() {
    let mut p = first_contact();
    let mut eager_bob = eager(&p.bob_id, &p.bob);
    let mut sender_copy = eager(&p.bob_id, &p.bob);
    let reply = sender_copy.encrypt(b"from the other copy").unwrap();
    p.alice
        .decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &reply)
        .unwrap();
    let ratcheted = p.alice.encrypt(b"new ratchet key").unwrap();
    let (lazy_seed, eager_seed) = ([7u8; 32], [7u8; 32]);
    let lazy_pt = p
        .bob
        .decrypt(
            &mut RecordedRng::new([lazy_seed.to_vec()]),
            &p.bob_id,
            &mut p.prekeys,
            &ratcheted,
        )
        .unwrap();
    let eager_pt = eager_bob
        .decrypt(
            &mut RecordedRng::new([eager_seed.to_vec()]),
            &p.bob_id,
            &mut p.prekeys,
            &ratcheted,
        )
        .unwrap();
    assert_eq!(lazy_pt, b"new ratchet key");
    assert_eq!(eager_pt, lazy_pt);
    assert_eq!(
        p.bob.to_wire_bytes().as_slice(),
        eager_bob.to_wire_bytes().as_slice()
    );
    let lazy = p.bob.encrypt(b"answer").unwrap();
    assert_eq!(
        lazy.to_bytes(),
        eager_bob.encrypt(b"answer").unwrap().to_bytes()
    );
    let pt = p
        .alice
        .decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &lazy)
        .unwrap();
    assert_eq!(pt, b"answer");
}

#[test]
fn a_rejected_message_leaves_a_pending_state_as_it_was() {
    let mut p = first_contact();
    let mut other = eager(&p.bob_id, &p.bob);
    p.alice
        .decrypt(
            &mut OsRng,
            &p.alice_id,
            &mut p.prekeys,
            &other.encrypt(b"x").unwrap(),
        )
        .unwrap();
    let ratcheted = p.alice.encrypt(b"new ratchet key").unwrap();
    // The same message with one bit of its MAC flipped: `{0: 1, 1: {0: bstr(32) MAC}, …}`.
    let mut bytes = ratcheted.to_bytes();
    assert_eq!(bytes[..8], [0xa3, 0x00, 0x01, 0x01, 0xa1, 0x00, 0x58, 0x20]);
    bytes[8] ^= 1;
    let forged = Envelope::from_bytes(&bytes).unwrap();
    let before = p.bob.to_bytes();
    let err = p
        .bob
        .decrypt(&mut OsRng, &p.bob_id, &mut p.prekeys, &forged)
        .unwrap_err();
    assert!(matches!(err, DecryptError::InvalidSignature(_)), "{err:?}");
    assert_eq!(p.bob.to_bytes().as_slice(), before.as_slice());
    assert_eq!(version(&before), Session::VERSION_PENDING_SEND);
}

/// `5: {0: {0: seed}, 1: {0: their ratchet key}}` in a version-2 record: where the peer key
/// starts.
fn pending_peer_key_at(record: &[u8]) -> usize {
    let head = hex::decode("05a200a1005820").unwrap();
    let at = record
        .windows(head.len())
        .position(|w| w == head.as_slice())
        .expect("a pending step");
    at + head.len() + 32 + hex::decode("01a1005820").unwrap().len()
}

#[test]
fn a_stored_pending_step_with_a_bad_peer_key_is_refused() {
    let p = first_contact();
    let record = p.bob.to_bytes().to_vec();
    let at = pending_peer_key_at(&record);
    // All zero: a point of order 4. 0x02 ‖ 0…: no point at all.
    for bad in [[0u8; 32], {
        let mut k = [0u8; 32];
        k[0] = 2;
        k
    }] {
        let mut corrupt = record.clone();
        corrupt[at..at + 32].copy_from_slice(&bad);
        let err = Session::from_bytes(p.bob_id.public_key(), &corrupt).unwrap_err();
        assert!(matches!(err, DecodeError::InvalidKey(_)), "{err:?}");
    }
}

/// Alice's and Bob's moves; Bob's session is kept in two copies that must never diverge: one
/// reloaded from `to_bytes` (pending steps kept) and one from `to_wire_bytes` (taken), as an
/// eager engine holds it.
#[derive(Debug, Clone)]
enum Move {
    AliceSends(u8),
    BobSends(u8),
    /// A third copy of Bob's state answers once, so Alice ratchets while neither copy sent.
    /// Then Alice sends this many: the copies follow her new ratchet key from a state whose
    /// sending step may be pending.
    AnotherCopyAnswers(u8),
    /// The lazy copy is reloaded from its own record once more.
    BobReloads,
}

fn moves() -> impl Strategy<Value = Vec<Move>> {
    prop::collection::vec(
        prop_oneof![
            4 => (1u8..4).prop_map(Move::AliceSends),
            3 => (1u8..3).prop_map(Move::BobSends),
            2 => (1u8..3).prop_map(Move::AnotherCopyAnswers),
            1 => Just(Move::BobReloads),
        ],
        1..16,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn lazy_and_eager_copies_never_diverge(moves in moves()) {
        let mut p = first_contact();
        let mut eager_bob = eager(&p.bob_id, &p.bob);
        let mut text = 0u32;
        for m in moves {
            let alice_sends = match m {
                Move::AliceSends(n) => n,
                Move::AnotherCopyAnswers(n) => {
                    let mut other = eager(&p.bob_id, &p.bob);
                    let env = other.encrypt(b"from another copy").unwrap();
                    p.alice.decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &env).unwrap();
                    n
                }
                Move::BobSends(n) => {
                    for _ in 0..n {
                        text += 1;
                        let lazy = p.bob.encrypt(&text.to_be_bytes()).unwrap();
                        let eager_env = eager_bob.encrypt(&text.to_be_bytes()).unwrap();
                        prop_assert_eq!(lazy.to_bytes(), eager_env.to_bytes());
                        let pt = p.alice
                            .decrypt(&mut OsRng, &p.alice_id, &mut p.prekeys, &lazy)
                            .unwrap();
                        prop_assert_eq!(pt, text.to_be_bytes().to_vec());
                    }
                    0
                }
                Move::BobReloads => {
                    p.bob = reload(&p.bob_id, &p.bob);
                    0
                }
            };
            for _ in 0..alice_sends {
                text += 1;
                let env = p.alice.encrypt(&text.to_be_bytes()).unwrap();
                // Both copies draw the same seed for a ratchet step, as two runs of
                // one engine with recorded randomness would.
                let seed = vec![text as u8; 32];
                let lazy = p.bob.decrypt(
                    &mut RecordedRng::new([seed.clone()]), &p.bob_id, &mut p.prekeys, &env,
                ).unwrap();
                let eager_pt = eager_bob.decrypt(
                    &mut RecordedRng::new([seed]), &p.bob_id, &mut p.prekeys, &env,
                ).unwrap();
                prop_assert_eq!(&lazy, &text.to_be_bytes().to_vec());
                prop_assert_eq!(lazy, eager_pt);
                p.bob = reload(&p.bob_id, &p.bob);
                eager_bob = eager(&p.bob_id, &eager_bob);
            }
            let (lazy_wire, eager_wire) = (p.bob.to_wire_bytes(), eager_bob.to_wire_bytes());
            prop_assert_eq!(lazy_wire.as_slice(), eager_wire.as_slice());
        }
    }
}

fn golden_path() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden/session-v2.json")
}

fn field(v: &Value, name: &str) -> Vec<u8> {
    hex::decode(v[name].as_str().unwrap_or_else(|| panic!("{name}"))).unwrap()
}

/// A version-2 record (Bob's session right after Alice's first message, its sending step
/// pending) written by the first engine that wrote them, with what it must do once loaded:
/// encrypt the next message exactly as committed, and give Wire's record of the same state.
#[test]
fn the_committed_version_2_record_loads_and_continues() {
    let golden: Value =
        serde_json::from_str(&std::fs::read_to_string(golden_path()).unwrap()).unwrap();
    let bob_id = IdentityKeyPair::from_bytes(&field(&golden, "bob_identity")).unwrap();
    let alice_id = IdentityKeyPair::from_bytes(&field(&golden, "alice_identity")).unwrap();
    let record = field(&golden, "bob_session_v2");
    assert_eq!(version(&record), 2);
    let mut bob = Session::from_bytes(bob_id.public_key(), &record).unwrap();
    assert_eq!(bob.to_bytes().as_slice(), record.as_slice());
    assert_eq!(
        bob.to_wire_bytes().as_slice(),
        field(&golden, "bob_session_wire").as_slice()
    );
    let reply = bob.encrypt(b"reply from a version 2 record").unwrap();
    assert_eq!(reply.to_bytes(), field(&golden, "bob_reply"));
    let mut alice =
        Session::from_bytes(alice_id.public_key(), &field(&golden, "alice_session")).unwrap();
    let pt = alice
        .decrypt(
            &mut OsRng,
            &alice_id,
            &mut BTreeMap::<PreKeyId, PreKey>::new(),
            &reply,
        )
        .unwrap();
    assert_eq!(pt, b"reply from a version 2 record");
}

/// Writes tests/golden/session-v2.json from recorded draws (so the same engine writes the same
/// file). Run once: `PROTEUS_WRITE_GOLDEN=1 cargo test -p proteus-core --test lazy_send_ratchet
/// -- --ignored`; the committed file is never to be replaced.
#[test]
#[ignore = "writes tests/golden/session-v2.json"]
fn generate_golden_session_v2() {
    if golden_path().exists() && std::env::var("PROTEUS_WRITE_GOLDEN").as_deref() != Ok("1") {
        println!("the golden file exists; set PROTEUS_WRITE_GOLDEN=1 to overwrite it");
        return;
    }
    let alice_id = IdentityKeyPair::from_seed(&[0x21; 32]);
    let bob_id = IdentityKeyPair::from_seed(&[0x42; 32]);
    let prekey = PreKey::from_seed(PreKeyId::new(9), &[0x63; 32]);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey.clone())]);
    let bundle = PreKeyBundle::new(bob_id.public_key(), &prekey);
    let mut alice_rng = RecordedRng::new([vec![0x84; 32], vec![0xa5; 32], vec![0xc6; 16]]);
    let mut alice = Session::init_from_prekey(&mut alice_rng, &alice_id, &bundle).unwrap();
    let hello = alice.encrypt(b"hello from a golden file").unwrap();
    let mut bob_rng = RecordedRng::new([vec![0xe7; 32]]);
    let inbound = Session::init_from_message(&mut bob_rng, &bob_id, &mut prekeys, &hello).unwrap();
    let mut bob = inbound.session;
    let record = bob.to_bytes().to_vec();
    let wire = bob.to_wire_bytes().to_vec();
    let reply = bob.encrypt(b"reply from a version 2 record").unwrap();
    let golden = serde_json::json!({
        "about": "Bob's session record (version 2: sending ratchet step pending) after Alice's first message; see tests/lazy_send_ratchet.rs",
        "alice_identity": hex::encode(alice_id.to_bytes().as_slice()),
        "bob_identity": hex::encode(bob_id.to_bytes().as_slice()),
        "alice_session": hex::encode(alice.to_bytes().as_slice()),
        "bob_session_v2": hex::encode(&record),
        "bob_session_wire": hex::encode(&wire),
        "bob_reply": hex::encode(reply.to_bytes()),
    });
    std::fs::create_dir_all(golden_path().parent().unwrap()).unwrap();
    std::fs::write(
        golden_path(),
        serde_json::to_string_pretty(&golden).unwrap() + "\n",
    )
    .unwrap();
}
