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
//!
//! The properties are here; the conversation model is in `conversation.rs`, the decoder checks,
//! valid encodings and mutations in `mutations.rs`, the seeded randomness in `rng.rs`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod conversation;
mod mutations;
mod rng;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::FileFailurePersistence;
use proteus_core::{
    BundleSignature, BundleVerification, Envelope, IdentityKey, IdentityKeyPair, PreKey,
    PreKeyBundle, PreKeyId, Session,
};

use conversation::{Action, Conversation, Side, action, starts};
use mutations::{
    Target, decode_everything, deliver_mutated, fixtures, mutate, mutation, wrapped_signature,
};
use rng::TestRng;

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

/// Proptest settings; failures are saved next to this file (`main.proptest-regressions`)
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
