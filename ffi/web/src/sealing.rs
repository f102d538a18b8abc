//! Sealed IndexedDB stores: [`RawSealer`] runs proteus-client's web sealed format
//! (`proteus_client::web_sealed`, where every rule is) for the JS side, which does the
//! IndexedDB I/O and runs the cipher and MAC operations asked of it with Web Crypto, under the
//! keys it derived from the store key (`js/sealing.js`). It reads no record layout: records
//! cross as one buffer with the bounds of each key and value, cut out by the JS side.
//!
//! A job (`load`, `persist`, `reseal`, `check`, `verify`) returns either operations to run, `{kinds, bytes, bounds}` (per
//! operation its kind, 0 seal, 1 open, 2 hash a session id, 3 an element, and six offsets into
//! `bytes`: its data, nonce and associated data), whose outputs go to `resume` concatenated
//! with their lengths (`0xffffffff`: an open that failed); or its outcome, `{done: true, …}`.
//!
//! Buffers that may hold secrets (records in the clear, opened bodies) cross in as owned
//! vectors, wiped when the call is over, and out as JS arrays copied from wiped buffers:
//! wasm-bindgen frees a borrowed argument's or a returned vector's copy in the module's memory
//! unwiped (`tests/secrets.test.mjs` looks for such copies).

use proteus_client::web_sealed::{
    self, CryptoOp, HostWrite, Outcome, Outputs, Step, StoredRecord, WebSealer,
};
use proteus_client::{StoreError, Table, Write, decode_writes, encode_writes, entry_bounds};
use wasm_bindgen::prelude::*;
use zeroize::Zeroizing;

use crate::{js, store_error};

fn table(index: u32) -> Result<Table, JsValue> {
    usize::try_from(index)
        .ok()
        .and_then(|i| Table::ALL.get(i))
        .copied()
        .ok_or_else(|| js::range_error("unknown table"))
}

fn table_index(table: Table) -> u32 {
    Table::ALL
        .iter()
        .position(|t| *t == table)
        .and_then(|i| u32::try_from(i).ok())
        .unwrap_or(0)
}

fn offset(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.len()).unwrap_or(u32::MAX)
}

/// The records the JS side read: `tables[i]` of each, its stored key and value the parts
/// `2i` and `2i + 1` of `bytes` cut at `lengths`.
fn stored_records(
    tables: &[u8],
    bytes: &[u8],
    lengths: &[u32],
) -> Result<Vec<StoredRecord>, JsValue> {
    let parts = crate::split(bytes, lengths)?;
    if parts.len() != 2 * tables.len() {
        return Err(js::range_error("not a key and a value per record"));
    }
    // A loop rather than a `collect` into a `Result`: the same, in less wasm.
    let mut records = Vec::with_capacity(tables.len());
    for (t, kv) in tables.iter().zip(parts.chunks_exact(2)) {
        records.push(StoredRecord {
            table: table(u32::from(*t))?,
            key: kv.first().map(|k| k.to_vec()).unwrap_or_default(),
            value: kv.get(1).map(|v| v.to_vec()).unwrap_or_default(),
        });
    }
    Ok(records)
}

/// A plain store's records, as the JS side read them (see `stored_records`), in the record
/// buffer a client opens on (`RawClient`'s constructor).
#[wasm_bindgen(js_name = packRecords)]
pub fn pack_records(tables: &[u8], bytes: Vec<u8>, lengths: &[u32]) -> Result<JsValue, JsValue> {
    let bytes = Zeroizing::new(bytes);
    let puts: Vec<Write> = stored_records(tables, &bytes, lengths)?
        .into_iter()
        .map(|r| Write::Put {
            table: r.table,
            key: r.key,
            value: Zeroizing::new(r.value),
        })
        .collect();
    Ok(js::bytes(&encode_writes(&puts).map_err(store_error)?))
}

/// Where each entry of a record buffer (a commit's writes) is: six numbers per entry, `table,
/// put (1) or delete (0), key start, key end, value start, value end`.
#[wasm_bindgen(js_name = recordBounds)]
pub fn record_bounds(records: Vec<u8>) -> Result<Vec<u32>, JsValue> {
    entry_bounds(&Zeroizing::new(records)).map_err(store_error)
}

/// The sealing of one open store (see the module docs).
#[wasm_bindgen]
#[derive(Default)]
pub struct RawSealer {
    sealer: WebSealer,
}

#[wasm_bindgen]
impl RawSealer {
    /// A sealer with nothing loaded: one per open store and key.
    #[wasm_bindgen(constructor)]
    pub fn new() -> RawSealer {
        Self::default()
    }

    /// Loads a sealed store: its records (see [`pack_records`]) at commit `commits`, with its
    /// manifest; `legacy`: a store without one may be in format 1. Done: `{records}`, the record
    /// buffer a client opens on.
    pub fn load(
        &mut self,
        tables: &[u8],
        bytes: &[u8],
        lengths: &[u32],
        commits: f64,
        manifest: Option<Vec<u8>>,
        legacy: bool,
    ) -> Result<JsValue, JsValue> {
        let records = stored_records(tables, bytes, lengths)?;
        let step = self
            .sealer
            .load(records, commits as u64, manifest.as_deref(), legacy);
        answer(step)
    }

    /// Seals a commit's writes (a record buffer) at commit `next`; `undefined`: the store
    /// loaded last is not at `expected` (reload first). Done: the writes to store (see
    /// `answer`).
    pub fn persist(
        &mut self,
        writes: Vec<u8>,
        expected: f64,
        next: f64,
    ) -> Result<JsValue, JsValue> {
        let writes = decode_writes(&Zeroizing::new(writes)).map_err(store_error)?;
        match self.sealer.persist(writes, expected as u64, next as u64) {
            Ok(None) => Ok(JsValue::UNDEFINED),
            Ok(Some(step)) => answer(Ok(step)),
            Err(e) => Err(store_error(e)),
        }
    }

    /// Seals every record of a store (a record buffer, as a load gives) at commit `commits`
    /// with this sealer's key, to replace the whole store.
    pub fn reseal(&mut self, records: Vec<u8>, commits: f64) -> Result<JsValue, JsValue> {
        let records = decode_writes(&Zeroizing::new(records)).map_err(store_error)?;
        answer(self.sealer.reseal(records, commits as u64))
    }

    /// A new check value. Done: `{check}`.
    pub fn check(&mut self) -> Result<JsValue, JsValue> {
        answer(Ok(self.sealer.check()))
    }

    /// Whether `check` was made with this key. Done: `{verified}`.
    pub fn verify(&mut self, check: &[u8]) -> Result<JsValue, JsValue> {
        answer(Ok(self.sealer.verify(check)))
    }

    /// The next step of the job, from the outputs of the operations it asked for.
    pub fn resume(&mut self, bytes: Vec<u8>, lengths: &[u32]) -> Result<JsValue, JsValue> {
        let outputs = Outputs::new(Zeroizing::new(bytes), lengths)
            .ok_or_else(|| js::range_error("the lengths exceed the bytes"))?;
        answer(self.sealer.resume(outputs))
    }

    /// The commit `persist` sealed last is stored.
    pub fn committed(&mut self) {
        self.sealer.committed();
    }

    /// The commit of the manifest loaded or stored last, if any.
    #[wasm_bindgen(getter)]
    pub fn commit(&self) -> Option<f64> {
        self.sealer.commit().map(|c| c as f64)
    }
}

/// What the JS side derives the store key's three keys with (HKDF-SHA256): `[salt, info of
/// the AES-GCM key, of the session-id HMAC key, of the digest HMAC key]`.
#[wasm_bindgen(js_name = sealingKeyInfo)]
pub fn sealing_key_info() -> Vec<JsValue> {
    use web_sealed::format::{DIGEST_INFO, HKDF_SALT_LEN, IDS_INFO, RECORDS_INFO};
    [&[0; HKDF_SALT_LEN][..], RECORDS_INFO, IDS_INFO, DIGEST_INFO]
        .iter()
        .map(|b| js::bytes(b))
        .collect()
}

/// The next step of opening a store (`convert`: of re-sealing it, for `Client.sealStore` and
/// `rekeyStore`), as `web_sealed::open_step` decides it on what the JS side read of the
/// store's `sync` table (`sealed`: it has a check value; its commit counter; whether it has a
/// manifest), whether a key is given (to convert: the old key) and `verified` (the key's
/// verification of the check value read, only if made for those bytes). The steps' numbers
/// (`js/idb.js`): 0 ready, 1 verify the check value, 2 seal the empty store, 3 re-seal every
/// record, 4 re-seal every record read without a manifest. Throws the refusals:
/// StoreKeyRequired (510), WrongStoreKey (508), StoreNotSealed (509), StoreCorrupt (503).
#[wasm_bindgen(js_name = openStep)]
pub fn open_step(
    convert: bool,
    sealed: bool,
    commits: f64,
    has_manifest: bool,
    key_given: bool,
    verified: Option<bool>,
) -> Result<u8, JsValue> {
    use web_sealed::{OpenStep, Purpose, SealState};
    let purpose = if convert {
        Purpose::Convert
    } else {
        Purpose::Open
    };
    let store = SealState {
        sealed,
        commits: commits as u64,
        has_manifest,
    };
    match web_sealed::open_step(purpose, &store, key_given, verified).map_err(store_error)? {
        OpenStep::Ready => Ok(0),
        OpenStep::Verify => Ok(1),
        OpenStep::Seal => Ok(2),
        OpenStep::Reseal { legacy } => Ok(3 + u8::from(legacy)),
    }
}

/// The error of a store whose check value changed since it was opened.
#[wasm_bindgen(js_name = sealChanged)]
pub fn seal_changed(now_sealed: bool, key_given: bool) -> JsValue {
    store_error(web_sealed::seal_changed(now_sealed, key_given))
}

/// A step for the JS side: the operations to run, or the outcome.
fn answer(step: Result<Step, StoreError>) -> Result<JsValue, JsValue> {
    match step.map_err(store_error)? {
        Step::Run(ops) => Ok(operations(&ops)),
        Step::Done(outcome) => done(outcome),
    }
}

fn operations(ops: &[CryptoOp]) -> JsValue {
    let mut kinds = Vec::with_capacity(ops.len());
    let mut bytes = Zeroizing::new(Vec::new());
    let mut bounds = Vec::with_capacity(6 * ops.len());
    for op in ops {
        kinds.push(op.kind());
        let (data, nonce, aad): (&[u8], &[u8], &[u8]) = match op {
            CryptoOp::Seal {
                nonce,
                aad,
                plaintext,
            } => (plaintext, nonce, aad),
            CryptoOp::Open {
                nonce,
                aad,
                ciphertext,
            } => (ciphertext, nonce, aad),
            CryptoOp::HashId(data) | CryptoOp::Element(data) => (data, &[], &[]),
        };
        for part in [data, nonce, aad] {
            bounds.push(offset(&bytes));
            bytes.extend_from_slice(part);
            bounds.push(offset(&bytes));
        }
    }
    let object = js::Object::new();
    set_bytes(&object, "kinds", &kinds);
    set_parts(&object, &bytes, &bounds);
    object.into()
}

fn done(outcome: Outcome) -> Result<JsValue, JsValue> {
    let object = js::Object::new();
    js::set(&object, "done", &true.into());
    match outcome {
        Outcome::Loaded(records) => {
            let buffer = encode_writes(&records).map_err(store_error)?;
            set_bytes(&object, "records", &buffer)
        }
        Outcome::Sealed(commit) => {
            let (bytes, bounds) = host_writes(&commit.writes);
            set_parts(&object, &bytes, &bounds);
            js::set(&object, "replaceAll", &commit.replace_all.into());
            set_bytes(&object, "manifest", &commit.manifest);
            if let Some(check) = &commit.check {
                set_bytes(&object, "check", check);
            }
            js::set(&object, "commit", &(commit.commit as f64).into())
        }
        Outcome::Check(check) => set_bytes(&object, "check", &check),
        Outcome::Verified(verified) => js::set(&object, "verified", &verified.into()),
    };
    Ok(object.into())
}

/// `object[key]`: a `Uint8Array` copy of `bytes`. Not inlined: one call per field rather than
/// the JS value made and dropped at each.
#[inline(never)]
fn set_bytes(object: &JsValue, key: &str, bytes: &[u8]) -> bool {
    js::set(object, key, &js::bytes(bytes))
}

/// `object.bytes` and `object.bounds` (a `Uint32Array` of offsets into them): a batch's
/// operations or a commit's writes.
#[inline(never)]
fn set_parts(object: &JsValue, bytes: &[u8], bounds: &[u32]) {
    set_bytes(object, "bytes", bytes);
    js::set(object, "bounds", &js::Words::new(bounds).into());
}

/// The writes as one buffer and their bounds (the layout of [`record_bounds`]).
fn host_writes(writes: &[HostWrite]) -> (Vec<u8>, Vec<u32>) {
    let mut bytes = Vec::new();
    let mut bounds = Vec::with_capacity(6 * writes.len());
    for w in writes {
        bounds.push(table_index(w.table));
        bounds.push(u32::from(w.value.is_some()));
        bounds.push(offset(&bytes));
        bytes.extend_from_slice(&w.key);
        bounds.push(offset(&bytes));
        bounds.push(offset(&bytes));
        bytes.extend_from_slice(w.value.as_deref().unwrap_or_default());
        bounds.push(offset(&bytes));
    }
    (bytes, bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// js/idb.js numbers the opening steps as [`open_step`] does, and js/sealing.js the
    /// operations' kinds as `CryptoOp::kind`.
    #[test]
    fn the_js_side_numbers_the_steps_and_kinds_alike() {
        let steps = "const [READY, VERIFY, SEAL_EMPTY, RESEAL, RESEAL_LEGACY] = [0, 1, 2, 3, 4];";
        assert!(
            include_str!("../js/idb.js").contains(steps),
            "js/idb.js must say: {steps}"
        );
        // (convert, sealed, commits, has_manifest, key_given, verified) -> the step's number.
        for (args, number) in [
            ((false, false, 0.0, false, false, None), 0), // READY: a plain store, no key
            ((false, true, 1.0, true, true, None), 1),    // VERIFY
            ((false, false, 0.0, false, true, None), 2),  // SEAL_EMPTY
            ((true, true, 1.0, true, true, Some(true)), 3), // RESEAL
            ((false, true, 1.0, false, true, Some(true)), 4), // RESEAL_LEGACY
        ] {
            let (convert, sealed, commits, manifest, key, verified) = args;
            let step = open_step(convert, sealed, commits, manifest, key, verified);
            assert_eq!(step.ok(), Some(number));
        }
        let kinds = "const [SEAL, OPEN, HASH_ID] = [0, 1, 2];";
        assert!(
            include_str!("../js/sealing.js").contains(kinds),
            "js/sealing.js must say: {kinds}"
        );
        let nonce = [0; web_sealed::format::NONCE_LEN];
        let ops = [
            CryptoOp::Seal {
                nonce,
                aad: vec![],
                plaintext: Zeroizing::new(vec![]),
            },
            CryptoOp::Open {
                nonce,
                aad: vec![],
                ciphertext: vec![],
            },
            CryptoOp::HashId(vec![]),
        ];
        for (number, op) in ops.iter().enumerate() {
            assert_eq!(usize::from(op.kind()), number);
        }
    }
}
