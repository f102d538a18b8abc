//! The sealed record format: the store key's derived keys, how a record is sealed and opened
//! (formats 1, 2 and 3), its associated data, and the nonces (see the module docs of
//! `storage::sealed`).

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use zeroize::Zeroizing;

use super::super::{Record, Table, Write};
use super::manifest::Manifest;
use crate::error::{StoreError, Tamper};
use crate::records::{META_PIN_PREFIX, split_session_id, split_staged};

/// Sealed format 1: the body is the value; the stored key is the record's key.
pub(super) const SEALED_V1: u8 = 1;
/// Sealed format 2 (sessions and staged keys): the body is `u16 BE key length ‖ key ‖ value`;
/// the stored key has the session id replaced by its keyed hash.
pub(super) const SEALED_V2: u8 = 2;
/// Sealed format 3 (every table): format 2's body, the writing commit in the clear before the
/// nonce, and store id and commit in the associated data.
pub(super) const SEALED_V3: u8 = 3;
/// Derives the session-id hashing key from the store key. Part of the stored format: it keeps
/// the crate's old name (proteus-store) and must never change.
pub(super) const ID_KEY_LABEL: &[u8] = b"proteus-store sealed session ids v1";
/// Derives the manifest digest key from the store key. Part of the stored format.
pub(super) const DIGEST_KEY_LABEL: &[u8] = b"proteus-store sealed manifest digest v1";
/// Associated data of the manifest record (with the version before it). Part of the format.
pub(super) const MANIFEST_AAD: &[u8] = b"manifest\0meta\0sealed_manifest";
/// Bytes a sealed value adds to the plaintext: version, commit, nonce and tag (and the key,
/// with its 2 bytes of length).
pub const SEAL_OVERHEAD: usize = 1 + COMMIT_LEN + NONCE_LEN + 16;
/// The meta record that only the right key opens; its presence marks an encrypted store.
pub(super) const CHECK_KEY: &[u8] = crate::records::META_SEAL_CHECK;
/// Part of the stored format, like [`ID_KEY_LABEL`]: never change it.
pub(super) const CHECK_VALUE: &[u8] = b"proteus-store sealed v1";
/// Bytes of a store id: random, drawn when a store is sealed (or brought to format 3).
pub(super) const STORE_ID_LEN: usize = 16;
/// Bytes of a commit number (u64, big-endian).
pub(super) const COMMIT_LEN: usize = 8;
/// Bytes of the manifest's digest (one HMAC-SHA256).
pub(super) const DIGEST_LEN: usize = 32;
/// The manifest's body: store id ‖ commit ‖ number of records (u64 BE) ‖ digest.
pub(super) const MANIFEST_LEN: usize = STORE_ID_LEN + COMMIT_LEN + 8 + DIGEST_LEN;

/// A 32-byte key for sealing a store, supplied by the application (e.g. from the platform's
/// keystore). Wiped on drop.
pub struct StoreKey(Zeroizing<[u8; 32]>);

impl StoreKey {
    /// Wraps 32 key bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    pub(super) fn keys(&self) -> Result<Keys, StoreError> {
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
pub(super) struct Keys {
    aead: LessSafeKey,
    ids: hmac::Key,
    digest: hmac::Key,
}

/// Whether a table's keys hold a session id, which is stored hashed.
pub(super) fn hides_ids(table: Table) -> bool {
    matches!(table, Table::Sessions | Table::StagedKeys)
}

/// Whether a record's key holds a session id, which is stored hashed: every key of the sessions
/// and staged-keys tables, and a pin's (`pinned/` ‖ session id) in the meta table (where, the
/// client's record layout says: `records::split_session_id`).
pub(super) fn hides_id(table: Table, key: &[u8]) -> bool {
    split_session_id(table, key).is_some()
}

pub(super) fn tampered(table: Option<Table>, fault: Tamper) -> StoreError {
    StoreError::Tampered { table, fault }
}

/// The commit a format 3 value says wrote it (authenticated when the value is opened).
pub(super) fn commit_of(sealed: &[u8]) -> Option<u64> {
    match sealed.split_first() {
        Some((&SEALED_V3, rest)) => rest
            .first_chunk::<COMMIT_LEN>()
            .map(|c| u64::from_be_bytes(*c)),
        _ => None,
    }
}

/// The body of a record (`u16 BE key length ‖ key ‖ value`) as `(key, value)`.
pub(super) fn split_body(body: &[u8]) -> Option<Record> {
    let (key_len, rest) = body.split_first_chunk::<2>()?;
    let (key, value) = rest.split_at_checked(usize::from(u16::from_be_bytes(*key_len)))?;
    Some((key.to_vec(), Zeroizing::new(value.to_vec())))
}

impl Keys {
    pub(super) fn id_hash(&self, session_id: &[u8]) -> Vec<u8> {
        hmac::sign(&self.ids, session_id).as_ref().to_vec()
    }

    /// The key a record is stored under: its own, or with the session id hashed.
    pub(super) fn stored_key(&self, table: Table, key: &[u8]) -> Vec<u8> {
        match split_session_id(table, key) {
            Some((before, id, after)) => [before, self.id_hash(id).as_slice(), after].concat(),
            None => key.to_vec(),
        }
    }

    /// The stored-key prefix under which every key starting with `prefix` is found, if there
    /// is one (otherwise the whole table is scanned).
    pub(super) fn stored_prefix(&self, table: Table, prefix: &[u8]) -> Option<Vec<u8>> {
        // Pins are found under their prefix, whatever session id follows it.
        if table == Table::Meta && prefix.starts_with(META_PIN_PREFIX) {
            return Some(META_PIN_PREFIX.to_vec());
        }
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
    pub(super) fn element(&self, table: Table, stored: &[u8], commit: u64) -> [u8; DIGEST_LEN] {
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
    pub(super) fn seal_check(&self, nonces: &mut Nonces<'_>) -> Result<Write, StoreError> {
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
    pub(super) fn open_body(&self, sealed: &[u8], aad: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
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
    pub(super) fn open_legacy(&self, table: Table, stored: &[u8], sealed: &[u8]) -> Option<Record> {
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
    pub(super) fn seal(
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
    pub(super) fn open(
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
    pub(super) fn put(
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
    pub(super) fn seal_manifest(
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
    pub(super) fn open_manifest(
        &self,
        sealed: &[u8],
    ) -> Option<([u8; STORE_ID_LEN], u64, u64, [u8; 32])> {
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
pub(super) struct Nonces<'r> {
    rng: &'r SystemRandom,
    pool: Vec<u8>,
    used: usize,
    /// How many nonces the next refill draws.
    wanted: usize,
}

impl<'r> Nonces<'r> {
    /// Most nonces drawn at once (12 KiB).
    pub(super) const MAX_BATCH: usize = 1024;

    /// A source for about `expected` nonces (more are drawn if needed).
    pub(super) fn new(rng: &'r SystemRandom, expected: usize) -> Self {
        Self {
            rng,
            pool: Vec::new(),
            used: 0,
            wanted: expected.clamp(1, Self::MAX_BATCH),
        }
    }

    pub(super) fn next(&mut self) -> Result<[u8; NONCE_LEN], StoreError> {
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
pub(super) fn aad_legacy(version: u8, table: Table, stored: &[u8]) -> Vec<u8> {
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
pub(super) fn aad(id: &[u8; STORE_ID_LEN], commit: u64, table: Table, stored: &[u8]) -> Vec<u8> {
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
