//! The relay's SQLite database: its schema and the lookups the handlers share.

use std::path::Path;
use std::time::Duration;

use proteus_core::{IdentityKey, PublicKey};
use rusqlite::{Connection, OptionalExtension, params};

use hyper::StatusCode;

use super::errors::{ApiError, ErrorCode, db_err, err, internal};
use crate::api::LAST_RESORT_ID;

pub(super) const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS users (
        name TEXT PRIMARY KEY,
        identity BLOB NOT NULL,
        next_seq INTEGER NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS prekeys (
        user TEXT NOT NULL,
        id INTEGER NOT NULL,
        bundle BLOB NOT NULL,
        PRIMARY KEY (user, id)
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS queue (
        user TEXT NOT NULL,
        seq INTEGER NOT NULL,
        sender TEXT NOT NULL,
        envelope BLOB NOT NULL,
        PRIMARY KEY (user, seq)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS queue_by_sender ON queue (user, sender);
    -- `user` has written to `peer`: `peer` is one of `user`'s contacts, not a stranger.
    CREATE TABLE IF NOT EXISTS contacts (
        user TEXT NOT NULL,
        peer TEXT NOT NULL,
        PRIMARY KEY (user, peer)
    ) WITHOUT ROWID;
";
/// Opens (or creates) the database at `path` with the schema.
pub(super) fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    // WAL with synchronous=NORMAL: a commit survives the relay process dying; only a power
    // loss can take back the last commits.
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(SCHEMA)?;
    Ok(conn)
}

pub(super) fn identity_of(db: &Connection, name: &str) -> Result<Option<IdentityKey>, ApiError> {
    let bytes: Option<Vec<u8>> = db
        .query_row("SELECT identity FROM users WHERE name = ?1", [name], |r| {
            r.get(0)
        })
        .optional()
        .map_err(db_err)?;
    bytes
        .map(|b| {
            <[u8; 32]>::try_from(b)
                .map(|b| IdentityKey::new(PublicKey::from_bytes(b)))
                .map_err(|_| internal("a stored identity is not 32 bytes"))
        })
        .transpose()
}

pub(super) fn count_prekeys(db: &Connection, name: &str) -> Result<u64, ApiError> {
    db.query_row(
        "SELECT count(*) FROM prekeys WHERE user = ?1 AND id != ?2",
        params![name, LAST_RESORT_ID],
        |r| r.get(0).map(to_u64),
    )
    .map_err(db_err)
}

/// The bytes of the database's pages in use (the free pages that deletions leave are not
/// counted: SQLite reuses them).
pub(super) fn used_bytes(db: &Connection) -> Result<u64, ApiError> {
    let pragma = |name: &str| {
        db.query_row(&format!("PRAGMA {name}"), [], |r| r.get(0).map(to_u64))
            .map_err(db_err)
    };
    let pages = pragma("page_count")?.saturating_sub(pragma("freelist_count")?);
    Ok(pages.saturating_mul(pragma("page_size")?))
}

/// Refuses (507) to store anything more once the database holds `max` bytes (so it holds at
/// most `max` and one request's data).
pub(super) fn check_room(db: &Connection, max: u64) -> Result<(), ApiError> {
    let used = used_bytes(db)?;
    if used >= max {
        return Err(err(
            StatusCode::INSUFFICIENT_STORAGE,
            ErrorCode::StoreFull,
            format!(
                "the relay's storage is full ({used} bytes): it stores nothing more until messages are read"
            ),
        ));
    }
    Ok(())
}

/// SQLite integers are signed; counts and sequence numbers are not negative.
pub(super) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

pub(super) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
