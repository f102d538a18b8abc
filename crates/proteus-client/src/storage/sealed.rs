//! Encryption at rest: a [`Storage`] that seals every record with an application key.
//!
//! Each value is stored as `version (1) ‖ nonce (12) ‖ ChaCha20-Poly1305(body) ‖ tag (16)`
//! (ring), with the record's table and stored key as associated data, so a record moved to
//! another key or table fails to open. Nonces are random: one key seals at most a few million
//! records over a store's life, far below the birthday bound of 96-bit nonces. A check record
//! sealed with the key tells a wrong key ([`StoreError::WrongKey`]) from damage, before anything
//! is written.
//!
//! Session ids (the contact list) are not stored in the clear: in the sessions and staged-keys
//! tables the session id part of a key is replaced by its HMAC-SHA256 under a key derived from
//! the store key, and the clear key travels inside the sealed body (format 2: `u16 BE key
//! length ‖ key ‖ value`, the version byte in the associated data too). Stores sealed before
//! (format 1, clear ids) are migrated in one commit when first opened. What stays visible to
//! whoever has the file without the key: the number of sessions and of staged keys per
//! session, record sizes, prekey ids, and the staged-key ids (session tag, the peer's public
//! ratchet key, a counter), which match envelopes seen on the wire but name no one.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use zeroize::Zeroizing;

use super::{Freshness, Record, Storage, Table, Write};
use crate::error::StoreError;
use crate::records::META_SEALED_IDS_HASHED;

/// Sealed format 1: the body is the value; the stored key is the record's key.
const SEALED_V1: u8 = 1;
/// Sealed format 2 (sessions and staged keys): the body is `u16 BE key length ‖ key ‖ value`;
/// the stored key has the session id replaced by its keyed hash.
const SEALED_V2: u8 = 2;
/// Derives the session-id hashing key from the store key. Part of the stored format: it keeps
/// the crate's old name (proteus-store) and must never change.
const ID_KEY_LABEL: &[u8] = b"proteus-store sealed session ids v1";
/// Bytes a sealed value adds to the plaintext: version, nonce and tag (records of sessions and
/// staged keys also carry their key: 2 bytes of length and the key).
pub const SEAL_OVERHEAD: usize = 1 + NONCE_LEN + 16;
/// The meta record that only the right key opens; its presence marks an encrypted store.
const CHECK_KEY: &[u8] = crate::records::META_SEAL_CHECK;
/// Part of the stored format, like [`ID_KEY_LABEL`]: never change it.
const CHECK_VALUE: &[u8] = b"proteus-store sealed v1";

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
        let derived = hmac::sign(
            &hmac::Key::new(hmac::HMAC_SHA256, self.0.as_slice()),
            ID_KEY_LABEL,
        );
        Ok(Keys {
            aead,
            ids: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
        })
    }
}

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreKey(..)")
    }
}

/// What a store key gives: the sealing key and the session-id hashing key.
struct Keys {
    aead: LessSafeKey,
    ids: hmac::Key,
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

    /// Seals `value` stored under `stored` (the record's `key` inside the body for format 2).
    fn seal(
        &self,
        nonces: &mut Nonces<'_>,
        table: Table,
        key: &[u8],
        stored: &[u8],
        value: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, StoreError> {
        let version = if hides_ids(table) {
            SEALED_V2
        } else {
            SEALED_V1
        };
        let nonce = nonces.next()?;
        let mut body = Zeroizing::new(Vec::with_capacity(2 + key.len() + value.len() + 16));
        if version == SEALED_V2 {
            let len = u16::try_from(key.len())
                .map_err(|_| StoreError::Backend("a record key is too long to seal".into()))?;
            body.extend_from_slice(&len.to_be_bytes());
            body.extend_from_slice(key);
        }
        body.extend_from_slice(value);
        self.aead
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(version, table, stored)),
                &mut *body,
            )
            .map_err(|_| StoreError::Backend("sealing failed".into()))?;
        let mut out = Zeroizing::new(Vec::with_capacity(1 + NONCE_LEN + body.len()));
        out.push(version);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        Ok(out)
    }

    /// Opens a value stored under `stored`: `(record key, value)`; `None` if the store key is
    /// wrong or the value was changed or moved.
    fn open(&self, table: Table, stored: &[u8], sealed: &[u8]) -> Option<Record> {
        let (&version, rest) = sealed.split_first()?;
        if !(version == SEALED_V1 || version == SEALED_V2) || rest.len() < NONCE_LEN + 16 {
            return None;
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = Zeroizing::new(body.to_vec());
        let len = self
            .aead
            .open_in_place(nonce, Aad::from(aad(version, table, stored)), &mut body)
            .ok()?
            .len();
        body.truncate(len);
        if version == SEALED_V1 {
            return Some((stored.to_vec(), body));
        }
        let (key_len, rest) = body.split_first_chunk::<2>()?;
        let (key, value) = rest.split_at_checked(usize::from(u16::from_be_bytes(*key_len)))?;
        Some((key.to_vec(), Zeroizing::new(value.to_vec())))
    }

    /// The write that stores `(key, value)` sealed.
    fn put(
        &self,
        nonces: &mut Nonces<'_>,
        table: Table,
        key: &[u8],
        value: &[u8],
    ) -> Result<Write, StoreError> {
        let stored = self.stored_key(table, key);
        let value = self.seal(nonces, table, key, &stored, value)?;
        Ok(Write::Put {
            table,
            key: stored,
            value,
        })
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

/// The associated data: the table and the stored key; format 2 also binds the version.
fn aad(version: u8, table: Table, stored: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(1 + table.name().len() + 1 + stored.len());
    if version != SEALED_V1 {
        aad.push(version);
    }
    aad.extend_from_slice(table.name().as_bytes());
    aad.push(0);
    aad.extend_from_slice(stored);
    aad
}

/// A [`Storage`] whose records are sealed with a [`StoreKey`] (ChaCha20-Poly1305, the table and
/// stored key as associated data).
///
/// Session ids (the contact list) are not stored in the clear: in the sessions and staged-keys
/// tables the session id in a key is replaced by its HMAC-SHA256 under a key derived from the
/// store key, and the clear key is sealed inside the record, so listing sessions still works.
/// Stores sealed before (ids in the clear) are migrated in one commit when first opened.
/// Visible to whoever has the file but not the key: the number of sessions and of staged keys
/// per session, record sizes, prekey ids, and staged-key ids (a session tag, the peer's public
/// ratchet key and a counter: they match envelopes seen on the wire, but name no one).
pub struct SealedStorage<S: Storage> {
    inner: S,
    keys: Keys,
    rng: SystemRandom,
}

/// Whether a stored meta record belongs to the sealing itself (hidden from scans).
fn is_own_meta(table: Table, key: &[u8]) -> bool {
    table == Table::Meta && (key == CHECK_KEY || key == META_SEALED_IDS_HASHED)
}

impl<S: Storage> SealedStorage<S> {
    /// Opens sealed storage. A new (empty) storage gets the check record; one sealed with another
    /// key is refused with [`StoreError::WrongKey`]; one that holds unsealed records is refused
    /// with [`StoreError::NotSealed`] (see [`SealedStorage::seal_existing`]). Nothing is changed
    /// when it is refused. A store sealed with session ids in the clear is migrated (one
    /// commit).
    pub fn open(mut inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        let keys = key.keys()?;
        let rng = SystemRandom::new();
        // Under the store's exclusion: another process opening it at the same time must not
        // initialise or migrate it again from what it read before this one's commit.
        let _ = inner.begin()?;
        let mut sealed = Self { inner, keys, rng };
        let checked = sealed.check_or_initialise();
        // Nothing to do if a commit ended the operation.
        let ended = sealed.inner.end();
        checked?;
        ended?;
        Ok(sealed)
    }

    /// What [`open`](Self::open) does inside its operation.
    fn check_or_initialise(&mut self) -> Result<(), StoreError> {
        match self.inner.get(Table::Meta, CHECK_KEY)? {
            Some(check) => match self.keys.open(Table::Meta, CHECK_KEY, &check) {
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
                return self.inner.commit(&[
                    self.keys.put(nonces, Table::Meta, CHECK_KEY, CHECK_VALUE)?,
                    self.keys
                        .put(nonces, Table::Meta, META_SEALED_IDS_HASHED, &[])?,
                ]);
            }
        }
        if self
            .inner
            .get(Table::Meta, META_SEALED_IDS_HASHED)?
            .is_none()
        {
            self.hash_session_ids()?;
        }
        Ok(())
    }

    /// Moves the records of a store sealed in format 1 (session ids in the clear) to hashed
    /// ids, in one commit.
    fn hash_session_ids(&mut self) -> Result<(), StoreError> {
        let mut writes = Vec::new();
        let nonces = &mut Nonces::new(&self.rng, Nonces::MAX_BATCH);
        for table in [Table::Sessions, Table::StagedKeys] {
            for (stored, sealed) in self.inner.scan(table, &[])? {
                let (key, value) = self
                    .keys
                    .open(table, &stored, &sealed)
                    .ok_or_else(|| damaged(table, &stored))?;
                writes.push(Write::Delete { table, key: stored });
                writes.push(self.keys.put(nonces, table, &key, &value)?);
            }
        }
        writes.push(
            self.keys
                .put(nonces, Table::Meta, META_SEALED_IDS_HASHED, &[])?,
        );
        self.inner.commit(&writes)
    }

    /// Seals every record of an unsealed storage with `key`, in one commit, and opens it.
    pub fn seal_existing(mut inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        if inner.get(Table::Meta, CHECK_KEY)?.is_some() {
            return Err(StoreError::Corrupt("the store is sealed already".into()));
        }
        let keys = key.keys()?;
        let rng = SystemRandom::new();
        let nonces = &mut Nonces::new(&rng, Nonces::MAX_BATCH);
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (k, v) in inner.scan(table, &[])? {
                if hides_ids(table) {
                    writes.push(Write::Delete {
                        table,
                        key: k.clone(),
                    });
                }
                writes.push(keys.put(nonces, table, &k, &v)?);
            }
        }
        writes.push(keys.put(nonces, Table::Meta, CHECK_KEY, CHECK_VALUE)?);
        writes.push(keys.put(nonces, Table::Meta, META_SEALED_IDS_HASHED, &[])?);
        inner.commit(&writes)?;
        Ok(Self { inner, keys, rng })
    }

    /// Re-seals every record with `new_key`, in one commit: after a crash the store is sealed
    /// entirely with the old key or entirely with the new one.
    pub fn rekey(&mut self, new_key: &StoreKey) -> Result<(), StoreError> {
        let new = new_key.keys()?;
        let nonces = &mut Nonces::new(&self.rng, Nonces::MAX_BATCH);
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (stored, sealed) in self.inner.scan(table, &[])? {
                let (key, value) = self
                    .keys
                    .open(table, &stored, &sealed)
                    .ok_or_else(|| damaged(table, &stored))?;
                if hides_ids(table) {
                    writes.push(Write::Delete { table, key: stored });
                }
                writes.push(new.put(nonces, table, &key, &value)?);
            }
        }
        self.inner.commit(&writes)?;
        self.keys = new;
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

fn damaged(table: Table, key: &[u8]) -> StoreError {
    StoreError::Corrupt(format!(
        "a sealed {} record does not open ({} key bytes)",
        table.name(),
        key.len()
    ))
}

impl<S: Storage> Storage for SealedStorage<S> {
    fn get(&self, table: Table, key: &[u8]) -> Result<Option<Zeroizing<Vec<u8>>>, StoreError> {
        let stored = self.keys.stored_key(table, key);
        match self.inner.get(table, &stored)? {
            None => Ok(None),
            Some(sealed) => match self.keys.open(table, &stored, &sealed) {
                Some((k, value)) if k == key => Ok(Some(value)),
                _ => Err(damaged(table, &stored)),
            },
        }
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        let stored_prefix = self.keys.stored_prefix(table, prefix);
        let mut out = Vec::new();
        for (stored, sealed) in self
            .inner
            .scan(table, stored_prefix.as_deref().unwrap_or_default())?
        {
            if is_own_meta(table, &stored) {
                continue;
            }
            let (key, value) = self
                .keys
                .open(table, &stored, &sealed)
                .ok_or_else(|| damaged(table, &stored))?;
            if key.starts_with(prefix) {
                out.push((key, value));
            }
        }
        // Hashed ids come back in hash order; callers expect key order.
        if hides_ids(table) {
            out.sort_by(|a, b| a.0.cmp(&b.0));
        }
        Ok(out)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        let mut sealed = Vec::with_capacity(writes.len());
        let puts = writes
            .iter()
            .filter(|w| matches!(w, Write::Put { .. }))
            .count();
        let nonces = &mut Nonces::new(&self.rng, puts);
        for write in writes {
            sealed.push(match write {
                Write::Put { table, key, value } => self.keys.put(nonces, *table, key, value)?,
                Write::Delete { table, key } => Write::Delete {
                    table: *table,
                    key: self.keys.stored_key(*table, key),
                },
            });
        }
        self.inner.commit(&sealed)
    }

    fn begin(&mut self) -> Result<Freshness, StoreError> {
        self.inner.begin()
    }

    fn end(&mut self) -> Result<(), StoreError> {
        self.inner.end()
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
