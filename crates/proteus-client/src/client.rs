//! The client: one identity, its prekeys and its sessions, kept in a store.

use proteus_core::{
    Envelope, IdentityKey, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session,
};
use zeroize::Zeroizing;

use crate::batch::{BatchSummary, Executor, Lent, decrypt_one};
use crate::checked_identities::CheckedIdentities;
use crate::collections::{OrderedIds, SortedSet};
use crate::error::{ClientError, StoreError};
use crate::logging::{LOG_TARGET, LogIds};
use crate::prekeys::{allocate_ids, load_prekey};
use crate::records::{META_NEXT_PREKEY_ID, check_session_id, prekey_key, staged_prefix};
use crate::replay_guard::ReplayGuard;
use crate::session_cache::{Sending, SessionCache, SessionConfig};
use crate::storage::{MemoryStorage, Storage, Table, Write};

mod fanout;
mod import_cryptobox;
mod import_export;
mod operation;
mod pinning;
mod telemetry;

pub(crate) use pinning::{check_pin, load_pin};

/// A Proteus client: an identity, its prekeys and its sessions, persisted in a [`Storage`].
///
/// Every operation that changes state commits before it returns, and a failed operation changes
/// nothing, in memory or in the store. Other clients (other processes) may use the same store:
/// each `&mut self` call runs under the store's exclusion and first reloads what another one
/// changed (see [`Storage::begin`]); the `&self` reads (prekeys, session ids) read the store as
/// it is, and the identity is the one seen at the last call. See the crate docs for the durability contract of
/// [`decrypt_batch`](Client::decrypt_batch).
pub struct Client {
    storage: Box<dyn Storage>,
    identity: IdentityKeyPair,
    sessions: SessionCache,
    replay_guard: ReplayGuard,
    /// Senders' identity keys already checked, for their next session.
    identities: CheckedIdentities,
    /// Whether an operation of the commit protocol is open (see `operation.rs`).
    in_operation: bool,
    /// Where a batch's independent work runs (see [`Executor`]).
    executor: Executor,
    /// What the last batch that committed did.
    last_batch: Option<BatchSummary>,
    /// The key of this client's session tags in the log.
    log_ids: LogIds,
    /// Whether identities are pinned (see `client/pinning.rs`).
    pinning: bool,
}

impl Client {
    /// Opens the SQLite store at `path`, creating it (with a new identity) if there is none.
    #[cfg(feature = "sqlite")]
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<Self, ClientError> {
        Self::open_with(
            path,
            crate::OpenMode::ExistingOrNew,
            &crate::SqliteOptions::default(),
        )
    }

    /// Opens the SQLite store at `path` as `mode` says.
    #[cfg(feature = "sqlite")]
    pub fn open_with(
        path: impl AsRef<std::path::Path>,
        mode: crate::OpenMode,
        options: &crate::SqliteOptions,
    ) -> Result<Self, ClientError> {
        let storage = crate::SqliteStorage::open(path, mode, options)?;
        Self::with_storage(Box::new(storage))
    }

    /// Opens the SQLite store at `path` with every record sealed by `key` (encryption at rest).
    /// A new store is created sealed; a store sealed with another key gives
    /// [`StoreError::WrongKey`] and an unsealed one [`StoreError::NotSealed`], both without
    /// changing anything. See [`seal_store`](crate::seal_store) and
    /// [`rekey_store`](crate::rekey_store).
    #[cfg(all(feature = "sqlite", feature = "sealed"))]
    pub fn open_sealed(
        path: impl AsRef<std::path::Path>,
        mode: crate::OpenMode,
        options: &crate::SqliteOptions,
        key: &crate::StoreKey,
    ) -> Result<Self, ClientError> {
        let storage = crate::SqliteStorage::open(path, mode, options)?;
        Self::with_storage(Box::new(crate::SealedStorage::open(storage, key)?))
    }

    /// Opens the SQLite store at `path` as `mode` says, sealed with `key` if there is one (as
    /// [`open_sealed`](Self::open_sealed)), and with `counter` under a
    /// [`RollbackGuard`](crate::RollbackGuard): a store restored from an older copy is refused
    /// with [`StoreError::RolledBack`] when it opens and at every later call. The guard is
    /// outside the sealing, so that the count is sealed too.
    #[cfg(all(feature = "sqlite", feature = "sealed"))]
    pub fn open_guarded(
        path: impl AsRef<std::path::Path>,
        mode: crate::OpenMode,
        options: &crate::SqliteOptions,
        key: Option<&crate::StoreKey>,
        counter: Option<Box<dyn crate::CommitCounter>>,
    ) -> Result<Self, ClientError> {
        fn guarded<S: Storage + 'static>(
            storage: S,
            counter: Option<Box<dyn crate::CommitCounter>>,
        ) -> Result<Box<dyn Storage>, StoreError> {
            Ok(match counter {
                Some(counter) => Box::new(crate::RollbackGuard::open(storage, counter)?),
                None => Box::new(storage),
            })
        }
        let storage = crate::SqliteStorage::open(path, mode, options)?;
        let storage = match key {
            Some(key) => guarded(crate::SealedStorage::open(storage, key)?, counter)?,
            None => guarded(storage, counter)?,
        };
        Self::with_storage(storage)
    }

    /// A client whose state lives in memory only.
    pub fn in_memory() -> Result<Self, ClientError> {
        Self::with_storage(Box::new(MemoryStorage::new()))
    }

    /// A client on any storage. Loads the identity, or creates one (with a last-resort prekey)
    /// if the storage holds nothing yet. Storage that holds records but no identity is corrupt
    /// and is refused, never reinitialised.
    pub fn with_storage(mut storage: Box<dyn Storage>) -> Result<Self, ClientError> {
        let (identity, created) = operation::open_identity(&mut *storage)?;
        log::info!(
            target: LOG_TARGET,
            "client opened: {} identity",
            if created { "new" } else { "existing" }
        );
        Ok(Self {
            storage,
            identity,
            sessions: SessionCache::default(),
            replay_guard: ReplayGuard::default(),
            identities: CheckedIdentities::default(),
            in_operation: false,
            executor: Executor::Inline,
            last_batch: None,
            log_ids: LogIds::new(),
            pinning: false,
        })
    }

    /// Our public identity.
    pub fn identity(&self) -> &IdentityKey {
        self.identity.public_key()
    }

    /// Our fingerprint: lowercase hex of the identity key.
    pub fn fingerprint(&self) -> String {
        self.identity.fingerprint()
    }

    /// Signs `message` with our identity key, e.g. a server's authentication challenge, so that
    /// the server can check it with [`IdentityKey::verify`] against our public
    /// [`identity`](Self::identity). Prefix the message with a context string of your own (see
    /// [`IdentityKeyPair::sign`]): the identity key also signs prekey bundles.
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        self.identity.sign(message)
    }

    /// The settings applied to every session.
    pub fn session_config(&self) -> SessionConfig {
        self.sessions.config()
    }

    /// Sets what applies to every session, loaded now or later (see [`SessionConfig`]).
    pub fn set_session_config(&mut self, config: SessionConfig) {
        self.sessions.set_config(config);
    }

    /// Where a batch ([`decrypt_batch`](Self::decrypt_batch),
    /// [`encrypt_for`](Self::encrypt_for)) runs its independent work.
    pub fn executor(&self) -> &Executor {
        &self.executor
    }

    /// Sets where a batch runs its independent work: [`Executor::Inline`] (the default: the
    /// client starts no thread) or a rayon pool of the application's. Results, their order,
    /// the delivery and the commit are the same either way.
    pub fn set_executor(&mut self, executor: Executor) {
        self.executor = executor;
    }

    /// How many threads a batch uses: 1 inline, else the pool's.
    pub fn batch_threads(&self) -> usize {
        self.executor.threads()
    }

    /// Gives this client a pool of its own with `threads` threads (started now, asleep between
    /// batches), or none for 1: [`set_executor`](Self::set_executor) with
    /// `Executor::with_threads`. If the system gives no threads, or the crate is built without
    /// its `rayon` feature (WebAssembly), batches run inline.
    pub fn set_batch_threads(&mut self, threads: usize) {
        #[cfg(feature = "rayon")]
        {
            self.executor = Executor::with_threads(threads).unwrap_or_default();
        }
        #[cfg(not(feature = "rayon"))]
        {
            let _ = threads;
            self.executor = Executor::Inline;
        }
    }

    /// What a batch borrows from the client (`batch/`): never the client itself.
    pub(crate) fn lend(&mut self) -> Lent<'_> {
        Lent {
            storage: &*self.storage,
            identity: &self.identity,
            sessions: &mut self.sessions,
            replay_guard: &mut self.replay_guard,
            identities: &mut self.identities,
            executor: &self.executor,
            pinning: self.pinning,
        }
    }

    // --- prekeys --------------------------------------------------------------------------

    /// Generates `n` one-time prekeys and returns their bundles for publishing. Ids are never
    /// reused while a prekey with that id is stored.
    pub fn generate_prekeys(&mut self, n: usize) -> Result<Vec<PreKeyBundle>, ClientError> {
        self.operation(|this| this.generate_prekeys_op(n))
    }

    fn generate_prekeys_op(&mut self, n: usize) -> Result<Vec<PreKeyBundle>, ClientError> {
        let next = self
            .storage
            .get(Table::Meta, META_NEXT_PREKEY_ID)?
            .map_or(0, |b| match b.as_slice() {
                [hi, lo] => u16::from_be_bytes([*hi, *lo]),
                _ => 0,
            });
        let (ids, next) = allocate_ids(&*self.storage, next, n)?
            .map_err(|free| ClientError::PreKeyIdsExhausted { free })?;
        let mut writes = Vec::with_capacity(ids.len() + 1);
        let mut bundles = Vec::with_capacity(ids.len());
        for id in ids {
            let prekey = PreKey::generate(id, &mut OsRng);
            bundles.push(PreKeyBundle::new(self.identity.public_key(), &prekey));
            writes.push(Write::Put {
                table: Table::PreKeys,
                key: prekey_key(id),
                value: prekey.to_bytes(),
            });
        }
        writes.push(Write::Put {
            table: Table::Meta,
            key: META_NEXT_PREKEY_ID.to_vec(),
            value: Zeroizing::new(next.to_be_bytes().to_vec()),
        });
        self.storage.commit(&writes)?;
        Ok(bundles)
    }

    /// Generates one-time prekeys until `target` are stored (none if there are as many already)
    /// and returns the new ones' bundles, to publish. Ids go on from the last one handed out,
    /// wrapping around after 65534 and skipping stored ones, so an id comes back only after
    /// every other id was handed out: a message in flight to a used prekey never meets a new
    /// prekey of the same id. [`prekeys_remaining`](Self::prekeys_remaining) is the stock.
    pub fn top_up_prekeys(&mut self, target: usize) -> Result<Vec<PreKeyBundle>, ClientError> {
        self.operation(|this| {
            let missing = target.saturating_sub(this.prekeys_remaining()?);
            this.generate_prekeys_op(missing)
        })
    }

    /// The bundle of the last-resort prekey (id 65535), which is never used up.
    pub fn last_resort_bundle(&self) -> Result<PreKeyBundle, ClientError> {
        self.prekey_bundle(PreKeyId::LAST_RESORT)
    }

    /// The bundle of a stored prekey.
    pub fn prekey_bundle(&self, id: PreKeyId) -> Result<PreKeyBundle, ClientError> {
        let prekey =
            load_prekey(&*self.storage, id)?.ok_or(ClientError::PreKeyNotFound(id.value()))?;
        Ok(PreKeyBundle::new(self.identity.public_key(), &prekey))
    }

    /// How many one-time prekeys are left (the last-resort prekey is not counted).
    pub fn prekeys_remaining(&self) -> Result<usize, ClientError> {
        let last_resort = prekey_key(PreKeyId::LAST_RESORT);
        Ok(self
            .storage
            .scan(Table::PreKeys, &[])?
            .iter()
            .filter(|(k, _)| *k != last_resort)
            .count())
    }

    // --- sessions -------------------------------------------------------------------------

    /// Starts a session with the owner of `bundle` (the bundle's CBOR, as published) under a
    /// caller-chosen id such as `"user:device"`. Fails if a session with that id exists.
    pub fn create_session(&mut self, session_id: &str, bundle: &[u8]) -> Result<(), ClientError> {
        self.operation(|this| this.create_session_op(session_id, bundle))
    }

    fn create_session_op(&mut self, session_id: &str, bundle: &[u8]) -> Result<(), ClientError> {
        check_session_id(session_id)?;
        if self.has_session(session_id)? {
            return Err(ClientError::SessionExists(session_id.to_owned()));
        }
        let bundle = PreKeyBundle::from_bytes(bundle)?;
        pinning::check_pin(self.pin_for(session_id)?.as_ref(), bundle.identity_key())?;
        let session = Session::init_from_prekey(&mut OsRng, &self.identity, &bundle)?;
        self.sessions.insert_new(session_id, session);
        self.commit_sessions(&[session_id], &SortedSet::new())
    }

    /// Replaces the session `session_id` with a new one from `bundle` (the peer's fresh prekey
    /// bundle), in one commit: the old session's states, staged keys and sending chain are gone
    /// and the next message starts the new one. Returns whether the peer's identity differs
    /// from the old session's (show the user the new fingerprint then).
    ///
    /// Messages the peer sent on the old session and not yet decrypted fail from then on with a
    /// stable code, never silently: a CipherMessage with `UnknownSessionTag` (205), a
    /// PreKeyMessage to a one-time prekey already used with `PreKeyNotFound` (101). `SessionNotFound`
    /// (104) if there is no session to replace.
    ///
    /// Under [identity pinning](Self::set_identity_pinning), a bundle of another identity than
    /// the pinned one (or, with no pin yet, than the old session's) is refused with
    /// `RemoteIdentityChanged` (204) and nothing changes; so a reset under pinning returns
    /// `false`, unless the old session was made without pinning with another identity than the
    /// pin. After [`accept_identity`](Self::accept_identity) (which deletes the session of the
    /// old identity) the new session is made with [`create_session`](Self::create_session).
    pub fn reset_session(&mut self, session_id: &str, bundle: &[u8]) -> Result<bool, ClientError> {
        self.operation(|this| this.reset_session_op(session_id, bundle))
    }

    fn reset_session_op(&mut self, session_id: &str, bundle: &[u8]) -> Result<bool, ClientError> {
        check_session_id(session_id)?;
        let old_identity = *self.session(session_id)?.remote_identity();
        let bundle = PreKeyBundle::from_bytes(bundle)?;
        let pin = self.pin_kept(session_id)?;
        pinning::check_pin(pin.as_ref(), bundle.identity_key())?;
        let session = Session::init_from_prekey(&mut OsRng, &self.identity, &bundle)?;
        let changed = session.remote_identity() != &old_identity;
        // The old session's staged keys and chain record go; the new record replaces its record.
        let mut writes = Vec::new();
        if let Some(pin) = &pin {
            writes.push(pinning::pin_write(session_id, pin));
        }
        self.delete_staged_records(session_id, &mut writes)?;
        let mut cache = crate::session_cache::SessionCache::default();
        cache.set_config(self.sessions.config());
        cache.insert_new(session_id, session);
        cache.writes_for(session_id, &mut writes);
        self.storage.commit(&writes)?;
        self.sessions.evict(session_id);
        log::info!(
            target: LOG_TARGET,
            "session {} reset: {} identity",
            self.log_ids.session(session_id),
            if changed { "a new" } else { "the same" }
        );
        Ok(changed)
    }

    /// Whether a session with this id exists.
    pub fn has_session(&mut self, session_id: &str) -> Result<bool, ClientError> {
        self.operation(|this| this.has_session_op(session_id))
    }

    fn has_session_op(&mut self, session_id: &str) -> Result<bool, ClientError> {
        Ok(self.sessions.contains(session_id)
            || self
                .storage
                .get(Table::Sessions, session_id.as_bytes())?
                .is_some())
    }

    /// The ids of all sessions.
    pub fn session_ids(&self) -> Result<Vec<String>, ClientError> {
        let rows = self.storage.scan(Table::Sessions, &[])?;
        rows.into_iter()
            .map(|(k, _)| {
                String::from_utf8(k)
                    .map_err(|_| StoreError::Corrupt("a session id is not UTF-8".into()).into())
            })
            .collect()
    }

    /// The peer's fingerprint in a session.
    pub fn remote_fingerprint(&mut self, session_id: &str) -> Result<String, ClientError> {
        self.operation(|this| this.remote_fingerprint_op(session_id))
    }

    fn remote_fingerprint_op(&mut self, session_id: &str) -> Result<String, ClientError> {
        Ok(self.session(session_id)?.remote_identity().fingerprint())
    }

    /// Deletes a session and its staged keys. A replay of a PreKeyMessage that created it from
    /// the last-resort prekey does not create it again (`DuplicateMessage`, 209; see
    /// [`MAX_LAST_RESORT_BASE_KEYS`](crate::MAX_LAST_RESORT_BASE_KEYS)); a new handshake does.
    /// Under [identity pinning](Self::set_identity_pinning) the session id keeps its pin
    /// ([`forget_session`](Self::forget_session) deletes both).
    pub fn delete_session(&mut self, session_id: &str) -> Result<(), ClientError> {
        self.remove_session(session_id, false)
    }

    /// [`delete_session`](Self::delete_session), and with `forget` the pin too.
    fn remove_session(&mut self, session_id: &str, forget: bool) -> Result<(), ClientError> {
        self.operation(|this| this.delete_session_op(session_id, forget))
    }

    fn delete_session_op(&mut self, session_id: &str, forget: bool) -> Result<(), ClientError> {
        check_session_id(session_id)?;
        let mut writes = vec![Write::Delete {
            table: Table::Sessions,
            key: session_id.as_bytes().to_vec(),
        }];
        if forget {
            writes.push(pinning::pin_delete(session_id));
        } else if let Some(pin) = self.pin_kept(session_id)? {
            writes.push(pinning::pin_write(session_id, &pin));
        }
        self.delete_staged_records(session_id, &mut writes)?;
        self.storage.commit(&writes)?;
        self.sessions.evict(session_id);
        Ok(())
    }

    /// Adds to `writes` the deletion of a session's records besides its own: its staged keys
    /// and its send chain record.
    fn delete_staged_records(
        &self,
        session_id: &str,
        writes: &mut Vec<Write>,
    ) -> Result<(), ClientError> {
        for (key, _) in self
            .storage
            .scan(Table::StagedKeys, &staged_prefix(session_id))?
        {
            writes.push(Write::Delete {
                table: Table::StagedKeys,
                key,
            });
        }
        Ok(())
    }

    /// Makes sure that what earlier calls deleted (a consumed prekey, used message keys, old
    /// session states) is gone from the disk now, and says whether it is. Each commit already
    /// tries this; if another connection held an older snapshot then (a backup agent, the
    /// other process, a long read), the SQLite store keeps trying after later calls, and this
    /// call forces it, waiting up to the busy timeout for the readers. Call it before the app
    /// is suspended. `Ok(false)`: a reader still holds an older snapshot; call it again later.
    /// Stores that keep nothing deleted (memory) answer `Ok(true)`.
    pub fn erase_deleted(&mut self) -> Result<bool, ClientError> {
        if self.in_operation {
            return Err(StoreError::Backend("erase_deleted inside an operation".into()).into());
        }
        Ok(self.storage.erase_deleted()?)
    }

    /// The session, to encrypt with or read (see [`Sending`]).
    fn session(&mut self, session_id: &str) -> Result<Sending<'_>, ClientError> {
        check_session_id(session_id)?;
        self.sessions
            .get_or_load_to_send(&*self.storage, self.identity.public_key(), session_id)?
            .ok_or_else(|| ClientError::SessionNotFound(session_id.to_owned()))
    }

    /// Encrypts for the session's peer. The advanced sending chain is committed before the
    /// envelope is returned, so a crash can never make two messages share a message key.
    pub fn encrypt(&mut self, session_id: &str, plaintext: &[u8]) -> Result<Vec<u8>, ClientError> {
        self.operation(|this| this.encrypt_op(session_id, plaintext))
    }

    fn encrypt_op(&mut self, session_id: &str, plaintext: &[u8]) -> Result<Vec<u8>, ClientError> {
        let envelope = self.session(session_id)?.encrypt(plaintext)?;
        self.commit_sessions(&[session_id], &SortedSet::new())?;
        Ok(envelope.to_bytes())
    }

    /// Encrypts several messages, possibly for several sessions, with one commit for all: it
    /// happens before any envelope is returned. Envelopes come back in the order of `messages`.
    /// If anything fails, nothing is committed and no envelope is returned. To send one
    /// plaintext to many sessions, [`encrypt_for`](Self::encrypt_for) is the call.
    pub fn encrypt_batch(
        &mut self,
        messages: &[(&str, &[u8])],
    ) -> Result<Vec<Vec<u8>>, ClientError> {
        self.operation(|this| this.encrypt_batch_op(messages))
    }

    fn encrypt_batch_op(
        &mut self,
        messages: &[(&str, &[u8])],
    ) -> Result<Vec<Vec<u8>>, ClientError> {
        let mut envelopes = Vec::with_capacity(messages.len());
        let mut touched = OrderedIds::default();
        for (session_id, plaintext) in messages {
            match self
                .session(session_id)
                .and_then(|s| s.encrypt(plaintext).map_err(ClientError::from))
            {
                Ok(envelope) => envelopes.push(envelope.to_bytes()),
                Err(e) => {
                    // Sessions already advanced in memory hold unsent chain steps: reload them.
                    self.forget(touched.as_slice());
                    return Err(e);
                }
            }
            touched.add(session_id);
        }
        self.commit_sessions(touched.as_slice(), &SortedSet::new())?;
        Ok(envelopes)
    }

    /// Decrypts one message and commits the result. A PreKeyMessage from a new peer creates
    /// the session; its one-time prekey is deleted in the same commit.
    pub fn decrypt(&mut self, session_id: &str, envelope: &[u8]) -> Result<Vec<u8>, ClientError> {
        self.operation(|this| this.decrypt_op(session_id, envelope))
    }

    fn decrypt_op(&mut self, session_id: &str, envelope: &[u8]) -> Result<Vec<u8>, ClientError> {
        let mut removed = SortedSet::new();
        check_session_id(session_id)?;
        let envelope = Envelope::from_bytes(envelope)?;
        let plaintext = self.decrypt_uncommitted(session_id, &envelope, &mut removed)?;
        self.commit_sessions(&[session_id], &removed)?;
        Ok(plaintext)
    }

    /// Decrypts into the cached session without committing (the session id already checked).
    /// On error nothing changed.
    fn decrypt_uncommitted(
        &mut self,
        session_id: &str,
        envelope: &Envelope,
        removed: &mut SortedSet<PreKeyId>,
    ) -> Result<Vec<u8>, ClientError> {
        decrypt_one(&mut self.lend(), session_id, envelope, removed)
    }

    /// Commits the cached state of `session_ids` and the removal of used prekeys, atomically.
    /// If the commit fails those sessions are forgotten, so memory matches the store again.
    pub(crate) fn commit_sessions(
        &mut self,
        session_ids: &[&str],
        removed: &SortedSet<PreKeyId>,
    ) -> Result<(), ClientError> {
        let mut writes = Vec::new();
        let mut after = Vec::new();
        for &id in session_ids {
            after.extend(self.sessions.writes_for(id, &mut writes));
        }
        writes.extend(removed.iter().map(|id| Write::Delete {
            table: Table::PreKeys,
            key: prekey_key(*id),
        }));
        let guarded = self
            .pin_writes(session_ids, &mut writes)
            .and_then(|()| self.replay_guard.writes(&*self.storage, &mut writes));
        if writes.is_empty() {
            return Ok(());
        }
        match guarded.and_then(|()| self.storage.commit(&writes).map_err(ClientError::from)) {
            Ok(()) => {
                for a in after {
                    self.sessions.committed(a);
                }
                self.replay_guard.committed();
                if removed.iter().next().is_some() {
                    self.log_prekey_stock();
                }
                Ok(())
            }
            Err(e) => {
                for &id in session_ids {
                    self.sessions.evict(id);
                }
                self.replay_guard.rolled_back();
                Err(e)
            }
        }
    }

    /// Forgets what the cache holds of `session_ids` and the replay guard's unsaved records:
    /// after a failed batch, memory matches the store again.
    pub(crate) fn forget(&mut self, session_ids: &[&str]) {
        self.replay_guard.rolled_back();
        for id in session_ids {
            self.sessions.evict(id);
        }
    }
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("identity", self.identity.public_key())
            .finish_non_exhaustive()
    }
}
