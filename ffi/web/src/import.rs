//! `importCryptobox`: the records of a cryptobox store in, the report out (see
//! [`proteus_client::Client::import_cryptobox`]). The JS side reads the source (IndexedDB, a
//! directory) and packs its records.

use proteus_client::{CryptoboxRecords, ImportReport};
use proteus_js_results::{Packed, unpack_cryptobox};
use wasm_bindgen::prelude::*;

use crate::js;

#[wasm_bindgen]
extern "C" {
    /// `onProgress(done, total)`: hears how far an import is.
    pub type ImportProgress;

    /// Calls it (`Function.prototype.call`) with `done` of `total` records checked.
    #[wasm_bindgen(method, js_name = call)]
    fn call(this: &ImportProgress, this_arg: &JsValue, done: u32, total: u32);
}

/// The source the shared JS method packed.
pub(crate) fn source(
    identity: &[u8],
    prekeys: Packed<'_>,
    sessions: Packed<'_>,
) -> Result<CryptoboxRecords, JsValue> {
    unpack_cryptobox(identity, prekeys, sessions).map_err(js::range_error)
}

/// Reports to `on_progress`, if there is one.
pub(crate) fn report_progress(
    on_progress: Option<&ImportProgress>,
    p: proteus_client::ImportProgress,
) {
    if let Some(f) = on_progress {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        f.call(&JsValue::UNDEFINED, n(p.done), n(p.total));
    }
}

/// The report as a JS object: `{ fingerprint, prekeys, sessions, skipped: [{ table, id, code,
/// reason }], alreadyImported }`.
pub(crate) fn report(report: &ImportReport) -> JsValue {
    let count = |n: usize| JsValue::from(u32::try_from(n).unwrap_or(u32::MAX));
    let skipped = js::Array::new();
    for r in &report.skipped {
        let record: JsValue = js::Object::new().into();
        js::set(&record, "table", &r.table.name().into());
        js::set(&record, "id", &r.id.as_str().into());
        js::set(&record, "code", &r.code.into());
        js::set(&record, "reason", &r.reason.as_str().into());
        skipped.push(&record);
    }
    let out: JsValue = js::Object::new().into();
    js::set(&out, "fingerprint", &report.fingerprint.as_str().into());
    js::set(&out, "prekeys", &count(report.prekeys));
    js::set(&out, "sessions", &count(report.sessions));
    js::set(&out, "skipped", &skipped.into());
    js::set(&out, "alreadyImported", &report.already_imported.into());
    out
}
