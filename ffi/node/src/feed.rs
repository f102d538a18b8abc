//! decryptBatch without a callback: the results go to JS in chunks while later messages
//! decrypt, through a threadsafe function called without waiting for JS, so that the JS layer
//! builds the result objects meanwhile; the last chunk goes after the commit, marked
//! `committed`, and the JS layer hands all the results over on it (never before: a batch that
//! fails hands nothing over). Each result is packed as soon as the client hands it over, while
//! it is in cache, and the results are freed only after the last chunk left (freeing 1000 takes
//! about 30 µs, which the caller no longer waits for).

use std::ops::ControlFlow;

use napi::Status;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use proteus_client::{BatchError, Chunking, Client, Decrypted};
use proteus_js_results::PackedResults;

use crate::batch::{Packed, RawBatchChunk};
use crate::error::client_error;

/// Results per chunk: each one wakes the JS thread. On a busy 2-core machine (no core to spare
/// for the overlap) 1000 results in chunks of 128 took about 0.05 ms longer than in chunks of
/// 256 or in one.
const CHUNK: usize = 256;

/// Results in the last chunk, the one JS reads after the commit: the chunk before it reaches JS
/// while these decrypt.
const TAIL: usize = 32;

/// The JS function that receives the chunks.
pub(crate) type Feed = ThreadsafeFunction<RawBatchChunk, (), RawBatchChunk, Status, false>;

/// Where the chunk that starts at result `first` of `total` ends: every [`CHUNK`] results, the
/// last [`TAIL`] on their own.
fn chunk_end(first: usize, total: usize) -> usize {
    let tail = total.saturating_sub(TAIL);
    if first < tail {
        (first + CHUNK).min(tail)
    } else {
        total
    }
}

/// The chunk being packed.
struct Chunk {
    first: usize,
    end: usize,
    packed: PackedResults,
    plaintexts: Vec<u8>,
}

impl Chunk {
    /// Room for results `first..chunk_end(first)`: a plaintext is never longer than its
    /// envelope (`lengths`), so the buffers never grow.
    fn starting_at(first: usize, lengths: &[u32]) -> Self {
        let end = chunk_end(first, lengths.len());
        let envelopes: usize = lengths
            .get(first..end)
            .unwrap_or_default()
            .iter()
            .map(|&n| usize::try_from(n).unwrap_or(0))
            .sum();
        Self {
            first,
            end,
            packed: PackedResults::for_messages(end - first),
            plaintexts: Vec::with_capacity(envelopes),
        }
    }

    fn push(&mut self, decrypted: &Decrypted) {
        self.plaintexts
            .extend_from_slice(self.packed.push_leaving_plaintext(decrypted));
    }

    fn into_raw(self) -> RawBatchChunk {
        RawBatchChunk::from_parts(self.first, self.packed, self.plaintexts)
    }
}

/// Runs the batch on `client`, feeding its results to `feed` (see the module docs). `feed` is
/// released when the caller drops it: the chunks queued by then are still delivered, in order.
pub(crate) fn decrypt_fed(client: &mut Client, packed: &Packed, feed: &Feed) -> napi::Result<()> {
    let send =
        |chunk: RawBatchChunk| match feed.call(chunk, ThreadsafeFunctionCallMode::NonBlocking) {
            Status::Ok => Ok(()),
            status => Err(napi::Error::new(status, "the results could not reach JS")),
        };
    let queue = packed.queue()?;
    let lengths = &packed.lengths;
    let mut chunk = Chunk::starting_at(0, lengths);
    let result = client.decrypt_batch_chunked(&queue, Chunking::every(1), |results, progress| {
        let first = progress.done - results.len();
        for (done, decrypted) in (first + 1..).zip(results) {
            chunk.push(decrypted);
            if done == chunk.end && done < progress.total {
                let next = Chunk::starting_at(done, lengths);
                send(std::mem::replace(&mut chunk, next).into_raw())?;
            }
        }
        Ok(ControlFlow::Continue(()))
    });
    let results = match result {
        Ok(results) => results,
        Err(BatchError::Client(e)) => return Err(client_error(&e)),
        Err(BatchError::Delivery(e)) => return Err(e),
    };
    // The last chunk (empty for an empty batch), after the commit. It cannot fail to be queued
    // but while Node shuts down (napi_closing), when no one waits for the answer.
    let mut last = chunk.into_raw();
    last.committed = true;
    send(last)?;
    drop(results);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{CHUNK, TAIL, chunk_end};

    fn ends(total: usize) -> Vec<usize> {
        let mut ends = Vec::new();
        let mut first = 0;
        while first < total {
            first = chunk_end(first, total);
            ends.push(first);
        }
        ends
    }

    #[test]
    fn chunks_cover_the_batch_and_the_last_is_the_tail() {
        assert_eq!(ends(1000), [256, 512, 768, 968, 1000]);
        assert_eq!(ends(0), [0usize; 0]);
        for total in [1, TAIL - 1, TAIL, TAIL + 1, CHUNK, CHUNK + TAIL, 999, 5000] {
            let ends = ends(total);
            let mut first = 0;
            for &end in &ends {
                assert!(first < end && end - first <= CHUNK, "{total}: {ends:?}");
                first = end;
            }
            assert_eq!(first, total);
            let before_last = ends.len().checked_sub(2).map_or(0, |i| ends[i]);
            assert_eq!(total - before_last, total.min(TAIL), "{total}: {ends:?}");
        }
    }
}
