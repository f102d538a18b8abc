//! A [`Storage`] for a host that commits asynchronously (a browser's IndexedDB), and the
//! decisions of the host's commit protocol.
//!
//! The client's [`Storage`] is synchronous and IndexedDB is not. So the host loads every record
//! into a [`Journal`] when it opens the client, together with its store's commit counter; the
//! client reads from the journal and commits to it at once; and after each operation the host
//! takes the operation's writes ([`Journal::take_commit`]) and stores them durably, in one
//! transaction, before it hands out what the operation returned. The host's transaction is a
//! compare-and-swap on the commit counter, so that two clients of one store (two tabs) never
//! both commit from the same state: one of them would reuse a message key.
//!
//! The host does the I/O and holds the cross-process lock (Web Locks); the journal decides. One
//! operation, under the lock:
//!
//! 1. [`begin`](Journal::begin) with the counter the host read under the lock: `true` means the
//!    journal is stale (another client committed since, or a commit of ours was not stored):
//!    the host reads every record again and [`reload`](Journal::reload)s.
//! 2. The client runs. If it hands results to the application before its commit (a batch's
//!    callback), the host says so: [`hand_out`](Journal::hand_out).
//! 3. [`take_commit`](Journal::take_commit): the writes (an [`encode_writes`] buffer), the
//!    counter the compare-and-swap expects and the one it stores. Once the host stored them:
//!    [`committed`](Journal::committed).
//! 4. If the compare-and-swap lost, [`retry`](Journal::retry) says whether the host may run the
//!    operation again from 1 (nothing was handed out, and fewer than [`MAX_COMMIT_ATTEMPTS`]
//!    attempts lost) or must fail it (StoreConflict): the application already has results of a
//!    commit that will not be stored, and must deliver the messages again.
//! 5. [`end`](Journal::end), however the operation went.
//!
//! A commit that fails or is never taken (the host gave up between 2 and 3) leaves the journal
//! ahead of the host's store: the next `begin` reports it stale, whatever the counter.
//!
//! The loop that sequences these steps (when to read the counter, whether to run ahead of the
//! read, to reload, to wait for the application, to run again or fail) is a [`CommitDriver`], so
//! that the host only executes what it is asked.

mod codec;
mod driver;
mod memory_host;
mod records;
pub mod web_sealed;

use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use zeroize::Zeroizing;

pub use self::codec::{decode_writes, encode_writes, entry_bounds};
pub use self::driver::{CommitAction, CommitDriver, CommitReport};
pub use self::memory_host::HostMemoryStore;
use self::records::Records;
use super::{Record, Storage, Table, Write};
use crate::error::StoreError;

/// How many times an operation runs when its commit keeps losing the compare-and-swap to other
/// clients' commits (each loss means another client's commit was stored). Then it fails.
pub const MAX_COMMIT_ATTEMPTS: u32 = 8;

/// The records of a store in memory, the writes the host has not stored yet, and the state of the
/// host's commit protocol (see the module docs). Clones share one journal: the client holds one
/// as its storage, the host another.
#[derive(Clone)]
pub struct Journal(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    records: Records,
    /// Committed by the client, not yet taken by the host.
    pending: Vec<Write>,
    /// The host's commit counter that `records` stand at when nothing is pending or in flight.
    counter: u64,
    /// A commit taken by the host and not yet reported stored: the counter it stores.
    in_flight: Option<u64>,
    /// Writes were lost between the client and the host (or the client was not rebuilt after a
    /// reload): the records are not the host's.
    diverged: bool,
    /// Commits of this operation that lost the compare-and-swap.
    conflicts: u32,
    /// This operation handed results to the application before its commit.
    handed_out: bool,
    /// Reloaded since the client last began an operation: what it cached may be stale.
    reloaded: bool,
}

/// One commit for the host to store: `writes` in one transaction, only if its counter is still
/// `expected`, and `next` as its new counter in the same transaction.
pub struct Commit {
    /// The writes, as an [`encode_writes`] buffer (holds secret keys; wiped when dropped).
    pub writes: Zeroizing<Vec<u8>>,
    /// The counter the compare-and-swap expects: where the journal was loaded or last committed.
    pub expected: u64,
    /// The counter the commit stores.
    pub next: u64,
}

impl fmt::Debug for Commit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Commit")
            .field("bytes", &self.writes.len())
            .field("expected", &self.expected)
            .field("next", &self.next)
            .finish()
    }
}

impl fmt::Debug for Journal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Journal")
            .field("counter", &self.host().counter)
            .finish_non_exhaustive()
    }
}

fn records_of(records: &[u8]) -> Result<Records, StoreError> {
    let mut loaded = Records::default();
    loaded.apply(&decode_writes(records)?);
    Ok(loaded)
}

impl Default for Journal {
    fn default() -> Self {
        Self::new()
    }
}

impl Journal {
    /// An empty journal, stale until the host [`reload`](Journal::reload)s it.
    pub fn new() -> Self {
        Self(Arc::new(Mutex::new(State {
            diverged: true,
            ..State::default()
        })))
    }

    /// A journal of `records` (an [`encode_writes`] buffer of puts), read by the host at
    /// commit `counter`.
    pub fn load(records: &[u8], counter: u64) -> Result<Self, StoreError> {
        let journal = Self::new();
        journal.reload(records, counter, |_| Ok::<_, StoreError>(()))?;
        Ok(journal)
    }

    /// For the client: the records. A poisoned lock is an error.
    fn client(&self) -> Result<MutexGuard<'_, State>, StoreError> {
        self.0
            .lock()
            .map_err(|_| StoreError::Backend("the journal is poisoned".into()))
    }

    /// For the host: the protocol. A poisoned lock (a panic while it was held) leaves the
    /// records in doubt, so the journal is then stale until reloaded. Not inlined: one copy of
    /// this serves every step (the web build counts its bytes).
    #[inline(never)]
    fn host(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|poisoned| {
            let mut state = poisoned.into_inner();
            state.diverged = true;
            state
        })
    }

    /// Replaces the records with `records`, read by the host at commit `counter`, and drops
    /// what the host has not stored. Then `reopen` rebuilds what was built over the journal (the
    /// client and its caches); if it fails, the journal stays stale. If `records` cannot be
    /// decoded, nothing changes. The state of the operation (conflicts, results handed out)
    /// is kept: a reload is part of an operation.
    pub fn reload<T, E: From<StoreError>>(
        &self,
        records: &[u8],
        counter: u64,
        reopen: impl FnOnce(&Journal) -> Result<T, E>,
    ) -> Result<T, E> {
        let records = records_of(records)?;
        {
            let mut state = self.host();
            state.records = records;
            state.pending.clear();
            state.counter = counter;
            state.in_flight = None;
            state.diverged = false;
            state.reloaded = true;
        }
        let reopened = reopen(self);
        if reopened.is_err() {
            self.host().diverged = true;
        }
        reopened
    }

    /// An attempt of an operation begins, under the host's lock; the host's store is at commit
    /// `counter`. Whether the journal is stale: another client committed since the journal was
    /// loaded or last committed, or a commit of ours was not stored. Then the host reloads
    /// before the client runs.
    pub fn begin(&self, counter: u64) -> bool {
        let state = self.host();
        state.diverged
            || state.in_flight.is_some()
            || !state.pending.is_empty()
            || counter != state.counter
    }

    /// The operation handed results to the application before its commit: if that commit loses
    /// the compare-and-swap, the operation must fail rather than run again.
    pub fn hand_out(&self) {
        self.host().handed_out = true;
    }

    /// The writes the client committed since the last call, for the host to store, or `None`.
    /// The journal counts as stale until the host reports them stored ([`committed`]).
    ///
    /// [`committed`]: Journal::committed
    pub fn take_commit(&self) -> Result<Option<Commit>, StoreError> {
        let mut state = self.host();
        if state.pending.is_empty() {
            return Ok(None);
        }
        let writes = std::mem::take(&mut state.pending);
        // Not on top of a commit that may not be stored; not past the last counter.
        let commit = match (state.in_flight, state.counter.checked_add(1)) {
            (None, Some(next)) => encode_writes(&writes).map(|writes| Commit {
                writes,
                expected: state.counter,
                next,
            }),
            _ => Err(StoreError::Backend(
                "the journal cannot commit on the counter it is at".into(),
            )),
        };
        match commit {
            Ok(commit) => {
                state.in_flight = Some(commit.next);
                Ok(Some(commit))
            }
            Err(e) => {
                // The writes are in the records and will never reach the host's store.
                state.diverged = true;
                Err(e)
            }
        }
    }

    /// The host stored the commit taken last: its counter is now the commit's `next`.
    pub fn committed(&self) {
        let mut state = self.host();
        if let Some(next) = state.in_flight.take() {
            state.counter = next;
        }
    }

    /// A commit of this operation lost the compare-and-swap (another client committed first):
    /// whether the host may run the operation again (after a reload), rather than fail it with
    /// StoreConflict.
    pub fn retry(&self) -> bool {
        let mut state = self.host();
        state.conflicts = state.conflicts.saturating_add(1);
        !state.handed_out && state.conflicts < MAX_COMMIT_ATTEMPTS
    }

    /// The operation is over, whatever its outcome: the next one starts afresh.
    pub fn end(&self) {
        let mut state = self.host();
        state.conflicts = 0;
        state.handed_out = false;
    }
}

impl Storage for Journal {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        Ok(self.client()?.records.get(table, key))
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        Ok(self.client()?.records.scan(table, prefix))
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        let mut state = self.client()?;
        state.records.apply(writes);
        state.pending.extend_from_slice(writes);
        Ok(())
    }

    /// The host holds the exclusion (a Web Lock) and has reloaded the journal if it was stale:
    /// a client that goes on across a reload drops what it cached, as over any shared store.
    fn begin(&mut self) -> Result<super::Freshness, StoreError> {
        let mut state = self.client()?;
        Ok(match std::mem::take(&mut state.reloaded) {
            true => super::Freshness::Stale,
            false => super::Freshness::Fresh,
        })
    }
}

#[cfg(test)]
mod tests;
