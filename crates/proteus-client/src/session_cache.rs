//! Sessions kept in memory between operations, and what they need written at a commit.
//!
//! For each session the cache remembers which staged keys are stored, so a commit writes the
//! session record plus only the staged keys that came or went; and whether the session changed
//! only by encrypting since its record was stored, so that a commit then writes only its
//! sending chain (a [`SendChainRecord`], a tenth of the session: what makes sending one message
//! to thousands of sessions cheap to commit). Every session enters the cache
//! through it (loaded, created or imported), and that is where the client's [`SessionConfig`]
//! is applied: the one place it is.

use std::ops::Deref;

use crate::collections::{HashMap, HashSet, set_with_capacity};

use proteus_core::{
    EncryptError, Envelope, IdentityKey, SendChainRecord, Session, limits::MAX_COUNTER_GAP,
    staged::StagedKeyId,
};

use crate::error::{ClientError, StoreError};
use crate::records::{send_chain_from_record, send_chain_record, staged_key, staged_prefix};
use crate::storage::{Storage, Table, Write};

pub(crate) struct CachedSession {
    session: Session,
    stored_staged: HashSet<StagedKeyId>,
    /// The sending chain of the stored session record (`None`: not stored yet, or without a
    /// chain ready to send on).
    stored_chain: Option<SendChainRecord>,
    /// Whether a send chain record is stored beside the session record.
    chain_record_stored: bool,
    /// Whether the session may have changed other than by [`Sending::encrypt`] since it was
    /// stored (then its whole record is written).
    changed: bool,
}

/// A cached session lent for encrypting only: what it changes, a commit can store as a send
/// chain record. Reads go through to the session.
pub(crate) struct Sending<'a>(&'a mut Session);

impl Sending<'_> {
    /// [`Session::encrypt`].
    pub(crate) fn encrypt(self, plaintext: &[u8]) -> Result<Envelope<'static>, EncryptError> {
        self.0.encrypt(plaintext)
    }
}

impl Deref for Sending<'_> {
    type Target = Session;

    fn deref(&self) -> &Session {
        self.0
    }
}

/// Settings of every session of a client. Not stored: set them on the client each time it is
/// opened (they are limits of this device, not state of the session).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionConfig {
    /// How many message keys a chain keeps for messages not yet received (skipped, reordered),
    /// and so how far ahead of the last one a message may be. See
    /// [`Session::set_max_counter_gap`]; default [`MAX_COUNTER_GAP`].
    pub max_counter_gap: u32,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            max_counter_gap: MAX_COUNTER_GAP,
        }
    }
}

impl SessionConfig {
    /// This configuration with another [`max_counter_gap`](Self::max_counter_gap).
    #[must_use]
    pub fn with_max_counter_gap(mut self, gap: u32) -> Self {
        self.max_counter_gap = gap;
        self
    }

    pub(crate) fn apply(&self, session: &mut Session) {
        session.set_max_counter_gap(self.max_counter_gap);
    }
}

#[derive(Default)]
pub(crate) struct SessionCache {
    sessions: HashMap<String, CachedSession>,
    config: SessionConfig,
}

/// What a commit will make true of a session's stored records, applied once it succeeded.
pub(crate) struct AfterCommit {
    session_id: String,
    stored: HashSet<StagedKeyId>,
    /// Whether the commit stored a send chain record rather than the session record.
    chain_only: bool,
    /// The sending chain of the session record stored (when `chain_only` is false).
    stored_chain: Option<SendChainRecord>,
}

impl SessionCache {
    /// The session, loaded from `storage` if it is not cached, to change in any way (its whole
    /// record is written at the next commit). `None` if there is none.
    pub(crate) fn get_or_load(
        &mut self,
        storage: &dyn Storage,
        identity: &IdentityKey,
        session_id: &str,
    ) -> Result<Option<&mut Session>, ClientError> {
        Ok(self.load(storage, identity, session_id)?.map(|cached| {
            cached.changed = true;
            &mut cached.session
        }))
    }

    /// The session, loaded from `storage` if it is not cached, to encrypt with. `None` if there
    /// is none.
    pub(crate) fn get_or_load_to_send(
        &mut self,
        storage: &dyn Storage,
        identity: &IdentityKey,
        session_id: &str,
    ) -> Result<Option<Sending<'_>>, ClientError> {
        Ok(self
            .load(storage, identity, session_id)?
            .map(|cached| Sending(&mut cached.session)))
    }

    fn load(
        &mut self,
        storage: &dyn Storage,
        identity: &IdentityKey,
        session_id: &str,
    ) -> Result<Option<&mut CachedSession>, ClientError> {
        if !self.sessions.contains_key(session_id) {
            let Some(record) = storage.get(Table::Sessions, session_id.as_bytes())? else {
                return Ok(None);
            };
            let prefix = staged_prefix(session_id);
            let rows = storage.scan(Table::StagedKeys, &prefix)?;
            let mut staged = Vec::with_capacity(rows.len());
            let mut chain_record = None;
            for (key, value) in &rows {
                if key.len() == prefix.len() {
                    chain_record = Some(send_chain_from_record(value)?);
                    continue;
                }
                let id = key
                    .get(prefix.len()..)
                    .and_then(|k| StagedKeyId::from_bytes(k).ok())
                    .ok_or_else(|| corrupt("a staged key has a malformed key"))?;
                staged.push((id, value.as_slice()));
            }
            let mut session =
                Session::from_bytes_with_staged_keys(identity, &record, staged.iter().copied())
                    .map_err(|e| corrupt(&e.to_string()))?;
            if let Some(record) = &chain_record {
                session
                    .apply_send_chain_record(record)
                    .map_err(|e| corrupt(&e.to_string()))?;
            }
            self.config.apply(&mut session);
            let stored_staged = staged.into_iter().map(|(id, _)| id).collect();
            self.sessions.insert(
                session_id.to_owned(),
                CachedSession {
                    stored_chain: session.send_chain_record(),
                    session,
                    stored_staged,
                    chain_record_stored: chain_record.is_some(),
                    changed: false,
                },
            );
        }
        Ok(self.sessions.get_mut(session_id))
    }

    /// Whether the session is cached (it may still exist in storage if not).
    pub(crate) fn contains(&self, session_id: &str) -> bool {
        self.sessions.contains_key(session_id)
    }

    /// The peer's identity in a cached session.
    pub(crate) fn remote_identity(&self, session_id: &str) -> Option<&IdentityKey> {
        self.sessions
            .get(session_id)
            .map(|cached| cached.session.remote_identity())
    }

    /// Adds a session that is not stored yet.
    pub(crate) fn insert_new(&mut self, session_id: &str, mut session: Session) {
        self.config.apply(&mut session);
        let cached = CachedSession {
            session,
            stored_staged: HashSet::default(),
            stored_chain: None,
            chain_record_stored: false,
            changed: true,
        };
        self.sessions.insert(session_id.to_owned(), cached);
    }

    /// Appends the writes that store `session_id` as it is now: its record (or, if it changed
    /// only by encrypting on the stored record's sending chain, its send chain record), the
    /// staged keys not stored yet, and deletions of stored staged keys it no longer has.
    pub(crate) fn writes_for(
        &self,
        session_id: &str,
        writes: &mut Vec<Write>,
    ) -> Option<AfterCommit> {
        let cached = self.sessions.get(session_id)?;
        let prefix = staged_prefix(session_id);
        let current = cached.session.send_chain_record();
        let chain_only = match (&current, &cached.stored_chain) {
            (Some(now), Some(stored)) => !cached.changed && now.same_chain(stored),
            _ => false,
        };
        match &current {
            Some(now) if chain_only => writes.push(Write::Put {
                table: Table::StagedKeys,
                key: prefix.clone(),
                value: send_chain_record(now),
            }),
            _ => {
                writes.push(Write::Put {
                    table: Table::Sessions,
                    key: session_id.as_bytes().to_vec(),
                    value: cached.session.to_bytes_without_staged_keys(),
                });
                // Its chain is in the session record now: an older one must not stay.
                if cached.chain_record_stored {
                    writes.push(Write::Delete {
                        table: Table::StagedKeys,
                        key: prefix.clone(),
                    });
                }
            }
        }
        let mut now = set_with_capacity(cached.stored_staged.len());
        for (id, key) in cached.session.staged_keys() {
            if !cached.stored_staged.contains(&id) {
                writes.push(Write::Put {
                    table: Table::StagedKeys,
                    key: staged_key(&prefix, &id),
                    value: key.to_bytes(),
                });
            }
            now.insert(id);
        }
        for gone in cached.stored_staged.difference(&now) {
            writes.push(Write::Delete {
                table: Table::StagedKeys,
                key: staged_key(&prefix, gone),
            });
        }
        Some(AfterCommit {
            session_id: session_id.to_owned(),
            stored: now,
            chain_only,
            stored_chain: if chain_only { None } else { current },
        })
    }

    /// Records that a commit made of [`writes_for`](Self::writes_for) succeeded.
    pub(crate) fn committed(&mut self, after: AfterCommit) {
        if let Some(cached) = self.sessions.get_mut(&after.session_id) {
            cached.stored_staged = after.stored;
            cached.changed = false;
            cached.chain_record_stored = after.chain_only;
            if !after.chain_only {
                cached.stored_chain = after.stored_chain;
            }
        }
    }

    /// Forgets a session, so it is loaded again from storage: what a failed commit needs, since
    /// the cached session holds changes that were not stored.
    pub(crate) fn evict(&mut self, session_id: &str) {
        self.sessions.remove(session_id);
    }

    /// Forgets every cached session (another handle committed: they may be stale); the
    /// configuration stays.
    pub(crate) fn clear(&mut self) {
        self.sessions.clear();
    }

    pub(crate) fn config(&self) -> SessionConfig {
        self.config
    }

    /// Applies `config` to every cached session and to every one that enters later.
    pub(crate) fn set_config(&mut self, config: SessionConfig) {
        self.config = config;
        for cached in self.sessions.values_mut() {
            config.apply(&mut cached.session);
        }
    }
}

/// Taking sessions out of the cache for a batch's runs and a fan-out, and putting them back.
impl SessionCache {
    /// Removes the session from the cache, loading it first if it is stored, with its key (so
    /// that putting it back allocates nothing). `None` if there is none. Put it back with
    /// [`put`](Self::put) once done; a session never put back is loaded again from storage when
    /// next used.
    pub(crate) fn take(
        &mut self,
        storage: &dyn Storage,
        identity: &IdentityKey,
        session_id: &str,
    ) -> Result<Option<(String, CachedSession)>, ClientError> {
        if self.load(storage, identity, session_id)?.is_none() {
            return Ok(None);
        }
        Ok(self.sessions.remove_entry(session_id))
    }

    /// Puts a session taken out with [`take`](Self::take) (or made apart) back.
    pub(crate) fn put(&mut self, key: String, cached: CachedSession) {
        self.sessions.insert(key, cached);
    }
}

impl CachedSession {
    /// A session not stored yet (created by a batch's run, already configured).
    pub(crate) fn new_unstored(session: Session) -> Self {
        Self {
            session,
            stored_staged: HashSet::default(),
            stored_chain: None,
            chain_record_stored: false,
            changed: true,
        }
    }

    /// The session, to change in any way (its whole record is written at the next commit).
    pub(crate) fn session_mut(&mut self) -> &mut Session {
        self.changed = true;
        &mut self.session
    }

    /// The session, to encrypt with only (see [`Sending`]).
    pub(crate) fn sending(&mut self) -> Sending<'_> {
        Sending(&mut self.session)
    }
}

/// A session record that does not load. Its id is left out: ids are user data.
fn corrupt(why: &str) -> ClientError {
    ClientError::Store(StoreError::Corrupt(format!("a session record: {why}")))
}
