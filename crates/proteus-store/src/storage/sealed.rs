//! Encryption at rest: a [`Storage`] that seals every record with an application key.
//!
//! Each value is stored as `version (1) ‖ nonce (12) ‖ ChaCha20-Poly1305(value) ‖ tag (16)`
//! (ring), with the record's table and key as associated data, so a record moved to another key
//! or table fails to open. Nonces are random: one key seals at most a few million records over a
//! store's life, far below the birthday bound of 96-bit nonces. A check record sealed with the
//! key tells a wrong key ([`StoreError::WrongKey`]) from damage, before anything is written.

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use zeroize::Zeroizing;

use super::{Record, Storage, Table, Write};
use crate::error::StoreError;

/// The format version of a sealed value.
const SEALED_VERSION: u8 = 1;
/// Bytes a sealed value adds to the plaintext: version, nonce and tag.
pub const SEAL_OVERHEAD: usize = 1 + NONCE_LEN + 16;
/// The meta record that only the right key opens; its presence marks an encrypted store.
const CHECK_KEY: &[u8] = crate::records::META_SEAL_CHECK;
const CHECK_VALUE: &[u8] = b"proteus-store sealed v1";

/// A 32-byte key for sealing a store, supplied by the application (e.g. from the platform's
/// keystore). Wiped on drop.
pub struct StoreKey(Zeroizing<[u8; 32]>);

impl StoreKey {
    /// Wraps 32 key bytes.
    pub fn new(bytes: [u8; 32]) -> Self {
        Self(Zeroizing::new(bytes))
    }

    fn aead(&self) -> Result<LessSafeKey, StoreError> {
        UnboundKey::new(&CHACHA20_POLY1305, self.0.as_slice())
            .map(LessSafeKey::new)
            .map_err(|_| StoreError::Backend("cannot use the store key".into()))
    }
}

impl std::fmt::Debug for StoreKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreKey(..)")
    }
}

/// A [`Storage`] whose records are sealed with a [`StoreKey`].
pub struct SealedStorage<S: Storage> {
    inner: S,
    key: LessSafeKey,
    rng: SystemRandom,
}

fn aad(table: Table, key: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(table.name().len() + 1 + key.len());
    aad.extend_from_slice(table.name().as_bytes());
    aad.push(0);
    aad.extend_from_slice(key);
    aad
}

fn seal(
    aead: &LessSafeKey,
    rng: &SystemRandom,
    table: Table,
    key: &[u8],
    value: &[u8],
) -> Result<Zeroizing<Vec<u8>>, StoreError> {
    let mut nonce = [0u8; NONCE_LEN];
    rng.fill(&mut nonce)
        .map_err(|_| StoreError::Backend("no randomness for a nonce".into()))?;
    let mut out = Zeroizing::new(Vec::with_capacity(SEAL_OVERHEAD + value.len()));
    out.push(SEALED_VERSION);
    out.extend_from_slice(&nonce);
    let mut body = Zeroizing::new(value.to_vec());
    aead.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(aad(table, key)),
        &mut *body,
    )
    .map_err(|_| StoreError::Backend("sealing failed".into()))?;
    out.extend_from_slice(&body);
    Ok(out)
}

/// Opens a sealed value; `None` if the key is wrong or the value was changed or moved.
fn open(aead: &LessSafeKey, table: Table, key: &[u8], sealed: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let (&version, rest) = sealed.split_first()?;
    if version != SEALED_VERSION || rest.len() < NONCE_LEN + 16 {
        return None;
    }
    let (nonce, body) = rest.split_at(NONCE_LEN);
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut body = Zeroizing::new(body.to_vec());
    let len = aead
        .open_in_place(nonce, Aad::from(aad(table, key)), &mut body)
        .ok()?
        .len();
    body.truncate(len);
    Some(body)
}

impl<S: Storage> SealedStorage<S> {
    /// Opens sealed storage. A new (empty) storage gets the check record; one sealed with another
    /// key is refused with [`StoreError::WrongKey`]; one that holds unsealed records is refused
    /// with [`StoreError::NotSealed`] (see [`SealedStorage::seal_existing`]). Nothing is changed
    /// when it is refused.
    pub fn open(mut inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        let aead = key.aead()?;
        let rng = SystemRandom::new();
        match inner.get(Table::Meta, CHECK_KEY)? {
            Some(check) => match open(&aead, Table::Meta, CHECK_KEY, &check) {
                Some(value) if value.as_slice() == CHECK_VALUE => {}
                Some(_) => {
                    return Err(StoreError::Corrupt(
                        "the seal check record is damaged".into(),
                    ));
                }
                None => return Err(StoreError::WrongKey),
            },
            None => {
                for table in Table::ALL {
                    if !inner.scan(table, &[])?.is_empty() {
                        return Err(StoreError::NotSealed);
                    }
                }
                let check = seal(&aead, &rng, Table::Meta, CHECK_KEY, CHECK_VALUE)?;
                inner.commit(&[Write::Put {
                    table: Table::Meta,
                    key: CHECK_KEY.to_vec(),
                    value: check,
                }])?;
            }
        }
        Ok(Self {
            inner,
            key: aead,
            rng,
        })
    }

    /// Seals every record of an unsealed storage with `key`, in one commit, and opens it.
    pub fn seal_existing(mut inner: S, key: &StoreKey) -> Result<Self, StoreError> {
        if inner.get(Table::Meta, CHECK_KEY)?.is_some() {
            return Err(StoreError::Corrupt("the store is sealed already".into()));
        }
        let aead = key.aead()?;
        let rng = SystemRandom::new();
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (k, v) in inner.scan(table, &[])? {
                let value = seal(&aead, &rng, table, &k, &v)?;
                writes.push(Write::Put {
                    table,
                    key: k,
                    value,
                });
            }
        }
        let check = seal(&aead, &rng, Table::Meta, CHECK_KEY, CHECK_VALUE)?;
        writes.push(Write::Put {
            table: Table::Meta,
            key: CHECK_KEY.to_vec(),
            value: check,
        });
        inner.commit(&writes)?;
        Ok(Self {
            inner,
            key: aead,
            rng,
        })
    }

    /// Re-seals every record with `new_key`, in one commit: after a crash the store is sealed
    /// entirely with the old key or entirely with the new one.
    pub fn rekey(&mut self, new_key: &StoreKey) -> Result<(), StoreError> {
        let new = new_key.aead()?;
        let mut writes = Vec::new();
        for table in Table::ALL {
            for (k, sealed) in self.inner.scan(table, &[])? {
                let value =
                    open(&self.key, table, &k, &sealed).ok_or_else(|| damaged(table, &k))?;
                writes.push(Write::Put {
                    table,
                    value: seal(&new, &self.rng, table, &k, &value)?,
                    key: k,
                });
            }
        }
        self.inner.commit(&writes)?;
        self.key = new;
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
        match self.inner.get(table, key)? {
            None => Ok(None),
            Some(sealed) => open(&self.key, table, key, &sealed)
                .map(Some)
                .ok_or_else(|| damaged(table, key)),
        }
    }

    fn scan(&self, table: Table, prefix: &[u8]) -> Result<Vec<Record>, StoreError> {
        let mut out = Vec::new();
        for (k, sealed) in self.inner.scan(table, prefix)? {
            if table == Table::Meta && k == CHECK_KEY {
                continue;
            }
            let value = open(&self.key, table, &k, &sealed).ok_or_else(|| damaged(table, &k))?;
            out.push((k, value));
        }
        Ok(out)
    }

    fn commit(&mut self, writes: &[Write]) -> Result<(), StoreError> {
        let mut sealed = Vec::with_capacity(writes.len());
        for write in writes {
            sealed.push(match write {
                Write::Put { table, key, value } => Write::Put {
                    table: *table,
                    key: key.clone(),
                    value: seal(&self.key, &self.rng, *table, key, value)?,
                },
                Write::Delete { .. } => write.clone(),
            });
        }
        self.inner.commit(&sealed)
    }
}
