//! The bodies of the fuzz targets (`fuzz/`), shared with the test that replays their corpora.
//!
//! Each function takes the fuzzer's bytes and panics only when an invariant breaks: a decoder
//! that panics, a value that does not re-encode to what was decoded, a conversation in which a
//! delivered untampered message does not decrypt once to its plaintext, or a rejection that
//! changed state.

// A fuzz target reports a broken invariant by panicking: that is what the fuzzer looks for.
#![allow(
    clippy::panic,
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::indexing_slicing
)]

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use proteus_client::{Client, MemoryStorage, QueuedMessage, Storage, Table, Write};
use proteus_core::{
    CryptoRng, Envelope, IdentityKey, IdentityKeyPair, PreKey, PreKeyBundle, PreKeyId, Session,
    staged::StagedKeyId,
};
use zeroize::Zeroizing;

/// A fuzz target's body.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name, for the corpus replay.
pub const TARGETS: &[(&str, Target)] = &[
    ("envelope", envelope),
    ("prekey_bundle", prekey_bundle),
    ("prekey", prekey),
    ("identity_key_pair", identity_key_pair),
    ("session", session),
    ("store_records", store_records),
    ("interaction", interaction),
    ("sha256x4", sha256x4),
];

/// A value that decodes must re-encode to bytes that decode to the same value.
fn stable<T: PartialEq + std::fmt::Debug>(first: T, again: Result<T, proteus_core::DecodeError>) {
    match again {
        Ok(second) => assert_eq!(first, second, "re-encoding changed the value"),
        Err(e) => panic!("a decoded value re-encoded to bytes that do not decode: {e}"),
    }
}

/// `Envelope::from_bytes`: never panics; what decodes re-encodes stably (byte-identical when
/// the input was canonical, which the engine's own output always is).
pub fn envelope(data: &[u8]) {
    if let Ok(env) = Envelope::from_bytes(data) {
        let bytes = env.to_bytes();
        stable(env, Envelope::from_bytes(&bytes));
    }
}

/// `PreKeyBundle::from_bytes`.
pub fn prekey_bundle(data: &[u8]) {
    if let Ok(bundle) = PreKeyBundle::from_bytes(data) {
        let _ = bundle.verify();
        stable(bundle.clone(), PreKeyBundle::from_bytes(&bundle.to_bytes()));
    }
}

/// `PreKey::from_bytes`.
pub fn prekey(data: &[u8]) {
    if let Ok(prekey) = PreKey::from_bytes(data) {
        let again = PreKey::from_bytes(&prekey.to_bytes()).map(|p| p.to_bytes().to_vec());
        assert_eq!(
            again.ok(),
            Some(prekey.to_bytes().to_vec()),
            "prekey round trip"
        );
    }
}

/// `IdentityKeyPair::from_bytes` and `IdentityKey::from_bytes`.
pub fn identity_key_pair(data: &[u8]) {
    if let Ok(pair) = IdentityKeyPair::from_bytes(data) {
        let again = IdentityKeyPair::from_bytes(&pair.to_bytes()).map(|p| p.to_bytes().to_vec());
        assert_eq!(
            again.ok(),
            Some(pair.to_bytes().to_vec()),
            "identity round trip"
        );
    }
    if let Ok(key) = IdentityKey::from_bytes(data) {
        stable(key, IdentityKey::from_bytes(&key.to_bytes()));
    }
}

/// The identity every fuzzed session is loaded for (Bob of the known answers, docs/protocol.md
/// §14).
fn local_identity() -> IdentityKeyPair {
    IdentityKeyPair::from_seed(&[0x44; 32])
}

/// `Session::from_bytes` for a fixed local identity; a session that loads re-encodes to the
/// same bytes and can be used to encrypt without panicking.
pub fn session(data: &[u8]) {
    let identity = local_identity();
    let Ok(mut session) = Session::from_bytes(identity.public_key(), data) else {
        return;
    };
    let bytes = session.to_bytes();
    let reloaded =
        Session::from_bytes(identity.public_key(), &bytes).map(|s| s.to_bytes().to_vec());
    assert_eq!(reloaded.ok(), Some(bytes.to_vec()), "session round trip");
    let _ = session.encrypt(b"probe");
}

/// The records a client reads back from its store: the fuzzer fills a store's tables
/// (identity, prekeys, sessions, staged keys) and a client opens it and decrypts; nothing may
/// panic, and a failed open or decrypt changes nothing.
pub fn store_records(data: &[u8]) {
    let mut storage = MemoryStorage::new();
    let mut writes = Vec::new();
    // Records are `table (1) ‖ key length (1) ‖ value length (2) ‖ key ‖ value`.
    let mut rest = data;
    while let [table, key_len, hi, lo, tail @ ..] = rest {
        let (key_len, value_len) = (
            usize::from(*key_len),
            usize::from(u16::from_be_bytes([*hi, *lo])),
        );
        if tail.len() < key_len + value_len {
            break;
        }
        let (key, tail) = tail.split_at(key_len);
        let (value, tail) = tail.split_at(value_len);
        let table = Table::ALL[usize::from(*table) % Table::ALL.len()];
        writes.push(Write::Put {
            table,
            key: key.to_vec(),
            value: Zeroizing::new(value.to_vec()),
        });
        if table == Table::StagedKeys {
            let _ = StagedKeyId::from_bytes(key.get(2..).unwrap_or_default());
        }
        rest = tail;
    }
    if storage.commit(&writes).is_err() {
        return;
    }
    let Ok(mut client) = Client::with_storage(Box::new(storage)) else {
        return;
    };
    let ids = client.session_ids().unwrap_or_default();
    let queue: Vec<QueuedMessage<'_>> = ids
        .iter()
        .map(|id| QueuedMessage {
            session_id: id,
            envelope: rest,
        })
        .collect();
    let _ = client.decrypt_batch(&queue, |_, _| ControlFlow::Continue(()));
    for id in &ids {
        let _ = client.encrypt(id, b"x");
    }
}

/// Deterministic randomness from the fuzzer's bytes (SHA-256 in counter mode), so a crashing
/// input reproduces.
pub struct SeededRng {
    seed: [u8; 32],
    counter: u64,
}

impl SeededRng {
    /// Randomness derived from `seed`.
    pub fn new(seed: &[u8]) -> Self {
        use sha2::Digest;
        Self {
            seed: sha2::Sha256::digest(seed).into(),
            counter: 0,
        }
    }
}

impl proteus_core::rand_core::TryRng for SeededRng {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        proteus_core::rand_core::utils::next_word_via_fill(self)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        proteus_core::rand_core::utils::next_word_via_fill(self)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        use sha2::Digest;
        for chunk in dst.chunks_mut(32) {
            self.counter += 1;
            let block: [u8; 32] = sha2::Sha256::new()
                .chain_update(self.seed)
                .chain_update(self.counter.to_le_bytes())
                .finalize()
                .into();
            chunk.copy_from_slice(&block[..chunk.len()]);
        }
        Ok(())
    }
}

impl proteus_core::rand_core::TryCryptoRng for SeededRng {}

/// One party of the interaction target.
struct Party {
    identity: IdentityKeyPair,
    prekeys: BTreeMap<PreKeyId, PreKey>,
    session: Option<Session>,
}

impl Party {
    fn state(&self) -> (Option<Vec<u8>>, Vec<PreKeyId>) {
        (
            self.session.as_ref().map(|s| s.to_bytes().to_vec()),
            self.prekeys.keys().copied().collect(),
        )
    }
}

/// A message in flight: the envelope, its plaintext, its place among its sender's messages,
/// and whether it was delivered already.
struct InFlight {
    to_bob: bool,
    envelope: Vec<u8>,
    plaintext: Vec<u8>,
    seq: usize,
    delivered: bool,
}

/// Messages a sender may send after one before a late delivery of it may fail legitimately
/// (more than the counter-gap limit, with margin).
const LATE_AFTER: usize = 900;
/// Direction changes after which a late message's receive chain may have been dropped.
const LATE_TURNS: u32 = 8;

/// Two parties driven by the fuzzer's bytes: send either way, deliver (in any order), drop,
/// duplicate, tamper, serialise and restore, all with deterministic randomness. Invariants:
/// a first delivery of an untampered message decrypts to its plaintext unless its chain is
/// gone (an old chain after many ratchet turns, rejected with a typed error); a repeat or a
/// tampered message is rejected; every rejection leaves the receiver as it was.
pub fn interaction(data: &[u8]) {
    let Some((seed, ops)) = data.split_first_chunk::<8>() else {
        return;
    };
    let rng: &mut dyn CryptoRng = &mut SeededRng::new(seed);
    let bob_prekey = PreKey::generate(PreKeyId::new(1), rng);
    let bundle = PreKeyBundle::new(local_identity().public_key(), &bob_prekey);
    let alice_identity = IdentityKeyPair::generate(rng);
    let Ok(alice_session) = Session::init_from_prekey(rng, &alice_identity, &bundle) else {
        return;
    };
    let mut alice = Party {
        identity: alice_identity,
        prekeys: BTreeMap::new(),
        session: Some(alice_session),
    };
    let mut bob = Party {
        identity: local_identity(),
        prekeys: BTreeMap::from([(bob_prekey.id(), bob_prekey)]),
        session: None,
    };
    let mut flight: Vec<InFlight> = Vec::new();
    let mut turns = 0u32;
    let mut last_sender_bob = false;
    let mut sent = [0usize; 2];
    for (i, op) in ops.chunks(2).enumerate() {
        let (code, arg) = (
            op.first().copied().unwrap_or(0),
            usize::from(op.get(1).copied().unwrap_or(0)),
        );
        match code % 6 {
            // Send a message.
            0 | 1 => {
                let from_bob = code % 6 == 1;
                let sender = if from_bob { &mut bob } else { &mut alice };
                let Some(session) = sender.session.as_mut() else {
                    continue;
                };
                let plaintext =
                    format!("message {i} of {}", if from_bob { "bob" } else { "alice" })
                        .into_bytes();
                let Ok(env) = session.encrypt(&plaintext) else {
                    continue;
                };
                if from_bob != last_sender_bob {
                    turns += 1;
                    last_sender_bob = from_bob;
                }
                let seq = sent[usize::from(from_bob)];
                sent[usize::from(from_bob)] += 1;
                flight.push(InFlight {
                    to_bob: !from_bob,
                    envelope: env.to_bytes(),
                    plaintext,
                    seq,
                    delivered: false,
                });
            }
            // Deliver (first time or again), or deliver a tampered copy.
            2 | 3 => {
                if flight.is_empty() {
                    continue;
                }
                let index = arg % flight.len();
                let tamper = code % 6 == 3;
                let (to_bob, mut bytes, plaintext, delivered, seq) = {
                    let m = &flight[index];
                    (
                        m.to_bob,
                        m.envelope.clone(),
                        m.plaintext.clone(),
                        m.delivered,
                        m.seq,
                    )
                };
                let sent_since = sent[usize::from(!to_bob)] - seq;
                if tamper {
                    let at = (arg * 7 + usize::from(code)) % bytes.len().max(1);
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= 1 << (code % 8);
                    }
                }
                let receiver = if to_bob { &mut bob } else { &mut alice };
                let before = receiver.state();
                let result = deliver(receiver, &bytes, rng);
                match result {
                    Ok(got) => {
                        assert!(!delivered, "a message decrypted twice");
                        assert_eq!(got, plaintext, "a message decrypted to another plaintext");
                        if let Some(m) = flight.get_mut(index) {
                            m.delivered = true;
                        }
                    }
                    Err(()) => {
                        assert_eq!(receiver.state(), before, "a rejected message changed state");
                        // An untampered first delivery may fail only when its chain can be gone.
                        if !tamper && !delivered {
                            assert!(
                                turns > LATE_TURNS || sent_since > LATE_AFTER,
                                "an untampered message was rejected ({turns} turns, {sent_since} sent since)"
                            );
                        }
                    }
                }
            }
            // Drop a message.
            4 => {
                if !flight.is_empty() {
                    flight.remove(arg % flight.len());
                }
            }
            // Serialise and restore a party.
            _ => {
                let party = if arg % 2 == 0 { &mut alice } else { &mut bob };
                if let Some(session) = &party.session {
                    let bytes = session.to_bytes();
                    let restored = Session::from_bytes(party.identity.public_key(), &bytes)
                        .expect("a session reloads");
                    assert_eq!(
                        restored.to_bytes(),
                        bytes,
                        "a session round trip changed it"
                    );
                    party.session = Some(restored);
                }
            }
        }
    }
}

fn deliver(receiver: &mut Party, bytes: &[u8], rng: &mut dyn CryptoRng) -> Result<Vec<u8>, ()> {
    let env = Envelope::from_bytes(bytes).map_err(|_| ())?;
    match receiver.session.as_mut() {
        Some(session) => session
            .decrypt(rng, &receiver.identity, &mut receiver.prekeys, &env)
            .map_err(|_| ()),
        None => {
            let inbound =
                Session::init_from_message(rng, &receiver.identity, &mut receiver.prekeys, &env)
                    .map_err(|_| ())?;
            receiver.session = Some(inbound.session);
            Ok(inbound.plaintext)
        }
    }
}

/// The web build's four-lane SHA-256, HMAC-SHA256 and HKDF-SHA256 (proteus-core's
/// `sha256x4_lanes`, on the lanes of the build: `[u32; 4]` natively) agree with the `sha2`,
/// `hmac` and `hkdf` crates on every lane. The first four bytes give the lanes' message lengths
/// (0 to 510 bytes, cut from the rest of the input in turn, shorter where it runs out), the
/// fifth the lane whose tag is forged; each lane's key is the input's SHA-256 with the lane's
/// number; the HKDF info is the engine's ("hash_ratchet"), then the input's last 22 bytes (zeros
/// before a shorter input).
pub fn sha256x4(data: &[u8]) {
    use hmac::{Hmac, KeyInit, Mac};
    use proteus_core::sha256x4_lanes as lanes;
    use sha2::{Digest, Sha256};

    let Some((header, mut rest)) = data.split_first_chunk::<5>() else {
        return;
    };
    let msgs: [&[u8]; 4] = std::array::from_fn(|i| {
        let (msg, tail) = rest.split_at((usize::from(header[i]) * 2).min(rest.len()));
        rest = tail;
        msg
    });
    let keys: [[u8; 32]; 4] = std::array::from_fn(|i| {
        Sha256::new()
            .chain_update(data)
            .chain_update([i as u8])
            .finalize()
            .into()
    });
    let mut info = [0u8; 22];
    for (i, b) in info.iter_mut().rev().zip(data.iter().rev()) {
        *i = *b;
    }

    let expected = msgs.map(|m| <[u8; 32]>::from(Sha256::digest(m)));
    assert_eq!(lanes::sha256x4(msgs), expected, "SHA-256 differs from sha2");

    let tags: [[u8; 32]; 4] = std::array::from_fn(|i| {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&keys[i]).expect("32-byte key");
        mac.update(msgs[i]);
        mac.finalize().into_bytes().into()
    });
    assert_eq!(
        lanes::hmac_sha256x4(keys.each_ref(), msgs),
        tags,
        "HMAC differs from hmac"
    );
    assert_eq!(
        lanes::hmac_sha256x4_verify(keys.each_ref(), msgs, tags.each_ref()),
        [true; 4]
    );
    let forged_lane = usize::from(header[4] % 4);
    let mut forged = tags;
    forged[forged_lane][usize::from(header[4] / 4) % 32] ^= 1;
    let verdicts = lanes::hmac_sha256x4_verify(keys.each_ref(), msgs, forged.each_ref());
    assert_eq!(
        verdicts,
        std::array::from_fn(|i| i != forged_lane),
        "a forged tag verified"
    );

    let okm = |info: &[u8]| {
        keys.map(|ikm| {
            let mut out = [0u8; 64];
            hkdf::Hkdf::<Sha256>::new(Some(&[]), &ikm)
                .expand(info, &mut out)
                .expect("64 bytes");
            out
        })
    };
    let engine_info = b"hash_ratchet";
    let derived = lanes::hkdf_empty_salt_x4(keys.each_ref(), engine_info);
    assert_eq!(derived, okm(engine_info), "HKDF differs from hkdf");
    let derived = lanes::hkdf_empty_salt_x4(keys.each_ref(), &info);
    assert_eq!(derived, okm(&info), "HKDF differs from hkdf");
}
