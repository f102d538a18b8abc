//! Import of identities, prekeys and sessions serialised by Wire's Proteus (`@wireapp/proteus`
//! 9.13.0): the interop vectors in `tests/vectors/proteus-js/`, replayed through the client API.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use common::{VECTOR_FILES, array_of, code_of, hex_of, load_vector, str_of, u64_of};
use proteus_client::{Client, QueuedMessage};
use proteus_core::PreKeyId;
use serde_json::Value;

/// A client holding the identity and the prekeys a vector file gives `party`.
fn party_client(v: &Value, party: &str) -> Client {
    let p = &v["parties"][party];
    let mut client = Client::in_memory().unwrap();
    client
        .import_identity(&hex_of(&p["identity_keypair"]))
        .unwrap();
    assert_eq!(
        client.fingerprint(),
        str_of(&p["fingerprint"]),
        "{party}'s fingerprint"
    );
    assert_eq!(client.identity().to_bytes(), hex_of(&p["identity_public"]));
    if let Some(prekeys) = p.get("prekeys") {
        for pk in array_of(prekeys) {
            let id = client.import_prekey(&hex_of(&pk["bytes"])).unwrap();
            assert_eq!(u64::from(id.value()), u64_of(&pk["id"]));
            assert_eq!(
                client
                    .prekey_bundle(id)
                    .unwrap()
                    .public_key()
                    .as_bytes()
                    .as_slice(),
                hex_of(&pk["public_key"])
            );
        }
    }
    client
}

/// The same client, made by importing a directory in Wire's Rust cryptobox layout that holds
/// the party's identity and prekeys from the vector file (`Client::import_cryptobox_directory`).
#[cfg(feature = "cryptobox-directory")]
fn party_client_from_cryptobox_directory(v: &Value, party: &str) -> Client {
    let p = &v["parties"][party];
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("identities")).unwrap();
    std::fs::create_dir_all(root.join("prekeys")).unwrap();
    let mut identity = vec![0x01, 0xa1, 0x00];
    identity.extend(hex_of(&p["identity_keypair"]));
    std::fs::write(root.join("identities/local"), identity).unwrap();
    for pk in p.get("prekeys").map(array_of).into_iter().flatten() {
        let file = root.join(format!("prekeys/{}", u64_of(&pk["id"])));
        std::fs::write(file, hex_of(&pk["bytes"])).unwrap();
    }
    let mut client = Client::in_memory().unwrap();
    let report = client
        .import_cryptobox_directory(root, proteus_client::ImportOptions::default(), &mut |_| {})
        .unwrap();
    assert_eq!(
        report.fingerprint,
        str_of(&p["fingerprint"]),
        "{party}'s fingerprint"
    );
    assert_eq!(client.fingerprint(), str_of(&p["fingerprint"]));
    client
}

fn one_time_prekeys(v: &Value, party: &str) -> usize {
    v["parties"][party].get("prekeys").map_or(0, |p| {
        array_of(p)
            .iter()
            .filter(|pk| u64_of(&pk["id"]) != u64::from(PreKeyId::LAST_RESORT.value()))
            .count()
    })
}

fn message<'v>(v: &'v Value, event: &Value) -> &'v Value {
    &v["messages"][usize::try_from(u64_of(&event["message"])).unwrap()]
}

fn envelope(v: &Value, event: &Value) -> Vec<u8> {
    event
        .get("envelope")
        .map_or_else(|| hex_of(&message(v, event)["envelope"]), hex_of)
}

/// The expected code of a rejection as this client reports it. Wire's JS says InvalidMessage
/// (201) for a CipherMessage that arrives before any session exists; the client has no session
/// under that id and reports SessionNotFound (104).
fn expected_client_code(js_code: u64) -> u16 {
    match js_code {
        201 => 104,
        c => u16::try_from(c).unwrap(),
    }
}

/// Messages the receiver can decrypt from its imported identity and prekeys alone: those sent
/// before their sender had decrypted anything from the receiver (later chains answer ratchet
/// keys the generator drew at random; see the vectors' README, "Receiving").
fn decryptable_without_snapshots(v: &Value) -> BTreeSet<u64> {
    let mut heard_back: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ok = BTreeSet::new();
    for e in array_of(&v["events"]) {
        let party = str_of(&e["party"]).to_owned();
        let peer = str_of(&e["peer"]).to_owned();
        match str_of(&e["type"]) {
            "encrypt" if !heard_back.contains(&(party.clone(), peer.clone())) => {
                ok.insert(u64_of(&e["message"]));
            }
            "decrypt" if e["expect"]["ok"].as_bool() == Some(true) => {
                heard_back.insert((party, peer));
            }
            _ => {}
        }
    }
    ok
}

/// Bob (every party with prekeys) imports his identity and prekeys from the vector file and
/// decrypts the recorded envelopes with `decrypt()`: same plaintexts, same rejections, same
/// prekeys removed.
#[test]
fn recorded_envelopes_decrypt_with_imported_identity_and_prekeys() {
    replay_recorded_envelopes(party_client);
}

/// The same, with the identity and prekeys imported from a Rust cryptobox directory made of the
/// vector file's records (Wire's serialisations, behind cryptobox's identity wrapper).
#[cfg(feature = "cryptobox-directory")]
#[test]
fn recorded_envelopes_decrypt_after_a_rust_cryptobox_directory_import() {
    replay_recorded_envelopes(party_client_from_cryptobox_directory);
}

fn replay_recorded_envelopes(make_client: fn(&Value, &str) -> Client) {
    let mut total = 0;
    for name in VECTOR_FILES {
        let v = load_vector(name);
        let receivers: Vec<String> = v["parties"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(_, p)| p.get("prekeys").is_some())
            .map(|(n, _)| n.clone())
            .collect();
        assert!(!receivers.is_empty());
        let decryptable = decryptable_without_snapshots(&v);
        for receiver in receivers {
            let mut client = make_client(&v, &receiver);
            let mut remaining = one_time_prekeys(&v, &receiver);
            assert_eq!(client.prekeys_remaining().unwrap(), remaining);
            let mut decrypted = 0;
            for e in array_of(&v["events"]) {
                if str_of(&e["type"]) != "decrypt" || str_of(&e["party"]) != receiver {
                    continue;
                }
                if !decryptable.contains(&u64_of(&e["message"])) {
                    continue;
                }
                let seq = u64_of(&e["seq"]);
                let peer = str_of(&e["peer"]);
                let result = client.decrypt(peer, &envelope(&v, e));
                if e["expect"]["ok"].as_bool() == Some(true) {
                    let plaintext =
                        result.unwrap_or_else(|err| panic!("{name} seq {seq}: {err:?}"));
                    assert_eq!(
                        plaintext,
                        hex_of(&e["expect"]["plaintext"]),
                        "{name} seq {seq}"
                    );
                    decrypted += 1;
                } else {
                    let js = u64_of(&e["expect"]["error"]["code"]);
                    assert_eq!(
                        code_of(&result),
                        expected_client_code(js),
                        "{name} seq {seq}"
                    );
                }
                for removed in e.get("prekeys_removed").map(array_of).into_iter().flatten() {
                    let id = PreKeyId::new(u16::try_from(u64_of(removed)).unwrap());
                    assert_eq!(
                        code_of(&client.prekey_bundle(id)),
                        101,
                        "{name} seq {seq}: prekey {id} kept"
                    );
                    remaining -= 1;
                }
                assert_eq!(
                    client.prekeys_remaining().unwrap(),
                    remaining,
                    "{name} seq {seq}"
                );
            }
            assert!(
                decrypted >= 3,
                "{name}: only {decrypted} decrypted by {receiver}"
            );
            total += decrypted;
            // The last-resort prekey from the file is still there.
            assert_eq!(
                client.last_resort_bundle().unwrap().identity_key(),
                client.identity()
            );
        }
    }
    assert!(total >= 30, "only {total} messages decrypted");
}

/// The multi-sender queue of the vectors, through `decrypt_batch`: three new senders, each with
/// their own one-time prekey, interleaved.
#[test]
fn recorded_multi_sender_queue_decrypts_in_one_batch() {
    let v = load_vector("multi_sender");
    let mut bob = party_client(&v, "bob");
    assert_eq!(bob.prekeys_remaining().unwrap(), 3);
    let mut items = Vec::new();
    let mut expected = Vec::new();
    for e in array_of(&v["events"]) {
        if str_of(&e["type"]) == "decrypt" && str_of(&e["party"]) == "bob" {
            items.push((str_of(&e["peer"]).to_owned(), envelope(&v, e)));
            expected.push(hex_of(&e["expect"]["plaintext"]));
        }
    }
    assert_eq!(items.len(), 12);
    let queue: Vec<QueuedMessage> = items
        .iter()
        .map(|(s, e)| QueuedMessage {
            session_id: s,
            envelope: e,
        })
        .collect();
    let results = bob
        .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
        .unwrap();
    for (r, want) in results.iter().zip(&expected) {
        assert_eq!(r.outcome.as_ref().unwrap(), want);
    }
    assert_eq!(bob.prekeys_remaining().unwrap(), 0);
    assert_eq!(bob.session_ids().unwrap(), ["alice", "carol", "dave"]);
    let again = bob
        .decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))
        .unwrap();
    assert!(again.iter().all(|r| code_of(&r.outcome) == 209));
}

/// Replaces `client`'s session with `peer` by a snapshot serialised by Wire's Proteus.
fn load_snapshot(client: &mut Client, peer: &str, snapshot: &[u8]) {
    client.delete_session(peer).unwrap();
    client.import_session(peer, snapshot).unwrap();
}

/// Every party of every file, through the client API, loading the `session_after` snapshots
/// as the vectors' README describes: encrypting from a snapshot gives the recorded envelope
/// byte for byte, every decrypt gives the recorded plaintext or rejection, and a session that
/// did not need a reload exports to the recorded snapshot byte for byte.
#[test]
fn every_vector_file_replays_through_the_client_with_snapshots() {
    for name in VECTOR_FILES {
        let v = load_vector(name);
        let mut clients: BTreeMap<String, Client> = v["parties"]
            .as_object()
            .unwrap()
            .keys()
            .map(|p| (p.clone(), party_client(&v, p)))
            .collect();
        let (mut envelopes, mut exports) = (0, 0);
        for e in array_of(&v["events"]) {
            let seq = u64_of(&e["seq"]);
            let client = clients.get_mut(str_of(&e["party"])).unwrap();
            let peer = str_of(&e["peer"]);
            let snapshot = e.get("session_after").map(hex_of);
            let mut in_sync = false;
            match str_of(&e["type"]) {
                "init_from_prekey" => {
                    let bundle = &v["bundles"][usize::try_from(u64_of(&e["bundle"])).unwrap()];
                    assert_eq!(
                        proteus_core::PreKeyBundle::from_bytes(&hex_of(&bundle["bytes"]))
                            .unwrap()
                            .to_bytes(),
                        hex_of(&bundle["bytes"])
                    );
                    client
                        .import_session(peer, snapshot.as_ref().unwrap())
                        .unwrap();
                    in_sync = true;
                }
                "encrypt" => {
                    let m = message(&v, e);
                    let out = client.encrypt(peer, &hex_of(&m["plaintext"])).unwrap();
                    assert_eq!(
                        hex::encode(&out),
                        str_of(&m["envelope"]),
                        "{name} seq {seq}: envelope"
                    );
                    envelopes += 1;
                    in_sync =
                        e.get("cleared_pending_prekey").and_then(Value::as_bool) != Some(true);
                }
                "decrypt" => {
                    let result = client.decrypt(peer, &envelope(&v, e));
                    if e["expect"]["ok"].as_bool() == Some(true) {
                        let plaintext =
                            result.unwrap_or_else(|err| panic!("{name} seq {seq}: {err:?}"));
                        assert_eq!(
                            plaintext,
                            hex_of(&e["expect"]["plaintext"]),
                            "{name} seq {seq}"
                        );
                    } else {
                        let js = u64_of(&e["expect"]["error"]["code"]);
                        assert_eq!(
                            code_of(&result),
                            expected_client_code(js),
                            "{name} seq {seq}"
                        );
                    }
                    // Decrypts that drew no randomness leave the session as the library did.
                    in_sync = e.get("rng").is_none();
                    for removed in e.get("prekeys_removed").map(array_of).into_iter().flatten() {
                        let id = PreKeyId::new(u16::try_from(u64_of(removed)).unwrap());
                        assert_eq!(code_of(&client.prekey_bundle(id)), 101);
                    }
                }
                "encrypt_unrecorded" => {
                    for _ in 0..u64_of(&e["count"]) {
                        client.encrypt(peer, b"unrecorded").unwrap();
                    }
                }
                other => panic!("{name}: unknown event type {other}"),
            }
            if let Some(snapshot) = snapshot {
                if in_sync && client.has_session(peer).unwrap() {
                    let exported = client.export_session(peer).unwrap();
                    assert_eq!(
                        hex::encode(&*exported),
                        hex::encode(&snapshot),
                        "{name} seq {seq}: session_after"
                    );
                    exports += 1;
                }
                load_snapshot(client, peer, &snapshot);
            }
        }
        assert!(envelopes >= 10, "{name}: {envelopes} envelopes compared");
        assert!(exports >= 10, "{name}: {exports} snapshots compared");
    }
}

/// Bob's session from a snapshot (basic_exchange, after he decrypted Alice's first three
/// messages) is imported into a persistent client; the conversation then continues: the
/// recorded replies come out byte for byte, Alice (from her own snapshot) decrypts them, and
/// the two carry on, across a restart of Bob's store.
#[cfg(feature = "sqlite")]
#[test]
fn an_imported_session_snapshot_continues_the_conversation() {
    let v = load_vector("basic_exchange");
    let events = array_of(&v["events"]);
    let find = |seq: u64| events.iter().find(|e| u64_of(&e["seq"]) == seq).unwrap();
    // seq 6: bob decrypted message 2; seq 3: alice encrypted message 2 (her state before replies).
    let bob_snapshot = hex_of(&find(6)["session_after"]);
    let alice_snapshot = hex_of(&find(3)["session_after"]);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    let mut bob = Client::open(&path).unwrap();
    bob.import_identity(&hex_of(&v["parties"]["bob"]["identity_keypair"]))
        .unwrap();
    bob.import_session("alice", &bob_snapshot).unwrap();
    assert_eq!(
        bob.remote_fingerprint("alice").unwrap(),
        str_of(&v["parties"]["alice"]["fingerprint"])
    );

    let mut alice = Client::in_memory().unwrap();
    alice
        .import_identity(&hex_of(&v["parties"]["alice"]["identity_keypair"]))
        .unwrap();
    alice.import_session("bob", &alice_snapshot).unwrap();

    // Bob's next three messages are the recorded ones (messages 3, 4, 5), byte for byte.
    let mut replies = Vec::new();
    for m in 3..=5 {
        let msg = &v["messages"][m];
        let out = bob.encrypt("alice", &hex_of(&msg["plaintext"])).unwrap();
        assert_eq!(hex::encode(&out), str_of(&msg["envelope"]), "message {m}");
        replies.push((out, hex_of(&msg["plaintext"])));
    }
    // Restart Bob: the imported session and its progress are in the store.
    drop(bob);
    let mut bob = Client::open(&path).unwrap();
    for (envelope, plaintext) in &replies {
        assert_eq!(&alice.decrypt("bob", envelope).unwrap(), plaintext);
    }
    // From here on both draw fresh randomness: a few more turns each way.
    for turn in 0..3 {
        let text = format!("alice, turn {turn}");
        let e = alice.encrypt("bob", text.as_bytes()).unwrap();
        assert_eq!(bob.decrypt("alice", &e).unwrap(), text.as_bytes());
        let text = format!("bob, turn {turn}");
        let e = bob.encrypt("alice", text.as_bytes()).unwrap();
        assert_eq!(alice.decrypt("bob", &e).unwrap(), text.as_bytes());
    }
}

/// A snapshot holding staged keys (out_of_order, seq 7: Bob's first message was Alice's third,
/// so counters 0 and 1 are staged) is imported into an SQLite store; the late messages decrypt
/// after a restart, from staged keys that were stored as their own records.
#[cfg(feature = "sqlite")]
#[test]
fn an_imported_snapshot_with_staged_keys_survives_a_restart() {
    let v = load_vector("out_of_order");
    let events = array_of(&v["events"]);
    let snap = hex_of(&events.iter().find(|e| u64_of(&e["seq"]) == 7).unwrap()["session_after"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bob.db");
    {
        let mut bob = Client::open(&path).unwrap();
        bob.import_identity(&hex_of(&v["parties"]["bob"]["identity_keypair"]))
            .unwrap();
        bob.import_session("alice", &snap).unwrap();
    }
    let mut bob = Client::open(&path).unwrap();
    for seq in [8, 9, 10, 11] {
        let e = events.iter().find(|e| u64_of(&e["seq"]) == seq).unwrap();
        assert_eq!(
            bob.decrypt("alice", &envelope(&v, e)).unwrap(),
            hex_of(&e["expect"]["plaintext"]),
            "seq {seq}"
        );
    }
    // And the export now matches the library's snapshot after seq 11.
    let after = hex_of(&events.iter().find(|e| u64_of(&e["seq"]) == 11).unwrap()["session_after"]);
    assert_eq!(
        hex::encode(&*bob.export_session("alice").unwrap()),
        hex::encode(after)
    );
}

/// Importing Bob's identity is refused once a session exists, and a snapshot does not load
/// under another identity.
#[test]
fn vector_sessions_belong_to_their_identity() {
    let v = load_vector("basic_exchange");
    let events = array_of(&v["events"]);
    let snap = hex_of(&events.iter().find(|e| u64_of(&e["seq"]) == 6).unwrap()["session_after"]);
    let mut stranger = Client::in_memory().unwrap();
    assert_eq!(code_of(&stranger.import_session("alice", &snap)), 300);
    assert!(stranger.session_ids().unwrap().is_empty());
    let mut bob = party_client(&v, "bob");
    bob.import_session("alice", &snap).unwrap();
    assert_eq!(
        code_of(&bob.import_identity(&hex_of(&v["parties"]["alice"]["identity_keypair"]))),
        107
    );
    assert_eq!(
        bob.fingerprint(),
        str_of(&v["parties"]["bob"]["fingerprint"])
    );
}
