//! Who sent a request: the signature over the request and a fresh nonce, checked with the
//! user's registered identity key; then the nonce is spent and the user's rate charged.

use std::net::IpAddr;

use hyper::StatusCode;
use proteus_core::IdentityKey;
use rusqlite::Connection;

use super::db::identity_of;
use super::errors::{ApiError, ErrorCode, bad_nonce, bad_request, bad_signature, err};
use super::limits::{FreshNonce, SpendError};
use super::routes::Call;
use super::{Relay, lock};
use crate::api::{self, HEADER_NONCE, HEADER_SIGNATURE, HEADER_USER};

/// The authenticated sender of a request.
pub(super) struct Authed {
    pub(super) user: String,
}

impl Relay {
    pub(super) fn auth_headers<'c>(
        &self,
        call: &'c Call,
    ) -> Result<(&'c str, &'c str, FreshNonce, [u8; 64]), ApiError> {
        let header = |name: &str| {
            call.headers
                .get(name)
                .map(|v| {
                    v.to_str()
                        .map_err(|_| bad_request(format!("header {name} is not ASCII")))
                })
                .transpose()
        };
        let (Some(user), Some(nonce), Some(signature)) = (
            header(HEADER_USER)?,
            header(HEADER_NONCE)?,
            header(HEADER_SIGNATURE)?,
        ) else {
            return Err(err(
                StatusCode::UNAUTHORIZED,
                ErrorCode::MissingAuth,
                format!(
                    "sign the request: headers {HEADER_USER}, {HEADER_NONCE} (from GET /v1/nonce) and {HEADER_SIGNATURE}"
                ),
            ));
        };
        let fresh = lock(&self.nonces).check(nonce).ok_or_else(bad_nonce)?;
        let signature: [u8; 64] = api::unb64(signature)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad_signature("the signature is not 64 bytes of base64"))?;
        Ok((user, nonce, fresh, signature))
    }

    /// Records the nonce of a request whose signature verified as `user`'s.
    pub(super) fn spend_nonce(&self, user: &str, nonce: FreshNonce) -> Result<(), ApiError> {
        lock(&self.nonces).spend(user, nonce).map_err(|e| match e {
            SpendError::Replayed => bad_nonce(),
            SpendError::TooMany => err(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!(
                    "more than {} requests in {:?}: slow down",
                    self.config.max_used_nonces_per_user, self.config.nonce_ttl
                ),
            ),
        })
    }

    pub(super) fn verify(
        call: &Call,
        user: &str,
        nonce: &str,
        identity: &IdentityKey,
        sig: &[u8; 64],
    ) -> bool {
        let message = api::signed_message(
            user,
            nonce,
            call.method.as_str(),
            &call.path_and_query,
            &call.body,
        );
        identity.verify(&message, sig)
    }

    /// Checks the signature against the user's registered identity, then the user's rate.
    pub(super) fn authenticate(&self, conn: &Connection, call: &Call) -> Result<Authed, ApiError> {
        let (user, nonce, fresh, signature) = self.auth_headers(call)?;
        let identity = if api::valid_name(user) {
            identity_of(conn, user)?
        } else {
            None
        }
        .ok_or_else(|| {
            err(
                StatusCode::UNAUTHORIZED,
                ErrorCode::UnknownUser,
                format!("no user {user:?} is registered"),
            )
        })?;
        if !Self::verify(call, user, nonce, &identity, &signature) {
            return Err(bad_signature(format!(
                "the signature does not verify with {user}'s identity key"
            )));
        }
        self.spend_nonce(user, fresh)?;
        self.take_token(user)?;
        Ok(Authed {
            user: user.to_owned(),
        })
    }

    pub(super) fn take_token(&self, user: &str) -> Result<(), ApiError> {
        let (burst, rate) = (self.config.burst, self.config.rate_per_second);
        if !lock(&self.buckets).take(&user.to_owned(), burst, rate) {
            return Err(err(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!(
                    "more than {} requests in a burst or {}/s: slow down",
                    self.config.burst, self.config.rate_per_second
                ),
            ));
        }
        Ok(())
    }

    /// Registrations that create a name or hit a taken one are limited per address: they are
    /// not charged to any user (a new name has no budget yet, a taken one is not the caller's).
    pub(super) fn take_registration(&self, peer: IpAddr) -> Result<(), ApiError> {
        let (burst, rate) = (self.config.register_burst, self.config.register_per_second);
        if lock(&self.registrations).take(&peer, burst, rate) {
            Ok(())
        } else {
            Err(err(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::RateLimited,
                format!("more than {burst} registrations in a burst from this address: slow down"),
            ))
        }
    }

    pub(super) fn own(authed: &Authed, name: &str, what: &str) -> Result<(), ApiError> {
        if authed.user == name {
            Ok(())
        } else {
            Err(err(
                StatusCode::FORBIDDEN,
                ErrorCode::Forbidden,
                format!("{} may not {what} of {name}", authed.user),
            ))
        }
    }
}
