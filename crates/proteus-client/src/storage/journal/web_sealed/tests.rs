//! The web sealed format's rules, run against a deterministic stand-in for the platform's
//! cipher (the crate has no AES-GCM: the web package runs Web Crypto's), and known answers of
//! its keyed hashes against the golden stores the web package wrote
//! (ffi/web/tests/golden/), with HKDF and HMAC-SHA256 as Web Crypto runs them.
//!
//! The stand-in "seals" a plaintext as `plaintext ‖ tag`, the tag 16 bytes of HMAC-SHA256 over
//! the nonce, the associated data and the plaintext: not confidential, but it opens only with
//! the same key, nonce and associated data, which is what the rules rely on.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use zeroize::Zeroizing;

use super::format::{self, IDS_INFO, STORE_ID_LEN};
use super::*;
use crate::storage::{Table, Write};

/// The platform: three keys derived from a store key.
struct Platform {
    aead: [u8; 32],
    ids: [u8; 32],
    digest: [u8; 32],
}

pub(super) fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key).unwrap();
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

pub(super) fn hkdf(store_key: &[u8; 32], info: &[u8]) -> [u8; 32] {
    let mut out = [0; 32];
    hkdf::Hkdf::<Sha256>::new(Some(&[0; format::HKDF_SALT_LEN]), store_key)
        .expand(info, &mut out)
        .unwrap();
    out
}

impl Platform {
    fn new(store_key: [u8; 32]) -> Self {
        Self {
            aead: hkdf(&store_key, format::RECORDS_INFO),
            ids: hkdf(&store_key, IDS_INFO),
            digest: hkdf(&store_key, format::DIGEST_INFO),
        }
    }

    fn tag(&self, nonce: &[u8], aad: &[u8], plaintext: &[u8]) -> [u8; 16] {
        let len = (aad.len() as u64).to_be_bytes();
        let full = hmac(&self.aead, &[nonce, &len, aad, plaintext]);
        full[..16].try_into().unwrap()
    }

    fn run(&self, ops: Vec<CryptoOp>) -> Outputs {
        outputs(self.run_each(ops))
    }

    fn run_each(&self, ops: Vec<CryptoOp>) -> Vec<Option<Zeroizing<Vec<u8>>>> {
        ops.into_iter()
            .map(|op| match op {
                CryptoOp::Seal {
                    nonce,
                    aad,
                    plaintext,
                } => {
                    let mut out = plaintext.to_vec();
                    out.extend_from_slice(&self.tag(&nonce, &aad, &plaintext));
                    Some(Zeroizing::new(out))
                }
                CryptoOp::Open {
                    nonce,
                    aad,
                    ciphertext,
                } => {
                    let (plaintext, tag) = ciphertext.split_at(ciphertext.len() - 16);
                    (self.tag(&nonce, &aad, plaintext) == tag)
                        .then(|| Zeroizing::new(plaintext.to_vec()))
                }
                CryptoOp::HashId(data) => Some(Zeroizing::new(hmac(&self.ids, &[&data]).to_vec())),
                CryptoOp::Element(data) => {
                    Some(Zeroizing::new(hmac(&self.digest, &[&data]).to_vec()))
                }
            })
            .collect()
    }

    /// A record as the first version of the web package sealed it (format 1, which the
    /// package reads but never writes): session ids hashed, no store id, no commit.
    fn seal_v1(&self, table: Table, key: &[u8], value: &[u8]) -> StoredRecord {
        let mut hashes = crate::collections::HashMap::default();
        if let Some((_, id, _)) = crate::records::split_session_id(table, key) {
            hashes.insert(id.to_vec(), hmac(&self.ids, &[id]));
        }
        let stored = stored_key(&hashes, table, key).unwrap();
        let nonce = [7; format::NONCE_LEN];
        let [Some(sealed)] = <[_; 1]>::try_from(self.run_each(vec![CryptoOp::Seal {
            nonce,
            aad: format::aad_v1(table.name(), &stored),
            plaintext: format::body(key, value).unwrap(),
        }]))
        .unwrap() else {
            panic!()
        };
        StoredRecord {
            table,
            key: stored,
            value: format::value_v1(format::SEALED_V1, &nonce, &sealed),
        }
    }

    /// Runs a job to its end.
    fn drive(&self, sealer: &mut WebSealer, mut step: Step) -> Result<Outcome, StoreError> {
        for _ in 0..4 {
            match step {
                Step::Done(outcome) => return Ok(outcome),
                Step::Run(ops) => step = sealer.resume(self.run(ops))?,
            }
        }
        panic!("a job took more than three batches");
    }
}

/// The host's store: its tables, commit counter, check value and manifest.
#[derive(Clone, Default)]
struct Host {
    records: Vec<StoredRecord>,
    commits: u64,
    check: Option<Vec<u8>>,
    manifest: Option<Vec<u8>>,
}

impl Host {
    fn apply(&mut self, commit: SealedCommit) {
        if commit.replace_all {
            self.records.clear();
        }
        for w in commit.writes {
            self.records
                .retain(|r| !(r.table == w.table && r.key == w.key));
            if let Some(value) = w.value {
                self.records.push(StoredRecord {
                    table: w.table,
                    key: w.key,
                    value,
                });
            }
        }
        self.manifest = Some(commit.manifest);
        if let Some(check) = commit.check {
            self.check = Some(check);
        }
        self.commits = commit.commit;
    }

    fn find(&mut self, table: Table) -> &mut StoredRecord {
        self.records.iter_mut().find(|r| r.table == table).unwrap()
    }
}

/// The outputs as the host hands them over: one buffer and their lengths.
fn outputs(each: Vec<Option<Zeroizing<Vec<u8>>>>) -> Outputs {
    let lengths: Vec<u32> = each
        .iter()
        .map(|o| o.as_ref().map_or(Outputs::FAILED, |o| o.len() as u32))
        .collect();
    let bytes: Vec<u8> = each
        .into_iter()
        .flatten()
        .flat_map(|o| o.to_vec())
        .collect();
    Outputs::new(Zeroizing::new(bytes), &lengths).unwrap()
}

const KEY: [u8; 32] = [0x42; 32];

fn put(table: Table, key: &[u8], value: &[u8]) -> Write {
    Write::Put {
        table,
        key: key.to_vec(),
        value: Zeroizing::new(value.to_vec()),
    }
}

fn staged(session: &str, rest: &[u8]) -> Vec<u8> {
    [crate::records::staged_prefix(session).as_slice(), rest].concat()
}

fn records() -> Vec<Write> {
    vec![
        put(Table::Meta, b"identity", &[1; 64]),
        put(Table::Meta, b"pinned/alice", &[1, 2, 3]),
        put(Table::PreKeys, &[0, 1], &[5; 40]),
        put(Table::Sessions, b"alice", &[6; 100]),
        put(Table::StagedKeys, &staged("alice", &[9; 8]), &[7; 50]),
        put(Table::StagedKeys, &staged("alice", &[]), &[1, 8]),
    ]
}

fn sorted(mut w: Vec<Write>) -> Vec<Write> {
    w.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    w
}

/// A store sealed with `KEY` holding `records()`.
fn sealed_store(p: &Platform) -> Host {
    let mut host = Host::default();
    let mut sealer = WebSealer::new();
    let step = sealer.reseal(records(), 0).unwrap();
    let Outcome::Sealed(commit) = p.drive(&mut sealer, step).unwrap() else {
        panic!()
    };
    host.apply(commit);
    host
}

/// The first step of loading `host`'s store (with its manifest).
fn start_load(sealer: &mut WebSealer, host: &Host) -> Result<Step, StoreError> {
    sealer.load(
        host.records.clone(),
        host.commits,
        host.manifest.as_deref(),
        false,
    )
}

fn load(p: &Platform, sealer: &mut WebSealer, host: &Host) -> Result<Vec<Write>, StoreError> {
    let step = start_load(sealer, host)?;
    match p.drive(sealer, step)? {
        Outcome::Loaded(records) => Ok(records),
        other => panic!("{other:?}"),
    }
}

fn persist(p: &Platform, sealer: &mut WebSealer, host: &mut Host, writes: Vec<Write>) {
    let next = host.commits + 1;
    let step = sealer.persist(writes, host.commits, next).unwrap().unwrap();
    let Outcome::Sealed(commit) = p.drive(sealer, step).unwrap() else {
        panic!()
    };
    host.apply(commit);
    sealer.committed();
}

fn tamper_fault(result: Result<Vec<Write>, StoreError>) -> Tamper {
    match result {
        Err(StoreError::Tampered { fault, .. }) => fault,
        other => panic!("not refused as tampered: {other:?}"),
    }
}

#[test]
fn a_resealed_store_loads_its_records_with_ids_hashed() {
    let p = Platform::new(KEY);
    let host = sealed_store(&p);
    assert_eq!(host.commits, 1);
    // No session id in the clear, in any stored key.
    for r in &host.records {
        assert!(!r.key.windows(5).any(|w| w == b"alice"), "{:?}", r.table);
        assert_eq!(format::commit_of(&r.value), Some(1));
    }
    let mut sealer = WebSealer::new();
    assert_eq!(
        sorted(load(&p, &mut sealer, &host).unwrap()),
        sorted(records())
    );
    assert_eq!(sealer.commit(), Some(1));
    // The check value opens with the key, not with another.
    let check = host.check.clone().unwrap();
    let step = sealer.verify(&check);
    assert!(matches!(
        p.drive(&mut sealer, step),
        Ok(Outcome::Verified(true))
    ));
    let other = Platform::new([7; 32]);
    let step = sealer.verify(&check);
    assert!(matches!(
        other.drive(&mut sealer, step),
        Ok(Outcome::Verified(false))
    ));
}

#[test]
fn commits_move_the_digest_and_load_again() {
    let p = Platform::new(KEY);
    let mut host = sealed_store(&p);
    let mut sealer = WebSealer::new();
    load(&p, &mut sealer, &host).unwrap();
    persist(
        &p,
        &mut sealer,
        &mut host,
        vec![
            put(Table::Sessions, b"bob", &[3; 10]),
            Write::Delete {
                table: Table::StagedKeys,
                key: staged("alice", &[9; 8]),
            },
            put(Table::Sessions, b"alice", &[4; 10]),
            put(Table::Sessions, b"alice", &[5; 10]),
        ],
    );
    persist(
        &p,
        &mut sealer,
        &mut host,
        vec![Write::Delete {
            table: Table::PreKeys,
            key: vec![0, 1],
        }],
    );
    let mut again = WebSealer::new();
    let loaded = sorted(load(&p, &mut again, &host).unwrap());
    let mut expected = records();
    expected.retain(|w| {
        !matches!(w, Write::Put { table: Table::StagedKeys, key, .. } if key.len() > 7)
            && !matches!(
                w,
                Write::Put {
                    table: Table::PreKeys | Table::Sessions,
                    ..
                }
            )
    });
    expected.push(put(Table::Sessions, b"bob", &[3; 10]));
    expected.push(put(Table::Sessions, b"alice", &[5; 10]));
    assert_eq!(loaded, sorted(expected));
    // The one that committed can load again too (a reload after another tab).
    assert_eq!(load(&p, &mut sealer, &host).unwrap().len(), loaded.len());
    // A persist on a stale manifest is a conflict: reload first.
    assert!(
        sealer
            .persist(vec![], host.commits - 1, host.commits)
            .unwrap()
            .is_none()
    );
}

#[test]
fn a_record_moved_to_another_key_or_table_is_refused() {
    let p = Platform::new(KEY);
    let host = sealed_store(&p);
    let mut moved = host.clone();
    let (a, b) = (
        moved.records[0].value.clone(),
        moved.records[2].value.clone(),
    );
    moved.records[0].value = b;
    moved.records[2].value = a;
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &moved)),
        Tamper::NotCommitted
    );
}

#[test]
fn an_older_record_put_back_is_refused() {
    let p = Platform::new(KEY);
    let mut host = sealed_store(&p);
    let mut sealer = WebSealer::new();
    load(&p, &mut sealer, &host).unwrap();
    let old = host.find(Table::PreKeys).value.clone();
    persist(
        &p,
        &mut sealer,
        &mut host,
        vec![put(Table::PreKeys, &[0, 1], &[6; 40])],
    );
    host.find(Table::PreKeys).value = old;
    // It opens as the commit it names, but the digest has the newer one.
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &host)),
        Tamper::Manifest
    );
}

#[test]
fn a_missing_or_added_record_is_refused() {
    let p = Platform::new(KEY);
    let host = sealed_store(&p);
    for i in 0..host.records.len() {
        let mut missing = host.clone();
        missing.records.remove(i);
        assert_eq!(
            tamper_fault(load(&p, &mut WebSealer::new(), &missing)),
            Tamper::Manifest
        );
    }
    let mut added = host.clone();
    let mut copy = added.records[0].clone();
    copy.key.push(0);
    added.records.push(copy);
    assert!(load(&p, &mut WebSealer::new(), &added).is_err());
}

#[test]
fn a_record_from_another_store_is_refused() {
    let p = Platform::new(KEY);
    let host = sealed_store(&p);
    let other = sealed_store(&p);
    let mut mixed = host.clone();
    let table = mixed.records[3].table;
    let key = mixed.records[3].key.clone();
    mixed.records[3] = other
        .records
        .iter()
        .find(|r| r.table == table && r.key == key)
        .unwrap()
        .clone();
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &mixed)),
        Tamper::NotCommitted
    );
    // The other store's manifest, with the whole other store, under an open client: refused.
    let mut sealer = WebSealer::new();
    load(&p, &mut sealer, &host).unwrap();
    assert_eq!(
        tamper_fault(load(&p, &mut sealer, &other)),
        Tamper::Manifest
    );
}

#[test]
fn the_counter_moved_alone_a_rollback_and_a_wrong_key_are_refused() {
    let p = Platform::new(KEY);
    let mut host = sealed_store(&p);
    let mut moved = host.clone();
    moved.commits += 1;
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &moved)),
        Tamper::Manifest
    );

    let mut sealer = WebSealer::new();
    load(&p, &mut sealer, &host).unwrap();
    let older = host.clone();
    persist(
        &p,
        &mut sealer,
        &mut host,
        vec![put(Table::Meta, b"next_prekey_id", &[0, 2])],
    );
    assert!(matches!(
        load(&p, &mut sealer, &older),
        Err(StoreError::RolledBack {
            store: 1,
            expected: 2
        })
    ));

    let wrong = Platform::new([9; 32]);
    assert_eq!(
        tamper_fault(load(&wrong, &mut WebSealer::new(), &host)),
        Tamper::Manifest
    );
    let mut no_manifest = host.clone();
    no_manifest.manifest = None;
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &no_manifest)),
        Tamper::Manifest
    );
}

/// The next step of opening (or converting) a store in state `(sealed, commits, has_manifest)`.
fn step(
    purpose: Purpose,
    (sealed, commits, has_manifest): (bool, u64, bool),
    key_given: bool,
    verified: Option<bool>,
) -> Result<OpenStep, StoreError> {
    let store = SealState {
        sealed,
        commits,
        has_manifest,
    };
    open_step(purpose, &store, key_given, verified)
}

/// The code of a refusal.
fn refusal(step: Result<OpenStep, StoreError>) -> u16 {
    step.unwrap_err().code()
}

#[test]
fn opening_a_store_step_by_step() {
    use OpenStep::{Ready, Reseal, Seal, Verify};
    use Purpose::Open;
    let sealed = (true, 3, true);
    let format_1 = (true, 3, false);
    let sealed_empty = (true, 0, false);
    for store in [sealed, format_1, sealed_empty] {
        // Sealed, no key: StoreKeyRequired, verified or not.
        for verified in [None, Some(false), Some(true)] {
            assert_eq!(refusal(step(Open, store, false, verified)), 510);
        }
        assert_eq!(step(Open, store, true, None).unwrap(), Verify);
        assert_eq!(refusal(step(Open, store, true, Some(false))), 508);
    }
    assert_eq!(step(Open, sealed, true, Some(true)).unwrap(), Ready);
    // No manifest: re-sealed in format 2 first, its records read as they are.
    let legacy = Reseal { legacy: true };
    assert_eq!(step(Open, format_1, true, Some(true)).unwrap(), legacy);
    assert_eq!(step(Open, sealed_empty, true, Some(true)).unwrap(), legacy);

    // Plain and empty with a key: sealed; with records, StoreNotSealed; without a key, ready.
    for has_manifest in [false, true] {
        assert_eq!(
            step(Open, (false, 0, has_manifest), true, None).unwrap(),
            Seal
        );
        assert_eq!(
            refusal(step(Open, (false, 1, has_manifest), true, None)),
            509
        );
        for commits in [0, 1] {
            assert_eq!(
                step(Open, (false, commits, has_manifest), false, None).unwrap(),
                Ready
            );
        }
    }
    // A `verified` for another check value is never passed; for a plain store it is ignored.
    assert_eq!(
        step(Open, (false, 0, false), true, Some(true)).unwrap(),
        Seal
    );
    assert_eq!(
        refusal(step(Open, (false, 2, false), true, Some(true))),
        509
    );
}

#[test]
fn converting_a_store_step_by_step() {
    use OpenStep::{Reseal, Verify};
    use Purpose::Convert;
    for store in [(true, 3, true), (true, 3, false), (true, 0, false)] {
        // Sealing a sealed store: StoreCorrupt, with the message of the native store's.
        for verified in [None, Some(false), Some(true)] {
            let e = step(Convert, store, false, verified).unwrap_err();
            assert!(e.to_string().contains("sealed already"), "{e}");
            assert_eq!(refusal(Err(e)), 503);
        }
        // Rekeying it: verified first, then re-sealed.
        assert_eq!(step(Convert, store, true, None).unwrap(), Verify);
        assert_eq!(refusal(step(Convert, store, true, Some(false))), 508);
    }
    assert_eq!(
        step(Convert, (true, 3, true), true, Some(true)).unwrap(),
        Reseal { legacy: false }
    );
    for store in [(true, 3, false), (true, 0, false)] {
        assert_eq!(
            step(Convert, store, true, Some(true)).unwrap(),
            Reseal { legacy: true }
        );
    }
    // A plain store: rekeying it is StoreNotSealed, even empty (never sealed as it is opened);
    // sealing it re-seals its records, read as they are.
    for commits in [0, 1] {
        assert_eq!(
            refusal(step(Convert, (false, commits, false), true, None)),
            509
        );
        assert_eq!(
            step(Convert, (false, commits, false), false, None).unwrap(),
            Reseal { legacy: true }
        );
    }
}

#[test]
fn a_changed_seal_codes() {
    assert!(matches!(seal_changed(true, false), StoreError::KeyRequired));
    assert!(matches!(seal_changed(true, true), StoreError::WrongKey));
    assert!(matches!(seal_changed(false, true), StoreError::WrongKey));
}

#[test]
fn a_format_1_store_loads_as_legacy_only() {
    let p = Platform::new(KEY);
    let mut host = Host::default();
    let mut sealer = WebSealer::new();
    for w in records() {
        let Write::Put { table, key, value } = w else {
            panic!()
        };
        host.records.push(p.seal_v1(table, &key, &value));
    }
    host.commits = 3;
    assert_eq!(
        tamper_fault(load(&p, &mut WebSealer::new(), &host)),
        Tamper::Manifest
    );
    let step = sealer
        .load(host.records.clone(), host.commits, None, true)
        .unwrap();
    let Outcome::Loaded(loaded) = p.drive(&mut sealer, step).unwrap() else {
        panic!()
    };
    assert_eq!(sorted(loaded), sorted(records()));
    // Damaged: StoreCorrupt; emptied: tampered.
    let mut damaged = host.clone();
    damaged.records[1].value[20] ^= 1;
    let step = sealer.load(damaged.records.clone(), 3, None, true).unwrap();
    assert!(matches!(
        p.drive(&mut sealer, step),
        Err(StoreError::Corrupt(_))
    ));
    assert!(matches!(
        sealer.load(vec![], 3, None, true),
        Err(StoreError::Tampered { .. })
    ));
}

#[test]
fn a_host_that_answers_wrong_gets_an_error_not_a_panic() {
    let p = Platform::new(KEY);
    let host = sealed_store(&p);
    let mut sealer = WebSealer::new();
    assert!(sealer.resume(outputs(vec![])).is_err());
    let Step::Run(ops) = start_load(&mut sealer, &host).unwrap() else {
        panic!()
    };
    let mut each = p.run_each(ops);
    each.push(None);
    assert!(matches!(
        sealer.resume(outputs(each)),
        Err(StoreError::Backend(_))
    ));
    let Step::Run(ops) = start_load(&mut sealer, &host).unwrap() else {
        panic!()
    };
    let Step::Run(ops) = sealer.resume(p.run(ops)).unwrap() else {
        panic!()
    };
    let mut each = p.run_each(ops);
    each[0] = Some(Zeroizing::new(vec![1, 2, 3]));
    assert!(matches!(
        sealer.resume(outputs(each)),
        Err(StoreError::Backend(_))
    ));
    // Truncated values and manifests are refused, not indexed.
    let mut cut = host.clone();
    cut.records[0].value.truncate(5);
    assert!(load(&p, &mut WebSealer::new(), &cut).is_err());
    cut.manifest.as_mut().unwrap().truncate(3);
    assert!(load(&p, &mut WebSealer::new(), &cut).is_err());
}

#[test]
fn layouts() {
    let m = format::Manifest {
        store_id: [3; STORE_ID_LEN],
        commit: 7,
        count: 2,
        digest: [9; 32],
    };
    assert_eq!(format::Manifest::from_bytes(&m.to_bytes()), Some(m));
    assert_eq!(format::Manifest::from_bytes(&[0; 10]), None);
    assert_eq!(format::aad_v1("check", &[]), b"\x01check\x00");
    assert_eq!(format::manifest_aad(), b"\x02manifest");
    assert_eq!(
        &format::aad_v2(&[0; 16], 1, Table::Sessions, b"k")[17..],
        b"\0\0\0\0\0\0\0\x01sessions\0k"
    );
    assert_eq!(
        format::element_input(Table::Meta, b"ab", 2),
        b"meta\0\0\0\0\x02ab\0\0\0\0\0\0\0\x02"
    );
    let body = format::body(b"key", b"value").unwrap();
    assert_eq!(body.as_slice(), b"\0\x03keyvalue");
    assert_eq!(
        format::split_body(&body),
        Some((b"key".to_vec(), Zeroizing::new(b"value".to_vec())))
    );
    assert_eq!(format::split_body(b"\0\x09ab"), None);
    assert!(format::body(&vec![0; 0x10000], b"").is_err());
}
