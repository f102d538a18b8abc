//! Two (and three) real `proteus-chat` processes and a relay on 127.0.0.1: messages both ways,
//! then 1000 messages to a client that is offline, each arriving exactly once and in order per
//! sender; a client killed while it decrypts its backlog loses nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::time::Duration;

use common::Proc;

/// A wait's hang guard (see [`common::HANG`]).
const T: Duration = common::HANG;

fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix} {i:04}")).collect()
}

/// The `/status` line: waits for it, so every line typed before it has been handled.
fn status(chat: &mut Proc) -> String {
    chat.type_line("/status");
    chat.wait_for(|l| l.starts_with("* outbox:"), T)
}

fn received_from(lines: &[String], sender: &str) -> Vec<String> {
    let prefix = format!("{sender}: ");
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect()
}

#[test]
fn messages_flow_both_ways_and_a_backlog_of_1000_arrives_exactly_once_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (_relay, addr) = Proc::relay(dir.path(), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, dir.path());
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());

    // Both ways, several turns (the first creates the session from a claimed prekey).
    for i in 0..3 {
        alice.type_line(&format!("hello bob {i}"));
        bob.wait_for(|l| l == format!("alice: hello bob {i}"), T);
        bob.type_line(&format!("hi alice {i}"));
        alice.wait_for(|l| l == format!("bob: hi alice {i}"), T);
    }
    // Each pinned the other's fingerprint on first sight, and both show the same pair.
    alice.type_line("/fingerprint");
    let alice_fp = alice.wait_for(|l| l.starts_with("* you (alice):"), T);
    let bob_seen_by_alice = alice.wait_for(|l| l.starts_with("* bob:"), T);
    bob.type_line("/fingerprint");
    let bob_fp = bob.wait_for(|l| l.starts_with("* you (bob):"), T);
    let alice_seen_by_bob = bob.wait_for(|l| l.starts_with("* alice:"), T);
    let tail = |l: &str| l.rsplit(":  ").next().unwrap().trim().to_owned();
    assert_eq!(tail(&alice_fp), tail(&alice_seen_by_bob));
    assert_eq!(tail(&bob_fp), tail(&bob_seen_by_alice));

    // Bob leaves; alice (and carol, interleaved at the relay) write to him meanwhile.
    assert!(bob.quit().success());
    let mut carol = Proc::chat("carol", "bob", &addr, dir.path());
    let from_alice = numbered("m", 1000);
    let from_carol = numbered("c", 100);
    alice.type_lines(&from_alice);
    carol.type_lines(&from_carol);
    assert!(status(&mut alice).starts_with("* outbox: 0 waiting; with bob: 3 received, 1003 sent"));
    assert!(status(&mut carol).starts_with("* outbox: 0 waiting; with bob: 0 received, 100 sent"));

    // Bob comes back: the whole backlog, decrypted with the batch API, in order per sender.
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());
    let summary = bob.wait_for(|l| l.contains("queued messages"), T);
    assert!(
        summary.starts_with("* 1100 queued messages from 2 senders decrypted in"),
        "{summary}"
    );
    let shown = bob.transcript.clone();
    assert_eq!(received_from(&shown, "alice"), from_alice);
    assert_eq!(received_from(&shown, "carol"), from_carol);
    eprintln!("{summary}");

    // Bob answers; nothing comes twice, even after another restart.
    bob.type_line("got them all");
    alice.wait_for(|l| l == "bob: got them all", T);
    assert!(status(&mut bob).contains("with alice: 1003 received, 4 sent"));
    assert!(bob.quit().success());
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());
    let again = status(&mut bob);
    assert!(
        again.contains("with alice: 1003 received, 4 sent"),
        "{again}"
    );
    assert!(
        received_from(&bob.transcript, "alice").is_empty(),
        "{:?}",
        bob.transcript
    );
    // And the session goes on.
    alice.type_line("still there?");
    bob.wait_for(|l| l == "alice: still there?", T);
    assert!(alice.quit().success());
    assert!(bob.quit().success());
    assert!(carol.quit().success());
}

#[test]
fn a_client_killed_while_it_decrypts_its_backlog_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (_relay, addr) = Proc::relay(dir.path(), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, dir.path());
    let bob = Proc::chat("bob", "alice", &addr, dir.path());
    assert!(bob.quit().success());
    let sent = numbered("m", 1000);
    alice.type_lines(&sent);
    assert!(status(&mut alice).contains("1000 sent"));

    // Kill bob (SIGKILL) at a few points of his start and backlog; then let him finish.
    let mut shown = Vec::new();
    for delay_ms in [30u64, 80, 150, 250, 400] {
        let mut bob = common::Proc::spawn(
            "bob",
            &[
                "bob",
                "alice",
                "--relay",
                &addr,
                "--data",
                dir.path().to_str().unwrap(),
                "--no-embed",
            ],
        );
        // The delay only picks the point of the kill (whatever it is, nothing may be lost).
        std::thread::sleep(Duration::from_millis(delay_ms));
        bob.kill();
        // Everything bob printed before he died, however slowly it is read.
        bob.drain_to_end(T);
        let lines = received_from(&bob.transcript, "alice");
        eprintln!(
            "bob killed after {delay_ms} ms had shown {} lines",
            lines.len()
        );
        shown.extend(lines);
    }
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());
    let line = status(&mut bob);
    assert!(line.contains("with alice: 1000 received"), "{line}");
    // Every message reached the screen in one of the runs (a line recorded but not shown
    // before a kill is shown at the next start).
    shown.extend(received_from(&bob.transcript, "alice"));
    shown.sort();
    shown.dedup();
    assert_eq!(shown, sent);
    assert!(bob.quit().success());
    assert!(alice.quit().success());
}

#[test]
fn ctrl_c_and_sigterm_close_the_client_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (_relay, addr) = Proc::relay(dir.path(), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, dir.path());
    alice.type_line("/fingerprint");
    let before = alice.wait_for(|l| l.starts_with("* you (alice):"), T);
    alice.signal("INT");
    alice.wait_for(|l| l == "* bye", T);
    assert!(alice.wait_exit().success());

    let mut alice = Proc::chat("alice", "bob", &addr, dir.path());
    alice.type_line("/fingerprint");
    assert_eq!(
        alice.wait_for(|l| l.starts_with("* you (alice):"), T),
        before
    );
    alice.signal("TERM");
    assert!(alice.wait_exit().success());
}

#[test]
fn a_second_client_for_the_same_user_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_relay, addr) = Proc::relay(dir.path(), &[]);
    let alice = Proc::chat("alice", "bob", &addr, dir.path());
    let mut second = Proc::spawn(
        "alice-2",
        &[
            "alice",
            "bob",
            "--relay",
            &addr,
            "--data",
            dir.path().to_str().unwrap(),
        ],
    );
    second.wait_for(
        |l| l.contains("another proteus-chat is running as alice"),
        T,
    );
    assert!(!second.wait_exit().success());
    assert!(alice.quit().success());
}

#[test]
fn prekeys_claimed_by_others_are_refilled_at_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    // Eve may claim more than the default share of bob's prekeys at this relay.
    let (_relay, addr) = Proc::relay(dir.path(), &["--claim-burst", "100"]);
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());
    assert!(
        bob.transcript
            .iter()
            .any(|l| l == "* published 100 new one-time prekeys at the relay (0 were left)")
    );
    assert!(status(&mut bob).ends_with("100 one-time prekeys on this device"));

    // Someone claims 80 of bob's 100 prekeys at the relay.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let identity = std::sync::Arc::new(proteus_core::IdentityKeyPair::generate(
            &mut proteus_core::OsRng,
        ));
        let signer = {
            let identity = identity.clone();
            std::sync::Arc::new(move |m: &[u8]| identity.sign(m))
        };
        let eve = proteus_chat::net::RelayClient::new(addr.parse().unwrap(), "eve", signer);
        eve.register(identity.public_key()).await.unwrap();
        for _ in 0..80 {
            let (_, last_resort) = eve.claim("bob").await.unwrap();
            assert!(!last_resort);
        }
    });
    // Each claim wakes bob's long-poll; once fewer than 25 are left, he tops the relay up to 100
    // (the 80 claimed stay on his device until their first messages come).
    let refill = bob.wait_for(
        |l| l.starts_with("* published ") && l.contains(" new one-time prekeys at the relay ("),
        T,
    );
    let number = |text: &str| -> u64 { text.split_whitespace().next().unwrap().parse().unwrap() };
    let published = number(refill.strip_prefix("* published ").unwrap());
    let left = number(refill.rsplit('(').next().unwrap());
    assert!((20..25).contains(&left), "{refill}");
    assert_eq!(published + left, 100, "{refill}");
    let stored = 100 + published;
    assert!(
        status(&mut bob).ends_with(&format!("{stored} one-time prekeys on this device")),
        "{stored}"
    );
    assert!(bob.quit().success());
}

#[test]
fn a_changed_identity_is_a_warning_and_nothing_is_sent_until_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let (mut relay, addr) = Proc::relay(&dir.path().join("relay-1"), &[]);
    let alice_data = dir.path().join("a");
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    let mut bob = Proc::chat("bob", "alice", &addr, &dir.path().join("b"));
    alice.type_line("hello bob");
    bob.wait_for(|l| l == "alice: hello bob", T);
    assert!(bob.quit().success());
    assert!(alice.quit().success());
    relay.kill();

    // A new relay, and "bob" with a new identity (a reinstall, or an impostor).
    let (_relay, addr) = Proc::relay(&dir.path().join("relay-2"), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, &alice_data);
    let mut bob = Proc::chat("bob", "alice", &addr, &dir.path().join("b-new"));
    bob.type_line("it's me, new phone");
    alice.wait_for(|l| l == "! WARNING: bob's identity key has CHANGED", T);
    alice.wait_for(|l| l.starts_with("! messages from bob are held"), T);
    alice.type_line("who are you?");
    alice.wait_for(|l| l == "! not sent", T);
    alice.type_line("/fingerprint");
    alice.wait_for(|l| l.starts_with("! bob's identity CHANGED to"), T);
    assert!(
        !alice.transcript.iter().any(|l| l.starts_with("bob: ")),
        "{:?}",
        alice.transcript
    );
    bob.type_line("/status");
    bob.wait_for(|l| l.contains("0 received, 1 sent"), T);

    alice.type_line("/accept");
    alice.wait_for(|l| l.starts_with("* bob's new identity"), T);
    alice.wait_for(|l| l == "bob: it's me, new phone", T);
    alice.type_line("welcome back");
    bob.wait_for(|l| l == "alice: welcome back", T);
    assert!(alice.quit().success());
    assert!(bob.quit().success());
}

#[test]
fn reset_starts_the_session_over_and_the_conversation_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let (_relay, addr) = Proc::relay(dir.path(), &[]);
    let mut alice = Proc::chat("alice", "bob", &addr, dir.path());
    let mut bob = Proc::chat("bob", "alice", &addr, dir.path());
    alice.type_line("/reset");
    alice.wait_for(|l| l.starts_with("* there is no session with bob yet"), T);
    alice.type_line("before");
    bob.wait_for(|l| l == "alice: before", T);
    bob.type_line("reply");
    alice.wait_for(|l| l == "bob: reply", T);

    alice.type_line("/reset");
    alice.wait_for(|l| l == "* the session with bob starts over", T);
    alice.type_line("after the reset");
    bob.wait_for(|l| l == "alice: after the reset", T);
    bob.type_line("still here");
    alice.wait_for(|l| l == "bob: still here", T);
    assert!(alice.quit().success());
    assert!(bob.quit().success());
}
