//! Decoders run on arbitrary and mutated bytes, the valid encodings they start from, and the
//! mutated-envelope delivery check.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use proptest::prelude::*;
use proptest::sample::Index;
use proteus_core::{
    BundleSignature, Envelope, IdentityKey, IdentityKeyPair, Message, PreKey, PreKeyBundle,
    PreKeyId, Session,
};

use crate::rng::TestRng;

/// Runs every decoder on `bytes`. None may panic; what one accepts must re-encode to bytes it
/// decodes to the same value (and the same bytes again).
pub(crate) fn decode_everything(bytes: &[u8], identities: &[IdentityKey]) {
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
pub(crate) struct Target {
    pub(crate) wire: Vec<u8>,
    pub(crate) plaintext: Vec<u8>,
    pub(crate) recipient_seed: [u8; 32],
    pub(crate) session: Option<Vec<u8>>,
    pub(crate) prekeys: Vec<Vec<u8>>,
}

impl Target {
    pub(crate) fn load_prekeys(&self) -> BTreeMap<PreKeyId, PreKey> {
        self.prekeys
            .iter()
            .map(|b| {
                let p = PreKey::from_bytes(b).unwrap();
                (p.id(), p)
            })
            .collect()
    }

    pub(crate) fn assert_prekeys_unchanged(&self, prekeys: &BTreeMap<PreKeyId, PreKey>) {
        let after: Vec<Vec<u8>> = prekeys.values().map(|p| p.to_bytes().to_vec()).collect();
        assert_eq!(
            after, self.prekeys,
            "a rejected message changed the prekeys"
        );
    }
}

/// Valid encodings of every kind, from a fixed short conversation.
pub(crate) struct Fixtures {
    pub(crate) identities: Vec<IdentityKey>,
    pub(crate) encodings: Vec<Vec<u8>>,
    pub(crate) targets: Vec<Target>,
}

const ALICE_SEED: [u8; 32] = [0xa1; 32];
const BOB_SEED: [u8; 32] = [0xb0; 32];

pub(crate) fn fixtures() -> &'static Fixtures {
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
pub(crate) fn wrapped_signature(signed: &PreKeyBundle) -> Vec<u8> {
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
pub(crate) enum Mutation {
    FlipBit { at: Index, bit: u8 },
    SetByte { at: Index, value: u8 },
    Insert { at: Index, value: u8 },
    Remove { at: Index },
    Truncate { at: Index },
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        4 => (any::<Index>(), 0u8..8).prop_map(|(at, bit)| Mutation::FlipBit { at, bit }),
        2 => (any::<Index>(), any::<u8>()).prop_map(|(at, value)| Mutation::SetByte { at, value }),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(at, value)| Mutation::Insert { at, value }),
        1 => any::<Index>().prop_map(|at| Mutation::Remove { at }),
        1 => any::<Index>().prop_map(|at| Mutation::Truncate { at }),
    ]
}

pub(crate) fn mutate(bytes: &mut Vec<u8>, mutation: &Mutation) {
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
pub(crate) fn deliver_mutated(target: &Target, mutated: &[u8]) {
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
