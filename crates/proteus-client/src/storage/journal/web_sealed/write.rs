//! The jobs that seal records: a commit's writes ([`WebSealer::persist`](super::WebSealer::persist)),
//! and a whole store under a new key ([`reseal`](super::WebSealer::reseal)). Three batches at most: the session ids not hashed yet; the records
//! sealed and the digest's elements; the manifest, which seals the digest.

use zeroize::Zeroizing;

use super::format::{
    CHECK_TABLE, CHECK_VALUE, DIGEST_LEN, Manifest, NONCE_LEN, SEALED_V1, SEALED_V2, STORE_ID_LEN,
    aad_v1, aad_v2, body, element_input, manifest_aad, value_v1, value_v2,
};
use super::ops::{CryptoOp, Outputs, host_error, mac, nonce};
use super::{
    Bound, Commits, HostWrite, ID_HASH_LEN, Outcome, Pending, SealedCommit, one_each, stored_key,
    xor_into,
};
use crate::collections::HashMap;
use crate::error::StoreError;
use crate::records::split_session_id;
use crate::storage::Write;

pub(super) enum WriteStep {
    Run(Vec<CryptoOp>),
    /// The outcome, and for a persist what the bound state becomes once it is stored.
    Done(Outcome, Option<Pending>),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A commit of the store loaded: its digest moves by the records written and deleted.
    Persist,
    /// Every record, under a new store id and a new check value.
    Reseal,
}

enum Stage {
    /// Waits for the hashes of `ids`.
    Ids(Vec<Vec<u8>>),
    /// Waits for the sealed records (one per put, in order), the elements, the check value.
    Seal,
    /// Waits for the sealed manifest.
    Manifest,
}

pub(super) struct WriteJob {
    kind: Kind,
    writes: Vec<Write>,
    store_id: [u8; STORE_ID_LEN],
    next: u64,
    stage: Stage,
    /// Each write's stored key, once its session id is hashed.
    stored: Vec<Vec<u8>>,
    /// Each put's nonce, in order.
    nonces: Vec<[u8; NONCE_LEN]>,
    digest: [u8; DIGEST_LEN],
    count: u64,
    changes: Commits,
    /// How many elements the seal batch asks for.
    elements: usize,
    check_nonce: Option<[u8; NONCE_LEN]>,
    manifest_nonce: [u8; NONCE_LEN],
    /// The sealed values, one per put, in order.
    sealed: Vec<Vec<u8>>,
    check: Option<Vec<u8>>,
}

impl WriteJob {
    fn new(
        kind: Kind,
        writes: Vec<Write>,
        store_id: [u8; STORE_ID_LEN],
        next: u64,
    ) -> Result<Self, StoreError> {
        for w in &writes {
            if let Write::Put { key, .. } = w
                && key.len() > super::format::MAX_KEY_LEN
            {
                return Err(super::corrupt("a record key is too long to seal"));
            }
        }
        Ok(Self {
            kind,
            writes,
            store_id,
            next,
            stage: Stage::Seal,
            stored: Vec::new(),
            nonces: Vec::new(),
            digest: [0; DIGEST_LEN],
            count: 0,
            changes: Commits::default(),
            elements: 0,
            check_nonce: None,
            manifest_nonce: [0; NONCE_LEN],
            sealed: Vec::new(),
            check: None,
        })
    }

    pub(super) fn persist(
        writes: Vec<Write>,
        manifest: &Manifest,
        next: u64,
    ) -> Result<Self, StoreError> {
        let mut job = Self::new(Kind::Persist, writes, manifest.store_id, next)?;
        job.digest = manifest.digest;
        job.count = manifest.count;
        Ok(job)
    }

    pub(super) fn reseal(
        records: Vec<Write>,
        store_id: [u8; STORE_ID_LEN],
        next: u64,
    ) -> Result<Self, StoreError> {
        if records.iter().any(|w| matches!(w, Write::Delete { .. })) {
            return Err(host_error("a reseal is given a delete"));
        }
        Self::new(Kind::Reseal, records, store_id, next)
    }

    /// The first batch: the session ids this sealer has not hashed yet (if none, the seals).
    pub(super) fn start(
        &mut self,
        ids: &HashMap<Vec<u8>, [u8; ID_HASH_LEN]>,
        bound: Option<&Bound>,
    ) -> Result<WriteStep, StoreError> {
        let mut missing: Vec<Vec<u8>> = Vec::new();
        for w in &self.writes {
            let (table, key) = match w {
                Write::Put { table, key, .. } | Write::Delete { table, key } => (*table, key),
            };
            if let Some((_, id, _)) = split_session_id(table, key)
                && !ids.contains_key(id)
                && !missing.iter().any(|m| m == id)
            {
                missing.push(id.to_vec());
            }
        }
        if missing.is_empty() {
            return self.seal(ids, bound);
        }
        let ops = missing
            .iter()
            .map(|id| CryptoOp::HashId(id.clone()))
            .collect();
        self.stage = Stage::Ids(missing);
        Ok(WriteStep::Run(ops))
    }

    pub(super) fn resume(
        &mut self,
        ids: &mut HashMap<Vec<u8>, [u8; ID_HASH_LEN]>,
        bound: Option<&Bound>,
        outputs: Outputs,
    ) -> Result<WriteStep, StoreError> {
        match std::mem::replace(&mut self.stage, Stage::Manifest) {
            Stage::Ids(asked) => {
                if outputs.len() != asked.len() {
                    return Err(host_error("not one output per operation"));
                }
                for (id, hash) in asked.into_iter().zip(outputs.iter()) {
                    ids.insert(id, mac(hash)?);
                }
                self.seal(ids, bound)
            }
            Stage::Seal => self.sealed(outputs),
            Stage::Manifest => {
                let [sealed] = one_each(&outputs)?;
                let sealed = sealed.ok_or_else(|| host_error("a seal has no output"))?;
                let manifest = value_v1(SEALED_V2, &self.manifest_nonce, sealed);
                let writes = self.host_writes();
                let commit = SealedCommit {
                    replace_all: self.kind == Kind::Reseal,
                    writes,
                    manifest,
                    check: self.check.take(),
                    commit: self.next,
                };
                let pending = (self.kind == Kind::Persist).then(|| Pending {
                    commit: self.next,
                    digest: self.digest,
                    count: self.count,
                    changes: std::mem::take(&mut self.changes),
                });
                Ok(WriteStep::Done(Outcome::Sealed(commit), pending))
            }
        }
    }

    /// The second batch: every put sealed, the digest's elements, the check value.
    fn seal(
        &mut self,
        ids: &HashMap<Vec<u8>, [u8; ID_HASH_LEN]>,
        bound: Option<&Bound>,
    ) -> Result<WriteStep, StoreError> {
        // A loop rather than a `collect` into a `Result`: the same, in less wasm.
        let mut stored = Vec::with_capacity(self.writes.len());
        for w in &self.writes {
            let (Write::Put { table, key, .. } | Write::Delete { table, key }) = w;
            stored.push(stored_key(ids, *table, key)?);
        }
        self.stored = stored;
        let mut ops = Vec::with_capacity(2 * self.writes.len() + 1);
        for (w, stored) in self.writes.iter().zip(&self.stored) {
            if let Write::Put { table, key, value } = w {
                let nonce = nonce();
                ops.push(CryptoOp::Seal {
                    nonce,
                    aad: aad_v2(&self.store_id, self.next, *table, stored),
                    plaintext: body(key, value)?,
                });
                self.nonces.push(nonce);
            }
        }
        let before = ops.len();
        match self.kind {
            Kind::Reseal => {
                for (w, stored) in self.writes.iter().zip(&self.stored) {
                    if let Write::Put { table, .. } = w {
                        ops.push(CryptoOp::Element(element_input(*table, stored, self.next)));
                    }
                }
                self.count = u64::try_from(self.writes.len()).unwrap_or(u64::MAX);
            }
            Kind::Persist => {
                let bound = bound.ok_or_else(|| host_error("no store is loaded"))?;
                // Which elements leave the digest and which enter it, in the writes' order: a
                // key written twice in one commit leaves with the commit it had before.
                let mut overlay = Commits::default();
                let mut count = u64::try_from(bound.entries.len()).unwrap_or(u64::MAX);
                for (w, stored) in self.writes.iter().zip(&self.stored) {
                    let (table, put) = match w {
                        Write::Put { table, .. } => (*table, true),
                        Write::Delete { table, .. } => (*table, false),
                    };
                    let k = (table, stored.clone());
                    let old = match overlay.get(&k) {
                        Some(c) => *c,
                        None => bound.entries.get(&k).copied().flatten(),
                    };
                    if let Some(old) = old {
                        ops.push(CryptoOp::Element(element_input(table, stored, old)));
                        count = count.saturating_sub(1);
                    }
                    if put {
                        ops.push(CryptoOp::Element(element_input(table, stored, self.next)));
                        count = count.saturating_add(1);
                    }
                    overlay.insert(k, put.then_some(self.next));
                }
                self.count = count;
                self.changes = overlay;
            }
        }
        self.elements = ops.len() - before;
        if self.kind == Kind::Reseal {
            let nonce = nonce();
            ops.push(CryptoOp::Seal {
                nonce,
                aad: aad_v1(CHECK_TABLE, &[]),
                plaintext: Zeroizing::new(CHECK_VALUE.to_vec()),
            });
            self.check_nonce = Some(nonce);
        }
        self.stage = Stage::Seal;
        Ok(WriteStep::Run(ops))
    }

    /// The seals and elements are in: the manifest to seal.
    fn sealed(&mut self, outputs: Outputs) -> Result<WriteStep, StoreError> {
        let puts = self.nonces.len();
        let expected = puts + self.elements + usize::from(self.check_nonce.is_some());
        if outputs.len() != expected {
            return Err(host_error("not one output per operation"));
        }
        let mut outputs = outputs.iter();
        let mut sealed = Vec::with_capacity(puts);
        for nonce in &self.nonces {
            let ciphertext = outputs
                .next()
                .flatten()
                .ok_or_else(|| host_error("a seal has no output"))?;
            sealed.push(value_v2(self.next, nonce, ciphertext));
        }
        self.sealed = sealed;
        for _ in 0..self.elements {
            let element = mac(outputs.next().flatten())?;
            xor_into(&mut self.digest, &element);
        }
        if let Some(nonce) = self.check_nonce {
            let ciphertext = outputs
                .next()
                .flatten()
                .ok_or_else(|| host_error("a seal has no output"))?;
            self.check = Some(value_v1(SEALED_V1, &nonce, ciphertext));
        }
        let manifest = Manifest {
            store_id: self.store_id,
            commit: self.next,
            count: self.count,
            digest: self.digest,
        };
        self.manifest_nonce = nonce();
        self.stage = Stage::Manifest;
        Ok(WriteStep::Run(vec![CryptoOp::Seal {
            nonce: self.manifest_nonce,
            aad: manifest_aad(),
            plaintext: Zeroizing::new(manifest.to_bytes()),
        }]))
    }

    /// The writes for the host: each put with its sealed value, each delete, in order.
    fn host_writes(&mut self) -> Vec<HostWrite> {
        let mut sealed = std::mem::take(&mut self.sealed).into_iter();
        let stored = std::mem::take(&mut self.stored);
        self.writes
            .iter()
            .zip(stored)
            .map(|(w, key)| match w {
                Write::Put { table, .. } => HostWrite {
                    table: *table,
                    key,
                    value: sealed.next(),
                },
                Write::Delete { table, .. } => HostWrite {
                    table: *table,
                    key,
                    value: None,
                },
            })
            .collect()
    }
}
