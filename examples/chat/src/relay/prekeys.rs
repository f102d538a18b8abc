//! `PUT /v1/prekeys/{name}` (upload, checked bundle by bundle) and
//! `POST /v1/prekeys/{name}/claim` (one one-time prekey, or the last-resort one).

use hyper::StatusCode;
use proteus_core::{BundleVerification, PreKeyBundle};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

use super::db::{check_room, count_prekeys, identity_of};
use super::errors::{ErrorCode, Reply, bad_bundle, bad_request, db_err, err, json, parse_json};
use super::routes::Call;
use super::{Relay, lock, outside_db_lock};
use crate::api::{self, ClaimedBundle, LAST_RESORT_ID, PreKeyCount, UploadPreKeys};

impl Relay {
    pub(super) fn upload(&self, name: &str, call: &Call) -> Reply {
        let authed = self.authenticate(call)?;
        Self::own(&authed, name, "publish the prekeys")?;
        let request: UploadPreKeys = parse_json(&call.body)?;
        if request.prekeys.len() > self.config.max_upload {
            return Err(err(
                StatusCode::BAD_REQUEST,
                ErrorCode::TooManyPrekeys,
                format!("at most {} bundles per upload", self.config.max_upload),
            ));
        }
        // Every bundle is checked (its signature too) before the database is locked.
        outside_db_lock()?;
        let identity = &authed.identity;
        let check = |(i, text): (usize, &String), last_resort: bool| {
            let bytes =
                api::unb64(text).ok_or_else(|| bad_bundle(format!("bundle {i}: not base64")))?;
            let bundle = PreKeyBundle::from_bytes(&bytes)
                .map_err(|e| bad_bundle(format!("bundle {i}: {e}")))?;
            if bundle.identity_key() != identity {
                return Err(bad_bundle(format!(
                    "bundle {i} belongs to another identity than {name}'s"
                )));
            }
            if bundle.verify() == BundleVerification::Invalid {
                return Err(bad_bundle(format!("bundle {i}: invalid signature")));
            }
            let id = bundle.prekey_id().value();
            if (id == LAST_RESORT_ID) != last_resort {
                return Err(bad_bundle(if last_resort {
                    format!("the last-resort bundle must have id {LAST_RESORT_ID}")
                } else {
                    format!("bundle {i}: id {LAST_RESORT_ID} is the last-resort prekey's")
                }));
            }
            Ok((id, bytes))
        };
        let mut bundles = Vec::with_capacity(request.prekeys.len() + 1);
        for entry in request.prekeys.iter().enumerate() {
            bundles.push(check(entry, false)?);
        }
        if let Some(last) = &request.last_resort {
            bundles.push(check((request.prekeys.len(), last), true)?);
        }
        let mut ids: Vec<u16> = bundles.iter().map(|(id, _)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != bundles.len() {
            return Err(bad_bundle("two bundles have the same prekey id"));
        }
        let mut db = self.db();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        check_room(&tx, self.config.max_store_bytes)?;
        for (id, bytes) in &bundles {
            tx.execute(
                "INSERT OR REPLACE INTO prekeys (user, id, bundle) VALUES (?1, ?2, ?3)",
                params![name, id, bytes],
            )
            .map_err(db_err)?;
        }
        let prekeys_remaining = count_prekeys(&tx, name)?;
        if prekeys_remaining > self.config.max_prekeys {
            return Err(err(
                StatusCode::BAD_REQUEST,
                ErrorCode::TooManyPrekeys,
                format!(
                    "the relay keeps at most {} one-time prekeys per user",
                    self.config.max_prekeys
                ),
            ));
        }
        tx.commit().map_err(db_err)?;
        json(StatusCode::OK, &PreKeyCount { prekeys_remaining })
    }

    pub(super) fn claim(&self, name: &str, call: &Call) -> Reply {
        let authed = self.authenticate(call)?;
        if !call.body.is_empty() {
            return Err(bad_request("a claim has no body"));
        }
        let mut db = self.db();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        if identity_of(&tx, name)?.is_none() {
            return Err(err(
                StatusCode::NOT_FOUND,
                ErrorCode::UnknownUser,
                format!("no user {name:?} is registered"),
            ));
        }
        // Past its share of `name`'s one-time prekeys, a requester gets the last-resort one:
        // one user cannot drain another's one-time prekeys.
        let within_share =
            authed.user == name || lock(&self.claims).take(&(authed.user.clone(), name.to_owned()));
        let one_time: Option<(u16, Vec<u8>)> = if !within_share {
            None
        } else {
            tx.query_row(
                "SELECT id, bundle FROM prekeys WHERE user = ?1 AND id != ?2 ORDER BY id LIMIT 1",
                params![name, LAST_RESORT_ID],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(db_err)?
        };
        let (bundle, last_resort) = match one_time {
            Some((id, bundle)) => {
                tx.execute(
                    "DELETE FROM prekeys WHERE user = ?1 AND id = ?2",
                    params![name, id],
                )
                .map_err(db_err)?;
                (bundle, false)
            }
            None => {
                let last: Option<Vec<u8>> = tx
                    .query_row(
                        "SELECT bundle FROM prekeys WHERE user = ?1 AND id = ?2",
                        params![name, LAST_RESORT_ID],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(db_err)?;
                let last = last.ok_or_else(|| {
                    err(
                        StatusCode::NOT_FOUND,
                        ErrorCode::NoPrekeys,
                        format!("{name} has published no prekeys"),
                    )
                })?;
                (last, true)
            }
        };
        tx.commit().map_err(db_err)?;
        if !last_resort {
            // Wake the owner's long-poll: its answer tells how many prekeys are left, so the
            // owner can refill them in time.
            self.queue_watch(name).send_modify(|_| {});
        }
        json(
            StatusCode::OK,
            &ClaimedBundle {
                bundle: api::b64(&bundle),
                last_resort,
            },
        )
    }
}
