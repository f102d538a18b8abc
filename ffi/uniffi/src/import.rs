//! `importCryptobox`: a store that Wire's cryptobox wrote, imported in one commit (see
//! `proteus_client::Client::import_cryptobox`). Conversions only.

use proteus_client::{CryptoboxRecords, ImportOptions, SourceRecord};
use zeroize::Zeroizing;

use crate::bytes::Bytes;
use crate::client::Client;
use crate::error::ProteusError;

/// Where a cryptobox store is.
#[derive(Debug, Clone, uniffi::Enum)]
pub enum CryptoboxSource {
    /// A directory: Wire's Rust cryptobox's (Wire's Android and iOS apps before core-crypto:
    /// `identities/`, `prekeys/`, `sessions/`) or @wireapp/store-engine-fs's (`keys/`, …).
    Directory {
        /// The directory's path.
        path: String,
    },
    /// Records the app read itself, as Wire's Proteus serialised them.
    Records {
        /// The identity key pair.
        identity: Bytes,
        /// The prekeys (each carries its id).
        prekeys: Vec<Bytes>,
        /// The sessions, with their ids.
        sessions: Vec<CryptoboxSession>,
    },
}

/// A session of a cryptobox store.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct CryptoboxSession {
    /// Its session id.
    pub id: String,
    /// The session as Wire's Proteus serialised it.
    pub bytes: Bytes,
}

/// A record of the source that was not imported.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct SkippedRecord {
    /// `keys`, `prekeys` or `sessions`.
    pub table: String,
    /// Its id in the source (`#N`: the N-th of a list of records without ids).
    pub id: String,
    /// The code of the error that reading or decoding it gave.
    pub code: i32,
    /// That error's message.
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct ImportReport {
    /// The fingerprint of the identity the store now has (the source's).
    pub fingerprint: String,
    /// Prekeys imported (the last-resort prekey included).
    pub prekeys: i32,
    /// Sessions imported.
    pub sessions: i32,
    /// Records not imported (with `skipBadRecords`).
    pub skipped: Vec<SkippedRecord>,
    /// The store already had the source's identity and was in use: nothing was written.
    pub already_imported: bool,
}

impl From<proteus_client::ImportReport> for ImportReport {
    fn from(r: proteus_client::ImportReport) -> Self {
        let int = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
        Self {
            fingerprint: r.fingerprint,
            prekeys: int(r.prekeys),
            sessions: int(r.sessions),
            skipped: r
                .skipped
                .into_iter()
                .map(|s| SkippedRecord {
                    table: s.table.name().to_owned(),
                    id: s.id,
                    code: i32::from(s.code),
                    reason: s.reason,
                })
                .collect(),
            already_imported: r.already_imported,
        }
    }
}

/// Hears how far an import is. Called on the library's thread; return quickly.
#[uniffi::export(callback_interface)]
pub trait ImportProgress: Send + Sync {
    /// `done` of `total` records checked.
    fn progress(&self, done: i32, total: i32);
}

#[uniffi::export]
impl Client {
    /// Imports a store that Wire's cryptobox wrote — its identity, prekeys and sessions, every
    /// id kept — in one commit (docs/migration.md). The store must be new, or already have the
    /// source's identity (then nothing changes and `alreadyImported` says so); another identity
    /// in use is `ImportIdentityMismatch` (111). Records that do not decode fail the import
    /// (`ImportBadRecords`, 112) unless `skipBadRecords`; an unreadable source is
    /// `ImportSourceUnreadable` (515). The source is only read.
    #[uniffi::method(default(skip_bad_records = false, on_progress = None))]
    pub async fn import_cryptobox(
        &self,
        source: CryptoboxSource,
        skip_bad_records: bool,
        on_progress: Option<Box<dyn ImportProgress>>,
    ) -> Result<ImportReport, ProteusError> {
        let options = ImportOptions::default().skip_bad_records(skip_bad_records);
        self.run(move |c| {
            let mut progress = |p: proteus_client::ImportProgress| {
                if let Some(listener) = &on_progress {
                    let int = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
                    listener.progress(int(p.done), int(p.total));
                }
            };
            let report = match source {
                CryptoboxSource::Directory { path } => {
                    c.import_cryptobox_directory(path, options, &mut progress)
                }
                CryptoboxSource::Records {
                    identity,
                    prekeys,
                    sessions,
                } => {
                    let records = CryptoboxRecords::new(
                        Zeroizing::new(identity.into_vec()),
                        prekeys
                            .into_iter()
                            .map(|p| SourceRecord::new("", p.into_vec()))
                            .collect(),
                        sessions
                            .into_iter()
                            .map(|s| SourceRecord::new(s.id, s.bytes.into_vec()))
                            .collect(),
                    );
                    c.import_cryptobox(&records, options, &mut progress)
                }
            };
            report.map(ImportReport::from)
        })
        .await
    }
}
