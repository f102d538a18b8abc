//! Importing the cryptobox stores Wire's libraries left in a directory
//! (`Client::import_cryptobox_directory`): @wireapp/store-engine-fs's layout and Wire's Rust
//! cryptobox's, written here from the documented layouts and, in tests/cryptobox/fixtures, by
//! Wire's own cryptobox 12.8.0.

#![cfg(feature = "cryptobox-directory")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::path::Path;

use common::cryptobox::{old_store, records};
use proteus_client::{Client, ClientError, ImportError, ImportOptions};
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
        serde_json::from_slice(&std::fs::read(fixtures.join("expected.json")).unwrap()).unwrap();
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
