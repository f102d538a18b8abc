//! A store to import (`Client::import_cryptobox`): a client of this library that has used its
//! store for a while, exported record by record as Wire's Proteus serialises them.

use proteus_client::{
    Client, ClientError, CryptoboxRecords, ImportOptions, ImportReport, SourceRecord,
};
use proteus_core::{OsRng, PreKey, PreKeyId};
use zeroize::Zeroizing;

/// A client that has used its store for a while, and what is still on its way to it.
pub struct OldStore {
    pub client: Client,
    /// The prekeys it still holds, as serialised.
    pub prekeys: Vec<(PreKeyId, Zeroizing<Vec<u8>>)>,
    /// Its peers: (session id as the old store names it, the peer's client, its id for us).
    pub peers: Vec<(String, Client)>,
    /// Messages sent to the old store and not read by it: (session id, envelope, plaintext).
    pub queue: Vec<(String, Vec<u8>, Vec<u8>)>,
}

pub const ALICE_AT_BOB: &str = "alice@old";

/// Alice's old store: five one-time prekeys and the last-resort one; a session she started
/// with bob and one carol started with her prekey 1, both used both ways; then, unread, two
/// messages from bob, one from dave to her prekey 2 and one from erin to her last-resort key.
pub fn old_store() -> OldStore {
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
pub fn records(old: &mut OldStore) -> CryptoboxRecords {
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

pub fn import(client: &mut Client, source: &CryptoboxRecords) -> Result<ImportReport, ClientError> {
    client.import_cryptobox(source, ImportOptions::default(), &mut |_| {})
}

/// What a store holds, to compare before and after a failed import.
pub fn contents(client: &mut Client) -> (String, Vec<String>, usize, Vec<u8>) {
    (
        client.fingerprint(),
        client.session_ids().unwrap(),
        client.prekeys_remaining().unwrap(),
        client.last_resort_bundle().unwrap().to_bytes(),
    )
}
