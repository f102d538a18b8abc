//! A catalogue of adversarial inputs, each with the typed error (and stable code) it must get.
//!
//! Every case runs against the same established conversation, restored from bytes: after the
//! rejection, Bob's session and prekey store must be byte-for-byte as before, and the next valid
//! message must still decrypt. The table is built from a handful of valid messages: truncated at
//! every byte, bit-flipped in MAC, ciphertext and header, re-encoded with hostile header values,
//! and hand-written CBOR.
//!
//! The test is here; the cases are in `catalogue.rs`, built with the CBOR and message helpers of
//! `cbor.rs` from the conversation of `fixture.rs`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod catalogue;
mod cbor;
mod fixture;

use std::collections::BTreeMap;

use proteus_core::{DecryptError, Envelope, PreKey, PreKeyId, Session};

use catalogue::catalogue;
use fixture::{Input, fixture, rng};

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
