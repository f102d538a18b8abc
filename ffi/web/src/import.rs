//! `importCryptobox`: the records of a cryptobox store in, the report out (see
//! [`proteus_client::Client::import_cryptobox`]). The JS side reads the source (IndexedDB, a
//! directory) and packs its records.

use proteus_client::{CryptoboxRecords, ImportOptions, ImportReport, SourceRecord};
use wasm_bindgen::prelude::*;
use zeroize::Zeroizing;

use crate::js;

#[wasm_bindgen]
extern "C" {
    /// `onProgress(done, total)`: hears how far an import is.
    pub type ImportProgress;

    /// Calls it (`Function.prototype.call`) with `done` of `total` records checked.
    #[wasm_bindgen(method, js_name = call)]
    fn call(this: &ImportProgress, this_arg: &JsValue, done: u32, total: u32);
}

/// The records `ids` names, their bytes one after the other in `bytes`, split by `lengths`.
pub(crate) fn records(
    ids: Vec<String>,
    bytes: &[u8],
    lengths: &[u32],
) -> Result<Vec<SourceRecord>, JsValue> {
    let parts = crate::split(bytes, lengths)?;
    if parts.len() != ids.len() {
        return Err(js::range_error("one length per record"));
    }
    Ok(ids
        .into_iter()
        .zip(parts)
        .map(|(id, b)| SourceRecord::new(id, b))
        .collect())
}

/// The source, from the identity and the records.
pub(crate) fn source(
    identity: &[u8],
    prekeys: Vec<SourceRecord>,
    sessions: Vec<SourceRecord>,
) -> CryptoboxRecords {
    CryptoboxRecords::new(Zeroizing::new(identity.to_vec()), prekeys, sessions)
}

pub(crate) fn options(skip_bad_records: bool) -> ImportOptions {
    ImportOptions::default().skip_bad_records(skip_bad_records)
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
