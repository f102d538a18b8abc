//! Import and export: the identity, prekeys and sessions as Wire's Proteus serialises them,
//! for backup or migration to or from another Proteus client.

use proteus_core::{IdentityKeyPair, PreKey, PreKeyId, Session};
use zeroize::Zeroizing;

use super::Client;
use crate::collections::SortedSet;
use crate::error::ClientError;
use crate::records::{META_IDENTITY, check_session_id, prekey_key};
use crate::storage::{Table, Write};

impl Client {
    /// Replaces the identity with one serialised by Wire's Proteus (or this library). Only
    /// allowed while there are no sessions: they belong to the identity they were made with.
    pub fn import_identity(&mut self, identity: &[u8]) -> Result<(), ClientError> {
        self.operation(|this| this.import_identity_op(identity))
    }

    fn import_identity_op(&mut self, identity: &[u8]) -> Result<(), ClientError> {
        let sessions = self.session_ids()?.len();
        if sessions > 0 {
            return Err(ClientError::IdentityInUse(sessions));
        }
        let imported = IdentityKeyPair::from_bytes(identity)?;
        self.storage.commit(&[Write::Put {
            table: Table::Meta,
            key: META_IDENTITY.to_vec(),
            value: imported.to_bytes(),
        }])?;
        self.identity = imported;
        Ok(())
    }

    /// Stores a prekey serialised by Wire's Proteus (or this library), replacing one with the
    /// same id.
    pub fn import_prekey(&mut self, prekey: &[u8]) -> Result<PreKeyId, ClientError> {
        self.operation(|this| this.import_prekey_op(prekey))
    }

    fn import_prekey_op(&mut self, prekey: &[u8]) -> Result<PreKeyId, ClientError> {
        let prekey = PreKey::from_bytes(prekey)?;
        self.storage.commit(&[Write::Put {
            table: Table::PreKeys,
            key: prekey_key(prekey.id()),
            value: prekey.to_bytes(),
        }])?;
        Ok(prekey.id())
    }

    /// Stores a session serialised by Wire's Proteus (or this library) under `session_id`. It must
    /// belong to our identity; an existing session with that id is an error.
    pub fn import_session(&mut self, session_id: &str, session: &[u8]) -> Result<(), ClientError> {
        self.operation(|this| this.import_session_op(session_id, session))
    }

    fn import_session_op(&mut self, session_id: &str, session: &[u8]) -> Result<(), ClientError> {
        check_session_id(session_id)?;
        if self.has_session(session_id)? {
            return Err(ClientError::SessionExists(session_id.to_owned()));
        }
        let session = Session::from_bytes(self.identity.public_key(), session)?;
        super::pinning::check_pin(
            self.pin_for(session_id)?.as_ref(),
            session.remote_identity(),
        )?;
        self.sessions.insert_new(session_id, session);
        self.commit_sessions(&[session_id], &SortedSet::new())
    }

    /// The identity key pair serialised as Wire's Proteus does, for backup or migration. It holds
    /// the secret key.
    pub fn export_identity(&self) -> Zeroizing<Vec<u8>> {
        self.identity.to_bytes()
    }

    /// The session serialised as Wire's Proteus does (with its staged keys), for export. It
    /// holds secret keys.
    pub fn export_session(&mut self, session_id: &str) -> Result<Zeroizing<Vec<u8>>, ClientError> {
        self.operation(|this| this.export_session_op(session_id))
    }

    fn export_session_op(&mut self, session_id: &str) -> Result<Zeroizing<Vec<u8>>, ClientError> {
        Ok(self.session(session_id)?.to_export_bytes())
    }
}
