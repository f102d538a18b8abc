//! The worst case of a long absence: one message at the largest counter gap a chain may be
//! fast-forwarded ([`MAX_FAST_FORWARD`]), forged (its MAC fails after the steps; nothing
//! changes) and genuine (it decrypts and stages the newest skipped keys).
//!
//! Each run decrypts on a fresh copy of Bob's session (loaded from bytes, not timed).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use proteus_core::limits::MAX_FAST_FORWARD;
use proteus_core::{Envelope, OsRng, Session};

use crate::BoxError;
use crate::core_queue::established_pair;

/// Timings of the two cases, one entry per run.
pub struct FastForward {
    /// A forged message at the largest gap (MAC fails): rejected.
    pub forged: Vec<Duration>,
    /// The genuine message at the largest gap: decrypted.
    pub genuine: Vec<Duration>,
}

/// Measures both cases `runs` times.
pub fn measure(runs: usize) -> Result<FastForward, BoxError> {
    let mut pair = established_pair()?;
    // Bob's chain for Alice's current ratchet key is at 0: skip exactly MAX_FAST_FORWARD.
    for _ in 0..MAX_FAST_FORWARD {
        pair.alice.session.encrypt(b"never delivered")?;
    }
    let genuine = pair
        .alice
        .session
        .encrypt(b"the one that arrives")?
        .to_bytes();
    let mut forged = genuine.clone();
    if let Some(last) = forged.last_mut() {
        *last ^= 1;
    }
    let bob_bytes = pair.bob.session.to_bytes();
    let bob_identity = pair.bob.identity;
    let mut result = FastForward {
        forged: Vec::with_capacity(runs),
        genuine: Vec::with_capacity(runs),
    };
    for _ in 0..runs {
        for (envelope, times, should_decrypt) in [
            (&forged, &mut result.forged, false),
            (&genuine, &mut result.genuine, true),
        ] {
            let mut bob = Session::from_bytes(bob_identity.public_key(), &bob_bytes)?;
            let envelope = Envelope::from_bytes(envelope)?;
            let start = Instant::now();
            let outcome = bob.decrypt(&mut OsRng, &bob_identity, &mut BTreeMap::new(), &envelope);
            times.push(start.elapsed());
            if outcome.is_ok() != should_decrypt {
                return Err(format!("unexpected outcome: {:?}", outcome.err()).into());
            }
        }
    }
    Ok(result)
}
