//! What a forged message costs through the client, on each path: a CipherMessage and a
//! PreKeyMessage (its session made, the peer not yet answered), each through `decrypt` and
//! through `decrypt_batch`, at the largest counter gap a chain may be fast-forwarded
//! ([`MAX_FAST_FORWARD`]). A rejected message changes nothing, so every run uses the same client.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use proteus_client::{Client, QueuedMessage};
use proteus_core::limits::MAX_FAST_FORWARD;

use crate::BoxError;

/// One path's timings, one per run.
pub struct Path {
    /// What it is: the message's kind and the call.
    pub name: &'static str,
    /// One per run.
    pub times: Vec<Duration>,
}

/// `envelope` with its last byte (in the ciphertext) flipped: its MAC no longer verifies.
fn forge(mut envelope: Vec<u8>) -> Vec<u8> {
    if let Some(last) = envelope.last_mut() {
        *last ^= 1;
    }
    envelope
}

/// Bob, and a forged envelope from Alice at the largest gap: a PreKeyMessage if `answered` is
/// false (Alice has not heard from Bob), else a CipherMessage.
fn setup(answered: bool) -> Result<(Client, Vec<u8>), BoxError> {
    let (mut alice, mut bob) = (Client::in_memory()?, Client::in_memory()?);
    let bundle = bob.generate_prekeys(1)?.remove(0).to_bytes();
    alice.create_session("bob", &bundle)?;
    bob.decrypt("alice", &alice.encrypt("bob", b"hello")?)?;
    if answered {
        alice.decrypt("bob", &bob.encrypt("alice", b"hi")?)?;
    }
    let never = vec![("bob", &b"never delivered"[..]); 10_000];
    for _ in 0..MAX_FAST_FORWARD / 10_000 {
        alice.encrypt_batch(&never)?;
    }
    Ok((bob, forge(alice.encrypt("bob", b"the one")?)))
}

/// Measures the four paths `runs` times each.
pub fn measure(runs: usize) -> Result<Vec<Path>, BoxError> {
    let mut paths = Vec::new();
    for (answered, kind) in [(true, "CipherMessage"), (false, "PreKeyMessage")] {
        let (mut bob, forged) = setup(answered)?;
        let queue = [QueuedMessage {
            session_id: "alice",
            envelope: &forged,
        }];
        let mut single = Vec::with_capacity(runs);
        let mut batch = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            let outcome = bob.decrypt("alice", &forged);
            single.push(start.elapsed());
            if outcome.is_ok() {
                return Err("a forged message decrypted".into());
            }
            let start = Instant::now();
            let results = bob.decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))?;
            batch.push(start.elapsed());
            if results.iter().any(|r| r.outcome.is_ok()) {
                return Err("a forged message decrypted".into());
            }
        }
        let names = match kind {
            "CipherMessage" => ["CipherMessage, decrypt", "CipherMessage, decrypt_batch"],
            _ => ["PreKeyMessage, decrypt", "PreKeyMessage, decrypt_batch"],
        };
        paths.push(Path {
            name: names[0],
            times: single,
        });
        paths.push(Path {
            name: names[1],
            times: batch,
        });
    }
    Ok(paths)
}
