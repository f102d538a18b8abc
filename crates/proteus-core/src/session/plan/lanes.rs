//! Opening planned jobs four at a time on the four-lane SHA-256 (crate::sha256x4): the message
//! keys' HKDF and the MAC checks of four messages run in the lanes of one compression. The web
//! build (wasm, no threads, simd128) opens batches this way; native builds open jobs one by one
//! with `sha2` (SHA-NI) on threads, and run this only in tests, with the portable lanes.

use super::{JobKeys, OpenJob, Opened};
use crate::error::DecryptError;
use crate::session::derived::MessageKeys;
use crate::sha256x4::Lanes;

/// What [`super::open_jobs`] computes, job for job the same results as [`OpenJob::open`].
/// Jobs are taken four at a time; the last one to three the scalar way (a lane costs about a
/// third of a scalar compression, so fewer than three lanes would not pay).
pub(super) fn open_jobs_in_lanes<L: Lanes>(jobs: &[OpenJob<'_>]) -> Vec<Opened> {
    let keys = message_keys::<L>(jobs);
    let mut verified = Vec::with_capacity(jobs.len());
    let mut quads = jobs.chunks_exact(4).zip(keys.chunks_exact(4));
    for (four, four_keys) in &mut quads {
        let (Ok(four), Ok(four_keys)) = (
            <&[OpenJob<'_>; 4]>::try_from(four),
            <&[MessageKeys; 4]>::try_from(four_keys),
        ) else {
            continue;
        };
        verified.extend(MessageKeys::verify4::<L>(
            four_keys.each_ref(),
            four.each_ref().map(|j| j.envelope.message_bytes()),
            four.each_ref().map(|j| j.envelope.mac()),
        ));
    }
    let rest = jobs.chunks_exact(4).remainder().iter();
    let rest_keys = keys.chunks_exact(4).remainder();
    verified.extend(
        rest.zip(rest_keys)
            .map(|(j, k)| k.verify(j.envelope.message_bytes(), j.envelope.mac())),
    );
    jobs.iter()
        .zip(&keys)
        .zip(verified)
        .map(|((job, keys), ok)| {
            if !ok {
                return Err(DecryptError::InvalidSignature(job.position));
            }
            Ok(keys.apply_cipher(&job.envelope.message().cipher_message().cipher_text))
        })
        .collect()
}

/// Every job's message keys: a staged job has them; the others derive them from their chain
/// key's `HMAC(CK, "0")`, four HKDFs at a time (the last one to three the scalar way).
fn message_keys<L: Lanes>(jobs: &[OpenJob<'_>]) -> Vec<MessageKeys> {
    let bases: Vec<_> = jobs
        .iter()
        .filter_map(|job| match &job.keys {
            JobKeys::Chain { keyed, counter } => Some((keyed.mac(b"0"), *counter)),
            JobKeys::Staged(_) => None,
        })
        .collect();
    let mut derived = Vec::with_capacity(bases.len());
    for four in bases.chunks_exact(4) {
        if let Ok(four) = <&[_; 4]>::try_from(four) {
            derived.extend(MessageKeys::derive4::<L>(
                four.each_ref().map(|(base, _)| &**base),
                four.each_ref().map(|(_, counter)| *counter),
            ));
        }
    }
    for (base, counter) in bases.chunks_exact(4).remainder() {
        derived.push(MessageKeys::from_base(base, *counter));
    }
    let mut derived = derived.into_iter();
    jobs.iter()
        .map(|job| match &job.keys {
            JobKeys::Staged(staged) => staged.clone(),
            // `derived` has one entry per chain job, in order.
            JobKeys::Chain { keyed, counter } => derived
                .next()
                .unwrap_or_else(|| MessageKeys::from_keyed(keyed, *counter)),
        })
        .collect()
}
