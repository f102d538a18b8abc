//! encryptFor's results packed for JS as the web package packs them (ffi/web/src/lib.rs,
//! `encrypt_for`): per recipient one number, its envelope's length or minus its error code, and
//! the envelopes back to back. Two typed arrays cross into JS for 4000 recipients, rather than
//! 4000 objects each with a session id string and an envelope buffer; the JS layer (`native.js`)
//! builds the results with the ids it passed in and views of the envelopes.

use napi::bindgen_prelude::{Int32Array, Uint8Array};
use napi_derive::napi;
use proteus_client::ClientError;

/// The results of a fan-out, one per recipient in order.
#[napi(object)]
pub struct RawFanout {
    /// Per recipient: its envelope's length, or minus its error code.
    pub outcomes: Int32Array,
    /// The envelopes of the recipients that have one, back to back.
    pub envelopes: Uint8Array,
}

impl RawFanout {
    pub(crate) fn of(results: &[Result<Vec<u8>, ClientError>]) -> Self {
        let size = results.iter().flatten().map(Vec::len).sum::<usize>();
        let mut envelopes = Vec::with_capacity(size);
        let outcomes: Vec<i32> = results
            .iter()
            .map(|result| match result {
                Ok(envelope) => {
                    envelopes.extend_from_slice(envelope);
                    i32::try_from(envelope.len()).unwrap_or(i32::MAX)
                }
                Err(e) => -i32::from(e.code()),
            })
            .collect();
        Self {
            outcomes: Int32Array::from(outcomes),
            envelopes: Uint8Array::from(envelopes),
        }
    }
}
