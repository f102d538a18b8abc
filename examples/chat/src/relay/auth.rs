//! Who sent a request: the signature over the request and a fresh nonce, checked with the
//! user's registered identity key; then the nonce is spent and the user's rate charged.
//!
//! A signature is checked before the database is locked, never under the lock (see
//! [`outside_db_lock`]). Failed authentications (an unknown name, a bad signature: what costs
//! the relay a lookup or a signature check) are counted per address and per claimed name; past
//! either budget a request is refused with 429 before anything is checked. A used nonce is
//! refused before the signature is checked, so a replay costs no signature check either. A name's budget binds only addresses that
//! have failed recently themselves: strangers forging requests in a user's name use up the
//! name's budget, but the user, from an address with no failures, is still served.

use hyper::StatusCode;
use proteus_core::IdentityKey;

use super::db::identity_of;
use super::errors::{ApiError, ErrorCode, bad_nonce, bad_request, bad_signature, err};
use super::limits::{AddressKey, FreshNonce, SpendError};
use super::routes::Call;
use super::{Relay, lock, outside_db_lock};
use crate::api::{self, HEADER_NONCE, HEADER_SIGNATURE, HEADER_USER};

/// The authenticated sender of a request.
pub(super) struct Authed {
    pub(super) user: String,
    /// The sender's registered identity key.
    pub(super) identity: IdentityKey,
}

/// A request's authentication headers, not yet checked.
pub(super) struct SignedAs<'c> {
    pub(super) user: &'c str,
    pub(super) nonce: &'c str,
    signature: &'c str,
}

fn rate_limited(message: String) -> ApiError {
    err(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::RateLimited,
        message,
    )
}

impl Relay {
    /// The authentication headers (401 if one is missing).
    pub(super) fn signed_as(call: &Call) -> Result<SignedAs<'_>, ApiError> {
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
        Ok(SignedAs {
            user,
            nonce,
            signature,
        })
    }

    /// Runs `check` (a request's nonce, name and signature) unless `peer` or the claimed
    /// `user` has failed to authenticate too often (429, nothing checked); an unknown name or
    /// a bad signature found by `check` is charged to both.
    pub(super) fn limit_failures<T>(
        &self,
        peer: AddressKey,
        user: &str,
        check: impl FnOnce() -> Result<T, ApiError>,
    ) -> Result<T, ApiError> {
        {
            let (by_address, by_name) = &*lock(&self.failures);
            if by_address.level(&peer) < 1.0 {
                return Err(rate_limited(format!(
                    "more than {} failed authentications from this address: wait",
                    self.config.auth_failure_burst
                )));
            }
            if !by_address.is_full(&peer) && by_name.level(&user.to_owned()) < 1.0 {
                return Err(rate_limited(format!(
                    "more than {} failed authentications as {user:?}, and some from this address: wait",
                    self.config.auth_failure_burst
                )));
            }
        }
        let result = check();
        // Charged: the failures that cost the relay a lookup or a signature check. A bad or
        // used nonce costs an HMAC, no more than asking for a nonce, and every client has one
        // when the relay restarts (its old nonces are refused).
        if result
            .as_ref()
            .is_err_and(|e| matches!(e.code, ErrorCode::UnknownUser | ErrorCode::BadSignature))
        {
            let (by_address, by_name) = &mut *lock(&self.failures);
            by_address.take(&peer);
            by_name.take(&user.to_owned());
        }
        result
    }

    /// The nonce, if it is this relay's, within its window and not used by `user` yet.
    pub(super) fn fresh_nonce(&self, user: &str, nonce: &str) -> Result<FreshNonce, ApiError> {
        let nonces = lock(&self.nonces);
        nonces
            .check(nonce)
            .filter(|fresh| !nonces.is_spent(user, *fresh))
            .ok_or_else(bad_nonce)
    }

    /// Whether `signed`'s signature over `call` is `identity`'s. Checked outside the database
    /// lock only.
    pub(super) fn verify(
        call: &Call,
        signed: &SignedAs<'_>,
        identity: &IdentityKey,
    ) -> Result<bool, ApiError> {
        outside_db_lock()?;
        let signature: [u8; 64] = api::unb64(signed.signature)
            .and_then(|s| s.try_into().ok())
            .ok_or_else(|| bad_signature("the signature is not 64 bytes of base64"))?;
        let message = api::signed_message(
            signed.user,
            signed.nonce,
            call.method.as_str(),
            &call.path_and_query,
            &call.body,
        );
        Ok(identity.verify(&message, &signature))
    }

    /// Records the nonce of a request whose signature verified as `user`'s.
    pub(super) fn spend_nonce(&self, user: &str, nonce: FreshNonce) -> Result<(), ApiError> {
        lock(&self.nonces).spend(user, nonce).map_err(|e| match e {
            SpendError::Replayed => bad_nonce(),
            SpendError::TooMany => rate_limited(format!(
                "more than {} requests in {:?}: slow down",
                self.config.max_used_nonces_per_user, self.config.nonce_ttl
            )),
        })
    }

    /// Checks the signature against the user's registered identity (the database is locked
    /// only to look the identity up), then spends the nonce and charges the user's rate.
    pub(super) fn authenticate(&self, call: &Call) -> Result<Authed, ApiError> {
        let signed = Self::signed_as(call)?;
        let user = signed.user;
        let (identity, fresh) = self.limit_failures(call.peer, user, || {
            let fresh = self.fresh_nonce(user, signed.nonce)?;
            let identity = if api::valid_name(user) {
                identity_of(&self.db(), user)?
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
            if !Self::verify(call, &signed, &identity)? {
                return Err(bad_signature(format!(
                    "the signature does not verify with {user}'s identity key"
                )));
            }
            Ok((identity, fresh))
        })?;
        self.spend_nonce(user, fresh)?;
        lock(&self.known).note(call.peer);
        self.take_token(user)?;
        Ok(Authed {
            user: user.to_owned(),
            identity,
        })
    }

    pub(super) fn take_token(&self, user: &str) -> Result<(), ApiError> {
        if !lock(&self.buckets).take(&user.to_owned()) {
            return Err(rate_limited(format!(
                "more than {} requests in a burst or {}/s: slow down",
                self.config.burst, self.config.rate_per_second
            )));
        }
        Ok(())
    }

    /// Registrations that create a name or hit a taken one are limited per address: they are
    /// not charged to any user (a new name has no budget yet, a taken one is not the caller's).
    pub(super) fn take_registration(&self, peer: AddressKey) -> Result<(), ApiError> {
        if lock(&self.registrations).take(&peer) {
            Ok(())
        } else {
            Err(rate_limited(format!(
                "more than {} registrations in a burst from this address: slow down",
                self.config.register_burst
            )))
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
