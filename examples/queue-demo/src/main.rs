//! The engine's main job until a chat exists: Bob comes back online to a backlog of messages
//! that Alice sent while he was offline, and decrypts all of them.
//!
//! Usage: `proteus-queue-demo [--messages N]` (default 1000).

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::error::Error;
use std::time::Instant;

use proteus_core::{
    Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, PreKeyStore, Session,
};

const DEFAULT_MESSAGES: usize = 1000;
const USAGE: &str = "usage: proteus-queue-demo [--messages N]";

fn main() -> Result<(), Box<dyn Error>> {
    let count = parse_args(std::env::args().skip(1))?;
    let rng = &mut OsRng;

    // Identities and Bob's published prekey.
    let alice = IdentityKeyPair::generate(rng);
    let bob = IdentityKeyPair::generate(rng);
    println!("Alice's fingerprint: {}", grouped(&alice.fingerprint()));
    println!("Bob's fingerprint:   {}", grouped(&bob.fingerprint()));
    let prekey = PreKey::generate(PreKeyId::new(1), rng);
    let bundle = PreKeyBundle::signed(&bob, &prekey);
    let mut bob_prekeys = BTreeMap::new();
    bob_prekeys.insert(prekey.id(), prekey);

    // Session establishment: Alice's PreKeyMessage, Bob's reply.
    let mut alice_session = Session::init_from_prekey(rng, &alice, &bundle)?;
    let hello = alice_session.encrypt(b"hello Bob")?.to_bytes();
    let inbound =
        Session::init_from_message(rng, &bob, &mut bob_prekeys, &Envelope::from_bytes(&hello)?)?;
    let mut bob_session = inbound.session;
    let reply = bob_session.encrypt(b"hi Alice")?.to_bytes();
    let got = alice_session.decrypt(
        rng,
        &alice,
        &mut BTreeMap::new(),
        &Envelope::from_bytes(&reply)?,
    )?;
    if inbound.plaintext != b"hello Bob" || got != b"hi Alice" {
        return Err("session establishment: a plaintext did not match".into());
    }
    println!(
        "Session established: Alice sent a PreKeyMessage ({} bytes) using Bob's prekey 1, \
         Bob replied ({} bytes); prekey used up: {}; session tag {}",
        hello.len(),
        reply.len(),
        bob_prekeys.prekey(PreKeyId::new(1))?.is_none(),
        bob_session.session_tag(),
    );

    // Bob goes offline: his session is saved; Alice queues messages.
    let saved = bob_session.to_bytes();
    drop(bob_session);
    let plaintexts: Vec<Vec<u8>> = (0..count).map(chat_plaintext).collect();
    let started = Instant::now();
    let queue = plaintexts
        .iter()
        .map(|p| Ok(alice_session.encrypt(p)?.to_bytes()))
        .collect::<Result<Vec<_>, Box<dyn Error>>>()?;
    let encrypt_time = started.elapsed();
    let queued_bytes: usize = queue.iter().map(Vec::len).sum();
    println!(
        "Bob is offline. Alice queued {count} messages ({queued_bytes} bytes on the wire) in {:.2} ms.",
        encrypt_time.as_secs_f64() * 1e3,
    );

    // Bob comes back online: restore his session and work through the backlog.
    let started = Instant::now();
    let mut bob_session = Session::from_bytes(bob.public_key(), &saved)?;
    let mut decrypted = Vec::with_capacity(queue.len());
    for wire in &queue {
        let envelope = Envelope::from_bytes(wire)?;
        decrypted.push(bob_session.decrypt(rng, &bob, &mut bob_prekeys, &envelope)?);
    }
    let decrypt_time = started.elapsed();
    let ms = decrypt_time.as_secs_f64() * 1e3;
    let per_message_us = if count == 0 {
        0.0
    } else {
        decrypt_time.as_secs_f64() * 1e6 / count as f64
    };
    println!(
        "Bob is back online and decrypted the backlog of {count} messages in {ms:.2} ms \
         ({per_message_us:.2} µs per message, session restore included)."
    );

    let matched = decrypted
        .iter()
        .zip(&plaintexts)
        .filter(|(got, sent)| got == sent)
        .count();
    if matched != count || decrypted.len() != count {
        return Err(format!("only {matched} of {count} plaintexts matched what Alice sent").into());
    }
    println!("Check: all {count} plaintexts match what Alice sent.");
    if let Some(last) = decrypted.last() {
        println!("Last message: {:?}", String::from_utf8_lossy(last));
    }
    Ok(())
}

/// Parses `[--messages N]`.
fn parse_args(mut args: impl Iterator<Item = String>) -> Result<usize, Box<dyn Error>> {
    let mut count = DEFAULT_MESSAGES;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--messages" | "-n" => {
                let value = args.next().ok_or(USAGE)?;
                count = value
                    .parse()
                    .map_err(|e| format!("--messages {value}: {e} ({USAGE})"))?;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unexpected argument {other:?} ({USAGE})").into()),
        }
    }
    Ok(count)
}

/// A fingerprint in groups of eight hex digits, as easier to compare by eye.
fn grouped(fingerprint: &str) -> String {
    let chars: Vec<char> = fingerprint.chars().collect();
    chars
        .chunks(8)
        .map(|c| c.iter().collect::<String>())
        .collect::<Vec<_>>()
        .join(" ")
}

/// A chat-like plaintext of 100 to 200 bytes, deterministic in `index` and varied across it.
fn chat_plaintext(index: usize) -> Vec<u8> {
    const LINES: [&str; 8] = [
        "are we still on for lunch tomorrow? I can do noon or a bit later",
        "the train is late again, sorry, I will be there in twenty minutes",
        "sounds good, see you at the usual place next to the bookshop",
        "did you see the photos from the weekend? the lake looked amazing",
        "can you send me the address again, my phone lost the thread",
        "thanks so much for yesterday, it was really fun to catch up",
        "running a little behind, grab us a table if you get there first",
        "remember to bring the charger, mine died halfway through the day",
    ];
    let target = 100 + index.wrapping_mul(37) % 101;
    let mut text = format!("[{index}] ");
    let mut line = index;
    while text.len() < target {
        text.push_str(LINES.get(line % LINES.len()).copied().unwrap_or("ok"));
        text.push_str(". ");
        line = line.wrapping_mul(5).wrapping_add(3);
    }
    let mut bytes = text.into_bytes();
    bytes.truncate(target);
    bytes
}
