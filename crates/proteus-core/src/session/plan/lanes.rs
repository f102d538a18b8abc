//! Opening planned jobs four at a time on the four-lane SHA-256 (crate::sha256x4): the message
//! keys' HKDF and the MAC checks of four messages run in the lanes of one compression. The web
//! build (wasm, no threads, simd128) opens batches this way; native builds open jobs one by one
//! with `sha2` (SHA-NI) on threads, and run this only in tests, with the portable lanes.

use super::{JobKeys, OpenJob, Opened};
use crate::crypto::Secret32;
use crate::error::DecryptError;
use crate::session::derived::MessageKeys;
use crate::sha256x4::Lanes;

/// What [`super::open_jobs`] computes, job for job the same results as [`OpenJob::open`].
/// Jobs are taken four at a time: the message keys' HKDF of the four, then their MAC checks,
/// in lanes; then ChaCha20 one by one. A short last group fills its empty lanes with its
/// first job and drops their results (one code path for every group: the web build's size).
pub(super) fn open_jobs_in_lanes<L: Lanes>(jobs: &[OpenJob<'_>]) -> Vec<Opened> {
    let mut opened = Vec::with_capacity(jobs.len());
    for four in jobs.chunks(4) {
        let Some(first) = four.first() else {
            continue;
        };
        let [j0, j1, j2, j3]: [&OpenJob<'_>; 4] =
            core::array::from_fn(|i| four.get(i).unwrap_or(first));
        // A chain job derives its keys from its chain key's `HMAC(CK, "0")`; a staged job has
        // them (its lane derives keys from zeros, unused: staged jobs are rare).
        let base = |job: &OpenJob<'_>| match &job.keys {
            JobKeys::Chain { keyed, counter } => (keyed.mac(b"0"), *counter),
            JobKeys::Staged(_) => (Secret32::default(), 0),
        };
        let [(b0, c0), (b1, c1), (b2, c2), (b3, c3)] = [j0, j1, j2, j3].map(base);
        let [d0, d1, d2, d3] = MessageKeys::derive4::<L>([&b0, &b1, &b2, &b3], [c0, c1, c2, c3]);
        let keys = [
            keys_of(j0, &d0),
            keys_of(j1, &d1),
            keys_of(j2, &d2),
            keys_of(j3, &d3),
        ];
        let lanes = [j0, j1, j2, j3];
        let verified = MessageKeys::verify4::<L>(
            keys,
            lanes.map(|j| j.envelope.message_bytes()),
            lanes.map(|j| j.envelope.mac()),
        );
        for ((job, keys), ok) in four.iter().zip(keys).zip(verified) {
            opened.push(if ok {
                Ok(keys.apply_cipher(&job.envelope.message().cipher_message().cipher_text))
            } else {
                Err(DecryptError::InvalidSignature(job.position))
            });
        }
    }
    opened
}

/// A job's message keys: its staged ones, or those its lane derived.
fn keys_of<'k>(job: &'k OpenJob<'_>, derived: &'k MessageKeys) -> &'k MessageKeys {
    match &job.keys {
        JobKeys::Staged(staged) => staged,
        JobKeys::Chain { .. } => derived,
    }
}
