//! The load job: a sealed store's records checked against its manifest and opened (format 2),
//! or opened as the first format sealed them (format 1, to be re-sealed). Two batches: the
//! manifest; then every record's digest element and body.

use subtle::ConstantTimeEq;

use super::format::{
    DIGEST_LEN, Manifest, SEALED_V1, SEALED_V2, aad_v1, aad_v2, commit_of, element_input,
    manifest_aad, parts_v1, parts_v2, split_body,
};
use super::ops::{CryptoOp, Outputs, host_error, mac};
use super::{
    Bound, Commits, Entry, Job, Outcome, Step, StoredRecord, WebSealer, damaged, one_each,
    tampered, xor_into,
};
use crate::error::{StoreError, Tamper};
use crate::storage::{Table, Write};

impl WebSealer {
    /// Loads a store's records at commit `commits` (the host's counter) with its `manifest`
    /// (`None`: it has none). A store with a manifest is checked against it; one without is
    /// refused (its manifest was deleted) unless `legacy` (the host is about to re-seal a store
    /// sealed in format 1, which has none).
    pub fn load(
        &mut self,
        records: Vec<StoredRecord>,
        commits: u64,
        manifest: Option<&[u8]>,
        legacy: bool,
    ) -> Result<Step, StoreError> {
        self.job = None;
        match manifest {
            Some(manifest) => {
                let (nonce, ciphertext) = parts_v1(manifest, SEALED_V2)
                    .ok_or_else(|| tampered(None, Tamper::Manifest))?;
                self.job = Some(Job::LoadManifest { records, commits });
                Ok(Step::Run(vec![CryptoOp::Open {
                    nonce,
                    aad: manifest_aad(),
                    ciphertext: ciphertext.to_vec(),
                }]))
            }
            None if !legacy => Err(tampered(None, Tamper::Manifest)),
            None => {
                // Every store that committed holds an identity: none at all is a store emptied.
                if records.is_empty() && commits > 0 {
                    return Err(tampered(None, Tamper::Missing));
                }
                let mut ops = Vec::with_capacity(records.len());
                for r in &records {
                    if r.value.first() != Some(&SEALED_V1) {
                        // A format 2 record in a store without a manifest: its manifest went.
                        return Err(tampered(Some(r.table), Tamper::Manifest));
                    }
                    let (nonce, ciphertext) =
                        parts_v1(&r.value, SEALED_V1).ok_or_else(|| damaged(r.table))?;
                    ops.push(CryptoOp::Open {
                        nonce,
                        aad: aad_v1(r.table.name(), &r.key),
                        ciphertext: ciphertext.to_vec(),
                    });
                }
                let tables = records.iter().map(|r| r.table).collect();
                self.job = Some(Job::LoadLegacy { tables });
                Ok(Step::Run(ops))
            }
        }
    }

    /// The manifest opened: checks it, and asks for each record's element and body.
    pub(super) fn load_records(
        &mut self,
        records: Vec<StoredRecord>,
        commits: u64,
        outputs: &Outputs,
    ) -> Result<Step, StoreError> {
        let [opened] = one_each(outputs)?;
        let manifest = opened
            .and_then(Manifest::from_bytes)
            .ok_or_else(|| tampered(None, Tamper::Manifest))?;
        if let Some(bound) = &self.bound
            && !bool::from(bound.manifest.store_id.ct_eq(&manifest.store_id))
        {
            // Another store's manifest under a client that has this one open.
            return Err(tampered(None, Tamper::Manifest));
        }
        if manifest.commit != commits {
            // The commit counter beside the records was moved on its own.
            return Err(tampered(None, Tamper::Manifest));
        }
        if manifest.commit < self.highest {
            return Err(StoreError::RolledBack {
                store: manifest.commit,
                expected: self.highest,
            });
        }
        let mut ops = Vec::with_capacity(2 * records.len());
        let mut entries = Vec::with_capacity(records.len());
        for r in records {
            let commit = commit_of(&r.value)
                .filter(|c| *c <= manifest.commit)
                .ok_or_else(|| tampered(Some(r.table), Tamper::NotCommitted))?;
            let (nonce, ciphertext) =
                parts_v2(&r.value).ok_or_else(|| tampered(Some(r.table), Tamper::NotCommitted))?;
            ops.push(CryptoOp::Element(element_input(r.table, &r.key, commit)));
            ops.push(CryptoOp::Open {
                nonce,
                aad: aad_v2(&manifest.store_id, commit, r.table, &r.key),
                ciphertext: ciphertext.to_vec(),
            });
            entries.push(((r.table, r.key), commit));
        }
        self.job = Some(Job::LoadRecords { entries, manifest });
        Ok(Step::Run(ops))
    }

    /// Every record's element and body: the digest must be the manifest's, every record open.
    pub(super) fn bind(
        &mut self,
        entries: Vec<(Entry, u64)>,
        manifest: Manifest,
        outputs: Outputs,
    ) -> Result<Step, StoreError> {
        if outputs.len() != 2 * entries.len() {
            return Err(host_error("not one output per operation"));
        }
        let mut digest = [0u8; DIGEST_LEN];
        let mut records = Vec::with_capacity(entries.len());
        let mut outputs = outputs.iter();
        for ((table, _), _) in &entries {
            let table = *table;
            let element = mac(outputs.next().flatten())?;
            xor_into(&mut digest, &element);
            let (key, value) = outputs
                .next()
                .flatten()
                .and_then(split_body)
                .ok_or_else(|| tampered(Some(table), Tamper::NotCommitted))?;
            records.push(Write::Put { table, key, value });
        }
        let entries: Commits = entries.into_iter().map(|(e, c)| (e, Some(c))).collect();
        let count_ok = u64::try_from(entries.len()).is_ok_and(|n| n == manifest.count);
        if !count_ok || !bool::from(digest.ct_eq(&manifest.digest)) {
            // A record deleted, added or put back.
            return Err(tampered(None, Tamper::Manifest));
        }
        self.highest = self.highest.max(manifest.commit);
        self.bound = Some(Bound { manifest, entries });
        Ok(Step::Done(Outcome::Loaded(records)))
    }
}

/// Every format 1 record's body is in: the records.
pub(super) fn legacy_loaded(tables: Vec<Table>, outputs: Outputs) -> Result<Step, StoreError> {
    if outputs.len() != tables.len() {
        return Err(host_error("not one output per operation"));
    }
    let mut records = Vec::with_capacity(tables.len());
    for (table, body) in tables.into_iter().zip(outputs.iter()) {
        let (key, value) = body.and_then(split_body).ok_or_else(|| damaged(table))?;
        records.push(Write::Put { table, key, value });
    }
    Ok(Step::Done(Outcome::Loaded(records)))
}
