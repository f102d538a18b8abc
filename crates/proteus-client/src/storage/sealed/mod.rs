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
//! tables, and in the keys of pinned identities (`pinned/` ‖ session id, meta), the session id
//! part of a key is replaced by its HMAC-SHA256 under a key derived from the store key, and the clear key travels inside the sealed body. What stays visible to
//! whoever has the file without the key: the number of sessions, of pinned identities and of
//! staged keys per session, record sizes, the commit that last wrote each record, prekey ids, and the
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

use ring::rand::SystemRandom;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::{Freshness, Record, Storage, Table, Write};
use crate::error::{StoreError, Tamper};
use crate::records::{META_SEALED_IDS_HASHED, META_SEALED_MANIFEST};

mod format;
mod manifest;

use self::format::{
    CHECK_KEY, CHECK_VALUE, DIGEST_LEN, Keys, Nonces, SEALED_V3, commit_of, hides_id, hides_ids,
    tampered,
};
pub use self::format::{SEAL_OVERHEAD, StoreKey};
use self::manifest::Manifest;

/// How many times a read outside an operation (no exclusion held, so another handle may
/// commit between its statements) is tried before [`StoreError::Busy`].
pub const MAX_UNLOCKED_READ_ATTEMPTS: usize = 4;

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
        if hides_ids(table) || table == Table::Meta {
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
                if hides_id(table, &k) {
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
                if hides_id(table, &key) {
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
        self.commit_all(writes, manifest, raw)
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
