//! Faults that a test build injects (cargo feature `fault-injection`; the package's build never
//! has it, and tests/faults checks that its addon does not export this): the failures of handing
//! a `decryptBatch`'s results to JS after the commit, which a real run meets only when Node runs
//! out of memory. tests/faults/delivery.test.mjs uses them.

use std::sync::Mutex;

use napi::Status;
use napi::bindgen_prelude::Uint32Array;
use napi_derive::napi;

use crate::batch::RawBatchChunk;

/// How the next hand-over of results fails.
#[derive(Clone, Copy)]
enum Fault {
    /// Making the chunk's JS values fails (as when Node cannot allocate them).
    Conversion,
    /// The chunk reaches JS, but reading it throws (its first plaintext's length is past its
    /// buffer's end).
    Unreadable,
}

static NEXT: Mutex<Option<Fault>> = Mutex::new(None);

/// Makes the next hand-over of a `decryptBatch`'s results fail: `"conversion"` or
/// `"unreadable"` (see [`Fault`]).
#[napi]
pub fn inject_delivery_fault(kind: String) -> napi::Result<()> {
    let fault = match kind.as_str() {
        "conversion" => Fault::Conversion,
        "unreadable" => Fault::Unreadable,
        _ => return Err(napi::Error::new(Status::InvalidArg, "an unknown fault")),
    };
    *NEXT
        .lock()
        .map_err(|_| napi::Error::from_reason("poisoned"))? = Some(fault);
    Ok(())
}

/// `chunk`, or the failure injected for it.
pub(crate) fn deliver(mut chunk: RawBatchChunk) -> napi::Result<RawBatchChunk> {
    let fault = NEXT
        .lock()
        .map_err(|_| napi::Error::from_reason("poisoned"))?
        .take();
    match fault {
        None => Ok(chunk),
        Some(Fault::Conversion) => Err(napi::Error::new(
            Status::GenericFailure,
            "injected: the results' JS values could not be made",
        )),
        Some(Fault::Unreadable) => {
            let mut meta = chunk.meta.to_vec();
            if let Some(length) = meta.get_mut(1) {
                *length = u32::MAX;
            }
            chunk.meta = Uint32Array::from(meta);
            Ok(chunk)
        }
    }
}
