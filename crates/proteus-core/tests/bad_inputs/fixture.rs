//! The established conversation every case starts from, and what a case is.

use std::collections::BTreeMap;

use proteus_core::{IdentityKeyPair, PreKey, PreKeyBundle, PreKeyId, Session};

/// from the label and a running counter, whatever its length.
pub(crate) struct Deterministic {
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

pub(crate) fn rng(label: u8) -> Deterministic {
    Deterministic { label, next: 0 }
}

/// The conversation every case starts from.
pub(crate) struct Fixture {
    pub(crate) alice: IdentityKeyPair,
    pub(crate) bob: IdentityKeyPair,
    /// Bob's session with Alice, serialised.
    pub(crate) bob_session: Vec<u8>,
    /// Bob's prekeys: a spare one-time prekey (id 2) and the last-resort prekey.
    pub(crate) bob_prekeys: BTreeMap<PreKeyId, PreKey>,
    /// Alice's session, serialised, for building messages.
    pub(crate) alice_session: Vec<u8>,
    /// A consumed one-time prekey's bundle (id 1) and a spare one (id 2).
    pub(crate) used_bundle: PreKeyBundle,
    pub(crate) spare_bundle: PreKeyBundle,
}

pub(crate) fn fixture() -> Fixture {
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
    pub(crate) fn alice(&self) -> Session {
        Session::from_bytes(self.alice.public_key(), &self.alice_session).unwrap()
    }

    pub(crate) fn bob(&self) -> Session {
        Session::from_bytes(self.bob.public_key(), &self.bob_session).unwrap()
    }

    /// Alice's next `n` messages (wire bytes), from her stored session.
    pub(crate) fn next_from_alice(&self, n: usize) -> Vec<Vec<u8>> {
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
pub(crate) enum Input {
    /// Envelope bytes for Bob's existing session with Alice.
    ToSession(Vec<u8>),
    /// Envelope bytes for Bob, who has no session with the sender yet (`init_from_message`).
    ToNewSession(Vec<u8>),
    /// Envelope bytes delivered twice to Bob's session: the second time must fail.
    Replayed(Vec<u8>),
    /// A plaintext Bob tries to encrypt.
    Plaintext(usize),
}

pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) input: Input,
    /// The accepted codes (a truncation may end in any of a few decode errors).
    pub(crate) codes: &'static [u16],
}

pub(crate) fn case(name: impl Into<String>, input: Input, codes: &'static [u16]) -> Case {
    Case {
        name: name.into(),
        input,
        codes,
    }
}

pub(crate) const DECODE: &[u16] = &[301, 303, 304, 305, 306, 307, 308, 309, 310, 311];
