//! The chat's own records, beside the engine's store: what the engine does not keep.
//!
//! * `messages`: every message shown or sent, by [`MessageId`]. It is also the log of seen ids
//!   that makes delivery exactly-once: received plaintexts are written here **before** the
//!   engine commits the batch they came in (in the batch's last `deliver` call), so a crash in
//!   between re-delivers envelopes whose ids are already here, and they are dropped. A received
//!   message is marked shown once it is on the screen ([`ChatDb::mark_shown`]): the lines of a
//!   batch that a crash kept from the screen are shown at the next start ([`ChatDb::unshown`]).
//! * `held_by_peer`: prekey messages the engine refused because they claim an identity other
//!   than the one it pinned (`RemoteIdentityChanged`), kept
//!   (at most [`MAX_HELD_PER_PEER`] per peer) until the user accepts that identity. They are
//!   kept per peer and by their whole bytes, never by the MAC they claim: nothing is verified
//!   before they are accepted, so a forgery with a copied MAC must not take a genuine one's
//!   place. (Version 1 kept them in `held`, by MAC, for all peers; [`ChatDb::open`] moves its
//!   rows over.)
//! * `outbox`: envelopes encrypted but not yet accepted by the relay, in order.
//!
//! Identities are pinned by the engine (`Client::set_identity_pinning`). Versions before kept
//! the pins here, in a `peers` table (name, fingerprint, pending): [`ChatDb::legacy_pins`]
//! reads it for the chat to move into the engine, [`ChatDb::drop_legacy_pins`] drops it.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use proteus_client::MessageId;
use rusqlite::{Connection, params};

/// A pin of the chat's old `peers` table: name, fingerprint, a changed one not accepted.
pub type LegacyPin = (String, String, Option<String>);

/// One received message for [`ChatDb::record_batch`].
#[derive(Debug, Clone)]
pub struct Received {
    /// Its id.
    pub id: MessageId,
    /// The sender.
    pub from: String,
    /// The text.
    pub text: String,
}

/// One held envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// The sender.
    pub from: String,
    /// The fingerprint of the identity its prekey message claims (empty for a row kept by
    /// version 1, which did not record it).
    pub fingerprint: String,
    /// The envelope as received.
    pub envelope: Vec<u8>,
}

/// The most envelopes held for one peer: past it, new ones are dropped (the held ones stay).
pub const MAX_HELD_PER_PEER: u64 = 100;

/// The chat's SQLite file.
#[derive(Debug)]
pub struct ChatDb {
    conn: Connection,
}

const SCHEMA: &str = "
    CREATE TABLE IF NOT EXISTS messages (
        id BLOB PRIMARY KEY,
        peer TEXT NOT NULL,
        outgoing INTEGER NOT NULL,
        shown INTEGER NOT NULL,
        text TEXT NOT NULL,
        at INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS messages_unshown ON messages (shown) WHERE shown = 0;
    CREATE TABLE IF NOT EXISTS held_by_peer (
        n INTEGER PRIMARY KEY AUTOINCREMENT,
        peer TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        envelope BLOB NOT NULL,
        UNIQUE (peer, envelope)
    );
    CREATE TABLE IF NOT EXISTS outbox (
        n INTEGER PRIMARY KEY AUTOINCREMENT,
        peer TEXT NOT NULL,
        envelope BLOB NOT NULL
    );
";

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl ChatDb {
    /// Opens (or creates) the file. Commits are durable (`synchronous=FULL`): a message recorded
    /// here must outlive the engine commit that follows.
    pub fn open(path: &Path) -> rusqlite::Result<Self> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.execute_batch(SCHEMA)?;
        migrate_held_v1(&conn)?;
        Ok(Self { conn })
    }

    /// Records a batch's plaintexts in one transaction. Returns, for each received message,
    /// whether it is new (false: seen before, drop it).
    pub fn record_batch(&mut self, received: &[Received]) -> rusqlite::Result<Vec<bool>> {
        let tx = self.conn.transaction()?;
        let mut fresh = Vec::with_capacity(received.len());
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO messages (id, peer, outgoing, shown, text, at) VALUES (?1, ?2, 0, 0, ?3, ?4)",
            )?;
            let at = now();
            for m in received {
                fresh.push(insert.execute(params![m.id.as_bytes(), m.from, m.text, at])? == 1);
            }
        }
        tx.commit()?;
        Ok(fresh)
    }

    /// Records a sent message and puts its envelope in the outbox, in one transaction.
    pub fn record_sent(&mut self, peer: &str, text: &str, envelope: &[u8]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR IGNORE INTO messages (id, peer, outgoing, shown, text, at) VALUES (?1, ?2, 1, 1, ?3, ?4)",
            params![MessageId::of(envelope).as_bytes(), peer, text, now()],
        )?;
        tx.execute(
            "INSERT INTO outbox (peer, envelope) VALUES (?1, ?2)",
            params![peer, envelope],
        )?;
        tx.commit()
    }

    /// The outbox, oldest first: `(n, peer, envelope)`.
    pub fn outbox(&self) -> rusqlite::Result<Vec<(i64, String, Vec<u8>)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT n, peer, envelope FROM outbox ORDER BY n")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect()
    }

    /// Removes an envelope from the outbox (the relay has it).
    pub fn outbox_done(&self, n: i64) -> rusqlite::Result<()> {
        self.conn
            .execute("DELETE FROM outbox WHERE n = ?1", [n])
            .map(drop)
    }

    /// The pins of the old `peers` table, if the file has one (made by a version that
    /// pinned identities itself).
    pub fn legacy_pins(&self) -> rusqlite::Result<Option<Vec<LegacyPin>>> {
        let old: bool = self.conn.query_row(
            "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'peers'",
            [],
            |r| r.get(0),
        )?;
        if !old {
            return Ok(None);
        }
        let mut stmt = self
            .conn
            .prepare("SELECT name, fingerprint, pending FROM peers ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map(Some)
    }

    /// Drops the old `peers` table once its pins are in the engine, in one transaction; a
    /// changed identity waiting there becomes the claim of its peer's held messages that
    /// recorded none.
    pub fn drop_legacy_pins(&mut self, pins: &[LegacyPin]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        for (name, _, pending) in pins {
            if let Some(pending) = pending {
                tx.execute(
                    "UPDATE held_by_peer SET fingerprint = ?2 WHERE peer = ?1 AND fingerprint = ''",
                    params![name, pending],
                )?;
            }
        }
        tx.execute_batch("DROP TABLE IF EXISTS peers")?;
        tx.commit()
    }

    /// Holds envelopes in one transaction (one already held is not held twice). Returns how
    /// many were dropped because their peer already has [`MAX_HELD_PER_PEER`].
    pub fn hold(&mut self, held: &[Held]) -> rusqlite::Result<usize> {
        let tx = self.conn.transaction()?;
        let mut dropped = 0;
        {
            let mut count =
                tx.prepare_cached("SELECT count(*) FROM held_by_peer WHERE peer = ?1")?;
            let mut insert = tx.prepare_cached(
                "INSERT OR IGNORE INTO held_by_peer (peer, fingerprint, envelope) VALUES (?1, ?2, ?3)",
            )?;
            for h in held {
                let n: i64 = count.query_row([&h.from], |r| r.get(0))?;
                if u64::try_from(n).unwrap_or(u64::MAX) >= MAX_HELD_PER_PEER {
                    dropped += 1;
                    continue;
                }
                insert.execute(params![h.from, h.fingerprint, h.envelope])?;
            }
        }
        tx.commit()?;
        Ok(dropped)
    }

    /// The envelopes held for `peer`, oldest first: `(n, held)`.
    pub fn held(&self, peer: &str) -> rusqlite::Result<Vec<(i64, Held)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT n, fingerprint, envelope FROM held_by_peer WHERE peer = ?1 ORDER BY n",
        )?;
        let rows = stmt.query_map([peer], |r| {
            Ok((
                r.get(0)?,
                Held {
                    from: peer.to_owned(),
                    fingerprint: r.get(1)?,
                    envelope: r.get(2)?,
                },
            ))
        })?;
        rows.collect()
    }

    /// Forgets held envelopes up to `n` of `peer`.
    pub fn drop_held(&self, peer: &str, up_to: i64) -> rusqlite::Result<()> {
        self.conn
            .execute(
                "DELETE FROM held_by_peer WHERE peer = ?1 AND n <= ?2",
                params![peer, up_to],
            )
            .map(drop)
    }

    /// Received messages recorded but maybe never shown (the process stopped between recording
    /// and showing them), oldest first: `(sender, text)`.
    pub fn unshown(&self) -> rusqlite::Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT peer, text FROM messages WHERE shown = 0 ORDER BY rowid")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// Marks every recorded message as shown. Without a sync to disk: it survives the process
    /// being killed, and a power loss only shows some lines twice.
    pub fn mark_shown(&self) -> rusqlite::Result<()> {
        self.conn.pragma_update(None, "synchronous", "NORMAL")?;
        let marked = self
            .conn
            .execute("UPDATE messages SET shown = 1 WHERE shown = 0", []);
        self.conn.pragma_update(None, "synchronous", "FULL")?;
        marked.map(drop)
    }

    /// How many messages were received from and sent to `peer`.
    pub fn counts(&self, peer: &str) -> rusqlite::Result<(u64, u64)> {
        self.conn.query_row(
            "SELECT coalesce(sum(outgoing = 0), 0), coalesce(sum(outgoing = 1), 0) FROM messages WHERE peer = ?1",
            [peer],
            |r| {
                let (received, sent): (i64, i64) = (r.get(0)?, r.get(1)?);
                Ok((
                    u64::try_from(received).unwrap_or(0),
                    u64::try_from(sent).unwrap_or(0),
                ))
            },
        )
    }
}

/// Moves the rows of version 1's `held` table (keyed by MAC, all peers in one) to
/// `held_by_peer`, in order, and drops it. Their fingerprint was not recorded: left empty.
fn migrate_held_v1(conn: &Connection) -> rusqlite::Result<()> {
    let old: bool = conn.query_row(
        "SELECT count(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'held'",
        [],
        |r| r.get(0),
    )?;
    if old {
        conn.execute_batch(
            "BEGIN;
             INSERT OR IGNORE INTO held_by_peer (peer, fingerprint, envelope)
                 SELECT peer, '', envelope FROM held ORDER BY n;
             DROP TABLE held;
             COMMIT;",
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn received(text: &str) -> Received {
        Received {
            id: MessageId::of(text.as_bytes()),
            from: "bob".into(),
            text: text.into(),
        }
    }

    #[test]
    fn a_batch_is_unshown_until_marked_and_seen_ids_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ChatDb::open(&dir.path().join("chat.sqlite")).unwrap();
        let first = [received("a"), received("b")];
        assert_eq!(db.record_batch(&first).unwrap(), [true, true]);
        // A crash here: the next start shows them.
        let db2 = ChatDb::open(&dir.path().join("chat.sqlite"));
        drop(db2);
        assert_eq!(
            db.unshown().unwrap(),
            [("bob".into(), "a".into()), ("bob".into(), "b".into())]
        );
        // Shown; a re-delivered one is not new.
        db.mark_shown().unwrap();
        assert_eq!(
            db.record_batch(&[received("b"), received("c")]).unwrap(),
            [false, true]
        );
        assert_eq!(db.unshown().unwrap(), [("bob".into(), "c".into())]);
        db.mark_shown().unwrap();
        assert!(db.unshown().unwrap().is_empty());
        assert_eq!(db.counts("bob").unwrap(), (3, 0));
    }

    fn held(from: &str, text: &str) -> Held {
        Held {
            from: from.into(),
            fingerprint: "f1".into(),
            envelope: text.as_bytes().to_vec(),
        }
    }

    #[test]
    fn held_envelopes_are_kept_per_peer_by_their_bytes_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ChatDb::open(&dir.path().join("chat.sqlite")).unwrap();
        // Two envelopes that would claim the same MAC are two rows; the same bytes are one.
        assert_eq!(
            db.hold(&[
                held("bob", "forged"),
                held("bob", "genuine"),
                held("bob", "genuine")
            ])
            .unwrap(),
            0
        );
        assert_eq!(db.hold(&[held("eve", "genuine")]).unwrap(), 0);
        let bobs: Vec<Held> = db
            .held("bob")
            .unwrap()
            .into_iter()
            .map(|(_, h)| h)
            .collect();
        assert_eq!(bobs, [held("bob", "forged"), held("bob", "genuine")]);
        let more: Vec<Held> = (0..MAX_HELD_PER_PEER)
            .map(|i| held("bob", &format!("m{i}")))
            .collect();
        assert_eq!(db.hold(&more).unwrap(), 2);
        let bobs = db.held("bob").unwrap();
        assert_eq!(bobs.len() as u64, MAX_HELD_PER_PEER);
        assert_eq!(bobs[1].1, held("bob", "genuine"));
        db.drop_held("bob", bobs.last().unwrap().0).unwrap();
        assert!(db.held("bob").unwrap().is_empty());
        assert_eq!(db.held("eve").unwrap().len(), 1);
    }

    #[test]
    fn version_1_held_rows_are_moved_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("chat.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(
                "CREATE TABLE held (n INTEGER PRIMARY KEY AUTOINCREMENT, id BLOB NOT NULL UNIQUE,
                     peer TEXT NOT NULL, envelope BLOB NOT NULL);
                 INSERT INTO held (id, peer, envelope) VALUES (x'01', 'bob', x'aa'), (x'02', 'bob', x'bb');",
            )
            .unwrap();
        }
        let db = ChatDb::open(&path).unwrap();
        let bobs: Vec<Vec<u8>> = db
            .held("bob")
            .unwrap()
            .into_iter()
            .map(|(_, h)| h.envelope)
            .collect();
        assert_eq!(bobs, [vec![0xaa], vec![0xbb]]);
        drop(db);
        assert_eq!(ChatDb::open(&path).unwrap().held("bob").unwrap().len(), 2);
    }
}
