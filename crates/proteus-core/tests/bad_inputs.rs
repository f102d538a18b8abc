//! A catalogue of adversarial inputs, each with the typed error (and stable code) it must get.
//!
//! Every case runs against the same established conversation, restored from bytes: after the
//! rejection, Bob's session and prekey store must be byte-for-byte as before, and the next valid
//! message must still decrypt. The table is built from a handful of valid messages: truncated at
//! every byte, bit-flipped in MAC, ciphertext and header, re-encoded with hostile header values,
//! and hand-written CBOR.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::BTreeMap;

use proteus_core::limits::{MAX_COUNTER_GAP, MAX_FAST_FORWARD, MAX_PLAINTEXT_LEN};
use proteus_core::{
    DecryptError, Envelope, IdentityKeyPair, Message, PreKey, PreKeyBundle, PreKeyId, PublicKey,
    Session, SessionTag,
};

/// Deterministic randomness, so every run builds the same conversation: each draw is filled
/// from the label and a running counter, whatever its length.
struct Deterministic {
    label: u8,
    next: u8,
}

impl rand_core::TryRng for Deterministic {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        rand_core::utils::next_word_via_fill(self)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        dst.fill(self.label ^ self.next.wrapping_mul(31));
        self.next = self.next.wrapping_add(1);
        Ok(())
    }
}

impl rand_core::TryCryptoRng for Deterministic {}

fn rng(label: u8) -> Deterministic {
    Deterministic { label, next: 0 }
}

/// The conversation every case starts from.
struct Fixture {
    alice: IdentityKeyPair,
    bob: IdentityKeyPair,
    /// Bob's session with Alice, serialised.
    bob_session: Vec<u8>,
    /// Bob's prekeys: a spare one-time prekey (id 2) and the last-resort prekey.
    bob_prekeys: BTreeMap<PreKeyId, PreKey>,
    /// Alice's session, serialised, for building messages.
    alice_session: Vec<u8>,
    /// A consumed one-time prekey's bundle (id 1) and a spare one (id 2).
    used_bundle: PreKeyBundle,
    spare_bundle: PreKeyBundle,
}

fn fixture() -> Fixture {
    let alice = IdentityKeyPair::from_seed(&[0x11; 32]);
    let bob = IdentityKeyPair::from_seed(&[0x44; 32]);
    let used = PreKey::from_seed(PreKeyId::new(1), &[0x55; 32]);
    let spare = PreKey::from_seed(PreKeyId::new(2), &[0x56; 32]);
    let last_resort = PreKey::from_seed(PreKeyId::LAST_RESORT, &[0x57; 32]);
    let mut prekeys: BTreeMap<PreKeyId, PreKey> = [used.clone(), spare.clone(), last_resort]
        .into_iter()
        .map(|p| (p.id(), p))
        .collect();
    let used_bundle = PreKeyBundle::new(bob.public_key(), &used);
    let mut a = Session::init_from_prekey(&mut rng(1), &alice, &used_bundle).unwrap();
    let first = a.encrypt(b"first").unwrap();
    let mut b = Session::init_from_message(&mut rng(2), &bob, &mut prekeys, &first)
        .unwrap()
        .session;
    let reply = b.encrypt(b"reply").unwrap();
    a.decrypt(&mut rng(3), &alice, &mut prekeys.clone(), &reply)
        .unwrap();
    // Alice has sent three more Bob has seen, so Bob's chain is in use (index 3).
    for i in 0..3 {
        let m = a.encrypt(format!("seen {i}").as_bytes()).unwrap();
        b.decrypt(&mut rng(4), &bob, &mut prekeys, &m).unwrap();
    }
    Fixture {
        bob_session: b.to_bytes().to_vec(),
        alice_session: a.to_bytes().to_vec(),
        used_bundle,
        spare_bundle: PreKeyBundle::new(bob.public_key(), &spare),
        alice,
        bob,
        bob_prekeys: prekeys,
    }
}

impl Fixture {
    fn alice(&self) -> Session {
        Session::from_bytes(self.alice.public_key(), &self.alice_session).unwrap()
    }

    fn bob(&self) -> Session {
        Session::from_bytes(self.bob.public_key(), &self.bob_session).unwrap()
    }

    /// Alice's next `n` messages (wire bytes), from her stored session.
    fn next_from_alice(&self, n: usize) -> Vec<Vec<u8>> {
        let mut a = self.alice();
        (0..n)
            .map(|i| {
                a.encrypt(format!("next {i}").as_bytes())
                    .unwrap()
                    .to_bytes()
            })
            .collect()
    }
}

/// What a case feeds the engine.
enum Input {
    /// Envelope bytes for Bob's existing session with Alice.
    ToSession(Vec<u8>),
    /// Envelope bytes for Bob, who has no session with the sender yet (`init_from_message`).
    ToNewSession(Vec<u8>),
    /// Envelope bytes delivered twice to Bob's session: the second time must fail.
    Replayed(Vec<u8>),
    /// A plaintext Bob tries to encrypt.
    Plaintext(usize),
}

struct Case {
    name: String,
    input: Input,
    /// The accepted codes (a truncation may end in any of a few decode errors).
    codes: &'static [u16],
}

fn case(name: impl Into<String>, input: Input, codes: &'static [u16]) -> Case {
    Case {
        name: name.into(),
        input,
        codes,
    }
}

const DECODE: &[u16] = &[301, 303, 304, 305, 306, 307, 308, 309, 310, 311];

// --- hand-written CBOR -----------------------------------------------------------------------

fn head(major: u8, value: u64) -> Vec<u8> {
    let m = major << 5;
    match value {
        0..=23 => vec![m | value as u8],
        24..=0xff => vec![m | 24, value as u8],
        0x100..=0xffff => [vec![m | 25], (value as u16).to_be_bytes().to_vec()].concat(),
        0x1_0000..=0xffff_ffff => [vec![m | 26], (value as u32).to_be_bytes().to_vec()].concat(),
        _ => [vec![m | 27], value.to_be_bytes().to_vec()].concat(),
    }
}

fn bstr(b: &[u8]) -> Vec<u8> {
    [head(2, b.len() as u64), b.to_vec()].concat()
}

/// An envelope map with the given entries, each already encoded as key ‖ value.
fn envelope_of(entries: &[Vec<u8>]) -> Vec<u8> {
    [head(5, entries.len() as u64), entries.concat()].concat()
}

fn mac_entry(mac: &[u8]) -> Vec<u8> {
    [vec![0x01, 0xa1, 0x00], bstr(mac)].concat()
}

/// A valid envelope's parts: its MAC and its message bytes.
fn parts(wire: &[u8]) -> ([u8; 32], Vec<u8>) {
    let env = Envelope::from_bytes(wire).unwrap();
    (*env.mac(), env.message_bytes().to_vec())
}

/// Re-encodes Alice's next message with a changed header (the MAC is kept, so it no longer fits).
fn altered(f: &Fixture, change: impl FnOnce(&mut Message)) -> Vec<u8> {
    let sent = f.next_from_alice(1);
    let env = Envelope::from_bytes(&sent[0]).unwrap();
    let mut message = env.message().clone();
    change(&mut message);
    Envelope::from_message(message, *env.mac()).to_bytes()
}

fn cipher<'m, 'a>(m: &'m mut Message<'a>) -> &'m mut proteus_core::CipherMessage<'a> {
    match m {
        Message::Cipher(c) => c,
        Message::PreKey(p) => &mut p.message,
    }
}

/// A PreKeyMessage from a new sender, built for a bundle of Bob's, then changed.
fn prekey_message(
    bundle: &PreKeyBundle,
    sender: &IdentityKeyPair,
    change: impl FnOnce(&mut Message),
) -> Vec<u8> {
    let mut s = Session::init_from_prekey(&mut rng(9), sender, bundle).unwrap();
    let env = s.encrypt(b"hello from a stranger").unwrap();
    let mut message = env.message().clone();
    change(&mut message);
    Envelope::from_message(message, *env.mac()).to_bytes()
}

fn low_order_point() -> PublicKey {
    // The point (0, -1), of order 2.
    let mut b = [0u8; 32];
    b[0] = 0xec;
    b[1..31].fill(0xff);
    b[31] = 0x7f;
    PublicKey::from_bytes(b)
}

fn catalogue(f: &Fixture) -> Vec<Case> {
    let mut cases = Vec::new();
    let valid = f.next_from_alice(1).remove(0);
    let (mac, message) = parts(&valid);

    // Truncation at every byte of a valid envelope.
    for len in 0..valid.len() {
        cases.push(case(
            format!("truncated to {len} bytes"),
            Input::ToSession(valid[..len].to_vec()),
            DECODE,
        ));
    }
    // Bit flips: every byte of the MAC, and bytes of the ciphertext and the header.
    for i in 0..32 {
        let mut bad = mac;
        bad[i] ^= 0x01;
        let wire = envelope_of(&[
            vec![0x00, 0x01],
            mac_entry(&bad),
            [vec![0x02], bstr(&message)].concat(),
        ]);
        cases.push(case(
            format!("MAC byte {i} flipped"),
            Input::ToSession(wire),
            &[206],
        ));
    }
    let text_start = message.len()
        - Envelope::from_bytes(&valid)
            .unwrap()
            .message()
            .cipher_message()
            .cipher_text
            .len();
    for i in [
        text_start,
        text_start + 1,
        text_start + 3,
        message.len() - 1,
    ] {
        let mut m = message.clone();
        m[i] ^= 0x80;
        let wire = envelope_of(&[
            vec![0x00, 0x01],
            mac_entry(&mac),
            [vec![0x02], bstr(&m)].concat(),
        ]);
        cases.push(case(
            format!("ciphertext byte {i} flipped"),
            Input::ToSession(wire),
            &[206],
        ));
    }
    // Header values changed (the MAC no longer fits, or the value is refused before the MAC).
    cases.push(case(
        "counter moved ahead",
        Input::ToSession(altered(f, |m| cipher(m).counter += 1)),
        &[207],
    ));
    cases.push(case(
        "counter moved back",
        Input::ToSession(altered(f, |m| cipher(m).counter -= 1)),
        &[209],
    ));
    cases.push(case(
        "previous counter changed",
        Input::ToSession(altered(f, |m| cipher(m).prev_counter += 7)),
        &[206],
    ));
    cases.push(case(
        "ciphertext lengthened",
        Input::ToSession(altered(f, |m| cipher(m).cipher_text.to_mut().push(0))),
        &[206],
    ));
    cases.push(case(
        "ciphertext emptied",
        Input::ToSession(altered(f, |m| cipher(m).cipher_text.to_mut().clear())),
        &[206],
    ));
    cases.push(case(
        "session tag changed",
        Input::ToSession(altered(f, |m| {
            cipher(m).session_tag = SessionTag::from_bytes([7; 16])
        })),
        &[205],
    ));
    // A gap over the staged-key limit is fast-forwarded, so the altered message fails its MAC.
    cases.push(case(
        "counter gap of 1001",
        Input::ToSession(altered(f, |m| cipher(m).counter += MAX_COUNTER_GAP + 1)),
        &[207],
    ));
    cases.push(case(
        "counter gap over MAX_FAST_FORWARD",
        Input::ToSession(altered(f, |m| cipher(m).counter += MAX_FAST_FORWARD + 1)),
        &[212],
    ));
    cases.push(case(
        "counter at u32::MAX",
        Input::ToSession(altered(f, |m| cipher(m).counter = u32::MAX)),
        &[212],
    ));
    cases.push(case(
        "ratchet key all zero",
        Input::ToSession(altered(f, |m| {
            cipher(m).ratchet_key = PublicKey::from_bytes([0; 32])
        })),
        &[409],
    ));
    cases.push(case(
        "ratchet key of order 2",
        Input::ToSession(altered(f, |m| cipher(m).ratchet_key = low_order_point())),
        &[409],
    ));
    cases.push(case(
        "ratchet key not on the curve",
        Input::ToSession(altered(f, |m| {
            let mut b = [0u8; 32];
            b[0] = 2;
            cipher(m).ratchet_key = PublicKey::from_bytes(b);
        })),
        &[409],
    ));
    cases.push(case(
        "ratchet key replaced by a valid stranger's key",
        Input::ToSession(altered(f, |m| {
            cipher(m).ratchet_key = *IdentityKeyPair::from_seed(&[0x99; 32])
                .public_key()
                .public_key()
        })),
        &[207],
    ));
    // Versions, types, lengths, nesting, duplicate keys and other hostile CBOR.
    let msg_entry = [vec![0x02], bstr(&message)].concat();
    let env = |first: Vec<u8>| envelope_of(&[first, mac_entry(&mac), msg_entry.clone()]);
    cases.push(case(
        "envelope version 300",
        Input::ToSession(env([vec![0x00], head(0, 300)].concat())),
        &[309],
    ));
    cases.push(case(
        "envelope version as bytes",
        Input::ToSession(env([vec![0x00], bstr(b"1")].concat())),
        &[301],
    ));
    cases.push(case(
        "envelope version negative",
        Input::ToSession(env(vec![0x00, 0x20])),
        &[301],
    ));
    for t in [0u64, 3, 24, 255, 70_000] {
        let mut m = head(0, t);
        m.extend_from_slice(&message[1..]);
        let wire = envelope_of(&[
            vec![0x00, 0x01],
            mac_entry(&mac),
            [vec![0x02], bstr(&m)].concat(),
        ]);
        cases.push(case(
            format!("message type {t}"),
            Input::ToSession(wire),
            &[302],
        ));
    }
    let gigabytes = [
        vec![0x00, 0x01],
        mac_entry(&mac),
        vec![0x02, 0x5a, 0x40, 0x00, 0x00, 0x00],
    ]
    .concat();
    cases.push(case(
        "message length of 1 GiB",
        Input::ToSession([vec![0xa3], gigabytes].concat()),
        &[304],
    ));
    let huge_map = [vec![0xbb], u64::MAX.to_be_bytes().to_vec()].concat();
    cases.push(case(
        "map of 2^64 entries",
        Input::ToSession(huge_map),
        &[304],
    ));
    let huge_array_in_unknown_key = envelope_of(&[
        vec![0x00, 0x01],
        mac_entry(&mac),
        msg_entry.clone(),
        [vec![0x09, 0x9a], 0x7fff_ffffu32.to_be_bytes().to_vec()].concat(),
    ]);
    cases.push(case(
        "unknown key holding a 2^31-element array",
        Input::ToSession(huge_array_in_unknown_key),
        &[304],
    ));
    let deep = envelope_of(&[
        vec![0x00, 0x01],
        mac_entry(&mac),
        msg_entry.clone(),
        [vec![0x09], vec![0x81; 40], vec![0x00]].concat(),
    ]);
    cases.push(case(
        "unknown key nested 40 deep",
        Input::ToSession(deep),
        &[311],
    ));
    let dup = envelope_of(&[
        vec![0x00, 0x01],
        mac_entry(&mac),
        mac_entry(&mac),
        msg_entry.clone(),
    ]);
    cases.push(case("duplicate MAC key", Input::ToSession(dup), &[305]));
    let dup_version = envelope_of(&[
        vec![0x00, 0x01],
        vec![0x00, 0x01],
        mac_entry(&mac),
        msg_entry.clone(),
    ]);
    cases.push(case(
        "duplicate version key",
        Input::ToSession(dup_version),
        &[305],
    ));
    cases.push(case(
        "missing MAC",
        Input::ToSession(envelope_of(&[vec![0x00, 0x01], msg_entry.clone()])),
        &[310],
    ));
    cases.push(case(
        "missing message",
        Input::ToSession(envelope_of(&[vec![0x00, 0x01], mac_entry(&mac)])),
        &[310],
    ));
    let short_mac = envelope_of(&[vec![0x00, 0x01], mac_entry(&mac[..31]), msg_entry.clone()]);
    cases.push(case("MAC of 31 bytes", Input::ToSession(short_mac), &[303]));
    cases.push(case(
        "trailing byte",
        Input::ToSession([valid.clone(), vec![0]].concat()),
        &[307],
    ));
    cases.push(case(
        "indefinite-length map",
        Input::ToSession([vec![0xbf], valid[1..].to_vec()].concat()),
        &[308],
    ));
    cases.push(case(
        "a CBOR tag",
        Input::ToSession([vec![0xc6], valid.clone()].concat()),
        &[301],
    ));
    cases.push(case(
        "a float",
        Input::ToSession(vec![0xfb, 0, 0, 0, 0, 0, 0, 0, 0]),
        &[301],
    ));
    cases.push(case(
        "an array instead of a map",
        Input::ToSession([vec![0x83], valid[1..].to_vec()].concat()),
        &[301],
    ));
    cases.push(case("empty input", Input::ToSession(Vec::new()), &[306]));
    let mut short_tag = message.clone();
    // `a5 00 50 <16>`: make the tag's byte string claim 15 bytes.
    let tag_at = short_tag
        .windows(2)
        .position(|w| w == [0x00, 0x50])
        .unwrap();
    short_tag[tag_at + 1] = 0x4f;
    short_tag.remove(tag_at + 2);
    let wire = envelope_of(&[
        vec![0x00, 0x01],
        mac_entry(&mac),
        [vec![0x02], bstr(&short_tag)].concat(),
    ]);
    cases.push(case(
        "session tag of 15 bytes",
        Input::ToSession(wire),
        &[303],
    ));

    // Replays and old messages.
    // (Alice's second next message: the first stays the "next valid message" of every case.)
    cases.push(case(
        "a replayed message",
        Input::Replayed(f.next_from_alice(2).remove(1)),
        &[209],
    ));
    // PreKeyMessages from strangers and impostors.
    let carol = IdentityKeyPair::from_seed(&[0xcc; 32]);
    let to_bob = |change: fn(&mut Message)| prekey_message(&f.spare_bundle, &carol, change);
    cases.push(case(
        "a CipherMessage without a session",
        Input::ToNewSession(valid.clone()),
        &[201],
    ));
    cases.push(case(
        "unknown prekey id",
        Input::ToNewSession(to_bob(|m| {
            if let Message::PreKey(p) = m {
                p.prekey_id = PreKeyId::new(4242);
            }
        })),
        &[101],
    ));
    cases.push(case(
        "a consumed one-time prekey",
        Input::ToNewSession(prekey_message(&f.used_bundle, &carol, |_| {})),
        &[101],
    ));
    cases.push(case(
        "base key all zero",
        Input::ToNewSession(to_bob(|m| {
            if let Message::PreKey(p) = m {
                p.base_key = PublicKey::from_bytes([0; 32]);
            }
        })),
        &[409],
    ));
    cases.push(case(
        "base key of order 2",
        Input::ToNewSession(to_bob(|m| {
            if let Message::PreKey(p) = m {
                p.base_key = low_order_point();
            }
        })),
        &[409],
    ));
    cases.push(case(
        "identity key of order 2",
        Input::ToNewSession(to_bob(|m| {
            if let Message::PreKey(p) = m {
                p.identity_key = proteus_core::IdentityKey::new(low_order_point());
            }
        })),
        &[409],
    ));
    cases.push(case(
        "a changed remote identity",
        Input::ToSession(prekey_message(&f.spare_bundle, &carol, |_| {})),
        &[204],
    ));
    cases.push(case(
        "a stranger's PreKeyMessage with a changed counter",
        Input::ToNewSession(to_bob(|m| cipher(m).counter += 1)),
        &[207],
    ));
    cases.push(case(
        "a plaintext over the limit",
        Input::Plaintext(MAX_PLAINTEXT_LEN + 1),
        &[410],
    ));
    cases
}

#[test]
fn every_bad_input_is_rejected_with_its_code_and_changes_nothing() {
    let f = fixture();
    let cases = catalogue(&f);
    assert!(cases.len() >= 60, "the catalogue has {} cases", cases.len());
    let good = f.next_from_alice(1).remove(0);
    let mut failures = Vec::new();
    for c in &cases {
        let mut bob = f.bob();
        let mut prekeys = f.bob_prekeys.clone();
        let mut fresh_prekeys = prekeys.clone();
        let decrypt = |s: &mut Session,
                       p: &mut BTreeMap<PreKeyId, PreKey>,
                       bytes: &[u8]|
         -> Result<Vec<u8>, u16> {
            let env = Envelope::from_bytes(bytes).map_err(|e| DecryptError::from(e).code())?;
            s.decrypt(&mut rng(7), &f.bob, p, &env)
                .map_err(|e| e.code())
        };
        if let Input::Replayed(bytes) = &c.input {
            decrypt(&mut bob, &mut prekeys, bytes).expect("the first delivery decrypts");
        }
        let before = bob.to_bytes();
        let code = match &c.input {
            Input::ToSession(bytes) | Input::Replayed(bytes) => {
                decrypt(&mut bob, &mut prekeys, bytes).err()
            }
            Input::ToNewSession(bytes) => {
                let result = Envelope::from_bytes(bytes)
                    .map_err(|e| DecryptError::from(e).code())
                    .and_then(|env| {
                        Session::init_from_message(&mut rng(8), &f.bob, &mut fresh_prekeys, &env)
                            .map_err(|e| e.code())
                    });
                assert_eq!(
                    fresh_prekeys.len(),
                    f.bob_prekeys.len(),
                    "{}: a prekey was consumed",
                    c.name
                );
                result.err()
            }
            Input::Plaintext(len) => bob
                .encrypt(&vec![0u8; *len])
                .map(|_| ())
                .err()
                .map(|e| e.code()),
        };
        match code {
            Some(code) if c.codes.contains(&code) => {}
            other => failures.push(format!(
                "{}: got {other:?}, expected one of {:?}",
                c.name, c.codes
            )),
        }
        assert_eq!(bob.to_bytes(), before, "{}: the session changed", c.name);
        assert_eq!(
            prekeys.keys().collect::<Vec<_>>(),
            f.bob_prekeys.keys().collect::<Vec<_>>(),
            "{}",
            c.name
        );
        // The next valid message still decrypts.
        assert_eq!(
            decrypt(&mut bob, &mut prekeys, &good).unwrap(),
            b"next 0",
            "{}",
            c.name
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!("{} bad inputs rejected with their codes", cases.len());
}
