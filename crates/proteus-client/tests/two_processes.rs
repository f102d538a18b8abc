//! Two processes on one SQLite store, as an app and its notification extension: process A
//! decrypts a 10,000-message queue from several senders in batches while process B, on the same
//! store, decrypts other messages of the same sessions and encrypts a reply to each; either is
//! killed with SIGKILL at random moments and started again. All along, the test itself keeps a
//! client open on the store, idle (the app, suspended), and uses it afterwards. Checked: every
//! message reaches the app log exactly once after deduplication by message id, no two envelopes
//! of one session share a (ratchet key, counter), the peers decrypt every reply, and the store
//! always opens.
//!
//! Environment (shared with the crash test, `tests/crash.rs`):
//! * `PROTEUS_CRASH_ITERATIONS` — how many SIGKILLs to deliver (default 20).
//! * `PROTEUS_CRASH_SEED` — the PRNG seed (printed at the start).
//! * `PROTEUS_TWO_PROCESS_THROUGHPUT=1` — first measure each process alone and both together
//!   (no kills) on copies of the store, and print messages per second (use `--release`).
//!
//! ```text
//! cargo test -p proteus-client --test two_processes -- --nocapture
//! PROTEUS_TWO_PROCESS_THROUGHPUT=1 cargo test --release -p proteus-client --test two_processes -- --nocapture
//! ```
//!
//! The processes are this test binary run again (`shared_store_child`, which does nothing
//! unless `PROTEUS_SHARED_ROLE` is set). Each keeps its place in its queue in a progress file
//! written after each commit; a restarted process goes on from there, so the batch a kill
//! interrupted is decrypted again (and deduplicated by the app, or found already seen). The app
//! log is one file both processes append message ids to in `deliver`, fsynced before the
//! batch's commit. B's replies go to an outbox file (fsynced) after `encrypt` returns.

#![cfg(all(feature = "sqlite", unix))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proteus_client::{
    Client, ClientError, MessageId, OpenMode, QueuedMessage, SessionConfig, SqliteOptions,
};
use proteus_core::Envelope;

const ROLE_VAR: &str = "PROTEUS_SHARED_ROLE";
const DIR_VAR: &str = "PROTEUS_SHARED_DIR";
/// Messages of process A's queue.
const QUEUE_A: usize = 10_000;
/// Every this many messages of a sender goes to process B instead.
const B_EVERY: usize = 20;
/// Senders: all but the last have a session with Bob before the run; the last one's messages
/// are PreKeyMessages, and whichever process decrypts one first creates the session.
const SENDERS: usize = 8;
/// Messages per decrypt_batch call: A's, B's.
const BATCH_A: usize = 250;
const BATCH_B: usize = 3;
/// Each sender's messages are one chain of about 1300: A and B skip each other's messages, so
/// a chain needs room for that many staged keys.
const COUNTER_GAP: u32 = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    A,
    B,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Self::A => "a",
            Self::B => "b",
        }
    }
}

// --- the children --------------------------------------------------------------------------

/// Appends one line in one write (a kill cannot tear it), optionally fsynced.
fn append(file: &mut File, line: &str, sync: bool) {
    file.write_all(line.as_bytes()).unwrap();
    if sync {
        file.sync_data().unwrap();
    }
}

fn open_append(path: &Path) -> File {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
}

/// A queue file: `session \t envelope hex \t plaintext hex` per line.
fn read_queue(path: &Path) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| {
            let mut parts = line.split('\t');
            let mut next = || parts.next().unwrap();
            (
                next().to_owned(),
                hex::decode(next()).unwrap(),
                hex::decode(next()).unwrap(),
            )
        })
        .collect()
}

fn read_progress(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes the progress atomically (a kill leaves the old or the new value).
fn write_progress(path: &Path, done: usize) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, done.to_string()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The child process. Not a test of its own: without `PROTEUS_SHARED_ROLE` it returns at once.
#[test]
fn shared_store_child() {
    let (Some(role), Some(dir)) = (std::env::var_os(ROLE_VAR), std::env::var_os(DIR_VAR)) else {
        return;
    };
    let role = if role == "a" { Role::A } else { Role::B };
    let dir = PathBuf::from(dir);
    let fail = |what: String| -> ! {
        std::fs::write(dir.join(format!("error-{}", role.name())), &what).unwrap();
        panic!("{what}");
    };
    // Opening takes the store's write lock too: the other process may hold it (for a batch)
    // longer than the busy timeout on a slow or busy machine. Try again then, as a batch and a
    // reply do; the parent bounds the whole run.
    let mut bob = loop {
        match Client::open_with(
            dir.join("bob.db"),
            OpenMode::Existing,
            &SqliteOptions::default(),
        ) {
            Ok(bob) => break bob,
            Err(ClientError::Store(proteus_client::StoreError::Busy)) => {}
            Err(e) => fail(format!("open failed: {e:?}")),
        }
    };
    bob.set_session_config(SessionConfig::default().with_max_counter_gap(COUNTER_GAP));
    let queue = read_queue(&dir.join(format!("queue-{}.txt", role.name())));
    let expected: HashMap<MessageId, &[u8]> = queue
        .iter()
        .map(|(_, e, p)| (MessageId::of(e), p.as_slice()))
        .collect();
    let progress_file = dir.join(format!("progress-{}", role.name()));
    let mut app_log = open_append(&dir.join("app.log"));
    let mut outbox = open_append(&dir.join("outbox.txt"));
    let batch = if role == Role::A { BATCH_A } else { BATCH_B };
    let mut done = read_progress(&progress_file);
    while done < queue.len() {
        let items = &queue[done..(done + batch).min(queue.len())];
        let batch: Vec<QueuedMessage> = items
            .iter()
            .map(|(s, e, _)| QueuedMessage {
                session_id: s,
                envelope: e,
            })
            .collect();
        let mut failure = None;
        let result = bob.decrypt_batch(&batch, |m, progress| {
            match &m.outcome {
                Ok(plaintext) if expected.get(&m.message_id) == Some(&plaintext.as_slice()) => {
                    append(&mut app_log, &format!("{}\n", m.message_id), false);
                }
                Err(_) if m.is_already_seen() => {}
                other => {
                    failure = Some(format!("{} from {}: {other:?}", m.message_id, m.session_id));
                    return ControlFlow::Break(());
                }
            }
            if progress.done == progress.total {
                // Everything delivered is on disk before the commit.
                app_log.sync_data().unwrap();
            }
            ControlFlow::Continue(())
        });
        if let Some(f) = failure {
            fail(f);
        }
        match result {
            Ok(_) => {}
            // The other process held the store for longer than the busy timeout: try again.
            Err(ClientError::Store(proteus_client::StoreError::Busy)) => continue,
            Err(e) => fail(format!("batch failed: {e:?}")),
        }
        if role == Role::B {
            for (session, _, _) in items {
                // The other process may hold the store longer than the busy timeout (on a slow
                // or busy machine, one of its batches can): nothing was done then, try again.
                let reply = loop {
                    match bob.encrypt(session, format!("re: message {done}").as_bytes()) {
                        Ok(reply) => break reply,
                        Err(ClientError::Store(proteus_client::StoreError::Busy)) => {}
                        Err(e) => fail(format!("encrypt failed: {e:?}")),
                    }
                };
                append(
                    &mut outbox,
                    &format!("{session}\t{}\n", hex::encode(&reply)),
                    true,
                );
            }
        }
        done += items.len();
        write_progress(&progress_file, done);
    }
    std::fs::write(dir.join(format!("done-{}", role.name())), b"").unwrap();
}

// --- the parent --------------------------------------------------------------------------

/// xorshift64*: small, seeded, good enough to pick kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn spawn(role: Role, dir: &Path, n: usize) -> Child {
    let stderr = File::create(dir.join(format!("stderr-{}-{n}", role.name()))).unwrap();
    Command::new(std::env::current_exe().unwrap())
        .args([
            "shared_store_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE_VAR, role.name())
        .env(DIR_VAR, dir)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// Panics with the child's error if it exited unsuccessfully (not by our kill).
fn check_exit(role: Role, dir: &Path, child: &mut Child) -> bool {
    let Some(status) = child.try_wait().unwrap() else {
        return false;
    };
    if !status.success() {
        let error = std::fs::read_to_string(dir.join(format!("error-{}", role.name())));
        panic!("process {} failed ({status}): {error:?}", role.name());
    }
    assert!(dir.join(format!("done-{}", role.name())).exists());
    true
}

/// Runs the processes in `roles` on the store in `dir` to completion, killing one of the running
/// ones at random every so often until `kills` kills. Returns each process's time and the
/// number of kills per role.
fn run(
    dir: &Path,
    roles: &[Role],
    kills: usize,
    rng: &mut Rng,
) -> (HashMap<&'static str, Duration>, [usize; 2]) {
    let started = Instant::now();
    let mut spawns = 0;
    let mut children: Vec<(Role, Option<Child>)> = roles
        .iter()
        .map(|&r| {
            spawns += 1;
            (r, Some(spawn(r, dir, spawns)))
        })
        .collect();
    let mut times = HashMap::new();
    let mut killed = [0, 0];
    let mut next_kill = Instant::now() + Duration::from_millis(50 + rng.below(500));
    loop {
        for (role, slot) in &mut children {
            if let Some(child) = slot
                && check_exit(*role, dir, child)
            {
                times.insert(role.name(), started.elapsed());
                *slot = None;
            }
        }
        let running: Vec<usize> = (0..children.len())
            .filter(|&i| children[i].1.is_some())
            .collect();
        if running.is_empty() {
            return (times, killed);
        }
        if killed.iter().sum::<usize>() < kills && Instant::now() >= next_kill {
            let i = running[usize::try_from(rng.below(running.len() as u64)).unwrap()];
            let (role, slot) = &mut children[i];
            let mut child = slot.take().unwrap();
            child.kill().unwrap(); // SIGKILL
            let status = child.wait().unwrap();
            if status.success() {
                // It had finished on its own.
                assert!(check_exit(*role, dir, &mut child));
                times.insert(role.name(), started.elapsed());
            } else {
                killed[usize::from(*role == Role::B)] += 1;
                spawns += 1;
                *slot = Some(spawn(*role, dir, spawns));
            }
            next_kill = Instant::now() + Duration::from_millis(20 + rng.below(600));
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "the processes hang"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

struct Setup {
    /// Bob as the app that opened the store and was then suspended: open, idle, holding nothing.
    app: Client,
    senders: Vec<(String, Client)>,
    ids: BTreeSet<String>,
    queue_a: usize,
    queue_b: usize,
}

/// Bob's store in `dir`, the senders, and the two queues (as files).
fn setup(dir: &Path, rng: &mut Rng) -> Setup {
    let mut bob =
        Client::open_with(dir.join("bob.db"), OpenMode::New, &SqliteOptions::default()).unwrap();
    let mut senders = Vec::new();
    for i in 0..SENDERS {
        let id = format!("sender-{i}");
        let mut client = Client::in_memory().unwrap();
        if i + 1 < SENDERS {
            common::connect(&mut client, &id, &mut bob, "bob");
            // Bob answers, so the queue starts a new chain of the sender's.
            let hi = bob.encrypt(&id, b"hi").unwrap();
            assert_eq!(client.decrypt("bob", &hi).unwrap(), b"hi");
        } else {
            let bundle = common::bundle_of(&mut bob);
            client.create_session("bob", &bundle).unwrap();
        }
        senders.push((id, client));
    }
    let (mut a, mut b) = (String::new(), String::new());
    let (mut queue_a, mut queue_b) = (0, 0);
    let mut ids = BTreeSet::new();
    let mut sent = [0usize; SENDERS];
    while queue_a < QUEUE_A {
        let s = usize::try_from(rng.below(SENDERS as u64)).unwrap();
        let (id, client) = &mut senders[s];
        let plaintext = format!("message {} from {id}", sent[s]);
        let envelope = client.encrypt("bob", plaintext.as_bytes()).unwrap();
        assert!(ids.insert(MessageId::of(&envelope).to_string()));
        let line = format!(
            "{id}\t{}\t{}\n",
            hex::encode(&envelope),
            hex::encode(plaintext)
        );
        if sent[s] % B_EVERY == B_EVERY / 2 {
            b.push_str(&line);
            queue_b += 1;
        } else {
            a.push_str(&line);
            queue_a += 1;
        }
        sent[s] += 1;
    }
    std::fs::write(dir.join("queue-a.txt"), a).unwrap();
    std::fs::write(dir.join("queue-b.txt"), b).unwrap();
    Setup {
        app: bob,
        senders,
        ids,
        queue_a,
        queue_b,
    }
}

/// A copy of the store and the queues in a new directory, for a throughput run.
fn copy_of(dir: &Path) -> tempfile::TempDir {
    let copy = tempfile::tempdir().unwrap();
    for file in ["bob.db", "queue-a.txt", "queue-b.txt"] {
        std::fs::copy(dir.join(file), copy.path().join(file)).unwrap();
    }
    copy
}

fn throughput(setup: &Setup, dir: &Path, rng: &mut Rng) {
    let rate = |n: usize, t: Duration| n as f64 / t.as_secs_f64();
    for roles in [&[Role::A][..], &[Role::B], &[Role::A, Role::B]] {
        let copy = copy_of(dir);
        let (times, _) = run(copy.path(), roles, 0, rng);
        let mut line = String::from("two processes, throughput:");
        for role in roles {
            let (n, what) = match role {
                Role::A => (setup.queue_a, "A decrypts (batches of 250)"),
                Role::B => (setup.queue_b, "B decrypts and replies (batches of 3)"),
            };
            let t = times[role.name()];
            line.push_str(&format!(
                " {what}: {n} in {:.2} s = {:.0} msg/s;",
                t.as_secs_f64(),
                rate(n, t)
            ));
        }
        if roles.len() == 1 {
            line.push_str(" (alone)");
        } else {
            line.push_str(" (together)");
        }
        println!("{line}");
    }
}

/// The (ratchet key, counter) of an envelope's message.
fn chain_position(envelope: &[u8]) -> ([u8; 32], u32) {
    let envelope = Envelope::from_bytes(envelope).unwrap();
    let message = envelope.message().cipher_message();
    (*message.ratchet_key.as_bytes(), message.counter)
}

#[test]
fn two_processes_share_a_store_through_kills() {
    let kills: usize = std::env::var("PROTEUS_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("PROTEUS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x7770_9e0c_e55e_5eed);
    println!("two processes: {kills} kills, seed {seed}");
    let mut rng = Rng(seed | 1);
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut setup = setup(dir, &mut rng);
    println!(
        "two processes: {} messages for A, {} for B from {SENDERS} senders, set up in {:.1} s",
        setup.queue_a,
        setup.queue_b,
        started.elapsed().as_secs_f64()
    );
    if std::env::var_os("PROTEUS_TWO_PROCESS_THROUGHPUT").is_some() {
        throughput(&setup, dir, &mut rng);
    }

    let run_started = Instant::now();
    let (_, killed) = run(dir, &[Role::A, Role::B], kills, &mut rng);
    println!(
        "two processes: both done in {:.1} s with {} kills of A and {} of B",
        run_started.elapsed().as_secs_f64(),
        killed[0],
        killed[1]
    );

    // Every message reached the app log; deduplicated, exactly the queues' ids.
    let log = std::fs::read_to_string(dir.join("app.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.iter().all(|l| l.len() == 64), "a torn app log line");
    let delivered: BTreeSet<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let missing = setup.ids.difference(&delivered).count();
    assert_eq!(missing, 0, "{missing} messages never reached the app");
    assert_eq!(
        delivered, setup.ids,
        "the app log has ids no queue produced"
    );
    println!(
        "two processes: app log {} lines for {} messages",
        lines.len(),
        setup.ids.len()
    );

    // No two replies of one session share a chain position; each sender decrypts every reply.
    let outbox = std::fs::read_to_string(dir.join("outbox.txt")).unwrap();
    let mut positions: HashSet<(String, [u8; 32], u32)> = HashSet::new();
    let mut replies = 0;
    for line in outbox.lines() {
        let (session, envelope) = line.split_once('\t').unwrap();
        let envelope = hex::decode(envelope).unwrap();
        let (key, counter) = chain_position(&envelope);
        assert!(
            positions.insert((session.to_owned(), key, counter)),
            "two replies of {session} share counter {counter} of one chain"
        );
        let (_, sender) = setup
            .senders
            .iter_mut()
            .find(|(id, _)| id == session)
            .unwrap();
        let plaintext = sender
            .decrypt("bob", &envelope)
            .unwrap_or_else(|e| panic!("{session} cannot decrypt reply {replies}: {e:?}"));
        assert!(plaintext.starts_with(b"re: message "));
        replies += 1;
    }
    assert!(replies >= setup.queue_b, "{replies} replies");

    // The app, open all along, sees what the processes did: every session, the queues only
    // duplicates, and its replies go on from B's (positions checked above).
    let bob = &mut setup.app;
    bob.set_session_config(SessionConfig::default().with_max_counter_gap(COUNTER_GAP));
    assert_eq!(bob.session_ids().unwrap().len(), SENDERS);
    for role in [Role::A, Role::B] {
        let queue = read_queue(&dir.join(format!("queue-{}.txt", role.name())));
        let items: Vec<QueuedMessage> = queue
            .iter()
            .map(|(s, e, _)| QueuedMessage {
                session_id: s,
                envelope: e,
            })
            .collect();
        for m in bob
            .decrypt_batch(&items, |_, _| ControlFlow::Continue(()))
            .unwrap()
        {
            assert!(
                m.is_already_seen(),
                "decrypted again, so the processes' commits were lost or not seen: {:?}",
                m.outcome.map(String::from_utf8)
            );
        }
    }
    for (session, sender) in &mut setup.senders {
        let envelope = bob.encrypt(session, b"back in the foreground").unwrap();
        let (key, counter) = chain_position(&envelope);
        assert!(
            positions.insert((session.clone(), key, counter)),
            "the app's reply to {session} reuses counter {counter} of one of B's chains"
        );
        assert_eq!(
            sender.decrypt("bob", &envelope).unwrap(),
            b"back in the foreground"
        );
    }
    // And the store opens afresh.
    Client::open_with(
        dir.join("bob.db"),
        OpenMode::Existing,
        &SqliteOptions::default(),
    )
    .unwrap();
    println!(
        "two processes: {replies} replies decrypted; total {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
