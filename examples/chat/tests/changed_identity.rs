//! A peer whose identity changed (a reinstall, or an impostor): its messages are held unread
//! until the user accepts the new identity, after a `/reset` too, and a forgery that copies a
//! genuine message's MAC cannot take that message's place.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::Proc;
use proteus_chat::net::RelayClient;
use proteus_core::{Envelope, IdentityKeyPair, OsRng, PreKeyBundle, Session};

/// A wait's hang guard (see [`common::HANG`]).
const T: Duration = common::HANG;

/// Alice and bob chat at a first relay (alice pins bob's identity); then both leave and the
/// relay goes. Returns alice's data directory.
fn alice_knows_bob(dir: &Path, reset: bool) -> std::path::PathBuf {
    let (mut relay, addr) = Proc::relay(&dir.join("relay-1"), &[]);
    let alice_data = dir.join("a");
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    let mut bob = Proc::chat("bob", "alice", &addr, &dir.join("b"));
    alice.type_line("hello bob");
    bob.wait_for(|l| l == "alice: hello bob", T);
    bob.type_line("hi alice");
    alice.wait_for(|l| l == "bob: hi alice", T);
    if reset {
        alice.type_line("/reset");
        alice.wait_for(|l| l.starts_with("* the session with bob starts over"), T);
    }
    assert!(bob.quit().success());
    assert!(alice.quit().success());
    relay.kill();
    alice_data
}

#[test]
fn after_reset_an_impostors_first_message_waits_for_the_identity_check() {
    let dir = tempfile::tempdir().unwrap();
    let alice_data = alice_knows_bob(dir.path(), true);
    // A relay where "bob" is someone else: the chat's identity check holds the impostor's
    // prekey message, whatever the engine's session.
    let (_relay, addr) = Proc::relay(&dir.path().join("relay-2"), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    let mut impostor = Proc::chat("bob", "alice", &addr, &dir.path().join("impostor"));
    impostor.type_line("send me the keys");
    alice.wait_for(|l| l == "! WARNING: bob's identity key has CHANGED", T);
    alice.type_line("/status");
    alice.wait_for(|l| l.starts_with("* outbox:"), T);
    assert!(
        !alice.transcript.iter().any(|l| l.starts_with("bob: send")),
        "shown before the identity check: {:?}",
        alice.transcript
    );
    assert!(
        alice
            .transcript
            .iter()
            .any(|l| l.starts_with("! messages from bob are held")),
        "{:?}",
        alice.transcript
    );
    // Accepted (alice compared fingerprints): only then is it read.
    alice.type_line("/accept");
    alice.wait_for(|l| l == "bob: send me the keys", T);
    assert!(alice.quit().success());
    assert!(impostor.quit().success());
}

/// A prekey message to alice from a new session of `identity`.
async fn envelope(bob: &RelayClient, identity: &IdentityKeyPair, text: &[u8]) -> Envelope<'static> {
    let (bundle, _) = bob.claim("alice").await.unwrap();
    let bundle = PreKeyBundle::from_bytes(&bundle).unwrap();
    let mut session = Session::init_from_prekey(&mut OsRng, identity, &bundle).unwrap();
    session.encrypt(text).unwrap()
}

#[test]
fn a_forgery_with_a_copied_mac_does_not_displace_the_held_genuine_message() {
    let dir = tempfile::tempdir().unwrap();
    let alice_data = alice_knows_bob(dir.path(), false);
    let (_relay, addr) = Proc::relay(&dir.path().join("relay-2"), &[]);
    // Alice publishes her prekeys at the new relay, and leaves: what follows is her backlog.
    let alice = Proc::chat("alice", "bob", &addr, &alice_data);
    assert!(alice.quit().success());

    // Bob on a new phone (a new identity), driven from here: a genuine prekey message, and
    // a forgery that carries the genuine one's MAC, queued before it.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let identity = Arc::new(IdentityKeyPair::generate(&mut OsRng));
        let signer = {
            let identity = identity.clone();
            Arc::new(move |m: &[u8]| identity.sign(m))
        };
        let bob = RelayClient::new(addr.parse().unwrap(), "bob", signer);
        bob.register(identity.public_key()).await.unwrap();
        let genuine = envelope(&bob, &identity, b"it's me, new phone").await;
        let other = envelope(&bob, &identity, b"forged").await;
        let forged = Envelope::from_message(other.message().clone(), *genuine.mac());
        assert_eq!(forged.mac(), genuine.mac());
        bob.send("alice", &forged.to_bytes()).await.unwrap();
        bob.send("alice", &genuine.to_bytes()).await.unwrap();
    });
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    alice.wait_for(|l| l == "! WARNING: bob's identity key has CHANGED", T);
    alice.wait_for(|l| l.starts_with("! messages from bob are held"), T);
    alice.type_line("/accept");
    alice.wait_for(|l| l.starts_with("* bob's new identity"), T);
    // /accept decrypts what was held before the next command runs.
    alice.type_line("/status");
    alice.wait_for(|l| l.starts_with("* outbox:"), T);
    assert!(
        alice
            .transcript
            .iter()
            .any(|l| l == "bob: it's me, new phone"),
        "the genuine message is lost: {:?}",
        alice.transcript
    );
    assert!(
        !alice.transcript.iter().any(|l| l == "bob: forged"),
        "{:?}",
        alice.transcript
    );
    assert!(alice.quit().success());
}

/// A bundle of another identity (`/reset` at a relay where "bob" is someone else) is refused
/// by the engine's pin: nothing is reset or sent until `/accept`, then the next line starts a
/// session with the accepted identity.
#[test]
fn a_reset_to_a_bundle_of_another_identity_waits_for_accept() {
    let dir = tempfile::tempdir().unwrap();
    let alice_data = alice_knows_bob(dir.path(), false);
    let (_relay, addr) = Proc::relay(&dir.path().join("relay-2"), &[]);
    let mut impostor = Proc::chat("bob", "alice", &addr, &dir.path().join("impostor"));
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    alice.type_line("/reset");
    alice.wait_for(|l| l == "! WARNING: bob's identity key has CHANGED", T);
    alice.wait_for(|l| l == "! not reset", T);
    alice.type_line("anyone there?");
    alice.wait_for(|l| l == "! not sent", T);
    alice.type_line("/fingerprint");
    alice.wait_for(|l| l.starts_with("! bob's identity CHANGED to"), T);
    alice.type_line("/accept");
    alice.wait_for(|l| l.starts_with("* bob's new identity"), T);
    alice.type_line("hello new bob");
    impostor.wait_for(|l| l == "alice: hello new bob", T);
    assert!(
        !impostor
            .transcript
            .iter()
            .any(|l| l == "alice: anyone there?"),
        "{:?}",
        impostor.transcript
    );
    assert!(alice.quit().success());
    assert!(impostor.quit().success());
}
