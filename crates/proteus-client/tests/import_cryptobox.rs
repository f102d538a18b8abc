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

mod common;

use common::cryptobox::{ALICE_AT_BOB, contents, import, old_store, records};
use proteus_client::{
    Client, ClientError, ImportError, ImportOptions, ImportProgress, SourceRecord, SourceTable,
};
use proteus_core::{OsRng, PreKey, PreKeyId};
use zeroize::Zeroizing;

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
