//! importCryptobox: the conversions of [`proteus_client::Client::import_cryptobox`] — the
//! records in, the report out, progress through a threadsafe function.

use napi::Status;
use napi::bindgen_prelude::{FnArgs, Function};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use proteus_client::{CryptoboxRecords, ImportProgress, ImportReport};
use proteus_js_results::{Packed, unpack_cryptobox};

/// A record that was not imported.
#[napi(object)]
pub struct RawSkippedRecord {
    /// `keys`, `prekeys` or `sessions`.
    pub table: String,
    /// Its id in the source.
    pub id: String,
    /// The code of the error that reading or decoding it gave.
    pub code: u32,
    /// That error's message.
    pub reason: String,
}

/// What an import did.
#[napi(object)]
pub struct RawImportReport {
    /// The fingerprint of the store's identity (the source's).
    pub fingerprint: String,
    /// Prekeys imported.
    pub prekeys: u32,
    /// Sessions imported.
    pub sessions: u32,
    /// Records not imported.
    pub skipped: Vec<RawSkippedRecord>,
    /// Nothing was written: the store already had the source's identity and was in use.
    pub already_imported: bool,
}

impl From<ImportReport> for RawImportReport {
    fn from(report: ImportReport) -> Self {
        Self {
            fingerprint: report.fingerprint,
            prekeys: u32::try_from(report.prekeys).unwrap_or(u32::MAX),
            sessions: u32::try_from(report.sessions).unwrap_or(u32::MAX),
            skipped: report
                .skipped
                .into_iter()
                .map(|r| RawSkippedRecord {
                    table: r.table.name().to_owned(),
                    id: r.id,
                    code: u32::from(r.code),
                    reason: r.reason,
                })
                .collect(),
            already_imported: report.already_imported,
        }
    }
}

/// `onProgress(done, total)`, called from the import's thread without waiting for JS.
pub(crate) type Progress =
    ThreadsafeFunction<FnArgs<(u32, u32)>, (), FnArgs<(u32, u32)>, Status, false>;

/// The JS progress function, callable from the import's thread.
pub(crate) fn progress(
    on_progress: Option<&Function<'_, FnArgs<(u32, u32)>, ()>>,
) -> napi::Result<Option<Progress>> {
    on_progress
        .map(|f| f.build_threadsafe_function().build())
        .transpose()
}

/// The source the shared JS method packed.
pub(crate) fn source(
    identity: &[u8],
    prekeys: Packed<'_>,
    sessions: Packed<'_>,
) -> napi::Result<CryptoboxRecords> {
    unpack_cryptobox(identity, prekeys, sessions)
        .map_err(|e| napi::Error::new(Status::InvalidArg, e))
}

/// Reports `p` to JS if it listens; never waits for it.
pub(crate) fn report(progress: Option<&Progress>, p: ImportProgress) {
    if let Some(f) = progress {
        let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
        // A report that cannot be queued (Node shutting down) is not worth failing the import.
        let _ = f.call(
            FnArgs::from((n(p.done), n(p.total))),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }
}
