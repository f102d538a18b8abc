//! Importing a whole cryptobox store (`Client::import_cryptobox`): one commit, one identity,
//! every id kept so that messages queued before the migration decrypt after it, bad records
//! named. The old store here is a client of this library exported record by record, as Wire's
//! Proteus serialises them (tests/cryptobox has stores written by Wire's own cryptobox).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use proteus_client::{
    Client, ClientError, CryptoboxRecords, ImportError, ImportOptions, ImportProgress,
    SourceRecord, SourceTable,
};
use proteus_core::{OsRng, PreKey, PreKeyId};
use zeroize::Zeroizing;

/// A client that has used its store for a while, and what is still on its way to it.
struct OldStore {
    client: Client,
    /// The prekeys it still holds, as serialised.
    prekeys: Vec<(PreKeyId, Zeroizing<Vec<u8>>)>,
    /// Its peers: (session id as the old store names it, the peer's client, its id for us).
    peers: Vec<(String, Client)>,
    /// Messages sent to the old store and not read by it: (session id, envelope, plaintext).
    queue: Vec<(String, Vec<u8>, Vec<u8>)>,
}

const ALICE_AT_BOB: &str = "alice@old";

/// Alice's old store: five one-time prekeys and the last-resort one; a session she started
/// with bob and one carol started with her prekey 1, both used both ways; then, unread, two
/// messages from bob, one from dave to her prekey 2 and one from erin to her last-resort key.
fn old_store() -> OldStore {
    let mut alice = Client::in_memory().unwrap();
    let mut prekeys = Vec::new();
    for id in (1..=5).map(PreKeyId::new).chain([PreKeyId::LAST_RESORT]) {
        let prekey = PreKey::generate(id, &mut OsRng);
        alice.import_prekey(&prekey.to_bytes()).unwrap();
        prekeys.push((id, prekey.to_bytes()));
    }
    let bundle =
        |alice: &Client, id: u16| alice.prekey_bundle(PreKeyId::new(id)).unwrap().to_bytes();

    let mut bob = Client::in_memory().unwrap();
    let bob_bundle = bob.generate_prekeys(1).unwrap().remove(0).to_bytes();
    alice.create_session("bob@1", &bob_bundle).unwrap();
    let hello = alice.encrypt("bob@1", b"hello bob").unwrap();
    assert_eq!(bob.decrypt(ALICE_AT_BOB, &hello).unwrap(), b"hello bob");
    let back = bob.encrypt(ALICE_AT_BOB, b"hello alice").unwrap();
    assert_eq!(alice.decrypt("bob@1", &back).unwrap(), b"hello alice");

    let mut carol = Client::in_memory().unwrap();
    carol
        .create_session(ALICE_AT_BOB, &bundle(&alice, 1))
        .unwrap();
    let first = carol.encrypt(ALICE_AT_BOB, b"carol here").unwrap();
    assert_eq!(alice.decrypt("carol@1", &first).unwrap(), b"carol here");
    let reply = alice.encrypt("carol@1", b"hi carol").unwrap();
    assert_eq!(carol.decrypt(ALICE_AT_BOB, &reply).unwrap(), b"hi carol");
    prekeys.retain(|(id, _)| id.value() != 1);

    let mut queue = Vec::new();
    for text in [&b"are you there?"[..], b"still there?"] {
        queue.push((
            "bob@1".to_owned(),
            bob.encrypt(ALICE_AT_BOB, text).unwrap(),
            text.to_vec(),
        ));
    }
    let mut dave = Client::in_memory().unwrap();
    dave.create_session(ALICE_AT_BOB, &bundle(&alice, 2))
        .unwrap();
    queue.push((
        "dave@1".to_owned(),
        dave.encrypt(ALICE_AT_BOB, b"dave, to prekey 2").unwrap(),
        b"dave, to prekey 2".to_vec(),
    ));
    let mut erin = Client::in_memory().unwrap();
    erin.create_session(ALICE_AT_BOB, &bundle(&alice, PreKeyId::LAST_RESORT.value()))
        .unwrap();
    queue.push((
        "erin@1".to_owned(),
        erin.encrypt(ALICE_AT_BOB, b"erin, to the last resort")
            .unwrap(),
        b"erin, to the last resort".to_vec(),
    ));
    OldStore {
        client: alice,
        prekeys,
        peers: vec![
            ("bob@1".to_owned(), bob),
            ("carol@1".to_owned(), carol),
            ("dave@1".to_owned(), dave),
            ("erin@1".to_owned(), erin),
        ],
        queue,
    }
}

/// The old store's records, as a cryptobox source.
fn records(old: &mut OldStore) -> CryptoboxRecords {
    let identity = old.client.export_identity();
    let prekeys = old
        .prekeys
        .iter()
        .map(|(id, bytes)| SourceRecord::new(id.value().to_string(), bytes.to_vec()))
        .collect();
    let sessions = old
        .client
        .session_ids()
        .unwrap()
        .into_iter()
        .map(|id| {
            let bytes = old.client.export_session(&id).unwrap();
            SourceRecord::new(id, bytes.to_vec())
        })
        .collect();
    CryptoboxRecords::new(identity, prekeys, sessions)
}

fn import(
    client: &mut Client,
    source: &CryptoboxRecords,
) -> Result<proteus_client::ImportReport, ClientError> {
    client.import_cryptobox(source, ImportOptions::default(), &mut |_| {})
}

/// What a store holds, to compare before and after a failed import.
fn contents(client: &mut Client) -> (String, Vec<String>, usize, Vec<u8>) {
    (
        client.fingerprint(),
        client.session_ids().unwrap(),
        client.prekeys_remaining().unwrap(),
        client.last_resort_bundle().unwrap().to_bytes(),
    )
}

#[test]
fn every_record_arrives_and_the_queue_decrypts_after_the_migration() {
    let mut old = old_store();
    let source = records(&mut old);
    let mut new = Client::in_memory().unwrap();
    let report = import(&mut new, &source).unwrap();

    assert_eq!(report.fingerprint, old.client.fingerprint());
    assert_eq!(new.fingerprint(), old.client.fingerprint());
    assert_eq!((report.prekeys, report.sessions), (5, 2));
    assert!(report.skipped.is_empty() && !report.already_imported);
    assert_eq!(new.session_ids().unwrap(), ["bob@1", "carol@1"]);
    assert_eq!(new.prekeys_remaining().unwrap(), 4);
    assert_eq!(
        new.last_resort_bundle().unwrap().to_bytes(),
        old.client.last_resort_bundle().unwrap().to_bytes(),
        "the last-resort prekey keeps its key"
    );

    // The queue, in one batch: bob's on the imported session, dave's and erin's PreKeyMessages
    // to the imported one-time and last-resort prekeys.
    for (session_id, envelope, plaintext) in &old.queue {
        assert_eq!(
            &new.decrypt(session_id, envelope).unwrap(),
            plaintext,
            "{session_id}"
        );
    }
    assert_eq!(new.prekeys_remaining().unwrap(), 3, "prekey 2 is used up");

    // Every session goes on both ways.
    for (session_id, peer) in &mut old.peers {
        let out = new.encrypt(session_id, b"after the move").unwrap();
        assert_eq!(peer.decrypt(ALICE_AT_BOB, &out).unwrap(), b"after the move");
        let back = peer.encrypt(ALICE_AT_BOB, b"welcome back").unwrap();
        assert_eq!(new.decrypt(session_id, &back).unwrap(), b"welcome back");
    }

    // New prekeys do not take the imported ids.
    let fresh = new.generate_prekeys(3).unwrap();
    let ids: Vec<u16> = fresh.iter().map(|b| b.prekey_id().value()).collect();
    assert_eq!(ids, [6, 7, 8]);
}

#[test]
fn a_store_in_use_with_another_identity_is_refused_and_left_as_it_was() {
    let mut old = old_store();
    let source = records(&mut old);

    // One-time prekeys handed out: in use, even with no session yet.
    let mut handed_out = Client::in_memory().unwrap();
    handed_out.generate_prekeys(2).unwrap();
    let before = contents(&mut handed_out);
    let e = import(&mut handed_out, &source).unwrap_err();
    assert_eq!((e.code(), e.kind()), (111, "ImportIdentityMismatch"));
    assert_eq!(contents(&mut handed_out), before);

    // Sessions.
    let mut with_session = Client::in_memory().unwrap();
    let bundle = Client::in_memory()
        .unwrap()
        .last_resort_bundle()
        .unwrap()
        .to_bytes();
    with_session.create_session("someone", &bundle).unwrap();
    let before = contents(&mut with_session);
    let e = import(&mut with_session, &source).unwrap_err();
    assert_eq!(e.code(), 111);
    assert!(e.to_string().contains("1 sessions"), "{e}");
    assert_eq!(contents(&mut with_session), before);
}

#[test]
fn importing_the_same_store_again_changes_nothing_and_says_so() {
    let mut old = old_store();
    let source = records(&mut old);
    let mut new = Client::in_memory().unwrap();
    import(&mut new, &source).unwrap();
    let (session_id, envelope, plaintext) = &old.queue[0];
    assert_eq!(&new.decrypt(session_id, envelope).unwrap(), plaintext);
    let before = contents(&mut new);

    let again = import(&mut new, &source).unwrap();
    assert!(again.already_imported);
    assert_eq!((again.prekeys, again.sessions), (0, 0));
    assert_eq!(again.fingerprint, new.fingerprint());
    assert_eq!(contents(&mut new), before);
    // The session was not rolled back to the imported state: the message stays read.
    assert_eq!(new.decrypt(session_id, envelope).unwrap_err().code(), 209);
}

#[test]
fn a_new_store_with_the_sources_identity_takes_the_rest() {
    let mut old = old_store();
    let source = records(&mut old);
    let mut new = Client::in_memory().unwrap();
    new.import_identity(&source.identity).unwrap();
    let report = import(&mut new, &source).unwrap();
    assert!(!report.already_imported);
    assert_eq!(report.sessions, 2);
}

#[test]
fn bad_records_abort_the_import_unless_asked_to_skip_them() {
    let mut old = old_store();
    let mut source = records(&mut old);
    let mut cut = source.sessions[0].bytes.to_vec();
    cut.truncate(cut.len() / 2);
    let cut_id = source.sessions[0].id.clone();
    source.sessions[0].bytes = Zeroizing::new(cut);
    source
        .prekeys
        .push(SourceRecord::new("77", b"not a prekey".to_vec()));
    source
        .prekeys
        .push(SourceRecord::new("", source.prekeys[0].bytes.to_vec()));
    source
        .sessions
        .push(SourceRecord::new("", source.sessions[1].bytes.to_vec()));

    let mut new = Client::in_memory().unwrap();
    let before = contents(&mut new);
    let e = import(&mut new, &source).unwrap_err();
    assert_eq!((e.code(), e.kind()), (112, "ImportBadRecords"));
    let ClientError::Import(ImportError::BadRecords(bad)) = &e else {
        panic!("{e:?}")
    };
    let named: Vec<(SourceTable, &str)> = bad.iter().map(|b| (b.table, b.id.as_str())).collect();
    assert_eq!(
        named,
        [
            (SourceTable::PreKeys, "77"),
            (SourceTable::PreKeys, "#6"),
            (SourceTable::Sessions, cut_id.as_str()),
            (SourceTable::Sessions, ""),
        ]
    );
    assert_eq!(bad[3].code, 106, "an empty session id");
    // The message names prekeys, and counts sessions without naming them.
    let message = e.to_string();
    assert!(
        message.contains("prekeys/77") && message.contains("2 sessions"),
        "{message}"
    );
    assert!(!message.contains(&cut_id), "{message}");
    assert_eq!(contents(&mut new), before, "nothing was imported");

    let report = new
        .import_cryptobox(
            &source,
            ImportOptions::default().skip_bad_records(true),
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.skipped, *bad);
    assert_eq!((report.prekeys, report.sessions), (5, 1));
    assert_eq!(new.fingerprint(), old.client.fingerprint());
}

#[test]
fn an_identity_that_does_not_decode_is_never_skipped() {
    let mut old = old_store();
    let mut source = records(&mut old);
    source.identity = Zeroizing::new(vec![0xa1, 0x00]);
    let mut new = Client::in_memory().unwrap();
    let before = contents(&mut new);
    let e = new
        .import_cryptobox(
            &source,
            ImportOptions::default().skip_bad_records(true),
            &mut |_| {},
        )
        .unwrap_err();
    assert_eq!(e.code(), 112);
    assert!(e.to_string().contains("keys/local_identity"), "{e}");
    assert_eq!(contents(&mut new), before);
}

#[test]
fn sessions_that_belong_to_another_identity_do_not_decode() {
    let mut old = old_store();
    let mut source = records(&mut old);
    source.identity = Client::in_memory().unwrap().export_identity();
    let e = import(&mut Client::in_memory().unwrap(), &source).unwrap_err();
    let ClientError::Import(ImportError::BadRecords(bad)) = &e else {
        panic!("{e:?}")
    };
    assert_eq!(bad.len(), 2);
    assert!(
        bad.iter()
            .all(|b| b.table == SourceTable::Sessions && b.code == 300)
    );
}

#[test]
fn progress_counts_every_record_up_to_the_total() {
    let mut old = old_store();
    let mut source = records(&mut old);
    // Enough prekeys for several reports.
    source.prekeys = (1..=600)
        .map(|id| {
            let prekey = PreKey::generate(PreKeyId::new(id), &mut OsRng);
            SourceRecord::new(id.to_string(), prekey.to_bytes().to_vec())
        })
        .collect();
    let mut seen = Vec::new();
    let report = Client::in_memory()
        .unwrap()
        .import_cryptobox(
            &source,
            ImportOptions::default(),
            &mut |p: ImportProgress| {
                seen.push((p.done, p.total));
            },
        )
        .unwrap();
    assert_eq!(report.prekeys, 600);
    assert_eq!(seen, [(256, 603), (512, 603), (603, 603)]);
}

#[cfg(all(feature = "sqlite", feature = "sealed"))]
#[test]
fn a_sealed_store_takes_an_import() {
    let mut old = old_store();
    let source = records(&mut old);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sealed.db");
    let key = proteus_client::StoreKey::new([7; 32]);
    {
        let mut new = Client::open_sealed(
            &path,
            proteus_client::OpenMode::ExistingOrNew,
            &proteus_client::SqliteOptions::default(),
            &key,
        )
        .unwrap();
        assert_eq!(import(&mut new, &source).unwrap().sessions, 2);
    }
    let mut new = Client::open_sealed(
        &path,
        proteus_client::OpenMode::ExistingOrNew,
        &proteus_client::SqliteOptions::default(),
        &key,
    )
    .unwrap();
    let (session_id, envelope, plaintext) = &old.queue[2];
    assert_eq!(&new.decrypt(session_id, envelope).unwrap(), plaintext);
}

/// Directories as Wire's libraries left them.
#[cfg(feature = "cryptobox-directory")]
mod directories {
    use std::path::Path;

    use super::*;

    fn write(path: &Path, bytes: &[u8]) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// A record as @wireapp/store-engine-fs writes it.
    fn json_record(id: &str, bytes: &[u8]) -> Vec<u8> {
        use base64::Engine as _;
        serde_json::json!({
            "id": id,
            "serialised": base64::engine::general_purpose::STANDARD.encode(bytes),
            "created": 1_700_000_000_000_u64,
            "version": "1.0",
        })
        .to_string()
        .into_bytes()
    }

    fn read_and_import(dir: &Path) -> (Client, proteus_client::ImportReport) {
        let mut new = Client::in_memory().unwrap();
        let report = new
            .import_cryptobox_directory(dir, ImportOptions::default(), &mut |_| {})
            .unwrap();
        (new, report)
    }

    #[test]
    fn a_store_engine_fs_directory_imports_like_its_records() {
        let mut old = old_store();
        let source = records(&mut old);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("keys/local_identity.dat"),
            &json_record("local_identity", &source.identity),
        );
        for r in &source.prekeys {
            write(
                &root.join(format!("prekeys/{}.dat", r.id)),
                &json_record(&r.id, &r.bytes),
            );
        }
        for r in &source.sessions {
            write(
                &root.join(format!("sessions/{}.dat", r.id)),
                &json_record(&r.id, &r.bytes),
            );
        }
        // Not records: skipped.
        write(&root.join("sessions/.DS_Store"), b"x");
        write(&root.join("sessions/notes.txt"), b"x");

        let (mut new, report) = read_and_import(root);
        assert_eq!((report.prekeys, report.sessions), (5, 2));
        for (session_id, envelope, plaintext) in &old.queue {
            assert_eq!(&new.decrypt(session_id, envelope).unwrap(), plaintext);
        }
    }

    #[test]
    fn a_rust_cryptobox_directory_imports_like_its_records() {
        let mut old = old_store();
        let source = records(&mut old);
        for legacy in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            if legacy {
                // Before cryptobox 0.4: the key pair alone, under another name.
                write(&root.join("identities/local_identity"), &source.identity);
            } else {
                let mut identity = vec![0x01, 0xa1, 0x00];
                identity.extend_from_slice(&source.identity);
                write(&root.join("identities/local"), &identity);
                write(&root.join("version"), &[0, 1]);
            }
            for r in &source.prekeys {
                write(&root.join(format!("prekeys/{}", r.id)), &r.bytes);
            }
            for r in &source.sessions {
                write(&root.join(format!("sessions/{}", r.id)), &r.bytes);
            }
            // A write cryptobox never finished: not a record.
            write(&root.join("sessions/bob.tmp"), b"half a session");
            let (mut new, report) = read_and_import(root);
            assert_eq!(
                (report.prekeys, report.sessions),
                (5, 2),
                "legacy: {legacy}"
            );
            assert!(report.skipped.is_empty());
            let (session_id, envelope, plaintext) = &old.queue[3];
            assert_eq!(&new.decrypt(session_id, envelope).unwrap(), plaintext);
        }
    }

    #[test]
    fn a_public_only_rust_cryptobox_identity_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut identity = vec![0x02, 0xa1, 0x00];
        identity.extend_from_slice(&Client::in_memory().unwrap().identity().to_bytes());
        write(&dir.path().join("identities/local"), &identity);
        let mut new = Client::in_memory().unwrap();
        let e = new
            .import_cryptobox_directory(dir.path(), ImportOptions::default(), &mut |_| {})
            .unwrap_err();
        assert_eq!(e.code(), 112);
        assert!(e.to_string().contains("only the public key"), "{e}");
    }

    #[test]
    fn a_directory_that_is_no_cryptobox_store_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut new = Client::in_memory().unwrap();
        let mut import_dir = |path: &Path| {
            new.import_cryptobox_directory(path, ImportOptions::default(), &mut |_| {})
                .unwrap_err()
        };
        let e = import_dir(dir.path());
        assert_eq!((e.code(), e.kind()), (515, "ImportSourceUnreadable"));
        let e = import_dir(&dir.path().join("missing"));
        assert_eq!(e.code(), 515);
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        let e = import_dir(dir.path());
        assert!(e.to_string().contains("no identity"), "{e}");
    }

    #[test]
    fn a_record_file_that_cannot_be_read_is_a_bad_record() {
        let mut old = old_store();
        let source = records(&mut old);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(
            &root.join("keys/local_identity.dat"),
            &json_record("local_identity", &source.identity),
        );
        write(
            &root.join("prekeys/3.dat"),
            b"{\"serialised\": \"not base64!\"}",
        );
        write(&root.join("prekeys/4.dat"), b"not json");
        let mut new = Client::in_memory().unwrap();
        let e = new
            .import_cryptobox_directory(root, ImportOptions::default(), &mut |_| {})
            .unwrap_err();
        let ClientError::Import(ImportError::BadRecords(bad)) = &e else {
            panic!("{e:?}")
        };
        let ids: Vec<&str> = bad.iter().map(|b| b.id.as_str()).collect();
        assert_eq!(ids, ["3", "4"]);
        assert!(bad.iter().all(|b| b.code == 515));
        let report = new
            .import_cryptobox_directory(
                root,
                ImportOptions::default().skip_bad_records(true),
                &mut |_| {},
            )
            .unwrap();
        assert_eq!((report.prekeys, report.skipped.len()), (0, 2));
        assert_eq!(report.fingerprint, old.client.fingerprint());
    }

    #[test]
    fn raw_bytes_of_older_cryptobox_versions_are_read() {
        let mut old = old_store();
        let source = records(&mut old);
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let as_array =
            serde_json::json!({ "id": "local_identity", "serialised": source.identity.to_vec() });
        write(
            &root.join("keys/local_identity.dat"),
            as_array.to_string().as_bytes(),
        );
        let r = &source.prekeys[0];
        let as_object: serde_json::Map<String, serde_json::Value> = r
            .bytes
            .iter()
            .enumerate()
            .map(|(i, b)| (i.to_string(), (*b).into()))
            .collect();
        let record = serde_json::json!({ "id": r.id, "serialised": as_object });
        write(
            &root.join(format!("prekeys/{}.dat", r.id)),
            record.to_string().as_bytes(),
        );
        let (_, report) = read_and_import(root);
        assert_eq!(report.prekeys, 1);
    }

    /// Stores that Wire's own cryptobox 12.8.0 wrote (tests/cryptobox/fixtures: the
    /// store-engine-fs directory as written, and the same records in the Rust cryptobox's
    /// layouts), with a queue its peers encrypted before the migration.
    #[test]
    fn stores_written_by_wires_cryptobox_import_and_their_queue_decrypts() {
        use base64::Engine as _;
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/cryptobox/fixtures");
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(fixtures.join("expected.json")).unwrap())
                .unwrap();
        let ids = |key: &str| -> Vec<String> {
            let mut ids: Vec<String> = expected[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect();
            ids.sort();
            ids
        };
        // The one-time prekeys and the last-resort one.
        let prekeys = expected["prekeyIds"].as_array().unwrap().len();
        for layout in ["fs-store", "rust-cryptobox", "rust-cryptobox-legacy"] {
            let (mut new, report) = read_and_import(&fixtures.join(layout));
            assert_eq!(
                report.fingerprint,
                expected["fingerprint"].as_str().unwrap(),
                "{layout}"
            );
            assert_eq!(report.sessions, ids("sessionIds").len(), "{layout}");
            assert_eq!(report.prekeys, prekeys, "{layout}");
            assert!(report.skipped.is_empty(), "{layout}: {:?}", report.skipped);
            let mut stored = new.session_ids().unwrap();
            stored.sort();
            assert_eq!(stored, ids("sessionIds"), "{layout}");
            for (i, m) in expected["queue"].as_array().unwrap().iter().enumerate() {
                let session_id = m["sessionId"].as_str().unwrap();
                let envelope = base64::engine::general_purpose::STANDARD
                    .decode(m["envelope"].as_str().unwrap())
                    .unwrap();
                let plaintext = new
                    .decrypt(session_id, &envelope)
                    .unwrap_or_else(|e| panic!("{layout}: message {i} ({session_id}): {e}"));
                assert_eq!(
                    plaintext,
                    m["plaintext"].as_str().unwrap().as_bytes(),
                    "{layout}"
                );
            }
        }
    }
}
