//! I/O errors and power loss (issue 36, faults 2 and 3) at every write and every sync of a
//! batch's commit and of an encryption's, on the SQLite store.
//!
//! A child run (this test binary again, `io_faults_child`) opens a copy of Bob's store, decrypts
//! a 40-message queue from Alice with `decrypt_batch` (its commit and the checkpoint after it)
//! and encrypts two replies (each a commit and a checkpoint: the second one's syncs come after
//! the first reply was handed out). A small C shim loaded with `LD_PRELOAD` (`tests/faults/
//! shim.c`, built with the system C compiler, `cc` or `$CC`, when the test runs; the test fails
//! without one) sees the child's writes and syncs of the store's files, in the system calls
//! SQLite makes (`pwrite64`, `ftruncate`, `fsync`), and injects the fault at the Nth one. A
//! first run only counts them; then N goes over every one of them, for each fault:
//!
//! * `eio-write`: the Nth write and every later one fail with EIO, until the child lifts the
//!   fault and, on the same handle, runs the batch and a reply again;
//! * `eio-sync`: the same with the Nth fsync and every later one, what they were to sync left in
//!   the file; `eio-sync-lost`: what they were to sync lost (the kernel dropped the pages whose
//!   writeback failed: the file reads as it was at its last sync);
//! * the same three, `then killed`: the child exits right after the faulted calls, the fault
//!   still on (no close, no checkpoint);
//! * power loss at the Nth sync, the child stopped there (`_exit`) and the files put in the
//!   state a power cut leaves: `crash-dropped`, every write since each file's last sync undone
//!   (data and size); `crash-torn`, the last write torn (the first 512-byte sector it touches and
//!   every other one after as they were), the earlier ones on disk; `crash-scattered`, every
//!   other sector (odd ones, by file offset) of every write since the last sync as it was
//!   (written out of order, half of them not). And `crash-torn-write`: power lost during the Nth
//!   write, that write torn, the unsynced ones before it on disk: the power-loss sweeps go over
//!   the whole run, the run after the lift included.
//!
//! Then the parent checks: every failed call failed with `StorageFailure` (507) (a reply also
//! with `SessionNotFound`, 104, when the batch that makes the session did not commit); after a
//! lifted fault the same calls succeed and the batch's messages come with the same ids, again
//! new if the first batch call failed, seen if it succeeded; the store opens (without the
//! shim); what was committed before (Bob's identity, his session with Carol, his prekeys) is
//! there; the batch is there whole or not at all, and there if a batch call returned success:
//! delivered again, its messages decrypt with the ids they had when first handed over, or all
//! come back as already seen; every reply handed out, and one more from the reopened store,
//! decrypt at Alice in that order with increasing counters (no message key used twice). Each
//! fault's line gives its points, where they are, the calls that failed and the checks that
//! failed (lost, reused, opens), counted.
//!
//! Every point of every fault is swept in the test command (about 15 s on 2 cores):
//!
//! ```text
//! cargo test -p proteus-client --test io_faults -- --nocapture
//! ```

#![cfg(all(feature = "sqlite", target_os = "linux"))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Instant;

use proteus_client::{Client, OpenMode, QueuedMessage, SqliteOptions};

const CHILD_VAR: &str = "PROTEUS_IO_FAULTS_CHILD";
/// The exit status of a child the shim stopped at a power loss.
const CRASH_EXIT: i32 = 86;
/// Messages in the batch (a PreKeyMessage, then a chain, a few out of order, two missing).
const QUEUE: usize = 40;
const STORE: &str = "bob.db";

// --- the shim ------------------------------------------------------------------------------

/// The shim, built once per test process into the target directory.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/faults/shim.c");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let out = dir.join("io_faults_shim.so");
        // Built under a name of its own, then renamed: another test process may be using it.
        let building = dir.join(format!("io_faults_shim.so.{}", std::process::id()));
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
            .arg(&building)
            .arg(&source)
            .arg("-ldl")
            .output()
            .unwrap_or_else(|e| {
                panic!("the fault shim needs a C compiler ({cc}: {e}); install gcc or clang")
            });
        assert!(
            built.status.success(),
            "{cc} could not build {}:\n{}",
            source.display(),
            String::from_utf8_lossy(&built.stderr)
        );
        std::fs::rename(&building, &out).unwrap();
        out
    })
}

// --- the scenario ----------------------------------------------------------------------------

struct Setup {
    dir: PathBuf,
    /// Bob's store before the batch (copied for each run).
    template: PathBuf,
    queue: Vec<(Vec<u8>, Vec<u8>)>,
    alice_identity: Vec<u8>,
    alice_session: Vec<u8>,
    /// What Bob had committed before: his fingerprint, his prekeys, and a message of Carol's
    /// his session with her must decrypt.
    fingerprint: String,
    prekeys: usize,
    carol_message: Vec<u8>,
}

fn setup(dir: &Path) -> Setup {
    let template_dir = dir.join("template");
    std::fs::create_dir(&template_dir).unwrap();
    let template = template_dir.join(STORE);
    let mut bob = Client::open(&template).unwrap();
    let mut carol = Client::in_memory().unwrap();
    common::connect(&mut carol, "carol", &mut bob, "bob");
    let carol_message = carol.encrypt("bob", b"still there").unwrap();
    let bundle = bob.generate_prekeys(5).unwrap().remove(0).to_bytes();
    let fingerprint = bob.fingerprint();
    let prekeys = bob.prekeys_remaining().unwrap();
    drop(bob);
    let mut alice = Client::in_memory().unwrap();
    alice.create_session("bob", &bundle).unwrap();
    let mut queue: Vec<(Vec<u8>, Vec<u8>)> = (0..QUEUE + 2)
        .map(|i| {
            let text = format!("message {i}").into_bytes();
            (alice.encrypt("bob", &text).unwrap(), text)
        })
        .collect();
    // A few out of order, two never arrive: their keys are staged (more records to write).
    queue.swap(5, 9);
    queue.swap(20, 30);
    queue.remove(33);
    queue.remove(12);
    let lines: String = queue
        .iter()
        .map(|(e, t)| format!("{}\t{}\n", hex::encode(e), hex::encode(t)))
        .collect();
    std::fs::write(dir.join("queue.txt"), lines).unwrap();
    Setup {
        dir: dir.to_path_buf(),
        template,
        queue,
        alice_identity: alice.export_identity().to_vec(),
        alice_session: alice.export_session("bob").unwrap().to_vec(),
        fingerprint,
        prekeys,
        carol_message,
    }
}

// --- the child -------------------------------------------------------------------------------

/// Appends one line to the trace the shim writes too (one write, so lines never mix).
struct Trace(std::fs::File);

impl Trace {
    fn line(&mut self, line: &str) {
        self.0.write_all(format!("{line}\n").as_bytes()).unwrap();
    }
}

/// The batch, each delivery traced (`deliver INDEX ID new|seen|bad:CODE`), then `batch CODE`.
fn child_batch(bob: &mut Client, queue: &[(Vec<u8>, Vec<u8>)], trace: &mut Trace) {
    let messages: Vec<QueuedMessage<'_>> = queue
        .iter()
        .map(|(envelope, _)| QueuedMessage {
            session_id: "alice",
            envelope,
        })
        .collect();
    let mut index = 0;
    let result = bob.decrypt_batch(&messages, |d, _| {
        let state = match &d.outcome {
            Ok(text) if *text == queue[index].1 => "new".to_owned(),
            Ok(_) => "bad:plaintext".to_owned(),
            Err(_) if d.is_already_seen() => "seen".to_owned(),
            Err(e) => format!("bad:{}", e.code()),
        };
        trace.line(&format!("deliver {index} {} {state}", d.message_id));
        index += 1;
        ControlFlow::Continue(())
    });
    trace.line(&format!(
        "batch {}",
        result.map_or_else(|e| e.code(), |_| 0)
    ));
}

/// A reply to Alice: `reply 0 HEX` once handed out, `reply CODE` if it failed.
fn child_reply(bob: &mut Client, text: &[u8], trace: &mut Trace) {
    match bob.encrypt("alice", text) {
        Ok(envelope) => trace.line(&format!("reply 0 {}", hex::encode(envelope))),
        Err(e) => trace.line(&format!("reply {}", e.code())),
    }
}

fn child_open(store: &Path, trace: &mut Trace) -> Option<Client> {
    match Client::open_with(store, OpenMode::Existing, &SqliteOptions::default()) {
        Ok(bob) => {
            trace.line("open 0");
            Some(bob)
        }
        Err(e) => {
            trace.line(&format!("open {}", e.code()));
            None
        }
    }
}

/// The child run. Not a test of its own: without `PROTEUS_IO_FAULTS_CHILD` it returns at once.
#[test]
fn io_faults_child() {
    let Some(run) = std::env::var_os(CHILD_VAR).map(PathBuf::from) else {
        return;
    };
    let setup_dir = run.parent().unwrap();
    let queue: Vec<(Vec<u8>, Vec<u8>)> = std::fs::read_to_string(setup_dir.join("queue.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let (e, t) = l.split_once('\t').unwrap();
            (hex::decode(e).unwrap(), hex::decode(t).unwrap())
        })
        .collect();
    let mut trace = Trace(
        OpenOptions::new()
            .append(true)
            .create(true)
            .open(std::env::var_os("FAULT_TRACE").unwrap())
            .unwrap(),
    );
    let store = run.join(STORE);

    trace.line("phase open");
    let mut bob = child_open(&store, &mut trace);
    if let Some(bob) = &mut bob {
        trace.line("phase batch");
        child_batch(bob, &queue, &mut trace);
        // Two replies: the second one's commit comes after the first reply was handed out.
        trace.line("phase reply1");
        child_reply(bob, b"reply", &mut trace);
        trace.line("phase reply2");
        child_reply(bob, b"second reply", &mut trace);
    }
    if std::env::var_os("FAULT_THEN_DIE").is_some() {
        // Killed with the fault still on: no close, no checkpoint, nothing more written.
        trace.line("died");
        std::process::exit(0);
    }
    // The fault is gone: the same operations again, on the same handle if it opened.
    trace.line("phase lift");
    std::fs::write(std::env::var_os("FAULT_LIFT").unwrap(), b"").unwrap();
    if bob.is_none() {
        trace.line("phase again-open");
        bob = child_open(&store, &mut trace);
    }
    let mut bob = bob.expect("the store opens once the fault is gone");
    trace.line("phase again-batch");
    child_batch(&mut bob, &queue, &mut trace);
    trace.line("phase again-reply");
    child_reply(&mut bob, b"reply after", &mut trace);
    drop(bob);
    trace.line("closed");
}

// --- the parent ------------------------------------------------------------------------------

/// How a fault is injected: the shim's mode, and whether the child dies right after the
/// faulted calls instead of lifting the fault and going on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fault {
    mode: &'static str,
    die: bool,
}

impl Fault {
    fn power_loss(self) -> bool {
        self.mode.starts_with("crash-")
    }
    fn name(self) -> String {
        if self.die {
            format!("{}, then killed", self.mode)
        } else {
            self.mode.to_owned()
        }
    }
}

/// What a child run did, read back from the trace.
#[derive(Debug, Default)]
struct Run {
    /// The trace's lines.
    lines: Vec<String>,
    crashed: bool,
    /// The shim's line where it injected the fault (the first one).
    injected: Option<String>,
    /// Before and after the fault was lifted.
    first: Calls,
    again: Calls,
}

#[derive(Debug, Default)]
struct Calls {
    open: Option<u16>,
    /// Each delivery: the message id (hex) and its state (`new`, `seen`).
    delivered: Vec<(String, String)>,
    batch: Option<u16>,
    /// Each reply's code (0: handed out).
    reply: Vec<u16>,
    /// The replies handed out.
    replies: Vec<Vec<u8>>,
}

fn child(setup: &Setup, n: &str, fault: Option<(Fault, usize)>) -> Run {
    let run_dir = setup.dir.join(format!("run-{n}"));
    std::fs::create_dir(&run_dir).unwrap();
    std::fs::copy(&setup.template, run_dir.join(STORE)).unwrap();
    let trace = setup.dir.join(format!("trace-{n}.txt"));
    let lift = setup.dir.join(format!("lift-{n}"));
    let mut prefix = run_dir.canonicalize().unwrap().into_os_string();
    prefix.push("/");
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            "--exact",
            "io_faults_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_VAR, &run_dir)
        .env("LD_PRELOAD", shim())
        .env("FAULT_PREFIX", prefix)
        .env("FAULT_TRACE", &trace)
        .env("FAULT_LIFT", &lift);
    match fault {
        None => {
            command.env("FAULT_MODE", "count");
        }
        Some((fault, at)) => {
            command
                .env("FAULT_MODE", fault.mode)
                .env("FAULT_AT", at.to_string());
            if fault.die {
                command.env("FAULT_THEN_DIE", "1");
            }
        }
    }
    let out = command.output().unwrap();
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let crashed = out.status.code() == Some(CRASH_EXIT);
    assert!(
        out.status.success() || crashed,
        "run {n} ({fault:?}): the child failed ({}):\n{}\n{}\n{text}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(&trace);
    let _ = std::fs::remove_file(&lift);
    parse(&text, crashed)
}

fn parse(text: &str, crashed: bool) -> Run {
    let mut run = Run {
        crashed,
        ..Run::default()
    };
    let mut phase = String::new();
    for line in text.lines() {
        run.lines.push(line.to_owned());
        let words: Vec<&str> = line.split(' ').collect();
        let calls = if phase.starts_with("again") {
            &mut run.again
        } else {
            &mut run.first
        };
        let code = |w: &str| w.parse::<u16>().unwrap();
        match words[0] {
            "phase" => phase = words[1].to_owned(),
            "!" if run.injected.is_none() => run.injected = Some(line.to_owned()),
            "open" => calls.open = Some(code(words[1])),
            "deliver" => calls
                .delivered
                .push((words[2].to_owned(), words[3].to_owned())),
            "batch" => calls.batch = Some(code(words[1])),
            "reply" => {
                calls.reply.push(code(words[1]));
                if let Some(envelope) = words.get(2) {
                    calls.replies.push(hex::decode(envelope).unwrap());
                }
            }
            _ => {}
        }
    }
    run
}

/// Where each write and sync of a counting run happens: (phase, stage, kind, file), the stage
/// being `commit` up to the operation's sync of its WAL frames (its second WAL sync: the first
/// one is the WAL header's), `checkpoint` after it.
fn places(run: &Run) -> Vec<Place> {
    let mut phase = String::new();
    let mut wal_syncs = 0;
    let mut places = Vec::new();
    for line in &run.lines {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "phase" => {
                phase = words[1].to_owned();
                wal_syncs = 0;
            }
            "w" | "t" | "s" => {
                let kind = words[0].chars().next().unwrap();
                let file = words[2].to_owned();
                let stage = if phase == "open" {
                    "open"
                } else if wal_syncs >= 2 {
                    "checkpoint"
                } else {
                    "commit"
                };
                if kind == 's' && file.ends_with("-wal") {
                    wal_syncs += 1;
                }
                places.push(Place {
                    phase: phase.clone(),
                    stage,
                    kind,
                    file,
                });
            }
            _ => {}
        }
    }
    places
}

#[derive(Debug, Clone)]
struct Place {
    phase: String,
    stage: &'static str,
    /// `w` write, `t` truncation, `s` sync.
    kind: char,
    file: String,
}

impl Place {
    fn is(&self, kind: char) -> bool {
        match kind {
            'w' => self.kind == 'w' || self.kind == 't',
            _ => self.kind == kind,
        }
    }
}

/// What the sweep of one fault saw, for its line.
#[derive(Default)]
struct Tally {
    /// Where the injections landed: "phase stage".
    landed: BTreeMap<String, usize>,
    open_failed: usize,
    batch_failed: usize,
    replies_failed: usize,
    replies_handed_out: usize,
    /// The batch afterwards: there (and how often although no batch call had returned
    /// success), or not there.
    batch_there: usize,
    there_unreported: usize,
    batch_not_there: usize,
    /// The properties: a run's failures, by property.
    lost: usize,
    reused: usize,
    not_opened: usize,
    other: usize,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, property: &str, message: String) {
        match property {
            "lost" => self.lost += 1,
            "reused" => self.reused += 1,
            "opens" => self.not_opened += 1,
            _ => self.other += 1,
        }
        self.failures.push(message);
    }
}

/// The checks of one run (its store in `setup.dir/run-{dir}`); `label` names it in failures.
/// A failed check is counted in `tally` by property, with the run's trace.
fn check(setup: &Setup, fault: Fault, run: &Run, dir: &str, label: &str, tally: &mut Tally) {
    let before = tally.failures.len();
    check_run(setup, fault, run, dir, tally);
    for failure in &mut tally.failures[before..] {
        *failure = format!("{label}: {failure}\n{}", run.lines.join("\n"));
    }
}

fn check_run(setup: &Setup, fault: Fault, run: &Run, dir: &str, tally: &mut Tally) {
    if run.crashed != fault.power_loss() {
        tally.fail("other", format!("crashed: {}", run.crashed));
    }
    // Stable codes: 507 for a storage failure; a reply also 104 when there is no session
    // because the batch that makes it did not commit.
    let (first, again) = (&run.first, &run.again);
    for code in [first.open, first.batch, again.open, again.batch]
        .into_iter()
        .flatten()
    {
        if code != 0 && code != 507 {
            tally.fail("code", format!("a call failed with {code}"));
        }
    }
    tally.open_failed += usize::from(first.open.is_some_and(|c| c != 0));
    tally.batch_failed += usize::from(first.batch.is_some_and(|c| c != 0));
    for &code in &first.reply {
        let no_session = code == 104 && first.batch != Some(0);
        if code != 0 && code != 507 && !no_session {
            tally.fail("code", format!("a reply failed with {code}"));
        }
        tally.replies_failed += usize::from(code != 0);
    }
    for (_, state) in first.delivered.iter().chain(&again.delivered) {
        if state != "new" && state != "seen" {
            tally.fail("other", format!("a delivery was {state}"));
        }
    }
    // The ids handed over first, by position.
    let first_ids: Vec<&String> = first.delivered.iter().map(|(id, _)| id).collect();
    let first_committed = first.batch == Some(0);
    if !fault.power_loss() && !fault.die {
        // The fault lifted: the same calls succeed on the same handle.
        if again.batch != Some(0) || again.delivered.len() != QUEUE {
            tally.fail(
                "other",
                "the batch failed after the fault was lifted".into(),
            );
        }
        if again.reply != [0] {
            tally.fail(
                "other",
                "the reply failed after the fault was lifted".into(),
            );
        }
    }
    for (i, (id, state)) in again.delivered.iter().enumerate() {
        if (state == "seen") != first_committed {
            tally.fail("lost", format!("message {i} again: {state}"));
        }
        if first_ids.get(i).is_some_and(|first| *first != id) {
            tally.fail("other", format!("message {i} changed its id"));
        }
    }
    let committed = first_committed || again.batch == Some(0);
    let mut replies: Vec<Vec<u8>> = first
        .replies
        .iter()
        .chain(&again.replies)
        .cloned()
        .collect();
    tally.replies_handed_out += replies.len();

    // The store opens (without the shim), with what was committed before.
    let store = setup.dir.join(format!("{dir}.db"));
    let run_store = setup.dir.join(format!("run-{dir}")).join(STORE);
    for suffix in ["", "-wal", "-shm"] {
        let from = PathBuf::from(format!("{}{suffix}", run_store.display()));
        if from.exists() {
            std::fs::rename(&from, format!("{}{suffix}", store.display())).unwrap();
        }
    }
    let mut bob = match Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default()) {
        Ok(bob) => bob,
        Err(e) => return tally.fail("opens", format!("the store does not open: {e}")),
    };
    if bob.fingerprint() != setup.fingerprint {
        tally.fail("lost", "Bob's identity changed".into());
    }
    if !bob
        .decrypt("carol", &setup.carol_message)
        .is_ok_and(|text| text == b"still there")
    {
        tally.fail("lost", "Carol's session is gone".into());
    }

    // The batch: there whole or not at all, and there if a call returned success; its
    // messages decrypt again with the ids they were handed over with.
    let messages: Vec<QueuedMessage<'_>> = setup
        .queue
        .iter()
        .map(|(envelope, _)| QueuedMessage {
            session_id: "alice",
            envelope,
        })
        .collect();
    let mut seen = Vec::new();
    let result = bob.decrypt_batch(&messages, |d, _| {
        seen.push((
            d.message_id.to_string(),
            d.is_already_seen(),
            d.outcome.is_ok(),
        ));
        ControlFlow::Continue(())
    });
    if let Err(e) = result {
        return tally.fail("other", format!("the batch afterwards: {e}"));
    }
    let there = seen[0].1;
    for (i, (id, already, ok)) in seen.iter().enumerate() {
        if *already != there || !(already | ok) {
            tally.fail("lost", format!("message {i}: part of the batch only"));
        }
        if first_ids.get(i).is_some_and(|first| *first != id) {
            tally.fail("other", format!("message {i} changed its id"));
        }
    }
    match (there, committed) {
        (false, true) => tally.fail("lost", "a committed batch is gone".into()),
        (true, false) => {
            tally.batch_there += 1;
            tally.there_unreported += 1;
        }
        (true, true) => tally.batch_there += 1,
        (false, false) => tally.batch_not_there += 1,
    }
    if bob.prekeys_remaining().unwrap() != setup.prekeys - 1 {
        tally.fail("lost", "a prekey too many or too few".into());
    }

    // No key used twice: every reply handed out, then one more now, decrypt at Alice in that
    // order with increasing counters.
    replies.push(bob.encrypt("alice", b"from the reopened store").unwrap());
    drop(bob);
    let mut alice = Client::in_memory().unwrap();
    alice.import_identity(&setup.alice_identity).unwrap();
    alice.import_session("bob", &setup.alice_session).unwrap();
    let mut last = None;
    for (i, reply) in replies.iter().enumerate() {
        let counter = common::counter_of(reply);
        if last.is_some_and(|l| counter <= l) {
            tally.fail(
                "reused",
                format!("reply {i} has counter {counter}, after {last:?}"),
            );
        }
        last = Some(counter);
        if let Err(e) = alice.decrypt("bob", reply) {
            tally.fail("reused", format!("reply {i} at Alice: {e}"));
        }
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
}

/// Injects `fault` at every write (`kind` `w`) or sync (`s`) of `places`, checks each run, and
/// returns the sweep's line.
fn sweep(setup: &Setup, fault: Fault, kind: char, places: &[Place]) -> String {
    let started = Instant::now();
    let points: Vec<&Place> = places.iter().filter(|p| p.is(kind)).collect();
    assert!(!points.is_empty(), "the counting run saw no {kind}");
    let mut tally = Tally::default();
    for (i, place) in points.iter().enumerate() {
        let at = i + 1;
        let dir = format!("{}-{at}", fault.name().replace([',', ' '], ""));
        let run = child(setup, &dir, Some((fault, at)));
        let label = format!("{} at {kind} {at} ({place:?})", fault.name());
        // The same point as in the counting run: the scenario is deterministic.
        assert!(
            run.injected
                .as_deref()
                .is_some_and(|l| l.ends_with(&format!(" {at} {}", place.file))),
            "{label}: injected {:?}\n{}",
            run.injected,
            run.lines.join("\n")
        );
        *tally
            .landed
            .entry(format!("{} {}", place.phase, place.stage))
            .or_default() += 1;
        check(setup, fault, &run, &dir, &label, &mut tally);
        let _ = std::fs::remove_dir_all(setup.dir.join(format!("run-{dir}")));
    }
    let landed: Vec<String> = tally
        .landed
        .iter()
        .map(|(place, n)| format!("{place} {n}"))
        .collect();
    let line = format!(
        "{}: {} points ({}) in {:.1} s: failed with 507 (or 104 for a reply without its \
         session): the open {}, the batch {}, replies {} (handed out {}); afterwards the batch \
         was there {} times ({} without a batch call that returned success) and not there {}; \
         lost {}, reused {}, opens {}",
        fault.name(),
        points.len(),
        landed.join(", "),
        started.elapsed().as_secs_f64(),
        tally.open_failed,
        tally.batch_failed,
        tally.replies_failed,
        tally.replies_handed_out,
        tally.batch_there,
        tally.there_unreported,
        tally.batch_not_there,
        tally.lost,
        tally.reused,
        if tally.not_opened == 0 {
            "yes".to_owned()
        } else {
            format!("no ({} times)", tally.not_opened)
        },
    );
    println!("{line}");
    assert!(
        tally.failures.is_empty(),
        "{line}\n{} failed checks (lost {}, reused {}, not opened {}, other {}); the first:\n{}",
        tally.failures.len(),
        tally.lost,
        tally.reused,
        tally.not_opened,
        tally.other,
        tally.failures[0]
    );
    line
}

/// Counts the writes and syncs of the scenario (nothing injected), checks that run too, and
/// returns where each one happens.
fn count(setup: &Setup) -> Vec<Place> {
    let run = child(setup, "count", None);
    let context = || run.lines.join("\n");
    assert!(!run.crashed && run.injected.is_none(), "{}", context());
    assert_eq!(run.first.open, Some(0), "{}", context());
    assert_eq!(run.first.batch, Some(0), "{}", context());
    assert_eq!(run.first.delivered.len(), QUEUE, "{}", context());
    assert_eq!(run.first.reply, [0, 0], "{}", context());
    assert!(
        run.again.delivered.iter().all(|(_, s)| s == "seen"),
        "{}",
        context()
    );
    let _ = std::fs::remove_dir_all(setup.dir.join("run-count"));
    places(&run)
}

/// The places before the fault is lifted (the EIO sweeps inject there only).
fn before_lift(places: &[Place]) -> Vec<Place> {
    places
        .iter()
        .take_while(|p| !p.phase.starts_with("again"))
        .cloned()
        .collect()
}

fn summary(places: &[Place]) -> String {
    let mut by_place: BTreeMap<String, usize> = BTreeMap::new();
    for p in places {
        *by_place
            .entry(format!("{} {} {} {}", p.phase, p.stage, p.kind, p.file))
            .or_default() += 1;
    }
    let parts: Vec<String> = by_place.iter().map(|(k, n)| format!("{k}: {n}")).collect();
    parts.join(", ")
}

const fn fault(mode: &'static str, die: bool) -> Fault {
    Fault { mode, die }
}

#[test]
fn io_errors_at_every_write_and_sync_of_a_commit() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(dir.path());
    let places = before_lift(&count(&setup));
    println!(
        "io faults (EIO): the scenario's writes (w, t) and syncs (s) before the fault is lifted: {}",
        summary(&places)
    );
    sweep(&setup, fault("eio-write", false), 'w', &places);
    sweep(&setup, fault("eio-write", true), 'w', &places);
    for mode in ["eio-sync", "eio-sync-lost"] {
        for die in [false, true] {
            sweep(&setup, fault(mode, die), 's', &places);
        }
    }
}

#[test]
fn power_loss_at_every_sync_of_a_commit() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let setup = setup(dir.path());
    let places = count(&setup);
    println!(
        "io faults (power loss): the scenario's writes (w, t) and syncs (s): {}",
        summary(&places)
    );
    for mode in ["crash-dropped", "crash-torn", "crash-scattered"] {
        sweep(&setup, fault(mode, false), 's', &places);
    }
    sweep(&setup, fault("crash-torn-write", false), 'w', &places);
}
