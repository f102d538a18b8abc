//! What a forged message costs through the client, on each path: a CipherMessage, a
//! PreKeyMessage (its session made, the peer not yet answered), and a PreKeyMessage on a chain
//! the session has dropped since (the conversation went on), each through `decrypt` and through
//! `decrypt_batch`, at the largest counter gap a chain may be fast-forwarded
//! ([`MAX_FAST_FORWARD`]). A rejected message changes nothing, so every run uses the same client.
//! Each costs at most one fast-forward: compare it with `--fast-forward`'s forged message, the
//! fast-forward alone, which [`measure`] also times as its first row.

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

/// Which forged message.
#[derive(Clone, Copy)]
enum Kind {
    /// Alice has heard from Bob: a CipherMessage.
    Cipher,
    /// Alice has not heard from Bob: a PreKeyMessage on the chain Bob's session holds.
    PreKey,
    /// A PreKeyMessage Alice sent before she heard from Bob, arriving after the conversation
    /// went on for more turns than a session keeps receive chains: its chain is gone.
    DroppedChain,
}

/// Bob, and a forged envelope from Alice at the largest gap. Bob's session is made on his
/// last-resort prekey, so that the PreKeyMessages can still make a state (and are tried there).
fn setup(kind: Kind) -> Result<(Client, Vec<u8>), BoxError> {
    let (mut alice, mut bob) = (Client::in_memory()?, Client::in_memory()?);
    let bundle = bob.last_resort_bundle()?.to_bytes();
    alice.create_session("bob", &bundle)?;
    bob.decrypt("alice", &alice.encrypt("bob", b"hello")?)?;
    if let Kind::Cipher = kind {
        alice.decrypt("bob", &bob.encrypt("alice", b"hi")?)?;
    }
    // Bob's chain for Alice's ratchet key is at 1 ("hello" was 0): the forged message is exactly
    // MAX_FAST_FORWARD ahead of it; for a state made anew, whose chain is at 0, one less is sent.
    let mut skip = match kind {
        Kind::DroppedChain => MAX_FAST_FORWARD - 1,
        Kind::Cipher | Kind::PreKey => MAX_FAST_FORWARD,
    };
    while skip > 0 {
        let n = skip.min(10_000);
        alice.encrypt_batch(&vec![("bob", &b"never delivered"[..]); n as usize])?;
        skip -= n;
    }
    let forged = forge(alice.encrypt("bob", b"the one")?);
    if let Kind::DroppedChain = kind {
        for _ in 0..=proteus_core::limits::MAX_RECV_CHAINS {
            alice.decrypt("bob", &bob.encrypt("alice", b"turn")?)?;
            bob.decrypt("alice", &alice.encrypt("bob", b"turn")?)?;
        }
    }
    Ok((bob, forged))
}

/// Measures one fast-forward alone (the engine's forged CipherMessage, as `--fast-forward`)
/// and the six paths, `runs` times each.
pub fn measure(runs: usize) -> Result<Vec<Path>, BoxError> {
    let mut paths = vec![Path {
        name: "one fast-forward (the engine)",
        times: crate::fast_forward::measure(runs)?.forged,
    }];
    for kind in [Kind::Cipher, Kind::PreKey, Kind::DroppedChain] {
        let (mut bob, forged) = setup(kind)?;
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
            Kind::Cipher => ["CipherMessage, decrypt", "CipherMessage, decrypt_batch"],
            Kind::PreKey => ["PreKeyMessage, decrypt", "PreKeyMessage, decrypt_batch"],
            Kind::DroppedChain => [
                "PreKeyMessage, dropped chain, decrypt",
                "PreKeyMessage, dropped chain, decrypt_batch",
            ],
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
