//! The embedded default: one SQLite file (bundled SQLite), WAL journal, one write transaction
//! per operation so that several processes can share it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, params};
use zeroize::Zeroizing;

use super::{Freshness, Record, Storage, Table, Write};
use crate::error::StoreError;

/// The schema version this library writes. Older stores are migrated when opened; newer ones are
/// refused with [`StoreError::UnsupportedSchema`].
pub const SCHEMA_VERSION: i64 = 1;

/// The migrations, in order: `MIGRATIONS[n]` takes a store from version `n` to `n + 1`.
/// Never edit one that has shipped; add the next.
const MIGRATIONS: &[&str] = &[
    // 1: the first schema. Every table maps opaque keys to opaque (CBOR) records.
    "CREATE TABLE meta (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
     CREATE TABLE prekeys (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
     CREATE TABLE sessions (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;
     CREATE TABLE staged_keys (key BLOB PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;",
];

/// The settings every connection gets, for a platform (`apple`: macOS, iOS and the other
/// Apple systems).
///
/// * `synchronous=FULL`: a commit is on disk when it returns.
/// * `secure_delete=ON`: deleted and replaced records are overwritten with zeros, so a used
///   prekey, a superseded session state or a used message key is gone from the file, not
///   merely unlinked (forward secrecy at rest).
/// * `fullfsync=ON` on Apple systems only: there `fsync` does not flush the drive's cache, and
///   a commit lost in a power cut after its envelope was sent means a reused message key.
///   (It also covers checkpoints, which use `F_FULLFSYNC` once `fullfsync` is on.)
fn connection_pragmas(apple: bool) -> Vec<(&'static str, &'static str)> {
    let mut pragmas = vec![("synchronous", "FULL"), ("secure_delete", "ON")];
    if apple {
        pragmas.push(("fullfsync", "ON"));
    }
    pragmas
}

/// How to treat the path when opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// The store must exist ([`StoreError::NotFound`] otherwise).
    Existing,
    /// The store must not exist yet ([`StoreError::AlreadyExists`] otherwise).
    New,
    /// Open the store, creating it if there is none.
    ExistingOrNew,
}

/// Options of [`SqliteStorage`].
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// How long an operation waits for another process's (or connection's) operation to end
    /// before [`StoreError::Busy`].
    pub busy_timeout: Duration,
}

/// How long an operation waits by default for another one on the same store before it gets
/// [`StoreError::Busy`].
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }
}

/// A store in one SQLite file, which several processes (an app and its notification
/// extension) or connections may share.
///
/// Each operation of the [commit protocol](crate::Storage::begin) is one write transaction
/// (`BEGIN IMMEDIATE`): a second user waits for it, up to the busy timeout, and then gets
/// [`StoreError::Busy`]; users never interleave inside an operation. `begin` compares `PRAGMA
/// data_version` with the value this connection saw last (it changes only when another
/// connection committed), so a client reloads its caches only when someone else wrote: the
/// whole cost of sharing, when nobody else wrote, is that one check per call. Commits are
/// transactions in WAL mode with `synchronous=FULL` (and `fullfsync` on Apple systems): once a
/// commit returns, it survives a crash or a power loss.
///
/// No lock is held between calls. On iOS this is what keeps a process out of `0xdead10cc`
/// (killed for holding a file lock in a shared app-group container while suspended): the store
/// is locked only while a call of the client runs (for [`decrypt_batch`] that includes the
/// `deliver` callback), so do not let the app be suspended inside one (finish the call, or
/// wrap it in a background task). Between calls the store may stay open.
///
/// What a commit deletes or replaces is gone from disk when it returns: `secure_delete` zeroes
/// it in the database pages, and a `TRUNCATE` checkpoint after every commit moves the pages
/// into the main file and empties the WAL, which would otherwise keep the old page images. The
/// checkpoint does not wait: if another connection is reading at that moment (a backup agent,
/// the other process, a read holding an older snapshot) it cannot complete, and the old page
/// images stay in the main file or the WAL. Then it is owed: it is tried again after every
/// later operation of this handle, read-only ones too, until it completes (and when the handle
/// is dropped). [`erase_deleted`](Storage::erase_deleted) (`Client::erase_deleted`) forces it,
/// waiting up to the busy timeout for readers, and says whether it completed: call it before
/// the app is suspended.
///
/// [`decrypt_batch`]: crate::Client::decrypt_batch
#[derive(Debug)]
pub struct SqliteStorage {
    conn: Connection,
    path: PathBuf,
    busy_timeout: Duration,
    /// `PRAGMA data_version` when this connection last began an operation (or opened).
    seen_version: i64,
    /// Whether an operation (a write transaction) is open.
    in_operation: bool,
    /// A checkpoint did not complete (another connection was reading): page images of what
    /// commits deleted may still be on disk, and the checkpoint is tried again.
    checkpoint_owed: bool,
}

fn backend(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Corrupt(e.to_string())
        }
        _ => StoreError::Backend(e.to_string()),
    }
}

impl SqliteStorage {
    /// Opens (or creates, as `mode` says) the store at `path`. An existing store is never
    /// rewritten: one that cannot be read is reported as [`StoreError::Corrupt`] and left alone.
    pub fn open(
        path: impl AsRef<Path>,
        mode: OpenMode,
        options: &SqliteOptions,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let exists = path
            .try_exists()
            .map_err(|e| StoreError::Backend(format!("{shown}: {e}")))?;
        match (mode, exists) {
            (OpenMode::Existing, false) => return Err(StoreError::NotFound(shown)),
            (OpenMode::New, true) => return Err(StoreError::AlreadyExists(shown)),
            _ => {}
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        if !exists {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        // The WAL is emptied after every commit: one with frames in it was left by a process
        // that ended mid-commit (SQLite recovers it now) or is another's, open at this moment.
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            log::info!(
                target: crate::LOG_TARGET,
                "the store's write-ahead log holds frames: the last process ended without \
                 closing the store (SQLite recovers them), or another one has it open"
            );
        }
        let conn = Connection::open_with_flags(path, flags).map_err(backend)?;
        conn.busy_timeout(options.busy_timeout).map_err(backend)?;
        let mut storage = Self {
            conn,
            path: path.to_path_buf(),
            busy_timeout: options.busy_timeout,
            seen_version: 0,
            in_operation: false,
            checkpoint_owed: false,
        };
        storage.prepare(!exists)?;
        storage.seen_version = storage.data_version()?;
        log::info!(
            target: crate::LOG_TARGET,
            "SQLite store {}",
            if exists { "opened" } else { "created" }
        );
        Ok(storage)
    }

    /// Checks the schema and brings it up to date.
    ///
    /// The file is only read until it is known to be a Proteus store (or a new file): a file that
    /// is refused is left byte for byte as it was. The migration runs in a write transaction that
    /// reads the version again, so two processes opening an old store at once migrate it once.
    fn prepare(&mut self, created: bool) -> Result<(), StoreError> {
        let conn = &mut self.conn;
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Exclusive)
            .map_err(backend)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(backend)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::UnsupportedSchema {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version == 0 {
            let objects: i64 = tx
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(backend)?;
            if objects > 0 {
                return Err(StoreError::Corrupt(
                    "the file is an SQLite database, but not a Proteus store".into(),
                ));
            }
            if !created {
                return Err(StoreError::Corrupt(
                    "the file is empty: the store was never initialised".into(),
                ));
            }
        }
        tx.rollback().map_err(backend)?;

        // Ours (or new): switch to WAL, which only the first open of a store changes, and bring
        // the schema up to date.
        let journal: String = conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(backend)?;
        if !journal.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Backend(format!(
                "cannot switch the journal to WAL (got {journal})"
            )));
        }
        for (pragma, value) in connection_pragmas(cfg!(target_vendor = "apple")) {
            conn.pragma_update(None, pragma, value).map_err(backend)?;
        }
        let tx = conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(backend)?;
        let version: i64 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(backend)?;
        if version > 0 && version < SCHEMA_VERSION {
            log::info!(
                target: crate::LOG_TARGET,
                "migrating the store from schema {version} to {SCHEMA_VERSION}"
            );
        }
        for (from, sql) in MIGRATIONS
            .iter()
            .enumerate()
            .skip(usize::try_from(version).unwrap_or(usize::MAX))
        {
            tx.execute_batch(sql).map_err(backend)?;
            tx.pragma_update(None, "user_version", from as i64 + 1)
                .map_err(backend)?;
        }
        for table in Table::ALL {
            let found: Option<String> = tx
                .query_row(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?1",
                    [table.name()],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            if found.is_none() {
                return Err(StoreError::Corrupt(format!(
                    "table {} is missing",
                    table.name()
                )));
            }
        }
        tx.commit().map_err(backend)?;
        // A WAL left by an older version of this library (or a crash) may hold deleted records.
        // Only then: a checkpoint counts as a change for the other connections' data_version,
        // which would make them reload their caches. Another process using the store may hold
        // it up; it is emptied after a later commit then.
        let mut wal = self.path.as_os_str().to_owned();
        wal.push("-wal");
        if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
            self.checkpoint_owed = self.checkpoint(Duration::ZERO).is_err();
        }
        Ok(())
    }

    /// Copies the WAL into the main file and truncates it to zero bytes, so that the page
    /// images of deleted records it held are gone. Waits up to `wait` for other connections
    /// (a TRUNCATE checkpoint waits, through the busy handler, for readers of older
    /// snapshots): if one is still reading or writing then, the checkpoint is incomplete and
    /// [`StoreError::Busy`] is returned.
    fn checkpoint(&self, wait: Duration) -> Result<(), StoreError> {
        self.conn.busy_timeout(wait).map_err(backend)?;
        let busy = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            });
        self.conn.busy_timeout(self.busy_timeout).map_err(backend)?;
        if busy.map_err(backend)? != 0 {
            return Err(StoreError::Busy);
        }
        Ok(())
    }

    /// `PRAGMA data_version`: changes when another connection commits, not when this one does.
    fn data_version(&self) -> Result<i64, StoreError> {
        self.conn
            .prepare_cached("PRAGMA data_version")
            .and_then(|mut s| s.query_row([], |r| r.get(0)))
            .map_err(backend)
    }

    /// Runs a statement without parameters or rows (transaction control), prepared once.
    fn run(&self, sql: &str) -> Result<(), StoreError> {
        self.conn
            .prepare_cached(sql)
            .and_then(|mut s| s.execute([]))
            .map(drop)
            .map_err(backend)
    }

    /// Takes the write lock (waiting up to the busy timeout) and opens the operation.
    fn begin_transaction(&mut self) -> Result<(), StoreError> {
        if self.in_operation {
            return Err(StoreError::Backend("an operation is already open".into()));
        }
        self.run("BEGIN IMMEDIATE")?;
        self.in_operation = true;
        Ok(())
    }

    /// Rolls back the open transaction, if any, releasing the lock.
    fn rollback(&mut self) -> Result<(), StoreError> {
        self.in_operation = false;
        if self.conn.is_autocommit() {
            return Ok(());
        }
        self.run("ROLLBACK")
    }

    /// Tries the checkpoint again, without waiting, if one is owed (see [`SqliteStorage`]).
    fn retry_checkpoint(&mut self) {
        if self.checkpoint_owed && !self.in_operation {
            self.checkpoint_owed = owed(self.checkpoint(Duration::ZERO));
        }
    }

    /// Applies `writes` inside the open transaction. A run of writes of one kind to one table
    /// (a fan-out's thousands of puts) uses one statement.
    fn apply(&self, writes: &[Write]) -> Result<(), StoreError> {
        let mut current: Option<((Table, bool), rusqlite::CachedStatement<'_>)> = None;
        for write in writes {
            let kind = match write {
                Write::Put { table, .. } => (*table, true),
                Write::Delete { table, .. } => (*table, false),
            };
            let stmt = match &mut current {
                Some((k, stmt)) if *k == kind => stmt,
                _ => {
                    let sql = if kind.1 {
                        put_sql(kind.0)
                    } else {
                        delete_sql(kind.0)
                    };
                    let stmt = self.conn.prepare_cached(sql).map_err(backend)?;
                    &mut current.insert((kind, stmt)).1
                }
            };
            match write {
                Write::Put { key, value, .. } => stmt.execute(params![key, value.as_slice()]),
                Write::Delete { key, .. } => stmt.execute([key]),
            }
            .map_err(backend)?;
        }
        Ok(())
    }

    /// Rebuilds the file with only the live records (`VACUUM`) and empties the WAL. Changes no
    /// record; drops the free pages, which may hold records deleted before `secure_delete` was
    /// on (stores written by older versions), before the whole store is rewritten (sealed,
    /// rekeyed). Only sealing and rekeying (feature `sealed`) use it.
    #[cfg(feature = "sealed")]
    pub(crate) fn compact(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("VACUUM").map_err(backend)?;
        self.checkpoint(Duration::ZERO)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether a checkpoint is still owed after this attempt. One held up by another connection is
/// ordinary (two processes share the store); one that failed otherwise is logged.
fn owed(checkpoint: Result<(), StoreError>) -> bool {
    match checkpoint {
        Ok(()) => false,
        Err(StoreError::Busy) => true,
        Err(e) => {
            log::warn!(
                target: crate::LOG_TARGET,
                "a checkpoint failed ({e}); it is tried again after the next operation"
            );
            true
        }
    }
}

fn put_sql(table: Table) -> &'static str {
    match table {
        Table::Meta => "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)",
        Table::PreKeys => "INSERT OR REPLACE INTO prekeys (key, value) VALUES (?1, ?2)",
        Table::Sessions => "INSERT OR REPLACE INTO sessions (key, value) VALUES (?1, ?2)",
        Table::StagedKeys => "INSERT OR REPLACE INTO staged_keys (key, value) VALUES (?1, ?2)",
    }
}

fn delete_sql(table: Table) -> &'static str {
    match table {
        Table::Meta => "DELETE FROM meta WHERE key = ?1",
        Table::PreKeys => "DELETE FROM prekeys WHERE key = ?1",
        Table::Sessions => "DELETE FROM sessions WHERE key = ?1",
        Table::StagedKeys => "DELETE FROM staged_keys WHERE key = ?1",
    }
}

/// The smallest key greater than every key starting with `prefix`, if there is one.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl Storage for SqliteStorage {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        let sql = format!("SELECT value FROM {} WHERE key = ?1", table.name());
        let mut stmt = self.conn.prepare_cached(&sql).map_err(backend)?;
        stmt.query_row([key], |r| r.get::<_, Vec<u8>>(0))
            .optional()
            .map(|v| v.map(Zeroizing::new))
            .map_err(backend)
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        let row = |r: &rusqlite::Row<'_>| {
            Ok((
                r.get::<_, Vec<u8>>(0)?,
                Zeroizing::new(r.get::<_, Vec<u8>>(1)?),
            ))
        };
        let rows = match prefix_end(prefix) {
            Some(end) => {
                let sql = format!(
                    "SELECT key, value FROM {} WHERE key >= ?1 AND key < ?2 ORDER BY key",
                    table.name()
                );
                let mut stmt = self.conn.prepare_cached(&sql).map_err(backend)?;
                stmt.query_map(params![prefix, end], row)
                    .map_err(backend)?
                    .collect::<Result<Vec<_>, _>>()
            }
            None => {
                let sql = format!(
                    "SELECT key, value FROM {} WHERE key >= ?1 ORDER BY key",
                    table.name()
                );
                let mut stmt = self.conn.prepare_cached(&sql).map_err(backend)?;
                stmt.query_map([prefix], row)
                    .map_err(backend)?
                    .collect::<Result<Vec<_>, _>>()
            }
        };
        rows.map_err(backend)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        if !self.in_operation {
            self.begin_transaction()?;
        }
        let committed = self.apply(writes).and_then(|()| self.run("COMMIT"));
        if let Err(e) = committed {
            // Nothing of the operation is visible; the lock is released. One case leaves its
            // outcome unknown: the sync of the commit's WAL frames failed (EIO from fsync). The
            // frames, commit mark included, may be in the file all the same, and SQLite's
            // recovery replays them when the store is next opened after a crash (or after a
            // close whose checkpoint failed too): the operation turns out committed although it
            // failed with 507 (tests/io_faults.rs, "eio-sync, then killed"). No second fsync can
            // tell (Linux reports a writeback error once). It is the same as a process dying
            // inside the commit, and the client is built for that: a batch delivers before its
            // commit, so its messages come back as already seen with the same ids; an encryption
            // returns its envelope only once its commit succeeded, so at most a chain step is
            // skipped, never reused.
            let _ = self.rollback();
            return Err(e);
        }
        self.in_operation = false;
        // The commit is durable: it must not be reported as failed. A checkpoint that fails
        // (an I/O error, another connection busy) is tried again after the next commit.
        //
        // Syncs per commit (strace): the WAL three times, the main file once. All are SQLite's:
        // 1. the new WAL header, before any frame: the checkpoint below empties the WAL, so
        //    every commit restarts it, and SQLite orders the header before the frames with a
        //    sync (its ticket ff5be73dee: out-of-order writes after a restart corrupt the
        //    database). Only a checkpoint that never completes avoids the restart, and that
        //    leaves old page images in the WAL (forward secrecy at rest, above);
        // 2. the commit's frames (`synchronous=FULL`): the durability point. With `NORMAL` only
        //    the checkpoint would sync them, and only when it can copy them, which it cannot
        //    while another connection reads an older snapshot or checkpoints (two processes
        //    share a store): a returned commit, visible to others, could be lost in a power cut;
        // 3. the checkpoint's own WAL sync before it copies frames: redundant after 2, but SQLite
        //    derives it from the same setting and has no switch for it.
        self.checkpoint_owed = owed(self.checkpoint(Duration::ZERO));
        Ok(())
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        self.begin_transaction()?;
        let version = match self.data_version() {
            Ok(version) => version,
            Err(e) => {
                let _ = self.rollback();
                return Err(e);
            }
        };
        let stale = version != self.seen_version;
        self.seen_version = version;
        Ok(if stale {
            Freshness::Stale
        } else {
            Freshness::Fresh
        })
    }

    fn end(&mut self) -> Result<(), StoreError> {
        let ended = self.rollback();
        // A read-only operation too: a reader that held up the last commit's checkpoint may
        // be gone now.
        self.retry_checkpoint();
        ended
    }

    fn erase_deleted(&mut self) -> Result<bool, StoreError> {
        if self.in_operation {
            return Err(StoreError::Backend(
                "erase_deleted inside an operation".into(),
            ));
        }
        let done = match self.checkpoint(self.busy_timeout) {
            Ok(()) => true,
            Err(StoreError::Busy) => false,
            Err(e) => return Err(e),
        };
        self.checkpoint_owed = !done;
        Ok(done)
    }
}

impl Drop for SqliteStorage {
    fn drop(&mut self) {
        // The last connection's close checkpoints anyway; another one's does not.
        let _ = self.rollback();
        self.retry_checkpoint();
    }
}

#[cfg(test)]
mod tests {
    use super::{
        Freshness, OpenMode, SqliteOptions, SqliteStorage, Storage, Table, Write,
        connection_pragmas, prefix_end,
    };

    fn put(key: &[u8]) -> Write {
        Write::Put {
            table: Table::Meta,
            key: key.to_vec(),
            value: zeroize::Zeroizing::new(vec![1]),
        }
    }

    /// `begin` is stale exactly when another connection committed since this one last began:
    /// never because of its own commits.
    #[test]
    fn begin_reports_commits_of_other_connections_only() -> Result<(), crate::StoreError> {
        let dir = tempfile::tempdir().map_err(|e| crate::StoreError::Backend(e.to_string()))?;
        let path = dir.path().join("store.db");
        let options = SqliteOptions::default();
        let mut a = SqliteStorage::open(&path, OpenMode::New, &options)?;
        let mut b = SqliteStorage::open(&path, OpenMode::Existing, &options)?;
        // Another connection opening the store is no change.
        assert_eq!(a.begin()?, Freshness::Fresh);
        a.commit(&[put(b"a1")])?;
        assert_eq!(a.begin()?, Freshness::Fresh);
        a.end()?;
        assert_eq!(b.begin()?, Freshness::Stale);
        b.end()?;
        assert_eq!(b.begin()?, Freshness::Fresh);
        b.commit(&[put(b"b1")])?;
        // A commit without begin is an operation too.
        b.commit(&[put(b"b2")])?;
        let mut c = SqliteStorage::open(
            &path,
            OpenMode::Existing,
            &SqliteOptions {
                busy_timeout: std::time::Duration::from_millis(20),
            },
        )?;
        assert_eq!(a.begin()?, Freshness::Stale);
        assert!(a.get(Table::Meta, b"b2")?.is_some());
        // While `a` is in an operation, `c` cannot begin one (it waits, then Busy).
        assert_eq!(c.begin(), Err(crate::StoreError::Busy));
        a.end()?;
        assert_eq!(c.begin()?, Freshness::Fresh);
        c.end()
    }

    #[test]
    fn deleted_records_are_overwritten_everywhere() {
        for apple in [false, true] {
            let pragmas = connection_pragmas(apple);
            assert!(pragmas.contains(&("secure_delete", "ON")), "{pragmas:?}");
            assert!(pragmas.contains(&("synchronous", "FULL")), "{pragmas:?}");
        }
    }

    #[test]
    fn apple_systems_flush_the_drive_cache() {
        assert!(connection_pragmas(true).contains(&("fullfsync", "ON")));
        assert!(
            !connection_pragmas(false)
                .iter()
                .any(|(p, _)| *p == "fullfsync")
        );
    }

    #[test]
    fn statements_name_their_table() {
        for table in crate::Table::ALL {
            assert!(super::put_sql(table).contains(&format!(" {} ", table.name())));
            assert!(super::delete_sql(table).contains(&format!(" {} ", table.name())));
        }
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xff]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xff, 0xff]), None);
        assert_eq!(prefix_end(&[]), None);
    }
}
