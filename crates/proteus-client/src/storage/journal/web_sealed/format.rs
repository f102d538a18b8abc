//! The web package's sealed record format: the constants, the layouts of a sealed value, of
//! its associated data, of the sealed body and of the manifest. Part of a stored format: stores
//! written with these values exist in browsers, so none of them may ever change.
//!
//! ```text
//! format 2  value := 2 ‖ commit (u64 BE) ‖ nonce (12) ‖ AES-256-GCM(body) ‖ tag (16)
//!           aad   := 2 ‖ store id (16) ‖ commit (u64 BE) ‖ table name ‖ 0 ‖ stored key
//! format 1  value := 1 ‖ nonce (12) ‖ AES-256-GCM(body) ‖ tag (16)      (read, never written)
//!           aad   := 1 ‖ table name ‖ 0 ‖ stored key
//! body            := key length (u16 BE) ‖ key ‖ value
//! manifest        := 2 ‖ nonce ‖ AES-256-GCM(store id ‖ commit ‖ count (u64 BE) ‖ digest (32))
//!           aad   := 2 ‖ "manifest"
//! element         := HMAC-SHA256(digest key, table name ‖ 0 ‖ stored key length (u32 BE) ‖
//!                    stored key ‖ commit (u64 BE)); the digest is the XOR of every live record's
//! check value     := a format 1 value of CHECK_VALUE, table "check", empty stored key, sealed
//!                    with no key prefix in its body
//! ```
//!
//! The three keys are derived from the application's store key with HKDF-SHA256 (32 zero bytes
//! of salt, the `*_INFO` strings); the platform (Web Crypto) holds them and runs the cipher.

use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::storage::Table;

/// Format 1 of a sealed value: not bound to a commit or a store. Read, never written (but the
/// check value keeps this layout).
pub const SEALED_V1: u8 = 1;
/// Format 2: bound to the store (its id) and to the commit that wrote the value.
pub const SEALED_V2: u8 = 2;
/// Bytes of an AES-GCM nonce.
pub const NONCE_LEN: usize = 12;
/// Bytes of an AES-GCM tag.
pub const TAG_LEN: usize = 16;
/// Bytes of a commit number in a value's header and in associated data (u64 BE).
pub const COMMIT_LEN: usize = 8;
/// Bytes of a store id: random, drawn when a store is sealed or re-sealed.
pub const STORE_ID_LEN: usize = 16;
/// Bytes of the manifest's digest and of every element of it (one HMAC-SHA256).
pub const DIGEST_LEN: usize = 32;
/// Bytes of a hashed session id (one HMAC-SHA256).
pub const ID_HASH_LEN: usize = 32;
/// Bytes of the HKDF salt: all zero.
pub const HKDF_SALT_LEN: usize = 32;
/// HKDF info of the AES-256-GCM key that seals records, manifest and check value.
pub const RECORDS_INFO: &[u8] = b"proteus-web sealed records v1";
/// HKDF info of the HMAC-SHA256 key that hashes session ids in stored keys.
pub const IDS_INFO: &[u8] = b"proteus-web sealed session ids v1";
/// HKDF info of the HMAC-SHA256 key of the manifest's digest elements.
pub const DIGEST_INFO: &[u8] = b"proteus-web sealed manifest digest v1";
/// The manifest's associated data, after the format byte.
pub const MANIFEST_AAD: &[u8] = b"manifest";
/// What the check value seals: only the right key opens it back to this.
pub const CHECK_VALUE: &[u8] = b"proteus-web sealed v1";
/// The table name in the check value's associated data.
pub const CHECK_TABLE: &str = "check";
/// The manifest's plaintext: store id ‖ commit ‖ count ‖ digest.
pub const MANIFEST_BODY_LEN: usize = STORE_ID_LEN + 2 * COMMIT_LEN + DIGEST_LEN;
/// Longest record key a body can carry (its length is a u16).
pub const MAX_KEY_LEN: usize = 0xffff;

/// What a manifest seals: the store's id, the commit it is at, how many records it holds and
/// the XOR of their elements.
#[derive(Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The store's id.
    pub store_id: [u8; STORE_ID_LEN],
    /// The commit the store is at.
    pub commit: u64,
    /// How many records the store holds.
    pub count: u64,
    /// The XOR of every record's element.
    pub digest: [u8; DIGEST_LEN],
}

impl std::fmt::Debug for Manifest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The digest is keyed but says nothing secret; the store id neither. Shown short.
        f.debug_struct("Manifest")
            .field("commit", &self.commit)
            .field("count", &self.count)
            .finish_non_exhaustive()
    }
}

impl Manifest {
    /// The manifest's plaintext.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MANIFEST_BODY_LEN);
        out.extend_from_slice(&self.store_id);
        out.extend_from_slice(&self.commit.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(&self.digest);
        out
    }

    /// Parses a manifest's plaintext (`None`: not one).
    pub fn from_bytes(body: &[u8]) -> Option<Self> {
        let body: &[u8; MANIFEST_BODY_LEN] = body.try_into().ok()?;
        let (store_id, rest) = body.split_first_chunk::<STORE_ID_LEN>()?;
        let (commit, rest) = rest.split_first_chunk::<COMMIT_LEN>()?;
        let (count, digest) = rest.split_first_chunk::<COMMIT_LEN>()?;
        Some(Self {
            store_id: *store_id,
            commit: u64::from_be_bytes(*commit),
            count: u64::from_be_bytes(*count),
            digest: digest.try_into().ok()?,
        })
    }
}

/// The associated data of a format 2 record.
pub fn aad_v2(store_id: &[u8; STORE_ID_LEN], commit: u64, table: Table, stored: &[u8]) -> Vec<u8> {
    let name = table.name().as_bytes();
    let mut aad = Vec::with_capacity(1 + STORE_ID_LEN + COMMIT_LEN + name.len() + 1 + stored.len());
    aad.push(SEALED_V2);
    aad.extend_from_slice(store_id);
    aad.extend_from_slice(&commit.to_be_bytes());
    aad.extend_from_slice(name);
    aad.push(0);
    aad.extend_from_slice(stored);
    aad
}

/// The associated data of a format 1 value (a record's, or the check value's).
pub fn aad_v1(table_name: &str, stored: &[u8]) -> Vec<u8> {
    let mut aad = Vec::with_capacity(1 + table_name.len() + 1 + stored.len());
    aad.push(SEALED_V1);
    aad.extend_from_slice(table_name.as_bytes());
    aad.push(0);
    aad.extend_from_slice(stored);
    aad
}

/// The manifest's associated data.
pub fn manifest_aad() -> Vec<u8> {
    [&[SEALED_V2][..], MANIFEST_AAD].concat()
}

/// The input of a record's element (see the module docs).
pub fn element_input(table: Table, stored: &[u8], commit: u64) -> Vec<u8> {
    let name = table.name().as_bytes();
    let mut data = Vec::with_capacity(name.len() + 1 + 4 + stored.len() + COMMIT_LEN);
    data.extend_from_slice(name);
    data.push(0);
    // A stored key is a record key (at most MAX_KEY_LEN) with a 32-byte hash in place of a
    // session id: it always fits.
    data.extend_from_slice(
        &u32::try_from(stored.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    data.extend_from_slice(stored);
    data.extend_from_slice(&commit.to_be_bytes());
    data
}

/// The body of a record: `key length ‖ key ‖ value`. It holds the record's secrets: wiped when
/// dropped.
pub fn body(key: &[u8], value: &[u8]) -> Result<Zeroizing<Vec<u8>>, StoreError> {
    let len =
        u16::try_from(key.len()).map_err(|_| super::corrupt("a record key is too long to seal"))?;
    let mut out = Zeroizing::new(Vec::with_capacity(2 + key.len() + value.len()));
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    Ok(out)
}

/// A body's `(key, value)`; `None` if its key length does not fit.
pub fn split_body(body: &[u8]) -> Option<(Vec<u8>, Zeroizing<Vec<u8>>)> {
    let (len, rest) = body.split_first_chunk::<2>()?;
    let (key, value) = rest.split_at_checked(usize::from(u16::from_be_bytes(*len)))?;
    Some((key.to_vec(), Zeroizing::new(value.to_vec())))
}

/// The commit a format 2 value says wrote it (authenticated only once the value opens).
pub fn commit_of(sealed: &[u8]) -> Option<u64> {
    match sealed.split_first() {
        Some((&SEALED_V2, rest)) => rest
            .first_chunk::<COMMIT_LEN>()
            .map(|c| u64::from_be_bytes(*c)),
        _ => None,
    }
}

/// A format 2 value's nonce and ciphertext (with its tag); `None` if it is not one.
pub fn parts_v2(sealed: &[u8]) -> Option<([u8; NONCE_LEN], &[u8])> {
    let rest = sealed.strip_prefix(&[SEALED_V2])?.get(COMMIT_LEN..)?;
    split_nonce(rest)
}

/// A format 1 value's (or a manifest's, after its format byte) nonce and ciphertext.
pub fn parts_v1(sealed: &[u8], format: u8) -> Option<([u8; NONCE_LEN], &[u8])> {
    split_nonce(sealed.strip_prefix(&[format])?)
}

fn split_nonce(rest: &[u8]) -> Option<([u8; NONCE_LEN], &[u8])> {
    let (nonce, sealed) = rest.split_first_chunk::<NONCE_LEN>()?;
    (sealed.len() >= TAG_LEN).then_some((*nonce, sealed))
}

/// A format 2 value: `2 ‖ commit ‖ nonce ‖ ciphertext`.
pub fn value_v2(commit: u64, nonce: &[u8; NONCE_LEN], ciphertext: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + COMMIT_LEN + NONCE_LEN + ciphertext.len());
    out.push(SEALED_V2);
    out.extend_from_slice(&commit.to_be_bytes());
    out.extend_from_slice(nonce);
    out.extend_from_slice(ciphertext);
    out
}

/// A value without a commit (format 1, the check value, the manifest): `format ‖ nonce ‖
/// ciphertext`.
pub fn value_v1(format: u8, nonce: &[u8; NONCE_LEN], ciphertext: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + NONCE_LEN + ciphertext.len());
    out.push(format);
    out.extend_from_slice(nonce);
    out.extend_from_slice(ciphertext);
    out
}
