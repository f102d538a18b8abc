//! The known-answer tests of docs/protocol.md §14, checked against Wire's JS and Rust
//! implementations.
#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;

use proteus_core::{
    Envelope, IdentityKeyPair, Message, PreKey, PreKeyBundle, PreKeyId, RecordedRng, Session,
    SessionTag,
};

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

fn seed(b: u8) -> [u8; 32] {
    [b; 32]
}

const BUNDLE: &str = "a50001010702a1005820c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f7324203a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4804f6";
const PREKEY: &str = "a30001010702a200a10058405555555555555555555555555555555555555555555555555555555555555555c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f7324201a1005820c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f73242";
const BOB_IDENTITY: &str = "a3000101a10058404444444444444444444444444444444444444444444444444444444444444444d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4802a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c48";
const MESSAGE_1: &str = "a3000101a100582018c677225457f780e163e5a5962d46143827d52507a995edb54c85c85829893002589902a4000701a1005820a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f002a100a1005820d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c977873703a50050000102030405060708090a0b0c0d0e0f0100020003a100582017cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce044a750e33f2cfdcffa4d485";
const MESSAGE_2: &str = "a3000101a10058209412587abbe0a764f61397a9e21ac79befc5da74b3472f38bd0910383f1972b002589502a4000701a1005820a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f002a100a1005820d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c977873703a50050000102030405060708090a0b0c0d0e0f0101020003a100582017cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce0446a0af9856c91b";
const ALICE_SESSION: &str = "a600010150000102030405060708090a0b0c0d0e0f02a100a1005820d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c977873703a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4804a2000701a1005820a09aa5f47a6759802ff955f8dc2d2a14a5c99d23be97f864127ff9383455a4f005a150000102030405060708090a0b0c0d0e0fa40081a300a200a100582056dca2f5475380591459e828afc0432fa624c0ef274473e440cf31802d27f001010001a1005820c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f73242028001a200a200a10058200f34527489ddaa6cb1608b786c97cc290d4644c1bb4fc1e5e63863b91f09dd44010201a200a1005840333333333333333333333333333333333333333333333333333333333333333317cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce01a100582017cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce02a100a100582018d6f9570b517a97ee2c2682bca75ad8bc34d5747ca4d85f9dc7905fcc3908010300";
const BOB_REPLY: &str = "a3000101a1005820275c42a21146662ee34019713caca5ab445cb2ce805de469fa97bfd0a7c01e5d02584b01a50050000102030405060708090a0b0c0d0e0f0100020003a100582034b4d9043156cb6dcf0beb0a2949b7559c940d2bcb6dbe8c53a9b30278e3a746044c3507dc8a133518ef35d8444d";
const BOB_SESSION: &str = "a600010150000102030405060708090a0b0c0d0e0f02a100a1005820d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c4803a100a1005820d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c977873704f605a150000102030405060708090a0b0c0d0e0fa40081a300a200a10058200e94d5bf844ab77575cd8dce5accd953c4b9ce705f05d5a091f63364fba21174010101a100582017cb79fb2b4120f2b1ec65e4198d6e08b28e813feb01e4a400839b85e18080ce028001a200a200a1005820953be09c80f749218b6058e6ae69647c46a8ff8943dfa2106ce820ed6caf635c010101a200a1005840666666666666666666666666666666666666666666666666666666666666666634b4d9043156cb6dcf0beb0a2949b7559c940d2bcb6dbe8c53a9b30278e3a74601a100582034b4d9043156cb6dcf0beb0a2949b7559c940d2bcb6dbe8c53a9b30278e3a74602a100a1005820f912aadedc047ce4927d61e0bd203d5f20ff0ebf305dbd354172bcf69964bc200300";
const TAG: &str = "000102030405060708090a0b0c0d0e0f";

#[test]
fn key_conversions_and_fingerprints() {
    for (seed_byte, ed_public) in [
        (
            0x11,
            "d04ab232742bb4ab3a1368bd4615e4e6d0224ab71a016baf8520a332c9778737",
        ),
        (
            0x44,
            "d759793bbc13a2819a827c76adb6fba8a49aee007f49f2d0992d99b825ad2c48",
        ),
    ] {
        assert_eq!(
            IdentityKeyPair::from_seed(&seed(seed_byte)).fingerprint(),
            ed_public
        );
    }
    assert_eq!(
        PreKey::from_seed(PreKeyId::new(7), &seed(0x55))
            .public_key()
            .fingerprint(),
        "c6822637c7d310ec57627be00ba259d253749f4aaf644470cffbe53a35f73242"
    );
}

#[test]
fn records_encode_byte_for_byte() {
    let bob = IdentityKeyPair::from_seed(&seed(0x44));
    let prekey = PreKey::from_seed(PreKeyId::new(7), &seed(0x55));
    assert_eq!(hex::encode(bob.to_bytes().as_slice()), BOB_IDENTITY);
    assert_eq!(hex::encode(prekey.to_bytes().as_slice()), PREKEY);
    assert_eq!(
        hex::encode(PreKeyBundle::new(bob.public_key(), &prekey).to_bytes()),
        BUNDLE
    );
    // And decode back to the same bytes.
    assert_eq!(
        hex::encode(
            IdentityKeyPair::from_bytes(&h(BOB_IDENTITY))
                .unwrap()
                .to_bytes()
                .as_slice()
        ),
        BOB_IDENTITY
    );
    assert_eq!(
        hex::encode(
            PreKey::from_bytes(&h(PREKEY))
                .unwrap()
                .to_bytes()
                .as_slice()
        ),
        PREKEY
    );
    assert_eq!(
        hex::encode(PreKeyBundle::from_bytes(&h(BUNDLE)).unwrap().to_bytes()),
        BUNDLE
    );
}

fn alice_session() -> (IdentityKeyPair, Session, Vec<Envelope<'static>>) {
    let alice = IdentityKeyPair::from_seed(&seed(0x11));
    let bundle = PreKeyBundle::from_bytes(&h(BUNDLE)).unwrap();
    let mut rng = RecordedRng::new([seed(0x22).to_vec(), seed(0x33).to_vec(), h(TAG)]);
    let mut session = Session::init_from_prekey(&mut rng, &alice, &bundle).unwrap();
    assert_eq!(rng.remaining(), 0);
    assert_eq!(
        session.session_tag(),
        SessionTag::from_bytes(h(TAG).try_into().unwrap())
    );
    let m1 = session.encrypt(b"Hello Bob!").unwrap();
    let m2 = session.encrypt(b"Second").unwrap();
    (alice, session, vec![m1, m2])
}

#[test]
fn alice_sends_the_known_envelopes() {
    let (_, session, envelopes) = alice_session();
    assert_eq!(hex::encode(envelopes[0].to_bytes()), MESSAGE_1);
    assert_eq!(hex::encode(envelopes[1].to_bytes()), MESSAGE_2);
    assert_eq!(hex::encode(session.to_bytes().as_slice()), ALICE_SESSION);
    assert!(matches!(envelopes[0].message(), Message::PreKey(_)));
}

#[test]
fn bob_receives_and_replies_as_known() {
    let bob = IdentityKeyPair::from_bytes(&h(BOB_IDENTITY)).unwrap();
    let mut prekeys = BTreeMap::from([(PreKeyId::new(7), PreKey::from_bytes(&h(PREKEY)).unwrap())]);
    let m1 = h(MESSAGE_1);
    let env = Envelope::from_bytes(&m1).unwrap();
    let mut rng = RecordedRng::new([seed(0x66).to_vec()]);
    let inbound = Session::init_from_message(&mut rng, &bob, &mut prekeys, &env).unwrap();
    assert_eq!(rng.remaining(), 0);
    assert_eq!(inbound.plaintext, b"Hello Bob!");
    assert!(prekeys.is_empty(), "the one-time prekey is consumed");
    let mut session = inbound.session;
    let reply = session.encrypt(b"Hello Alice!").unwrap();
    assert_eq!(hex::encode(reply.to_bytes()), BOB_REPLY);
    // Wire's fields are byte-identical; our record adds the handshake's base key (key 6).
    assert_eq!(hex::encode(session.to_wire_bytes().as_slice()), BOB_SESSION);
    let ours = session.to_bytes();
    let reloaded = Session::from_bytes(bob.public_key(), &ours).unwrap();
    assert_eq!(reloaded.to_bytes(), ours);
    assert_eq!(
        reloaded.to_wire_bytes().as_slice(),
        h(BOB_SESSION).as_slice()
    );

    // Message 2 on the stored session.
    let mut stored = Session::from_bytes(bob.public_key(), &h(BOB_SESSION)).unwrap();
    let m2 = h(MESSAGE_2);
    let m2 = Envelope::from_bytes(&m2).unwrap();
    assert_eq!(
        stored
            .decrypt(&mut RecordedRng::default(), &bob, &mut prekeys, &m2)
            .unwrap(),
        b"Second"
    );
}

#[test]
fn alice_loads_her_session_and_reads_the_reply() {
    let (alice, _, _) = alice_session();
    let mut session = Session::from_bytes(alice.public_key(), &h(ALICE_SESSION)).unwrap();
    assert_eq!(hex::encode(session.to_bytes().as_slice()), ALICE_SESSION);
    let reply = h(BOB_REPLY);
    let reply = Envelope::from_bytes(&reply).unwrap();
    let mut rng = RecordedRng::new([seed(0x77).to_vec()]);
    assert_eq!(
        session
            .decrypt(&mut rng, &alice, &mut BTreeMap::new(), &reply)
            .unwrap(),
        b"Hello Alice!"
    );
    assert!(!session.has_pending_prekey());
}

#[test]
fn a_70000_byte_message_has_a_canonical_length() {
    let (_, mut session, _) = alice_session();
    let env = session.encrypt(&vec![0x41; 70_000]).unwrap();
    let bytes = env.message_bytes();
    let needle = [0x04, 0x5a, 0x00, 0x01, 0x11, 0x70];
    assert!(
        bytes.windows(needle.len()).any(|w| w == needle),
        "ciphertext length must use the 4-byte form"
    );
}
