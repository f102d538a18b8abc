//! Identity pinning: the first identity seen for a session id is kept (pinned), and a session
//! with another one is refused until the application accepts it.
//!
//! A pin is a meta record, `pinned/` ‖ session id → `1 ‖` the identity key's 32 bytes (1 is the
//! record's format version), written in the same commit as the session it comes with. It is not
//! deleted with the session: a session id whose session was deleted or reset keeps its pin,
//! until the application forgets the id (`forget_session`). A sealed store hashes the session id
//! in the pin's key, as it does for sessions.

use proteus_core::{DecryptError, IdentityKey, PublicKey};
use zeroize::Zeroizing;

use super::Client;
use crate::error::{ClientError, StoreError};
use crate::records::{META_PIN_PREFIX, check_session_id};
use crate::storage::{Storage, Table, Write};

/// The format version of pin records.
const PIN_RECORD_V1: u8 = 1;

/// The meta key of a session id's pin.
fn pin_key(session_id: &str) -> Vec<u8> {
    [META_PIN_PREFIX, session_id.as_bytes()].concat()
}

/// The write that pins `identity` for `session_id`. Not inlined (nor is [`load_pin`]): several
/// paths call it, and the web build would carry it in each.
#[inline(never)]
pub(crate) fn pin_write(session_id: &str, identity: &IdentityKey) -> Write {
    let mut value = Zeroizing::new(Vec::with_capacity(33));
    value.push(PIN_RECORD_V1);
    value.extend_from_slice(identity.public_key().as_bytes());
    Write::Put {
        table: Table::Meta,
        key: pin_key(session_id),
        value,
    }
}

/// The write that deletes the pin of `session_id` (`forget_session`).
pub(crate) fn pin_delete(session_id: &str) -> Write {
    Write::Delete {
        table: Table::Meta,
        key: pin_key(session_id),
    }
}

/// The identity pinned for `session_id`, if any. Another version, or damage, is a corrupt
/// store.
#[inline(never)]
pub(crate) fn load_pin(
    storage: &dyn Storage,
    session_id: &str,
) -> Result<Option<IdentityKey>, ClientError> {
    let Some(value) = storage.get(Table::Meta, &pin_key(session_id))? else {
        return Ok(None);
    };
    // One error for both faults: the web build carries each message.
    match value.split_first() {
        Some((&PIN_RECORD_V1, key)) => <[u8; 32]>::try_from(key).ok(),
        _ => None,
    }
    .map(|key| Some(IdentityKey::new(PublicKey::from_bytes(key))))
    .ok_or_else(|| {
        StoreError::Corrupt("a pinned identity record of unknown version or length".into()).into()
    })
}

/// Refuses `identity` (a bundle's, or the one a PreKeyMessage claims) if another is pinned:
/// `RemoteIdentityChanged` (204), the code of the same refusal for an existing session.
pub(crate) fn check_pin(
    pin: Option<&IdentityKey>,
    identity: &IdentityKey,
) -> Result<(), ClientError> {
    match pin {
        Some(pin) if pin != identity => Err(DecryptError::RemoteIdentityChanged.into()),
        _ => Ok(()),
    }
}

/// The identity a fingerprint names: 64 hex digits (either case) of a valid identity key.
fn parse_fingerprint(fingerprint: &str) -> Result<IdentityKey, ClientError> {
    let digits = fingerprint.as_bytes();
    if digits.len() != 64 {
        return Err(ClientError::InvalidFingerprint("not 64 hex digits"));
    }
    let mut key = [0u8; 32];
    for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
        let mut value = 0u8;
        for &digit in pair {
            let nibble = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                b'A'..=b'F' => digit - b'A' + 10,
                _ => return Err(ClientError::InvalidFingerprint("not 64 hex digits")),
            };
            value = (value << 4) | nibble;
        }
        *byte = value;
    }
    let key = PublicKey::from_bytes(key);
    key.validate()
        .map_err(|_| ClientError::InvalidFingerprint("not a valid identity key"))?;
    Ok(IdentityKey::new(key))
}

impl Client {
    /// Turns identity pinning on or off (off by default). Not stored: set it each time the
    /// client is opened, before its first session and in every process that opens the store,
    /// like [`set_session_config`](Self::set_session_config).
    ///
    /// Under pinning, the first identity seen for a session id is pinned, in the commit that
    /// stores the session (a session that existed before pinning was turned on is pinned at
    /// its next commit, deletion or reset), and the pin outlives the session. A session with
    /// another identity under that id is refused with `RemoteIdentityChanged` (204, reported as
    /// [`DecryptError::RemoteIdentityChanged`] by every path, so that one match covers them),
    /// and nothing is changed:
    ///
    /// * a PreKeyMessage ([`decrypt`](Self::decrypt); in
    ///   [`decrypt_batch`](Self::decrypt_batch) the message's own result, with the identity it
    ///   claims as [`Decrypted::sender`](crate::Decrypted::sender): it stays undecrypted and
    ///   decrypts later, with the same message id, once the identity is accepted);
    /// * a bundle ([`create_session`](Self::create_session),
    ///   [`reset_session`](Self::reset_session)), and an
    ///   [`import_session`](Self::import_session).
    ///
    /// [`accept_identity`](Self::accept_identity) pins the new identity. Without pinning an
    /// existing session already refuses a PreKeyMessage from another identity (204); pinning
    /// extends that to session ids whose session was deleted or reset, and to bundles.
    pub fn set_identity_pinning(&mut self, on: bool) {
        self.pinning = on;
    }

    /// Whether identity pinning is on (see [`set_identity_pinning`](Self::set_identity_pinning)).
    pub fn identity_pinning(&self) -> bool {
        self.pinning
    }

    /// The fingerprint of the identity pinned for `session_id`, if one is (lowercase hex, as
    /// [`remote_fingerprint`](Self::remote_fingerprint)). `None` if pinning was never on for it
    /// (a session made without pinning is pinned at its next commit under pinning).
    /// Like [`session_ids`](Self::session_ids), it reads the store as it is.
    pub fn pinned_identity(&self, session_id: &str) -> Result<Option<String>, ClientError> {
        check_session_id(session_id)?;
        Ok(load_pin(&*self.storage, session_id)?.map(|key| key.fingerprint()))
    }

    /// Pins the identity `fingerprint` names (64 hex digits, as
    /// [`remote_fingerprint`](Self::remote_fingerprint) and
    /// [`Decrypted::sender`](crate::Decrypted::sender) give it) for `session_id`, replacing the
    /// pin there was, in one commit: the user has checked the new identity. A session with
    /// another identity under that id is deleted in the same commit (as
    /// [`delete_session`](Self::delete_session)), so that a PreKeyMessage refused before
    /// decrypts when it is delivered again, and a bundle refused before makes the session with
    /// [`create_session`](Self::create_session). A malformed fingerprint is
    /// `InvalidFingerprint` (411); it works with pinning off too.
    pub fn accept_identity(
        &mut self,
        session_id: &str,
        fingerprint: &str,
    ) -> Result<(), ClientError> {
        self.operation(|this| {
            check_session_id(session_id)?;
            let identity = parse_fingerprint(fingerprint)?;
            let replaced = match this.session(session_id) {
                Ok(session) => session.remote_identity() != &identity,
                Err(ClientError::SessionNotFound(_)) => false,
                Err(e) => return Err(e),
            };
            let mut writes = vec![pin_write(session_id, &identity)];
            if replaced {
                writes.push(Write::Delete {
                    table: Table::Sessions,
                    key: session_id.as_bytes().to_vec(),
                });
                this.delete_staged_records(session_id, &mut writes)?;
            }
            this.storage.commit(&writes)?;
            if replaced {
                this.sessions.evict(session_id);
            }
            Ok(())
        })
    }

    /// Deletes the session `session_id`, its staged keys and the identity pinned for it, in one
    /// commit: for a peer the application is done with (a contact removed, a device logged
    /// out), whose pin would otherwise stay in the store for good. The id is then as one never
    /// seen: under [identity pinning](Self::set_identity_pinning), the next identity seen for it
    /// is pinned anew. Nothing happens if there is neither a session nor a pin; it works with
    /// pinning off too.
    pub fn forget_session(&mut self, session_id: &str) -> Result<(), ClientError> {
        self.remove_session(session_id, true)
    }

    /// The identity pinned for `session_id` if pinning is on.
    pub(crate) fn pin_for(&self, session_id: &str) -> Result<Option<IdentityKey>, ClientError> {
        match self.pinning {
            true => load_pin(&*self.storage, session_id),
            false => Ok(None),
        }
    }

    /// Under pinning, adds the pins of the cached sessions `session_ids` that have none yet.
    pub(crate) fn pin_writes(
        &self,
        session_ids: &[&str],
        writes: &mut Vec<Write>,
    ) -> Result<(), ClientError> {
        if !self.pinning {
            return Ok(());
        }
        for &id in session_ids {
            if let Some(identity) = self.sessions.remote_identity(id)
                && load_pin(&*self.storage, id)?.is_none()
            {
                writes.push(pin_write(id, identity));
            }
        }
        Ok(())
    }

    /// Under pinning, the pin `session_id` keeps when its session goes (deleted, or replaced
    /// by a reset): the one it has, or else its session's identity.
    pub(crate) fn pin_kept(
        &mut self,
        session_id: &str,
    ) -> Result<Option<IdentityKey>, ClientError> {
        if !self.pinning {
            return Ok(None);
        }
        if let Some(pin) = load_pin(&*self.storage, session_id)? {
            return Ok(Some(pin));
        }
        // A session whose record does not load is deleted all the same, without a pin.
        Ok(self.session(session_id).ok().map(|s| *s.remote_identity()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn fingerprints_parse_in_either_case_and_nothing_else() {
        let key = *proteus_core::IdentityKeyPair::generate(&mut proteus_core::OsRng).public_key();
        let fp = key.fingerprint();
        assert_eq!(parse_fingerprint(&fp).unwrap(), key);
        assert_eq!(parse_fingerprint(&fp.to_uppercase()).unwrap(), key);
        for bad in [
            String::new(),
            fp[..62].to_owned(),
            format!("{fp}00"),
            format!("{}g", &fp[..63]),
            format!("{}é", &fp[..62]),
            "00".repeat(32),
        ] {
            assert!(
                matches!(
                    parse_fingerprint(&bad),
                    Err(ClientError::InvalidFingerprint(_))
                ),
                "{bad:?}"
            );
        }
    }
}
