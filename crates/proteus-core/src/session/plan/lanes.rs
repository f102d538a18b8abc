//! Opening planned jobs four at a time on the four-lane SHA-256 (crate::sha256x4): the message
//! keys' HKDF and the MAC checks of four messages run in the lanes of one compression. The web
//! build (wasm, no threads, simd128) opens batches this way; native builds open jobs one by one
//! with `sha2` (SHA-NI) on threads, and run this only in tests, with the portable lanes.

use super::{JobKeys, OpenJob, Opened};
use crate::error::DecryptError;
use crate::session::derived::MessageKeys;
use crate::sha256x4::Lanes;

/// The key schedule a staged job's lane starts from (its result is not used).
const UNUSED_STATES: [[u32; 8]; 2] = [[0; 8]; 2];

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
        let [(b0, c0), (b1, c1), (b2, c2), (b3, c3)] = [j0, j1, j2, j3].map(key_schedule);
        let [d0, d1, d2, d3] = MessageKeys::derive4::<L>([b0, b1, b2, b3], [c0, c1, c2, c3]);
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

/// A chain job derives its keys from its chain key's HMAC key schedule, `HMAC(CK, "0")` in the
/// lanes too; a staged job has them (its lane derives keys from zero states, unused: staged
/// jobs are rare).
fn key_schedule<'k>(job: &'k OpenJob<'_>) -> (&'k [[u32; 8]; 2], u32) {
    match &job.keys {
        JobKeys::Chain { keyed, counter } => (keyed.states(), *counter),
        JobKeys::Staged(_) => (&UNUSED_STATES, 0),
    }
}

/// A job's message keys: its staged ones, or those its lane derived.
fn keys_of<'k>(job: &'k OpenJob<'_>, derived: &'k MessageKeys) -> &'k MessageKeys {
    match &job.keys {
        JobKeys::Staged(staged) => staged,
        JobKeys::Chain { .. } => derived,
    }
}
