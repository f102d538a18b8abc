//! `POST /v1/queues/{name}` (send), `GET` (fetch a page, long-poll) and `DELETE`
//! (acknowledge up to a sequence number).

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use proteus_core::Envelope;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use super::Relay;
use super::db::{check_room, count_prekeys, to_i64, to_u64};
use super::errors::{ApiError, ErrorCode, Reply, bad_request, db_err, err, json, too_large};
use super::routes::{Call, query_pairs};
use crate::api::{self, AckResponse, QueuePage, QueuedEnvelope, SendResponse};

impl Relay {
    pub(super) fn send(&self, name: &str, call: &Call) -> Reply {
        if call.body.len() > self.config.max_envelope {
            return Err(too_large(self.config.max_envelope));
        }
        let authed = self.authenticate(call)?;
        Envelope::from_bytes(&call.body).map_err(|e| {
            err(
                StatusCode::BAD_REQUEST,
                ErrorCode::BadEnvelope,
                format!("the body is not a Proteus envelope: {e}"),
            )
        })?;
        let sender = authed.user.as_str();
        let seq = {
            let mut db = self.db();
            let tx = db
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(db_err)?;
            let next: Option<i64> = tx
                .query_row("SELECT next_seq FROM users WHERE name = ?1", [name], |r| {
                    r.get(0)
                })
                .optional()
                .map_err(db_err)?;
            let seq = next.map(to_u64).ok_or_else(|| {
                err(
                    StatusCode::NOT_FOUND,
                    ErrorCode::UnknownUser,
                    format!("no user {name:?} is registered"),
                )
            })?;
            let count = |sql: &str, args: &[&str]| -> Result<u64, ApiError> {
                tx.query_row(sql, rusqlite::params_from_iter(args), |r| {
                    r.get(0).map(to_u64)
                })
                .map_err(db_err)
            };
            let queued = count("SELECT count(*) FROM queue WHERE user = ?1", &[name])?;
            if queued >= self.config.max_queue {
                return Err(err(
                    StatusCode::INSUFFICIENT_STORAGE,
                    ErrorCode::QueueFull,
                    format!("{name}'s queue is full ({queued} messages)"),
                ));
            }
            let mine = count(
                "SELECT count(*) FROM queue WHERE user = ?1 AND sender = ?2",
                &[name, sender],
            )?;
            if mine >= self.config.max_queue_per_sender {
                return Err(err(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::QueueQuota,
                    format!(
                        "{sender} already has {mine} messages waiting for {name}: wait until {name} reads them"
                    ),
                ));
            }
            // Strangers (senders `name` has never written to) share a part of the queue, so
            // that accounts made to flood it leave the rest to `name`'s contacts.
            let contact = count(
                "SELECT count(*) FROM contacts WHERE user = ?1 AND peer = ?2",
                &[name, sender],
            )? > 0;
            if !contact {
                let from_strangers = count(
                    "SELECT count(*) FROM queue WHERE user = ?1 \
                     AND sender NOT IN (SELECT peer FROM contacts WHERE user = ?1)",
                    &[name],
                )?;
                if from_strangers >= self.config.max_queue_from_strangers {
                    return Err(err(
                        StatusCode::INSUFFICIENT_STORAGE,
                        ErrorCode::QueueFull,
                        format!(
                            "{name}'s queue holds {from_strangers} messages from senders {name} has not written to: no room for more"
                        ),
                    ));
                }
            }
            check_room(&tx, self.config.max_store_bytes)?;
            tx.execute(
                "INSERT INTO queue (user, seq, sender, envelope) VALUES (?1, ?2, ?3, ?4)",
                params![name, to_i64(seq), sender, call.body.as_ref()],
            )
            .map_err(db_err)?;
            tx.execute(
                "INSERT OR IGNORE INTO contacts (user, peer) VALUES (?1, ?2)",
                params![sender, name],
            )
            .map_err(db_err)?;
            tx.execute(
                "UPDATE users SET next_seq = ?2 WHERE name = ?1",
                params![name, to_i64(seq + 1)],
            )
            .map_err(db_err)?;
            tx.commit().map_err(db_err)?;
            seq
        };
        self.queue_watch(name).send_replace(seq);
        json(StatusCode::CREATED, &SendResponse { seq })
    }

    pub(super) async fn fetch(self: &Arc<Self>, name: String, call: Call) -> Reply {
        let mut after = 0;
        let mut limit = self.config.max_page;
        let mut wait = 0;
        for (key, value) in query_pairs(&call.query)? {
            match key {
                "after" => after = value,
                "limit" => limit = value.clamp(1, self.config.max_page),
                "wait" => wait = value.min(self.config.max_wait.as_secs()),
                _ => return Err(bad_request(format!("unknown parameter {key:?}"))),
            }
        }
        let (first, mut changes) = {
            let name = name.clone();
            self.blocking(move |r| {
                let authed = r.authenticate(&call)?;
                Self::own(&authed, &name, "read the queue")?;
                let db = r.db();
                // Only once authenticated (nothing is kept for strangers), and subscribed
                // before the first look under the database lock, so a message queued after
                // the look wakes the wait.
                let changes = r.queue_watch(&name).subscribe();
                Ok((
                    json(StatusCode::OK, &r.page(&db, &name, after, limit)?)?,
                    changes,
                ))
            })
            .await?
        };
        let empty = serde_json::from_slice::<QueuePage>(&first.1)
            .map(|p| p.messages.is_empty())
            .unwrap_or(false);
        if !empty || wait == 0 {
            return Ok(first);
        }
        let woken = tokio::time::timeout(Duration::from_secs(wait), changes.changed()).await;
        if !matches!(woken, Ok(Ok(()))) {
            return Ok(first);
        }
        self.blocking(move |r| {
            let db = r.db();
            json(StatusCode::OK, &r.page(&db, &name, after, limit)?)
        })
        .await
    }

    pub(super) fn page(
        &self,
        db: &Connection,
        name: &str,
        after: u64,
        limit: u64,
    ) -> Result<QueuePage, ApiError> {
        let mut stmt = db
            .prepare_cached(
                "SELECT seq, sender, envelope FROM queue WHERE user = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![name, to_i64(after), to_i64(limit)], |r| {
                Ok(QueuedEnvelope {
                    seq: to_u64(r.get(0)?),
                    from: r.get(1)?,
                    envelope: api::b64(&r.get::<_, Vec<u8>>(2)?),
                })
            })
            .map_err(db_err)?;
        let messages = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
        let last = messages.last().map_or(after, |m| m.seq);
        let remaining: u64 = db
            .query_row(
                "SELECT count(*) FROM queue WHERE user = ?1 AND seq > ?2",
                params![name, to_i64(last)],
                |r| r.get(0).map(to_u64),
            )
            .map_err(db_err)?;
        Ok(QueuePage {
            messages,
            remaining,
            prekeys_remaining: count_prekeys(db, name)?,
        })
    }

    pub(super) fn ack(&self, name: &str, call: &Call) -> Reply {
        let authed = self.authenticate(call)?;
        Self::own(&authed, name, "delete from the queue")?;
        let mut up_to = None;
        for (key, value) in query_pairs(&call.query)? {
            match key {
                "up_to" => up_to = Some(value),
                _ => return Err(bad_request(format!("unknown parameter {key:?}"))),
            }
        }
        let up_to = up_to.ok_or_else(|| bad_request("say up_to=SEQ"))?;
        let deleted = self
            .db()
            .execute(
                "DELETE FROM queue WHERE user = ?1 AND seq <= ?2",
                params![name, to_i64(up_to)],
            )
            .map_err(db_err)?;
        json(
            StatusCode::OK,
            &AckResponse {
                deleted: deleted as u64,
            },
        )
    }
}
