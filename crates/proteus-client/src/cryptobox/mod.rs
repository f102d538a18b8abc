//! Moving an existing Wire client over: the stores that Wire's cryptobox libraries wrote, read
//! as records and imported by [`Client::import_cryptobox`](crate::Client::import_cryptobox) in
//! one commit.
//!
//! A source is an identity, its prekeys and its sessions, each as Wire's Proteus serialises it
//! ([`CryptoboxRecords`]). The bindings read them from where Wire's libraries kept them (an
//! IndexedDB database, a directory; docs/migration.md describes each layout) and
//! [`CryptoboxRecords::read_directory`] reads a directory natively.
//!
//! What the import guarantees:
//! * **One commit.** Everything is written at once or nothing is; the source is only read.
//! * **One identity.** A store with another identity in use (sessions, or one-time prekeys
//!   handed out) is refused ([`ImportError::IdentityMismatch`]); a new store takes the source's
//!   identity. Importing into a store that already has the source's identity and is in use
//!   changes nothing and says so ([`ImportReport::already_imported`]).
//! * **Nothing in flight lost.** Prekeys keep their ids (the last-resort prekey 65535 too) and
//!   sessions their ids and staged message keys, so messages queued before the migration
//!   decrypt after it.
//! * **Bad records are named.** A record that does not decode is reported by table and id; by
//!   default nothing is imported then ([`ImportError::BadRecords`]), and
//!   [`ImportOptions::skip_bad_records`] imports the rest.

#[cfg(feature = "cryptobox-directory")]
mod directory;

#[cfg(feature = "cryptobox-directory")]
pub use directory::MAX_RECORD_FILE_BYTES;

use std::fmt;

use zeroize::Zeroizing;

use crate::codes::ClientCode;

/// The name of a source's identity record (the key of cryptobox's `keys` table).
pub const LOCAL_IDENTITY: &str = "local_identity";

/// How many bad identity and prekey records an [`ImportError::BadRecords`] message names before
/// "and N more".
pub const MAX_NAMED_BAD_RECORDS: usize = 10;

/// How many records are decoded between two progress reports.
pub const PROGRESS_EVERY: usize = 256;

/// A store to import: the records of Wire's cryptobox, as Wire's Proteus serialised them.
#[derive(Default)]
pub struct CryptoboxRecords {
    /// The local identity key pair, as Wire's Proteus serialises it, or as Wire's Rust
    /// cryptobox's `identities/local` holds it: a kind (1, a key pair; 2, only the public key,
    /// which cannot be imported) and the key in a one-entry map under 0.
    pub identity: Zeroizing<Vec<u8>>,
    /// The prekeys (each carries its own id; `id` is the source's name for the record).
    pub prekeys: Vec<SourceRecord>,
    /// The sessions, under their session ids.
    pub sessions: Vec<SourceRecord>,
    /// Records a reader found but could not read (reported like records that do not decode).
    pub(crate) unreadable: Vec<BadRecord>,
}

impl CryptoboxRecords {
    /// A source from records the application read itself.
    pub fn new(
        identity: Zeroizing<Vec<u8>>,
        prekeys: Vec<SourceRecord>,
        sessions: Vec<SourceRecord>,
    ) -> Self {
        Self {
            identity,
            prekeys,
            sessions,
            unreadable: Vec::new(),
        }
    }

    /// How many records the source holds (the identity included).
    pub fn len(&self) -> usize {
        1 + self.prekeys.len() + self.sessions.len() + self.unreadable.len()
    }

    /// Never: a source always has its identity record.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl fmt::Debug for CryptoboxRecords {
    /// Only the counts: the records hold secret keys.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CryptoboxRecords")
            .field("prekeys", &self.prekeys.len())
            .field("sessions", &self.sessions.len())
            .field("unreadable", &self.unreadable.len())
            .finish_non_exhaustive()
    }
}

/// The serialised key pair in a source's identity record. Wire's Rust cryptobox (0.4 and later)
/// writes a kind, 1 (a key pair) or 2 (only the public key), then the key in a one-entry map
/// under 0; everything else writes the key pair alone (a CBOR map of three entries).
pub(crate) fn identity_key_pair(identity: &[u8]) -> Result<&[u8], &'static str> {
    match identity {
        [0x01, 0xa1, 0x00, key_pair @ ..] => Ok(key_pair),
        [0x02, 0xa1, 0x00, ..] => {
            Err("the identity holds only the public key: there is no secret key to import")
        }
        key_pair => Ok(key_pair),
    }
}

/// One record of a source: its id there (a session id; a prekey's key, which may be empty for
/// plain records) and its bytes.
pub struct SourceRecord {
    /// The record's id in the source.
    pub id: String,
    /// The record as Wire's Proteus serialised it.
    pub bytes: Zeroizing<Vec<u8>>,
}

impl SourceRecord {
    /// A record named `id`.
    pub fn new(id: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            id: id.into(),
            bytes: Zeroizing::new(bytes.into()),
        }
    }
}

/// The table of a source a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SourceTable {
    /// cryptobox's `keys`: the local identity.
    Identity,
    /// `prekeys`.
    PreKeys,
    /// `sessions`.
    Sessions,
}

impl SourceTable {
    /// The table's name in cryptobox's stores.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Identity => "keys",
            Self::PreKeys => "prekeys",
            Self::Sessions => "sessions",
        }
    }
}

/// A record of the source that was not imported, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRecord {
    /// Where it was.
    pub table: SourceTable,
    /// Its id in the source (`#N` for the N-th of a list of plain records without ids).
    pub id: String,
    /// Why, as the error that decoding it gave (its code and message).
    pub code: u16,
    /// The message of that error.
    pub reason: String,
}

impl fmt::Display for BadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{} ({}: {})",
            self.table.name(),
            self.id,
            self.code,
            self.reason
        )
    }
}

/// How to import.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Import the records that decode and report the others in [`ImportReport::skipped`],
    /// rather than import nothing. The identity is never skipped.
    pub skip_bad_records: bool,
}

impl ImportOptions {
    /// With [`skip_bad_records`](Self::skip_bad_records) set as given.
    pub fn skip_bad_records(mut self, skip: bool) -> Self {
        self.skip_bad_records = skip;
        self
    }
}

/// How far an import is: `done` of `total` records read and checked. The last report has
/// `done == total`, before the commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImportProgress {
    /// Records checked.
    pub done: usize,
    /// Records in the source.
    pub total: usize,
}

/// What an import did.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImportReport {
    /// The fingerprint of the identity the store now has (the source's).
    pub fingerprint: String,
    /// Prekeys imported (the last-resort prekey included).
    pub prekeys: usize,
    /// Sessions imported.
    pub sessions: usize,
    /// Records not imported ([`ImportOptions::skip_bad_records`]).
    pub skipped: Vec<BadRecord>,
    /// The store already had the source's identity and was in use: nothing was written.
    pub already_imported: bool,
}

/// An import failed; the store is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The store holds another identity, already in use.
    #[error(
        "the store holds another identity, in use by {sessions} sessions and {prekeys} one-time \
         prekeys; import into a new store"
    )]
    IdentityMismatch {
        /// Sessions in the store.
        sessions: usize,
        /// One-time prekeys in the store (or handed out, if it generated any).
        prekeys: usize,
    },
    /// Records do not decode (the identity, or others without
    /// [`ImportOptions::skip_bad_records`]).
    #[error("{} records of the source do not decode, nothing was imported: {}", .0.len(), BadRecords(.0))]
    BadRecords(Vec<BadRecord>),
    /// The source cannot be read.
    #[error("the store to import cannot be read: {0}")]
    SourceUnreadable(String),
}

impl ImportError {
    /// The registered code of the condition.
    pub const fn error_code(&self) -> ClientCode {
        match self {
            Self::IdentityMismatch { .. } => ClientCode::ImportIdentityMismatch,
            Self::BadRecords(_) => ClientCode::ImportBadRecords,
            Self::SourceUnreadable(_) => ClientCode::ImportSourceUnreadable,
        }
    }

    /// The records that do not decode, if that is the error.
    pub fn bad_records(&self) -> &[BadRecord] {
        match self {
            Self::BadRecords(records) => records,
            _ => &[],
        }
    }
}

proteus_core::impl_kind_and_code!(ImportError);

/// The bad records as a message names them: the identity and prekeys by id (the first
/// [`MAX_NAMED_BAD_RECORDS`], then how many more), sessions only counted, since session ids
/// are user data and messages carry none ([`ImportError::bad_records`] has them all).
struct BadRecords<'a>(&'a [BadRecord]);

impl fmt::Display for BadRecords<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (sessions, named): (Vec<&BadRecord>, Vec<&BadRecord>) = self
            .0
            .iter()
            .partition(|r| r.table == SourceTable::Sessions);
        let mut first = true;
        for record in named.iter().take(MAX_NAMED_BAD_RECORDS) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{record}")?;
        }
        if named.len() > MAX_NAMED_BAD_RECORDS {
            write!(f, " and {} more", named.len() - MAX_NAMED_BAD_RECORDS)?;
        }
        if !sessions.is_empty() {
            if !first {
                f.write_str(", ")?;
            }
            write!(f, "{} sessions", sessions.len())?;
        }
        Ok(())
    }
}
