//! decryptBatch without a callback: each result is packed as the client hands it over (while it
//! is in cache), and the packed results go to JS through a threadsafe function once the batch
//! is committed; the JS layer resolves on them. The results are freed after that (freeing 1000
//! takes about 30 µs, which the caller no longer waits for), and the call's own completion,
//! which the next call of the client waits for, comes after.
//!
//! The results reach JS after the commit, so a failure to hand them over (Node could not make
//! their JS values, or the JS side could not read them) cannot undo it: the feed is called
//! with the error instead (`feed(error)`; `feed(null, chunk)` otherwise), and the JS layer
//! rejects with Internal (599), saying the batch was committed (its messages will come back as
//! duplicates). A batch with a callback hands its results over before the commit.
//!
//! The results are not handed to JS while later messages decrypt: on a 2-core machine the JS
//! thread then takes a core from the batch's two threads, and a 1000-message batch took 6–10 %
//! longer with one chunk sent before the commit or chunks of 256, 2 % longer with one batch
//! thread (docs/benchmarks.md).

use std::ops::ControlFlow;

use napi::Status;
use napi::bindgen_prelude::Function;
use napi::threadsafe_function::{
    ThreadsafeCallContext, ThreadsafeFunction, ThreadsafeFunctionCallMode,
};
use proteus_client::codes::ClientCode;
use proteus_client::{BatchError, Chunking, Client, Decrypted};
use proteus_js_results::PackedResults;

use crate::batch::{Packed, RawBatchChunk, RawBatchSummary};
use crate::error::{Failure, code_failure};

/// The JS function that receives the results: `feed(null, chunk)`, or `feed(error)` when the
/// chunk's JS values could not be made (the error-first convention, so that such an error
/// reaches the caller's promise rather than Node's uncaught-exception handler).
pub(crate) type Feed = ThreadsafeFunction<RawBatchChunk, (), RawBatchChunk, Status, true>;

/// The feed over the JS function `feed`.
pub(crate) fn feed(feed: &Function<'_, RawBatchChunk, ()>) -> napi::Result<Feed> {
    feed.build_threadsafe_function()
        .callee_handled::<true>()
        .build_callback(to_js)
}

/// The chunk a call of the feed hands to JS (napi-rs converts it next). A test build
/// (`fault-injection`) may make it fail here instead.
fn to_js(context: ThreadsafeCallContext<RawBatchChunk>) -> napi::Result<RawBatchChunk> {
    #[cfg(feature = "fault-injection")]
    return crate::faults::deliver(context.value);
    #[cfg(not(feature = "fault-injection"))]
    Ok(context.value)
}

/// The results packed so far.
struct Chunk {
    packed: PackedResults,
    plaintexts: Vec<u8>,
}

impl Chunk {
    /// Room for the results of messages with envelopes of `lengths`: a plaintext is never
    /// longer than its envelope, so the buffers never grow.
    fn for_envelopes(lengths: &[u32]) -> Self {
        let envelopes = lengths
            .iter()
            .map(|&n| usize::try_from(n).unwrap_or(0))
            .sum();
        Self {
            packed: PackedResults::for_messages(lengths.len()),
            plaintexts: Vec::with_capacity(envelopes),
        }
    }

    fn push(&mut self, decrypted: &Decrypted) {
        self.plaintexts
            .extend_from_slice(self.packed.push_leaving_plaintext(decrypted));
    }
}

/// Runs the batch on `client` and hands its results to `feed` once committed (see the module
/// docs). `feed` is released when the caller drops it; the results queued by then are still
/// delivered.
pub(crate) fn decrypt_fed(
    client: &mut Client,
    packed: &Packed,
    feed: &Feed,
) -> Result<RawBatchSummary, Failure> {
    let queue = packed.queue()?;
    let mut chunk = Chunk::for_envelopes(&packed.lengths);
    let result = client.decrypt_batch_chunked(&queue, Chunking::every(1), |results, _| {
        for decrypted in results {
            chunk.push(decrypted);
        }
        Ok::<_, napi::Error>(ControlFlow::Continue(()))
    });
    let results = match result {
        Ok(results) => results,
        Err(BatchError::Client(e)) => return Err(e.into()),
        Err(BatchError::Delivery(e)) => return Err(Failure::Js(e)),
    };
    let all = RawBatchChunk::from_parts(0, chunk.packed, chunk.plaintexts);
    // Queuing fails only while Node shuts down (napi_closing), when no one waits for the answer.
    match feed.call(Ok(all), ThreadsafeFunctionCallMode::NonBlocking) {
        Status::Ok => {}
        status => {
            return Err(code_failure(
                ClientCode::Internal,
                format!(
                    "the batch was committed, but its results could not be queued for JavaScript ({status}): its messages will not decrypt again"
                ),
            ));
        }
    }
    drop(results);
    Ok(RawBatchSummary::of(client))
}
