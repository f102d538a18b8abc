//! The catalogue of adversarial inputs, each with the codes it may be rejected with.

use proteus_core::limits::{MAX_COUNTER_GAP, MAX_FAST_FORWARD, MAX_PLAINTEXT_LEN};
use proteus_core::{Envelope, IdentityKeyPair, Message, PreKeyId, PublicKey, SessionTag};

use crate::cbor::{
    altered, bstr, cipher, envelope_of, head, low_order_point, mac_entry, parts, prekey_message,
};
use crate::fixture::{Case, DECODE, Fixture, Input, case};

pub(crate) fn catalogue(f: &Fixture) -> Vec<Case> {
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
