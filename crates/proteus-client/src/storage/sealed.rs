//! Encryption at rest: a [`Storage`] that seals every record with an application key, and binds
//! every record to the store and the commit that wrote it.
//!
//! # Sealed means bound (format 3)
//!
//! Each value is stored as
//! `3 ‖ commit (8, BE) ‖ nonce (12) ‖ ChaCha20-Poly1305(u16 BE key length ‖ key ‖ value) ‖ tag (16)`
//! (ring) with `3 ‖ store id (16) ‖ commit (8) ‖ table name ‖ 0 ‖ stored key` as associated
//! data: a record moved to another key or table, copied from another store (each store has a
//! random id) or put back from an older commit does not open as the record the store last
//! committed under its key. What makes that last commit known, and a deleted record noticed, is
//! the store's **manifest**: one sealed meta record holding the store id, the store's commit
//! and a keyed digest of the set of live records, each named by table, stored key and the
//! commit that wrote it. The digest is the XOR of HMAC-SHA256 of each element under a key
//! derived from the store key: a commit updates it with the records it writes and deletes
//! only (its cost does not grow with the store), and without the key no other set of records
//! has the same digest (each HMAC is an unknown 256-bit value, so a different set differs by
//! the XOR of at least one of them). Whoever holds the file but not the key cannot compute it.
//!
//! Opening the store (and beginning an operation after another handle committed, or after the
//! manifest changed under the handle) reads every record's stored key and commit (not its
//! body) and checks the digest: a record deleted, added, or put back from another commit is
//! refused there, with [`StoreError::Tampered`]. Reads then check each record against the
//! commit the manifest set holds for its key, so a record that changes under a running client
//! is refused when it is read: never treated as absent, never used. A whole store put back
//! from an older copy is consistent with itself: that is what [`RollbackGuard`] and its counter
//! kept by the application refuse; while a handle is open, its manifest never goes back
//! ([`StoreError::RolledBack`]).
//!
//! Nonces are random: one key seals at most a few million records over a store's life, far
//! below the birthday bound of 96-bit nonces. A check record sealed with the key tells a wrong
//! key ([`StoreError::WrongKey`]) from damage, before anything is written.
//!
//! Session ids (the contact list) are not stored in the clear: in the sessions and staged-keys
//! tables the session id part of a key is replaced by its HMAC-SHA256 under a key derived from
//! the store key, and the clear key travels inside the sealed body. What stays visible to
//! whoever has the file without the key: the number of sessions and of staged keys per
//! session, record sizes, the commit that last wrote each record, prekey ids, and the
//! staged-key ids (session tag, the peer's public ratchet key, a counter), which match
//! envelopes seen on the wire but name no one.
//!
//! # Older formats
//!
//! Stores sealed before stay readable forever: format 1 (`1 ‖ nonce ‖ sealed value`, table and
//! stored key as associated data, session ids in the clear) and format 2 (`2 ‖ nonce ‖ sealed
//! (u16 key length ‖ key ‖ value)`, session ids hashed, the version in the associated data too).
//! A store in either is brought to format 3 in one commit when first opened (every record
//! re-sealed at commit 1 of a new store id, and the manifest written).
//!
//! [`RollbackGuard`]: crate::RollbackGuard

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::{Freshness, Record, Storage, Table, Write};
use crate::error::{StoreError, Tamper};
use crate::records::{META_SEALED_IDS_HASHED, META_SEALED_MANIFEST};

/// Sealed format 1: the body is the value; the stored key is the record's key.
const SEALED_V1: u8 = 1;
/// Sealed format 2 (sessions and staged keys): the body is `u16 BE key length ‖ key ‖ value`;
/// the stored key has the session id replaced by its keyed hash.
const SEALED_V2: u8 = 2;
/// Sealed format 3 (every table): format 2's body, the writing commit in the clear before the
/// nonce, and store id and commit in the associated data.
const SEALED_V3: u8 = 3;
/// Derives the session-id hashing key from the store key. Part of the stored format: it keeps
/// the crate's old name (proteus-store) and must never change.
const ID_KEY_LABEL: &[u8] = b"proteus-store sealed session ids v1";
/// Derives the manifest digest key from the store key. Part of the stored format.
const DIGEST_KEY_LABEL: &[u8] = b"proteus-store sealed manifest digest v1";
/// Associated data of the manifest record (with the version before it). Part of the format.
const MANIFEST_AAD: &[u8] = b"manifest\0meta\0sealed_manifest";
/// Bytes a sealed value adds to the plaintext: version, commit, nonce and tag (and the key,
/// with its 2 bytes of length).
pub const SEAL_OVERHEAD: usize = 1 + COMMIT_LEN + NONCE_LEN + 16;
/// The meta record that only the right key opens; its presence marks an encrypted store.
const CHECK_KEY: &[u8] = crate::records::META_SEAL_CHECK;
/// Part of the stored format, like [`ID_KEY_LABEL`]: never change it.
const CHECK_VALUE: &[u8] = b"proteus-store sealed v1";
/// Bytes of a store id: random, drawn when a store is sealed (or brought to format 3).
const STORE_ID_LEN: usize = 16;
/// Bytes of a commit number (u64, big-endian).
const COMMIT_LEN: usize = 8;
/// Bytes of the manifest's digest (one HMAC-SHA256).
const DIGEST_LEN: usize = 32;
/// The manifest's body: store id ‖ commit ‖ number of records (u64 BE) ‖ digest.
const MANIFEST_LEN: usize = STORE_ID_LEN + COMMIT_LEN + 8 + DIGEST_LEN;
/// How many times a read outside an operation (no exclusion held, so another handle may
/// commit between its statements) is tried before [`StoreError::Busy`].
pub const MAX_UNLOCKED_READ_ATTEMPTS: usize = 4;

/// A 32-byte key for sealing a store, supplied by the application (e.g. from the platform's
/// keystore). Wiped on drop.
pub struct StoreKey(Zeroizing<[u8; 32]>);

impl StoreKey {
    /// Wraps 32 key bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    fn keys(&self) -> Result<Keys, StoreError> {
        let aead = UnboundKey::new(&CHACHA20_POLY1305, self.0.as_slice())
            .map(LessSafeKey::new)
            .map_err(|_| StoreError::Backend("cannot use the store key".into()))?;
        let master = hmac::Key::new(hmac::HMAC_SHA256, self.0.as_slice());
        let ids = hmac::sign(&master, ID_KEY_LABEL);
        let digest = hmac::sign(&master, DIGEST_KEY_LABEL);
        Ok(Keys {
            aead,
            ids: hmac::Key::new(hmac::HMAC_SHA256, ids.as_ref()),
            digest: hmac::Key::new(hmac::HMAC_SHA256, digest.as_ref()),
        })
    }
}

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreKey(..)")
    }
}

/// What a store key gives: the sealing key, the session-id hashing key and the manifest
/// digest key.
struct Keys {
    aead: LessSafeKey,
    ids: hmac::Key,
    digest: hmac::Key,
}

/// Whether a table's keys hold a session id, which is stored hashed.
fn hides_ids(table: Table) -> bool {
    matches!(table, Table::Sessions | Table::StagedKeys)
}

/// A staged key's parts: `u16 BE length ‖ session id ‖ rest`.
fn split_staged(key: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = key.split_first_chunk::<2>()?;
    let len = usize::from(u16::from_be_bytes(*len));
    (rest.len() >= len).then(|| rest.split_at(len))
}

fn tampered(table: Option<Table>, fault: Tamper) -> StoreError {
    StoreError::Tampered { table, fault }
}

/// The commit a format 3 value says wrote it (authenticated when the value is opened).
fn commit_of(sealed: &[u8]) -> Option<u64> {
    match sealed.split_first() {
        Some((&SEALED_V3, rest)) => rest
            .first_chunk::<COMMIT_LEN>()
            .map(|c| u64::from_be_bytes(*c)),
        _ => None,
    }
}

/// The body of a record (`u16 BE key length ‖ key ‖ value`) as `(key, value)`.
fn split_body(body: &[u8]) -> Option<Record> {
    let (key_len, rest) = body.split_first_chunk::<2>()?;
    let (key, value) = rest.split_at_checked(usize::from(u16::from_be_bytes(*key_len)))?;
    Some((key.to_vec(), Zeroizing::new(value.to_vec())))
}

impl Keys {
    fn id_hash(&self, session_id: &[u8]) -> Vec<u8> {
        hmac::sign(&self.ids, session_id).as_ref().to_vec()
    }

    /// The key a record is stored under: its own, or with the session id hashed.
    fn stored_key(&self, table: Table, key: &[u8]) -> Vec<u8> {
        match table {
            Table::Sessions => self.id_hash(key),
            Table::StagedKeys => match split_staged(key) {
                Some((id, rest)) => [self.id_hash(id).as_slice(), rest].concat(),
                None => self.id_hash(key),
            },
            Table::Meta | Table::PreKeys => key.to_vec(),
        }
    }

    /// The stored-key prefix under which every key starting with `prefix` is found, if there
    /// is one (otherwise the whole table is scanned).
    fn stored_prefix(&self, table: Table, prefix: &[u8]) -> Option<Vec<u8>> {
        if prefix.is_empty() || !hides_ids(table) {
            return Some(prefix.to_vec());
        }
        match table {
            Table::StagedKeys => {
                split_staged(prefix).map(|(id, rest)| [self.id_hash(id).as_slice(), rest].concat())
            }
            _ => None,
        }
    }

    /// The digest element of a live record: HMAC(table name ‖ 0 ‖ u32 BE stored key length ‖
    /// stored key ‖ commit).
    fn element(&self, table: Table, stored: &[u8], commit: u64) -> [u8; DIGEST_LEN] {
        let mut ctx = hmac::Context::with_key(&self.digest);
        ctx.update(table.name().as_bytes());
        ctx.update(&[0]);
        ctx.update(
            &u32::try_from(stored.len())
                .unwrap_or(u32::MAX)
                .to_be_bytes(),
        );
        ctx.update(stored);
        ctx.update(&commit.to_be_bytes());
        let mut out = [0; DIGEST_LEN];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// Seals the check record (format 1, as every version wrote it).
    fn seal_check(&self, nonces: &mut Nonces<'_>) -> Result<Write, StoreError> {
        let nonce = nonces.next()?;
        let mut body = Zeroizing::new(CHECK_VALUE.to_vec());
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad_legacy(SEALED_V1, Table::Meta, CHECK_KEY)),
                &mut *body,
            )
            .map_err(|_| StoreError::Backend("sealing failed".into()))?;
        let mut out = Zeroizing::new(Vec::with_capacity(1 + NONCE_LEN + body.len()));
        out.push(SEALED_V1);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Ok(Write::Put {
            table: Table::Meta,
            key: CHECK_KEY.to_vec(),
            value: out,
        })
    }

    /// Opens `nonce ‖ ciphertext ‖ tag` with `aad`: the plaintext, or `None` if it does not
    /// open (a wrong key, or a body changed or sealed for other associated data).
    fn open_body(&self, sealed: &[u8], aad: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
        if sealed.len() < NONCE_LEN + 16 {
            return None;
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = Zeroizing::new(body.to_vec());
        let len = self
            .aead
            .open_in_place(nonce, Aad::from(aad), &mut body)
            .ok()?
            .len();
        body.truncate(len);
        Some(body)
    }

    /// Opens a value of format 1 or 2 stored under `stored`: `(record key, value)`; `None` if
    /// the store key is wrong or the value was changed or moved.
    fn open_legacy(&self, table: Table, stored: &[u8], sealed: &[u8]) -> Option<Record> {
        let (&version, rest) = sealed.split_first()?;
        if !(version == SEALED_V1 || version == SEALED_V2) {
            return None;
        }
        let body = self.open_body(rest, &aad_legacy(version, table, stored))?;
        if version == SEALED_V1 {
            return Some((stored.to_vec(), body));
        }
        split_body(&body)
    }

    /// Seals `(key, value)` stored under `stored`, written by `commit` of store `id`
    /// (format 3).
    fn seal(
        &self,
        nonces: &mut Nonces<'_>,
        at: (&[u8; STORE_ID_LEN], u64),
        table: Table,
        key: &[u8],
        stored: &[u8],
        value: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        let (id, commit) = at;
        let nonce = nonces.next()?;
        let len = u16::try_from(key.len())
            .map_err(|_| StoreError::Backend("a record key is too long to seal".into()))?;
        let mut body = Zeroizing::new(Vec::with_capacity(2 + key.len() + value.len() + 16));
        body.extend_from_slice(&len.to_be_bytes());
        body.extend_from_slice(key);
        body.extend_from_slice(value);
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(id, commit, table, stored)),
                &mut *body,
            )
            .map_err(|_| StoreError::Backend("sealing failed".into()))?;
        let mut out = Zeroizing::new(Vec::with_capacity(SEAL_OVERHEAD + body.len()));
        out.push(SEALED_V3);
        out.extend_from_slice(&commit.to_be_bytes());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Opens a format 3 value stored under `stored`, which must have been written by `commit`
    /// of store `id`: `(record key, value)`, or `None`.
    fn open(
        &self,
        at: (&[u8; STORE_ID_LEN], u64),
        table: Table,
        stored: &[u8],
        sealed: &[u8],
    ) -> Option<Record> {
        let (id, commit) = at;
        if commit_of(sealed)? != commit {
            return None;
        }
        let rest = sealed.get(1 + COMMIT_LEN..)?;
        let body = self.open_body(rest, &aad(id, commit, table, stored))?;
        split_body(&body)
    }

    /// The write that stores `(key, value)` sealed, written by `commit` of store `id`, and
    /// its stored key.
    fn put(
        &self,
        nonces: &mut Nonces<'_>,
        at: (&[u8; STORE_ID_LEN], u64),
        table: Table,
        key: &[u8],
        value: &[u8],
    ) -> Result<Write, StoreError> {
        let stored = self.stored_key(table, key);
        let value = self.seal(nonces, at, table, key, &stored, value)?;
        Ok(Write::Put {
            table,
            key: stored,
            value,
        })
    }

    /// Seals a manifest.
    fn seal_manifest(
        &self,
        nonces: &mut Nonces<'_>,
        manifest: &Manifest,
    ) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        let nonce = nonces.next()?;
        let mut body = Zeroizing::new(Vec::with_capacity(MANIFEST_LEN + 16));
        body.extend_from_slice(&manifest.store_id);
        body.extend_from_slice(&manifest.commit.to_be_bytes());
        body.extend_from_slice(&(manifest.entries.len() as u64).to_be_bytes());
        body.extend_from_slice(&manifest.digest);
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from([&[SEALED_V3][..], MANIFEST_AAD].concat()),
                &mut *body,
            )
            .map_err(|_| StoreError::Backend("sealing failed".into()))?;
        let mut out = Zeroizing::new(Vec::with_capacity(1 + NONCE_LEN + body.len()));
        out.push(SEALED_V3);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Opens a manifest: `(store id, commit, number of records, digest)`.
    fn open_manifest(&self, sealed: &[u8]) -> Option<([u8; STORE_ID_LEN], u64, u64, [u8; 32])> {
        let (&SEALED_V3, rest) = sealed.split_first()? else {
            return None;
        };
        let body = self.open_body(rest, &[&[SEALED_V3][..], MANIFEST_AAD].concat())?;
        let (id, rest) = body.split_first_chunk::<STORE_ID_LEN>()?;
        let (commit, rest) = rest.split_first_chunk::<COMMIT_LEN>()?;
        let (count, rest) = rest.split_first_chunk::<8>()?;
        let digest = <[u8; DIGEST_LEN]>::try_from(rest).ok()?;
        Some((
            *id,
            u64::from_be_bytes(*commit),
            u64::from_be_bytes(*count),
            digest,
        ))
    }
}

/// Random nonces from the system's generator, drawn in bulk: a commit that seals thousands of
/// records (a fan-out) makes a few calls to the generator instead of one per record.
struct Nonces<'r> {
    rng: &'r SystemRandom,
    pool: Vec<u8>,
    used: usize,
    /// How many nonces the next refill draws.
    wanted: usize,
}

impl<'r> Nonces<'r> {
    /// Most nonces drawn at once (12 KiB).
    const MAX_BATCH: usize = 1024;

    /// A source for about `expected` nonces (more are drawn if needed).
    fn new(rng: &'r SystemRandom, expected: usize) -> Self {
        Self {
            rng,
            pool: Vec::new(),
            used: 0,
            wanted: expected.clamp(1, Self::MAX_BATCH),
        }
    }

    fn next(&mut self) -> Result<[u8; NONCE_LEN], StoreError> {
        if self.used >= self.pool.len() {
            self.pool = vec![0; self.wanted * NONCE_LEN];
            self.rng
                .fill(&mut self.pool)
                .map_err(|_| StoreError::Backend("no randomness for a nonce".into()))?;
            self.used = 0;
        }
        let nonce = self
            .pool
            .get(self.used..self.used + NONCE_LEN)
            .and_then(|n| <[u8; NONCE_LEN]>::try_from(n).ok())
            .ok_or_else(|| StoreError::Backend("the nonce pool is short".into()))?;
        self.used += NONCE_LEN;
        Ok(nonce)
    }
}

/// The associated data of formats 1 and 2: the table and the stored key; format 2 also binds
/// the version.
fn aad_legacy(version: u8, table: Table, stored: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(1 + table.name().len() + 1 + stored.len());
    if version != SEALED_V1 {
        aad.push(version);
    }
    aad.extend_from_slice(table.name().as_bytes());
    aad.push(0);
    aad.extend_from_slice(stored);
    aad
}

/// The associated data of format 3: version, store id, commit, table and stored key.
fn aad(id: &[u8; STORE_ID_LEN], commit: u64, table: Table, stored: &[u8]) -> Vec<u8> {
    let mut aad =
        Vec::with_capacity(1 + STORE_ID_LEN + COMMIT_LEN + table.name().len() + 1 + stored.len());
    aad.push(SEALED_V3);
    aad.extend_from_slice(id);
    aad.extend_from_slice(&commit.to_be_bytes());
    aad.extend_from_slice(table.name().as_bytes());
    aad.push(0);
    aad.extend_from_slice(stored);
    aad
}

/// What the store committed: its id, its commit, and every live record's commit by table and
/// stored key, with the digest of that set.
#[derive(Clone)]
struct Manifest {
    store_id: [u8; STORE_ID_LEN],
    commit: u64,
    digest: [u8; DIGEST_LEN],
    entries: BTreeMap<(Table, Vec<u8>), u64>,
    /// The manifest record as this handle last read or wrote it: when the stored one differs,
    /// someone else committed (or replaced the store).
    raw: Vec<u8>,
}

impl Manifest {
    /// An empty manifest of a new store id.
    fn new(rng: &SystemRandom) -> Result<Self, StoreError> {
        let mut store_id = [0; STORE_ID_LEN];
        rng.fill(&mut store_id)
            .map_err(|_| StoreError::Backend("no randomness for a store id".into()))?;
        Ok(Self {
            store_id,
            commit: 0,
            digest: [0; DIGEST_LEN],
            entries: BTreeMap::new(),
            raw: Vec::new(),
        })
    }

    fn toggle(&mut self, element: &[u8; DIGEST_LEN]) {
        for (d, e) in self.digest.iter_mut().zip(element) {
            *d ^= e;
        }
    }

    /// Records that `(table, stored)` is now written by `commit` (or deleted: `None`);
    /// returns what it was.
    fn set(
        &mut self,
        keys: &Keys,
        table: Table,
        stored: &[u8],
        commit: Option<u64>,
    ) -> Option<u64> {
        let slot = (table, stored.to_vec());
        let old = match commit {
            Some(c) => self.entries.insert(slot, c),
            None => self.entries.remove(&slot),
        };
        if let Some(old) = old {
            self.toggle(&keys.element(table, stored, old));
        }
        if let Some(c) = commit {
            self.toggle(&keys.element(table, stored, c));
        }
        old
    }
}

/// Whether a stored meta record belongs to the sealing itself (hidden from scans, outside the
/// manifest).
fn is_own_meta(table: Table, key: &[u8]) -> bool {
    table == Table::Meta
        && (key == CHECK_KEY || key == META_SEALED_IDS_HASHED || key == META_SEALED_MANIFEST)
}

/// A [`Storage`] whose records are sealed with a [`StoreKey`] and bound to the store and the
/// commit that wrote them (see the module docs of `storage::sealed`).
///
/// Session ids (the contact list) are not stored in the clear: in the sessions and staged-keys
/// tables the session id in a key is replaced by its HMAC-SHA256 under a key derived from the
/// store key, and the clear key is sealed inside the record, so listing sessions still works.
/// Visible to whoever has the file but not the key: the number of sessions and of staged keys
/// per session, record sizes, the commit that last wrote each record, prekey ids, and
/// staged-key ids (a session tag, the peer's public ratchet key and a counter: they match
/// envelopes seen on the wire, but name no one).
///
/// A record missing, older than the store last committed, moved or from another store is
/// refused with [`StoreError::Tampered`] (514) by the operation that reads it (opening the
/// store reads them all).
pub struct SealedStorage<S: Storage> {
    inner: S,
    keys: Keys,
    rng: SystemRandom,
    manifest: Mutex<Manifest>,
    /// Whether an operation is open (begun and not yet committed or ended): the store's
    /// exclusion is held and the manifest is current.
    in_operation: bool,
}

fn damaged(table: Table, key: &[u8]) -> StoreError {
    StoreError::Corrupt(format!(
        "a sealed {} record does not open ({} key bytes)",
        table.name(),
        key.len()
    ))
}

impl<S: Storage> SealedStorage<S> {
    /// Opens sealed storage. A new (empty) storage gets the check record and an empty
    /// manifest; one sealed with another key is refused with [`StoreError::WrongKey`]; one
    /// that holds unsealed records is refused with [`StoreError::NotSealed`] (see
    /// [`SealedStorage::seal_existing`]); one whose records do not match its manifest with
    /// [`StoreError::Tampered`]. Nothing is changed when it is refused. A store sealed in an
    /// older format is brought to the current one (one commit).
    pub fn open(mut inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        let keys = key.keys()?;
        let rng = SystemRandom::new();
        let manifest = Mutex::new(Manifest::new(&rng)?);
        // Under the store's exclusion: another process opening it at the same time must not
        // initialise or migrate it again from what it read before this one's commit.
        let _ = inner.begin()?;
        let mut sealed = Self {
            inner,
            keys,
            rng,
            manifest,
            in_operation: true,
        };
        let checked = sealed.check_or_initialise();
        sealed.in_operation = false;
        // Nothing to do if a commit ended the operation.
        let ended = sealed.inner.end();
        checked?;
        ended?;
        Ok(sealed)
    }

    fn lock(&self) -> Result<MutexGuard<'_, Manifest>, StoreError> {
        self.manifest
            .lock()
            .map_err(|_| StoreError::Backend("the sealed store's manifest is poisoned".into()))
    }

    /// What [`open`](Self::open) does inside its operation.
    fn check_or_initialise(&mut self) -> Result<(), StoreError> {
        match self.inner.get(Table::Meta, CHECK_KEY)? {
            Some(check) => match self.keys.open_legacy(Table::Meta, CHECK_KEY, &check) {
                Some((_, value)) if value.as_slice() == CHECK_VALUE => {}
                Some(_) => {
                    return Err(StoreError::Corrupt(
                        "the seal check record is damaged".into(),
                    ));
                }
                None => return Err(StoreError::WrongKey),
            },
            None => {
                for table in Table::ALL {
                    if !self.inner.scan(table, &[])?.is_empty() {
                        return Err(StoreError::NotSealed);
                    }
                }
                let nonces = &mut Nonces::new(&self.rng, 2);
                let check = self.keys.seal_check(nonces)?;
                let mut manifest = Manifest::new(&self.rng)?;
                manifest.commit = 1;
                let raw = self.keys.seal_manifest(nonces, &manifest)?;
                return self.commit_all(vec![check], manifest, raw);
            }
        }
        match self.inner.get(Table::Meta, META_SEALED_MANIFEST)? {
            Some(raw) => {
                let manifest = self.load(raw.to_vec())?;
                *self.lock()? = manifest;
                Ok(())
            }
            None => self.upgrade(),
        }
    }

    /// Stores `writes` (sealed already) with `manifest` (its entries and digest updated for
    /// them, its commit the one that writes them), in one commit, and keeps the manifest.
    fn commit_all(
        &mut self,
        mut writes: Vec<Write>,
        mut manifest: Manifest,
        raw: Zeroizing<Vec<u8>>,
    ) -> Result<(), StoreError> {
        manifest.raw = raw.to_vec();
        writes.push(Write::Put {
            table: Table::Meta,
            key: META_SEALED_MANIFEST.to_vec(),
            value: raw,
        });
        self.inner.commit(&writes)?;
        *self.lock()? = manifest;
        Ok(())
    }

    /// Brings a store sealed in format 1 or 2 to format 3, in one commit: every record
    /// re-sealed at commit 1 of a new store id, session ids hashed, the manifest written.
    fn upgrade(&mut self) -> Result<(), StoreError> {
        let mut manifest = Manifest::new(&self.rng)?;
        manifest.commit = 1;
        let at_id = manifest.store_id;
        let mut writes = Vec::new();
        let nonces = &mut Nonces::new(&self.rng, Nonces::MAX_BATCH);
        for table in Table::ALL {
            for (stored, sealed) in self.inner.scan(table, &[])? {
                if is_own_meta(table, &stored) {
                    continue;
                }
                // A record of format 3 in a store without a manifest: the manifest was deleted.
                if sealed.first() == Some(&SEALED_V3) {
                    return Err(tampered(Some(Table::Meta), Tamper::Missing));
                }
                let (key, value) = self
                    .keys
                    .open_legacy(table, &stored, &sealed)
                    .ok_or_else(|| damaged(table, &stored))?;
                writes.push(Write::Delete { table, key: stored });
                let put = self.keys.put(nonces, (&at_id, 1), table, &key, &value)?;
                if let Write::Put { key: stored, .. } = &put {
                    manifest.set(&self.keys, table, stored, Some(1));
                }
                writes.push(put);
            }
        }
        writes.push(Write::Delete {
            table: Table::Meta,
            key: META_SEALED_IDS_HASHED.to_vec(),
        });
        let raw = self.keys.seal_manifest(nonces, &manifest)?;
        self.commit_all(writes, manifest, raw)
    }

    /// Reads the manifest `raw` and checks every stored record against it: the manifest of the
    /// store as it is now.
    fn load(&self, raw: Vec<u8>) -> Result<Manifest, StoreError> {
        let (store_id, commit, count, digest) = self
            .keys
            .open_manifest(&raw)
            .ok_or_else(|| tampered(None, Tamper::Manifest))?;
        let mut manifest = Manifest {
            store_id,
            commit,
            digest: [0; DIGEST_LEN],
            entries: BTreeMap::new(),
            raw,
        };
        for table in Table::ALL {
            for (stored, sealed) in self.inner.scan(table, &[])? {
                if is_own_meta(table, &stored) {
                    continue;
                }
                // A record of an older format (before the upgrade) or from after the
                // manifest's commit was never committed as it is.
                let written = commit_of(&sealed)
                    .filter(|c| *c <= commit)
                    .ok_or_else(|| tampered(Some(table), Tamper::NotCommitted))?;
                manifest.set(&self.keys, table, &stored, Some(written));
            }
        }
        let same =
            manifest.digest[..].ct_eq(&digest[..]) & (manifest.entries.len() as u64).ct_eq(&count);
        if !bool::from(same) {
            return Err(tampered(None, Tamper::Manifest));
        }
        manifest.digest = digest;
        Ok(manifest)
    }

    /// Brings the manifest up to date with the store: read again if `stale` (another handle
    /// committed) or if the stored manifest differs from the one this handle knows. A store
    /// whose manifest goes back, or belongs to another store, is refused. Whether it was read
    /// again.
    fn refresh(&self, manifest: &mut Manifest, stale: bool) -> Result<bool, StoreError> {
        let raw = self
            .inner
            .get(Table::Meta, META_SEALED_MANIFEST)?
            .ok_or_else(|| tampered(Some(Table::Meta), Tamper::Missing))?;
        if !stale && raw.as_slice() == manifest.raw.as_slice() {
            return Ok(false);
        }
        let now = self.load(raw.to_vec())?;
        if !bool::from(now.store_id.ct_eq(&manifest.store_id)) {
            return Err(tampered(None, Tamper::Manifest));
        }
        if now.commit < manifest.commit {
            return Err(StoreError::RolledBack {
                store: now.commit,
                expected: manifest.commit,
            });
        }
        *manifest = now;
        Ok(true)
    }

    /// Runs `read` against the current manifest. Inside an operation the manifest is current;
    /// outside one (no exclusion) another handle may commit between statements, so the read
    /// counts only if the stored manifest was the same before and after it.
    fn read<T>(
        &self,
        read: impl Fn(&Self, &Manifest) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut manifest = self.lock()?;
        if self.in_operation {
            return read(self, &manifest);
        }
        for _ in 0..MAX_UNLOCKED_READ_ATTEMPTS {
            let before = self.inner.get(Table::Meta, META_SEALED_MANIFEST)?;
            let result = self
                .refresh(&mut manifest, false)
                .and_then(|_| read(self, &manifest));
            let after = self.inner.get(Table::Meta, META_SEALED_MANIFEST)?;
            if before == after {
                return result;
            }
        }
        Err(StoreError::Busy)
    }

    /// [`Storage::get`] against `manifest`.
    fn get_in(
        &self,
        manifest: &Manifest,
        table: Table,
        key: &[u8],
    ) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        let stored = self.keys.stored_key(table, key);
        let expected = manifest.entries.get(&(table, stored.clone()));
        match (expected, self.inner.get(table, &stored)?) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(tampered(Some(table), Tamper::Missing)),
            (None, Some(_)) => Err(tampered(Some(table), Tamper::Unexpected)),
            (Some(&commit), Some(sealed)) => {
                match self
                    .keys
                    .open((&manifest.store_id, commit), table, &stored, &sealed)
                {
                    Some((k, value)) if k == key => Ok(Some(value)),
                    _ => Err(tampered(Some(table), Tamper::NotCommitted)),
                }
            }
        }
    }

    /// [`Storage::scan`] against `manifest`.
    fn scan_in(
        &self,
        manifest: &Manifest,
        table: Table,
        prefix: &[u8],
    ) -> Result<Vec<Record>, StoreError> {
        let stored_prefix = self.keys.stored_prefix(table, prefix).unwrap_or_default();
        let mut out = Vec::new();
        let mut seen = 0usize;
        for (stored, sealed) in self.inner.scan(table, &stored_prefix)? {
            if is_own_meta(table, &stored) {
                continue;
            }
            let commit = *manifest
                .entries
                .get(&(table, stored.clone()))
                .ok_or_else(|| tampered(Some(table), Tamper::Unexpected))?;
            let (key, value) = self
                .keys
                .open((&manifest.store_id, commit), table, &stored, &sealed)
                .ok_or_else(|| tampered(Some(table), Tamper::NotCommitted))?;
            seen += 1;
            if key.starts_with(prefix) {
                out.push((key, value));
            }
        }
        // Every record committed under the prefix came back.
        let committed = manifest
            .entries
            .range((table, stored_prefix.clone())..)
            .take_while(|((t, k), _)| *t == table && k.starts_with(&stored_prefix))
            .count();
        if seen != committed {
            return Err(tampered(Some(table), Tamper::Missing));
        }
        // Hashed ids come back in hash order; callers expect key order.
        if hides_ids(table) {
            out.sort_by(|a, b| a.0.cmp(&b.0));
        }
        Ok(out)
    }

    /// Seals every record of an unsealed storage with `key`, in one commit, and opens it.
    pub fn seal_existing(inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        if inner.get(Table::Meta, CHECK_KEY)?.is_some() {
            return Err(StoreError::Corrupt("the store is sealed already".into()));
        }
        let keys = key.keys()?;
        let rng = SystemRandom::new();
        let mut manifest = Manifest::new(&rng)?;
        manifest.commit = 1;
        let id = manifest.store_id;
        let nonce_rng = SystemRandom::new();
        let nonces = &mut Nonces::new(&nonce_rng, Nonces::MAX_BATCH);
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (k, v) in inner.scan(table, &[])? {
                if hides_ids(table) {
                    writes.push(Write::Delete {
                        table,
                        key: k.clone(),
                    });
                }
                let put = keys.put(nonces, (&id, 1), table, &k, &v)?;
                if let Write::Put { key: stored, .. } = &put {
                    manifest.set(&keys, table, stored, Some(1));
                }
                writes.push(put);
            }
        }
        writes.push(keys.seal_check(nonces)?);
        let mut sealed = Self {
            inner,
            keys,
            rng,
            manifest: Mutex::new(Manifest::new(&SystemRandom::new())?),
            in_operation: false,
        };
        let raw = sealed.keys.seal_manifest(nonces, &manifest)?;
        sealed.commit_all(writes, manifest, raw)?;
        Ok(sealed)
    }

    /// Re-seals every record with `new_key`, in one commit: after a crash the store is sealed
    /// entirely with the old key or entirely with the new one. Every record is checked against
    /// the manifest first.
    pub fn rekey(&mut self, new_key: &StoreKey) -> Result<(), StoreError> {
        let new = new_key.keys()?;
        let _ = self.begin()?;
        let result = self.rekey_in(&new);
        self.in_operation = false;
        // Nothing to do if the commit ended the operation.
        let ended = self.inner.end();
        result?;
        ended?;
        self.keys = new;
        Ok(())
    }

    fn rekey_in(&mut self, new: &Keys) -> Result<(), StoreError> {
        let old = self.lock()?.clone();
        let mut manifest = Manifest {
            store_id: old.store_id,
            commit: old
                .commit
                .checked_add(1)
                .ok_or_else(|| StoreError::Corrupt("the sealed commit is exhausted".into()))?,
            digest: [0; DIGEST_LEN],
            entries: BTreeMap::new(),
            raw: Vec::new(),
        };
        let at = (&old.store_id, manifest.commit);
        let nonces = &mut Nonces::new(&self.rng, Nonces::MAX_BATCH);
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (key, value) in self.scan_in(&old, table, &[])? {
                let stored = self.keys.stored_key(table, &key);
                if hides_ids(table) {
                    writes.push(Write::Delete { table, key: stored });
                }
                let put = new.put(nonces, at, table, &key, &value)?;
                if let Write::Put { key: stored, .. } = &put {
                    manifest.set(new, table, stored, Some(manifest.commit));
                }
                writes.push(put);
            }
        }
        writes.push(new.seal_check(nonces)?);
        let raw = new.seal_manifest(nonces, &manifest)?;
        manifest.raw = raw.to_vec();
        writes.push(Write::Put {
            table: Table::Meta,
            key: META_SEALED_MANIFEST.to_vec(),
            value: raw,
        });
        self.inner.commit(&writes)?;
        *self.lock()? = manifest;
        Ok(())
    }

    /// The storage underneath, for maintenance that changes no record (compaction).
    #[cfg(feature = "sqlite")]
    pub(crate) fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The storage underneath.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Storage> Storage for SealedStorage<S> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        if is_own_meta(table, key) {
            // The check record is the only one a caller may ask for (to tell a sealed store).
            return match self.inner.get(table, key)? {
                Some(sealed) if key == CHECK_KEY => self
                    .keys
                    .open_legacy(table, key, &sealed)
                    .map(|(_, value)| Some(value))
                    .ok_or_else(|| damaged(table, key)),
                _ => Ok(None),
            };
        }
        self.read(|this, manifest| this.get_in(manifest, table, key))
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        self.read(|this, manifest| this.scan_in(manifest, table, prefix))
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        // A commit on its own is an operation of its own: the manifest must be current.
        if !self.in_operation {
            let _ = self.begin()?;
        }
        self.in_operation = false;
        let mut manifest = match self.manifest.lock() {
            Ok(m) => m,
            Err(_) => {
                let _ = self.inner.end();
                return Err(StoreError::Backend(
                    "the sealed store's manifest is poisoned".into(),
                ));
            }
        };
        let Some(commit) = manifest.commit.checked_add(1) else {
            let _ = self.inner.end();
            return Err(StoreError::Corrupt("the sealed commit is exhausted".into()));
        };
        let before = (manifest.commit, manifest.digest);
        let mut undo: Vec<(Table, Vec<u8>, Option<u64>)> = Vec::with_capacity(writes.len());
        let puts = writes
            .iter()
            .filter(|w| matches!(w, Write::Put { .. }))
            .count();
        let nonces = &mut Nonces::new(&self.rng, puts + 1);
        let id = manifest.store_id;
        let mut sealed = Vec::with_capacity(writes.len() + 1);
        let mut prepared = Ok(());
        for write in writes {
            let (table, key) = match write {
                Write::Put { table, key, .. } | Write::Delete { table, key } => (*table, key),
            };
            if is_own_meta(table, key) {
                prepared = Err(StoreError::Backend(
                    "a record key reserved for the sealing".into(),
                ));
                break;
            }
            let stored = self.keys.stored_key(table, key);
            match write {
                Write::Put { value, .. } => {
                    match self
                        .keys
                        .seal(nonces, (&id, commit), table, key, &stored, value)
                    {
                        Ok(value) => {
                            let old = manifest.set(&self.keys, table, &stored, Some(commit));
                            undo.push((table, stored.clone(), old));
                            sealed.push(Write::Put {
                                table,
                                key: stored,
                                value,
                            });
                        }
                        Err(e) => {
                            prepared = Err(e);
                            break;
                        }
                    }
                }
                Write::Delete { .. } => {
                    let old = manifest.set(&self.keys, table, &stored, None);
                    undo.push((table, stored.clone(), old));
                    sealed.push(Write::Delete { table, key: stored });
                }
            }
        }
        manifest.commit = commit;
        let raw = prepared.and_then(|()| self.keys.seal_manifest(nonces, &manifest));
        let stored = raw.and_then(|raw| {
            sealed.push(Write::Put {
                table: Table::Meta,
                key: META_SEALED_MANIFEST.to_vec(),
                value: raw.clone(),
            });
            self.inner.commit(&sealed).map(|()| raw)
        });
        match stored {
            Ok(raw) => {
                manifest.raw = raw.to_vec();
                Ok(())
            }
            Err(e) => {
                // Nothing was stored: the manifest goes back to what the store holds.
                for (table, key, old) in undo.into_iter().rev() {
                    match old {
                        Some(c) => manifest.entries.insert((table, key), c),
                        None => manifest.entries.remove(&(table, key)),
                    };
                }
                (manifest.commit, manifest.digest) = before;
                let _ = self.inner.end();
                Err(e)
            }
        }
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        let freshness = self.inner.begin()?;
        let refreshed = self
            .lock()
            .and_then(|mut m| self.refresh(&mut m, freshness == Freshness::Stale));
        match refreshed {
            Ok(reloaded) => {
                self.in_operation = true;
                // A manifest that changed without the backend noticing (the file replaced
                // under it) makes what the caller cached stale too.
                Ok(if reloaded {
                    Freshness::Stale
                } else {
                    freshness
                })
            }
            Err(e) => {
                let _ = self.inner.end();
                Err(e)
            }
        }
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.in_operation = false;
        self.inner.end()
    }

    fn erase_deleted(&mut self) -> Result<bool, StoreError> {
        self.inner.erase_deleted()
    }
}

#[cfg(test)]
mod tests {
    use super::{NONCE_LEN, Nonces, SystemRandom};

    /// Nonces drawn in bulk are still all different, across refills of the pool too.
    #[test]
    fn bulk_nonces_do_not_repeat() -> Result<(), crate::StoreError> {
        let rng = SystemRandom::new();
        let mut nonces = Nonces::new(&rng, 100);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            assert!(seen.insert(nonces.next()?), "a nonce repeated");
        }
        assert_eq!(
            nonces.pool.len(),
            100 * NONCE_LEN,
            "refilled by the hundred"
        );
        Ok(())
    }
}
