//! The web package's sealed stores, sans I/O: every rule of how a client's records are sealed
//! at rest in IndexedDB, decided here and run by the host (the web package's JS), which only
//! moves bytes: it reads and writes IndexedDB and runs the cipher and MAC operations asked of
//! it with Web Crypto, under keys it derived from the application's store key (which may be a
//! non-extractable `CryptoKey`: this side never sees a key).
//!
//! "Sealed means bound" (docs/DESIGN.md, decision 9): every record is sealed with AES-256-GCM,
//! bound by its associated data to its table, its stored key, the store's id and the commit
//! that wrote it, so a record moved to another table or key, copied from another store or put
//! back from an older commit fails to open as the one the store last committed. In the
//! sessions and staged-keys tables and in a pin's key the session id is replaced by its HMAC
//! (the record's key travels inside the sealed body), so the contact list is not in the clear.
//! The store's manifest seals its id, its commit and a digest of the live set (the XOR of an
//! HMAC per record over its table, stored key and commit), so a record deleted or put back
//! changes it: loading a store checks every record against it, and a missing, older, moved or
//! foreign record is refused (StoreTampered), never treated as absent. The layouts are in
//! [`format`](mod@format).
//!
//! A job ([`WebSealer::load`], [`persist`](WebSealer::persist), [`reseal`](WebSealer::reseal),
//! [`check`](WebSealer::check), [`verify`](WebSealer::verify)) starts with a [`Step`]: either the
//! [`CryptoOp`]s for the host to run (all independent: one batch, e.g. `Promise.all`), whose
//! outputs it hands to [`resume`](WebSealer::resume) for the next step, or the job's
//! [`Outcome`]. A job needs at most three batches. One job runs at a time per sealer; starting
//! another abandons it.
//!
//! Opening a store is [`open_step`]'s to decide, one step at a time ([`OpenStep`]: verify the
//! check value, seal an empty store, re-seal every record, or ready), on what the host read of
//! it; so is each refusal (a missing or wrong key, a key for a plain store).

pub mod format;
mod load;
mod open;
mod ops;
mod write;

#[cfg(test)]
mod golden_tests;
#[cfg(test)]
mod tests;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use self::format::{
    CHECK_TABLE, CHECK_VALUE, DIGEST_LEN, ID_HASH_LEN, Manifest, SEALED_V1, STORE_ID_LEN, aad_v1,
    parts_v1,
};
use self::load::legacy_loaded;
pub use self::open::{OpenStep, Purpose, SealState, open_step};
pub use self::ops::{CryptoOp, Outputs};
use self::ops::{host_error, nonce};
use self::write::WriteJob;
use crate::collections::HashMap;
use crate::error::{StoreError, Tamper};
use crate::records::split_session_id;
use crate::storage::{Table, Write};

/// A record's place in a store: its table and stored key.
type Entry = (Table, Vec<u8>);

/// The commit that wrote each record, by its place; `None`: deleted. The bound store's holds no
/// `None` (a deletion removes the entry), a commit's changes do: one type for both, so one
/// HashMap instantiation in the wasm module rather than two (~1 KB).
type Commits = HashMap<Entry, Option<u64>>;

/// A record as the host's store holds it: its table, the key it is stored under and its sealed
/// value.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredRecord {
    /// The table.
    pub table: Table,
    /// The stored key (session ids hashed).
    pub key: Vec<u8>,
    /// The sealed value.
    pub value: Vec<u8>,
}

impl std::fmt::Debug for StoredRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Sealed, but the stored key of a meta record is in the clear: shown by size only.
        write!(
            f,
            "StoredRecord({}, {} bytes)",
            self.table.name(),
            self.value.len()
        )
    }
}

/// A next step of a job.
#[derive(Debug)]
pub enum Step {
    /// Run these operations (one batch), then [`WebSealer::resume`] with their outputs.
    Run(Vec<CryptoOp>),
    /// The job is over.
    Done(Outcome),
}

/// What a job comes to.
pub enum Outcome {
    /// [`WebSealer::load`]: every record, opened, as puts (for [`encode_writes`](super::encode_writes)).
    Loaded(Vec<Write>),
    /// [`WebSealer::persist`] and [`WebSealer::reseal`]: what to store, in one transaction.
    Sealed(SealedCommit),
    /// [`WebSealer::check`]: a new check value.
    Check(Vec<u8>),
    /// [`WebSealer::verify`]: whether the check value was made with this sealer's key.
    Verified(bool),
}

impl std::fmt::Debug for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Loaded records and opened ones hold keys: only what the outcome is shows.
        let what = match self {
            Self::Loaded(records) => return write!(f, "Loaded({} records)", records.len()),
            Self::Sealed(commit) => return write!(f, "Sealed({commit:?})"),
            Self::Check(_) => "Check",
            Self::Verified(v) => return write!(f, "Verified({v})"),
        };
        f.write_str(what)
    }
}

/// One write to the host's store: put `value` under `key` in `table`, or delete `key`.
#[derive(Clone, PartialEq, Eq)]
pub struct HostWrite {
    /// The table.
    pub table: Table,
    /// The stored key.
    pub key: Vec<u8>,
    /// The sealed value; `None`: delete.
    pub value: Option<Vec<u8>>,
}

impl std::fmt::Debug for HostWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = if self.value.is_some() {
            "put"
        } else {
            "delete"
        };
        write!(f, "HostWrite({op} {})", self.table.name())
    }
}

/// A commit to store: the writes, and in the same transaction the manifest, the commit counter
/// and (after a reseal) the check value.
#[derive(Debug)]
pub struct SealedCommit {
    /// Clear every table first (a reseal replaces every record).
    pub replace_all: bool,
    /// The writes, in order.
    pub writes: Vec<HostWrite>,
    /// The new sealed manifest.
    pub manifest: Vec<u8>,
    /// The new check value (a reseal: the store's key changes).
    pub check: Option<Vec<u8>>,
    /// The commit counter to store (a reseal: one after the store's).
    pub commit: u64,
}

/// A sealed store's manifest as last loaded or committed, with the commit of every record.
struct Bound {
    manifest: Manifest,
    /// The commit that wrote each live record, by table and stored key (never `None`).
    entries: Commits,
}

/// A commit sealed but not yet stored: what the bound state becomes once it is.
struct Pending {
    commit: u64,
    digest: [u8; DIGEST_LEN],
    count: u64,
    /// Each stored key written: its new commit, or `None` (deleted).
    changes: Commits,
}

/// The job under way.
enum Job {
    /// Waits for the manifest to open, then checks the records against it.
    LoadManifest {
        records: Vec<StoredRecord>,
        commits: u64,
    },
    /// Waits for each record's element and opened body; `entries`: each record's table, stored
    /// key and commit.
    LoadRecords {
        entries: Vec<(Entry, u64)>,
        manifest: Manifest,
    },
    /// Waits for each format 1 record's opened body.
    LoadLegacy {
        tables: Vec<Table>,
    },
    Write(Box<WriteJob>),
    Check {
        nonce: [u8; format::NONCE_LEN],
    },
    Verify,
}

/// The sealing of one store with one key (see the module docs): the session ids it hashed and,
/// once a store is loaded, its manifest and the commit of each record. One per open store.
#[derive(Default)]
pub struct WebSealer {
    /// Session id → its hash: each id is hashed once while the store is open.
    ids: HashMap<Vec<u8>, [u8; ID_HASH_LEN]>,
    bound: Option<Bound>,
    /// The highest commit a manifest of this store had while it was open: it never goes back.
    highest: u64,
    pending: Option<Pending>,
    job: Option<Job>,
}

impl std::fmt::Debug for WebSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSealer")
            .field("highest", &self.highest)
            .finish_non_exhaustive()
    }
}

/// StoreTampered (514).
fn tampered(table: Option<Table>, fault: Tamper) -> StoreError {
    StoreError::Tampered { table, fault }
}

/// StoreCorrupt (503): `what`. One function for the fixed messages: the module makes their
/// `String` in one place (123 bytes less than at each).
fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(what.into())
}

/// StoreCorrupt (503): a format 1 record that does not open.
fn damaged(table: Table) -> StoreError {
    StoreError::Corrupt(format!(
        "a sealed record of {} does not open with the store's key: it was damaged or moved",
        table.name()
    ))
}

/// The store's check value changed since it was opened (sealed, rekeyed or replaced meanwhile):
/// StoreKeyRequired if it is sealed now and was opened without a key, WrongStoreKey otherwise.
pub fn seal_changed(now_sealed: bool, key_given: bool) -> StoreError {
    if now_sealed && !key_given {
        StoreError::KeyRequired
    } else {
        StoreError::WrongKey
    }
}

impl WebSealer {
    /// A sealer with nothing loaded yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The commit of the manifest last loaded or stored, if any.
    pub fn commit(&self) -> Option<u64> {
        self.bound.as_ref().map(|b| b.manifest.commit)
    }

    /// Seals the writes of a commit (a journal's, [`decode_writes`](super::decode_writes)) at
    /// commit `next` of the store loaded last. `None`: the manifest loaded last is not the
    /// store's at `expected` (the host reloads first: a commit conflict).
    pub fn persist(
        &mut self,
        writes: Vec<Write>,
        expected: u64,
        next: u64,
    ) -> Result<Option<Step>, StoreError> {
        self.job = None;
        self.pending = None;
        let Some(bound) = self
            .bound
            .as_ref()
            .filter(|b| b.manifest.commit == expected)
        else {
            return Ok(None);
        };
        let job = WriteJob::persist(writes, &bound.manifest, next)?;
        self.start_write(job).map(Some)
    }

    /// Seals every record of a store (its records opened, at commit `commits`) with this
    /// sealer's key, under a new store id, at the next commit, with a new check value: the
    /// whole store to replace in one transaction (sealing a plain store, changing its key,
    /// bringing format 1 to format 2).
    pub fn reseal(&mut self, records: Vec<Write>, commits: u64) -> Result<Step, StoreError> {
        self.job = None;
        self.pending = None;
        let mut store_id = [0; STORE_ID_LEN];
        proteus_core::Rng::fill_bytes(&mut proteus_core::OsRng, &mut store_id);
        let job = WriteJob::reseal(records, store_id, commits + 1)?;
        self.start_write(job)
    }

    /// A new check value for this sealer's key.
    pub fn check(&mut self) -> Step {
        let nonce = nonce();
        self.job = Some(Job::Check { nonce });
        Step::Run(vec![CryptoOp::Seal {
            nonce,
            aad: aad_v1(CHECK_TABLE, &[]),
            plaintext: Zeroizing::new(CHECK_VALUE.to_vec()),
        }])
    }

    /// Whether a store's check value was made with this sealer's key.
    pub fn verify(&mut self, check: &[u8]) -> Step {
        self.job = None;
        match parts_v1(check, SEALED_V1) {
            None => Step::Done(Outcome::Verified(false)),
            Some((nonce, ciphertext)) => {
                self.job = Some(Job::Verify);
                Step::Run(vec![CryptoOp::Open {
                    nonce,
                    aad: aad_v1(CHECK_TABLE, &[]),
                    ciphertext: ciphertext.to_vec(),
                }])
            }
        }
    }

    /// The last commit [`persist`](Self::persist) sealed is stored: the store's manifest is
    /// now the one it sealed.
    pub fn committed(&mut self) {
        let (Some(pending), Some(bound)) = (self.pending.take(), self.bound.as_mut()) else {
            return;
        };
        for (key, commit) in pending.changes {
            match commit {
                Some(c) => bound.entries.insert(key, Some(c)),
                None => bound.entries.remove(&key),
            };
        }
        bound.manifest.commit = pending.commit;
        bound.manifest.digest = pending.digest;
        bound.manifest.count = pending.count;
        self.highest = self.highest.max(pending.commit);
    }

    /// The job's next step, from the outputs of the batch it asked for (in its order).
    pub fn resume(&mut self, outputs: Outputs) -> Result<Step, StoreError> {
        let Some(job) = self.job.take() else {
            return Err(host_error("no sealing job is under way"));
        };
        match job {
            Job::LoadManifest { records, commits } => self.load_records(records, commits, &outputs),
            Job::LoadRecords { entries, manifest } => self.bind(entries, manifest, outputs),
            Job::LoadLegacy { tables } => legacy_loaded(tables, outputs),
            Job::Write(mut job) => {
                let step = job.resume(&mut self.ids, self.bound.as_ref(), outputs)?;
                Ok(self.write_step(job, step))
            }
            Job::Check { nonce } => {
                let [sealed] = one_each(&outputs)?;
                let sealed = sealed.ok_or_else(|| host_error("a seal has no output"))?;
                Ok(Step::Done(Outcome::Check(format::value_v1(
                    SEALED_V1, &nonce, sealed,
                ))))
            }
            Job::Verify => {
                let [opened] = one_each(&outputs)?;
                let same = opened.is_some_and(|o| bool::from(o.ct_eq(CHECK_VALUE)));
                Ok(Step::Done(Outcome::Verified(same)))
            }
        }
    }

    fn start_write(&mut self, job: WriteJob) -> Result<Step, StoreError> {
        let mut job = Box::new(job);
        let step = job.start(&self.ids, self.bound.as_ref())?;
        Ok(self.write_step(job, step))
    }

    /// A write job's step as the sealer's: the job kept while it runs, its pending state once
    /// it is done (one place for both the first step and the next ones).
    fn write_step(&mut self, job: Box<WriteJob>, step: write::WriteStep) -> Step {
        match step {
            write::WriteStep::Run(ops) => {
                self.job = Some(Job::Write(job));
                Step::Run(ops)
            }
            write::WriteStep::Done(outcome, pending) => {
                self.pending = pending;
                Step::Done(outcome)
            }
        }
    }
}

/// The outputs of a batch of `N` operations, checked to be `N`.
fn one_each<const N: usize>(outputs: &Outputs) -> Result<[Option<&[u8]>; N], StoreError> {
    if outputs.len() != N {
        return Err(host_error("not one output per operation"));
    }
    let mut out = [None; N];
    for (slot, o) in out.iter_mut().zip(outputs.iter()) {
        *slot = o;
    }
    Ok(out)
}

/// XORs `b` into `a`.
fn xor_into(a: &mut [u8; DIGEST_LEN], b: &[u8; DIGEST_LEN]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x ^= y;
    }
}

/// The key a record of `table` is stored under: its own, or with its session id replaced by
/// the id's hash (which `ids` must hold).
fn stored_key(
    ids: &HashMap<Vec<u8>, [u8; ID_HASH_LEN]>,
    table: Table,
    key: &[u8],
) -> Result<Vec<u8>, StoreError> {
    match split_session_id(table, key) {
        None => Ok(key.to_vec()),
        Some((before, id, after)) => {
            let hash = ids
                .get(id)
                .ok_or_else(|| host_error("a session id was not hashed"))?;
            Ok([before, hash.as_slice(), after].concat())
        }
    }
}
