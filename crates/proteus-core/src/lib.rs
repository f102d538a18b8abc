//! A Proteus protocol engine, wire-compatible with Wire's Proteus.
//!
//! Proteus is the double ratchet (Axolotl) with an X3DH-like handshake over one-time prekeys,
//! Curve25519, HKDF-SHA256, HMAC-SHA256 and ChaCha20, with CBOR on the wire. This crate
//! implements it byte for byte as Wire's deployed implementations do (`@wireapp/proteus` 9.x and
//! Wire's Rust `proteus` 2.x): sessions interoperate in both directions, and identities, prekeys
//! and sessions serialised by either load here and the other way round.
//!
//! The crate is *sans-I/O*: it does no I/O, reads no clock and draws randomness only from the
//! `CryptoRng` it is given ([`OsRng`] in production, recorded draws in tests). Persistence is
//! the caller's: serialise with `to_bytes`, load with `from_bytes`.
//!
//! ```
//! use std::collections::BTreeMap;
//! use proteus_core::{IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session};
//!
//! let rng = &mut OsRng;
//! let alice = IdentityKeyPair::generate(rng);
//! let bob = IdentityKeyPair::generate(rng);
//! let mut bob_prekeys = BTreeMap::new();
//! let prekey = PreKey::generate(PreKeyId::new(1), rng);
//! let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
//! bob_prekeys.insert(prekey.id(), prekey);
//!
//! // Alice starts a session from Bob's bundle and sends.
//! let mut to_bob = Session::init_from_prekey(rng, &alice, &bundle)?;
//! let envelope = to_bob.encrypt(b"hello bob")?;
//!
//! // Bob creates his side from her first message; the one-time prekey is used up.
//! let wire = envelope.to_bytes();
//! let inbound = Session::init_from_message(rng, &bob, &mut bob_prekeys, &proteus_core::Envelope::from_bytes(&wire)?)?;
//! assert_eq!(inbound.plaintext, b"hello bob");
//! assert!(bob_prekeys.is_empty());
//!
//! // Bob replies; Alice decrypts.
//! let mut to_alice = inbound.session;
//! let reply = to_alice.encrypt(b"hi alice")?;
//! assert_eq!(to_bob.decrypt(rng, &alice, &mut BTreeMap::new(), &reply)?, b"hi alice");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design
//!
//! * **CBOR**: a small codec of our own ([`cbor`](crate) module, private). Encoders write
//!   canonical CBOR (definite, minimal lengths, ascending integer keys) so that Wire's strict
//!   JavaScript decoders accept every message, including the 64 KiB–1 MiB sizes that Wire's own
//!   Rust encoder gets wrong; decoders accept any key order, skip unknown keys, reject duplicate
//!   keys, bound every length and depth (see [`limits`]) and borrow from the input, so the
//!   envelope MAC is verified over the exact bytes received.
//! * **Atomic decryption** without copying: a decryption computes what it would change on the
//!   side and applies it only after the MAC verified. A rejected message changes nothing and
//!   consumes no prekey.
//! * **Speed**: ratchet keys in messages are compared as bytes and converted from Ed25519 to
//!   X25519 (and validated) only for a DH ratchet step; the skipped keys of a counter gap are
//!   derived only once the MAC has verified.
//! * **Keys**: public keys are validated as libsodium does (no small-order, mixed-order or
//!   undecodable points) and every Diffie-Hellman result must be contributory. Secrets are
//!   wiped on drop and never shown by `Debug`.
//! * **Crates**: curve25519-dalek and ed25519-dalek for the curve; hkdf, hmac and sha2 (with
//!   SHA-NI where the CPU has it) for the KDF and MAC; chacha20's `ChaCha20Legacy` (the
//!   8-byte-nonce variant Proteus uses); zeroize; subtle. X25519 is computed with
//!   curve25519-dalek on the Edwards form of the peer's key rather than with x25519-dalek's
//!   Montgomery ladder: validation has to decompress that point anyway, and the vectorised
//!   Edwards multiplication is faster (a session created from a PreKeyMessage went from 449 µs
//!   to 259 µs here). HMAC verification is constant-time (`hmac`'s `verify_slice`).
//!
//! # Features
//!
//! * `test-support`: tools for tests and interop vectors, never for applications:
//!   `RecordedRng` (replays recorded random draws), `Envelope::from_message` (an envelope with
//!   any MAC, for hostile inputs), `Session::clear_pending_prekey`, the `rand_core`
//!   re-export and `sha256x4_lanes` (the web build's four-lane SHA-256, for its fuzz target).

#![forbid(unsafe_code)]

mod cbor;
pub mod codes;
mod crypto;
mod error;
mod keys;
pub mod limits;
mod message;
mod prekey_store;
#[cfg(any(test, feature = "test-support"))]
mod recorded_rng;
mod rng;
mod secret_vec;
mod session;
// The four-lane SHA-256 runs in the web build (wasm with simd128); elsewhere only tests use it.
#[cfg(any(
    test,
    feature = "test-support",
    all(target_arch = "wasm32", target_feature = "simd128")
))]
mod sha256x4;
/// The four-lane SHA-256, HMAC and HKDF of the web build, for the fuzz target that compares
/// them with the `sha2`, `hmac` and `hkdf` crates (`test-support` only).
#[cfg(feature = "test-support")]
pub use sha256x4::testing as sha256x4_lanes;

pub use codes::ErrorCode;
pub use error::{CounterPosition, DecodeError, DecryptError, EncryptError, SessionCreationError};
pub use keys::{
    BundleSignature, BundleVerification, CheckedIdentity, IdentityCache, IdentityKey,
    IdentityKeyPair, PreKey, PreKeyBundle, PreKeyId, PublicKey,
};
pub use message::{CipherMessage, Envelope, Message, PreKeyMessage, SessionTag};
pub use prekey_store::PreKeyStore;
#[cfg(feature = "test-support")]
pub use rand_core;
pub use rand_core::{CryptoRng, Rng};
#[cfg(any(test, feature = "test-support"))]
pub use recorded_rng::RecordedRng;
pub use rng::OsRng;
pub use session::{InboundSession, SendChainRecord, Session};

/// Batches of messages to one session split into independent jobs (see [`Session::plan_opens`]
/// and [`Session::decrypt_run`]).
pub mod plan {
    /// The four-lane opener on whatever lanes the build has (`test-support` only).
    #[cfg(feature = "test-support")]
    pub use crate::session::open_jobs_in_lanes;
    pub use crate::session::{OpenJob, Opened, open_jobs};
}

/// How many chain steps this thread has computed (`test-support` only): what a forged message
/// costs, counted instead of timed.
#[cfg(feature = "test-support")]
pub use session::chain_steps;

/// Storing a session's staged message keys as records of their own, so that a store writes
/// only the keys that came or went instead of the whole session: [`Session::staged_keys`],
/// [`Session::to_bytes_without_staged_keys`], [`Session::from_bytes_with_staged_keys`] and
/// the two types they use.
pub mod staged {
    pub use crate::session::{StagedKey, StagedKeyId};
}

/// The crate README's example, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
