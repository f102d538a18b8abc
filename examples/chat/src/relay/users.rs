//! `POST /v1/users/{name}`: registers a name with an identity key (or confirms it).

use hyper::StatusCode;
use proteus_core::{IdentityKey, PublicKey};
use rusqlite::{TransactionBehavior, params};

use super::db::{check_room, count_prekeys, identity_of};
use super::errors::{ErrorCode, Reply, bad_request, bad_signature, db_err, err, json, parse_json};
use super::routes::Call;
use super::{Relay, lock};
use crate::api::{self, RegisterRequest, RegisterResponse};

impl Relay {
    pub(super) fn register(&self, name: &str, call: &Call) -> Reply {
        let signed = Self::signed_as(call)?;
        if signed.user != name {
            return Err(err(
                StatusCode::FORBIDDEN,
                ErrorCode::Forbidden,
                format!(
                    "a request signed as {:?} cannot register {name:?}",
                    signed.user
                ),
            ));
        }
        let request: RegisterRequest = parse_json(&call.body)?;
        let identity = api::unb64(&request.identity)
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .map(|b| IdentityKey::new(PublicKey::from_bytes(b)))
            .filter(|k| k.public_key().validate().is_ok())
            .ok_or_else(|| bad_request("identity: not a valid 32-byte Ed25519 key in base64"))?;
        let fresh = self.limit_failures(call.peer, name, || {
            let fresh = self.fresh_nonce(name, signed.nonce)?;
            if !Self::verify(call, &signed, &identity)? {
                return Err(bad_signature(
                    "the signature does not verify with the identity key being registered",
                ));
            }
            Ok(fresh)
        })?;
        let mut db = self.db();
        let tx = db
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db_err)?;
        // The signature only proves the caller holds the key in the body: the name's budget
        // is spent only once that key is the name's (or the name is new), so a stranger
        // claiming a taken name cannot drain its owner's rate.
        // The nonce is recorded only then too: it is recorded in the name's set of used nonces.
        let existing = identity_of(&tx, name)?;
        if existing.as_ref().is_some_and(|e| *e != identity) {
            self.take_registration(call.peer)?;
            return Err(err(
                StatusCode::CONFLICT,
                ErrorCode::IdentityConflict,
                format!("{name} is registered with another identity key"),
            ));
        }
        if existing.is_none() {
            self.take_registration(call.peer)?;
            check_room(&tx, self.config.max_store_bytes)?;
        }
        self.spend_nonce(name, fresh)?;
        lock(&self.known).note(call.peer);
        self.take_token(name)?;
        let created = match existing {
            Some(_) => false,
            None => {
                tx.execute(
                    "INSERT INTO users (name, identity, next_seq) VALUES (?1, ?2, 1)",
                    params![name, identity.public_key().as_bytes().as_slice()],
                )
                .map_err(db_err)?;
                true
            }
        };
        let prekeys_remaining = count_prekeys(&tx, name)?;
        tx.commit().map_err(db_err)?;
        json(
            if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            },
            &RegisterResponse {
                created,
                prekeys_remaining,
            },
        )
    }
}
