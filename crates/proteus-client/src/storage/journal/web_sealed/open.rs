//! Opening a store: what the host does next, from what it read of the store's `sync` table,
//! until the store is ready (or, converted, re-sealed). The host only reads, verifies, seals
//! and re-seals as told, and asks again.

use crate::error::StoreError;

/// Why the host opens a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Purpose {
    /// To use it: with a key, the store must be sealed with it (an empty one gets sealed);
    /// without, it must be plain.
    Open,
    /// To re-seal every record with a new key: a plain store (no key given) gets sealed, a
    /// sealed one (the key given is its old key) rekeyed.
    Convert,
}

/// What the host read of a store's `sync` table, in one transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SealState {
    /// The store has a check value: it is sealed.
    pub sealed: bool,
    /// Its commit counter (0: it never committed).
    pub commits: u64,
    /// It has a manifest (a sealed store without one is in format 1, or was sealed empty).
    pub has_manifest: bool,
}

/// What the host does next (see [`open_step`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenStep {
    /// Open the store as it is ([`Purpose::Open`] only).
    Ready,
    /// Verify the store's check value with the key ([`WebSealer::verify`](super::WebSealer::verify)),
    /// then ask again with the answer.
    Verify,
    /// Mark the empty store sealed: a new check value ([`WebSealer::check`](super::WebSealer::check)),
    /// stored only if this is still the step on what the same transaction reads; then ask again.
    Seal,
    /// Re-seal every record in format 2 ([`WebSealer::reseal`](super::WebSealer::reseal)) in one
    /// transaction, under the store's lock, if this is still the step on what is read under
    /// it; `legacy`: the store has no manifest, its records are read as they are. Then
    /// ([`Purpose::Open`]) ask again; a conversion is over.
    Reseal {
        /// Read the records without a manifest.
        legacy: bool,
    },
}

/// The next step of opening a store `store` for `purpose`: `key_given` (a key is given; to
/// convert, the store's old key), `verified` (the answer of [`OpenStep::Verify`] for the check
/// value read, if it was asked for that value: a reseal writes a new one). A refusal changes
/// nothing: StoreKeyRequired (510) for a sealed store without a key, WrongStoreKey (508) with
/// another key, StoreNotSealed (509) with a key for a plain store that committed (an empty one
/// gets sealed, unless converted), StoreCorrupt (503) for a sealed store to convert as a plain
/// one.
pub fn open_step(
    purpose: Purpose,
    store: &SealState,
    key_given: bool,
    verified: Option<bool>,
) -> Result<OpenStep, StoreError> {
    let convert = purpose == Purpose::Convert;
    match (store.sealed, key_given, verified) {
        (true, false, _) if convert => Err(super::corrupt(
            "the store is sealed already: change its key with Client.rekeyStore",
        )),
        (true, false, _) => Err(StoreError::KeyRequired),
        (true, true, None) => Ok(OpenStep::Verify),
        (true, true, Some(false)) => Err(StoreError::WrongKey),
        (true, true, Some(true)) if convert || !store.has_manifest => Ok(OpenStep::Reseal {
            legacy: !store.has_manifest,
        }),
        (true, true, Some(true)) => Ok(OpenStep::Ready),
        (false, true, _) if store.commits == 0 && !convert => Ok(OpenStep::Seal),
        (false, true, _) => Err(StoreError::NotSealed),
        (false, false, _) if convert => Ok(OpenStep::Reseal { legacy: true }),
        (false, false, _) => Ok(OpenStep::Ready),
    }
}
