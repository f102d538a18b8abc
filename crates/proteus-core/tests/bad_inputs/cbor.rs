//! Hand-written CBOR and altered messages the catalogue builds its cases from.

use proteus_core::{Envelope, IdentityKeyPair, Message, PreKeyBundle, PublicKey, Session};

use crate::fixture::{Fixture, rng};

pub(crate) fn head(major: u8, value: u64) -> Vec<u8> {
    let m = major << 5;
    match value {
        0..=23 => vec![m | value as u8],
        24..=0xff => vec![m | 24, value as u8],
        0x100..=0xffff => [vec![m | 25], (value as u16).to_be_bytes().to_vec()].concat(),
        0x1_0000..=0xffff_ffff => [vec![m | 26], (value as u32).to_be_bytes().to_vec()].concat(),
        _ => [vec![m | 27], value.to_be_bytes().to_vec()].concat(),
    }
}

pub(crate) fn bstr(b: &[u8]) -> Vec<u8> {
    [head(2, b.len() as u64), b.to_vec()].concat()
}

/// An envelope map with the given entries, each already encoded as key ‖ value.
pub(crate) fn envelope_of(entries: &[Vec<u8>]) -> Vec<u8> {
    [head(5, entries.len() as u64), entries.concat()].concat()
}

pub(crate) fn mac_entry(mac: &[u8]) -> Vec<u8> {
    [vec![0x01, 0xa1, 0x00], bstr(mac)].concat()
}

/// A valid envelope's parts: its MAC and its message bytes.
pub(crate) fn parts(wire: &[u8]) -> ([u8; 32], Vec<u8>) {
    let env = Envelope::from_bytes(wire).unwrap();
    (*env.mac(), env.message_bytes().to_vec())
}

/// Re-encodes Alice's next message with a changed header (the MAC is kept, so it no longer fits).
pub(crate) fn altered(f: &Fixture, change: impl FnOnce(&mut Message)) -> Vec<u8> {
    let sent = f.next_from_alice(1);
    let env = Envelope::from_bytes(&sent[0]).unwrap();
    let mut message = env.message().clone();
    change(&mut message);
    Envelope::from_message(message, *env.mac()).to_bytes()
}

pub(crate) fn cipher<'m, 'a>(m: &'m mut Message<'a>) -> &'m mut proteus_core::CipherMessage<'a> {
    match m {
        Message::Cipher(c) => c,
        Message::PreKey(p) => &mut p.message,
    }
}

/// A PreKeyMessage from a new sender, built for a bundle of Bob's, then changed.
pub(crate) fn prekey_message(
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

pub(crate) fn low_order_point() -> PublicKey {
    // The point (0, -1), of order 2.
    let mut b = [0u8; 32];
    b[0] = 0xec;
    b[1..31].fill(0xff);
    b[31] = 0x7f;
    PublicKey::from_bytes(b)
}
