//! Crash test: a client decrypting a 1000-message queue in a child process is killed with
//! SIGKILL at random points, and restarted on the same store until a run completes. No message
//! may be lost, the store must always open, and after a complete run the queue is only
//! duplicates.
//!
//! Environment:
//! * `PROTEUS_CRASH_ITERATIONS` — how many SIGKILLs to deliver (default 20; the long run uses
//!   `PROTEUS_CRASH_ITERATIONS=200`).
//! * `PROTEUS_CRASH_SEED` — the PRNG seed (default fixed; printed at the start), to replay a
//!   sequence of kill points (timing still varies from run to run).
//!
//! ```text
//! cargo test -p proteus-client --test crash -- --nocapture
//! PROTEUS_CRASH_ITERATIONS=200 cargo test -p proteus-client --test crash -- --nocapture
//! ```
//!
//! Its two-process counterpart, `tests/two_processes.rs` (an app and its extension killed at
//! random while both use one store), takes the same variables.
//!
//! How it works. The parent plays Bob's senders (in-memory clients) and Bob's server: each round
//! it encrypts a fresh queue of 1000 messages for Bob (several senders, one of them new, whose
//! PreKeyMessages create a session; local reordering), writes it to a file and starts the child:
//! this test binary again (`crash_child`, which does nothing unless `PROTEUS_CRASH_CHILD` is
//! set). The child opens Bob's SQLite store, runs `decrypt_batch` over the whole queue and, in
//! `deliver`, appends each plaintext's message id (hex) to the app's log (append, write line,
//! flush: the app's own persistence), then exits. It also writes progress markers to a status
//! file so the parent knows where each kill landed. The parent kills it (SIGKILL) at a point
//! drawn from the PRNG: a random delay after the start (anywhere from before the store is open
//! to after the commit), after a random number of deliveries, just after the last delivery
//! (the commit window), or after the commit. Then it starts the child again on the same store,
//! which re-delivers the whole queue, until a run completes. Each round ends with checks: every
//! message id reached the app log at least once, deduplicating by id gives exactly the round's
//! 1000 ids, and delivering the queue again gives only duplicates. Then Bob (opened by the
//! parent) replies to each sender, so the next round's messages start new ratchet chains.

#![cfg(all(feature = "sqlite", unix))]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs::OpenOptions;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use proteus_client::{
    Client, ClientError, MessageId, OpenMode, QueuedMessage, SqliteOptions, StoreError,
};

const CHILD_VAR: &str = "PROTEUS_CRASH_CHILD";
const QUEUE_LEN: usize = 1000;
/// One line of the app log: 64 hex digits and a newline.
const LOG_LINE: u64 = 65;

// --- the child ---------------------------------------------------------------------------

fn status(path: &Path, line: &str) {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{line}").unwrap();
    f.flush().unwrap();
}

/// The child process. Not a test of its own: without `PROTEUS_CRASH_CHILD` it returns at once.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os(CHILD_VAR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let status_file = PathBuf::from(std::env::var_os("PROTEUS_CRASH_STATUS").unwrap());
    status(&status_file, "start");
    let mut bob = match Client::open_with(
        dir.join("bob.db"),
        OpenMode::Existing,
        &SqliteOptions::default(),
    ) {
        Ok(bob) => bob,
        Err(e) => {
            status(
                &status_file,
                &format!("error: open failed: {e:?} (code {})", e.code()),
            );
            panic!("open failed: {e:?}");
        }
    };
    status(&status_file, "opened");

    let text = std::fs::read_to_string(dir.join("queue.txt")).unwrap();
    let mut items: Vec<(String, Vec<u8>)> = Vec::with_capacity(QUEUE_LEN);
    let mut expected: HashMap<MessageId, Vec<u8>> = HashMap::with_capacity(QUEUE_LEN);
    for line in text.lines() {
        let mut parts = line.split('\t');
        let (session, envelope, plaintext) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap(),
        );
        let envelope = hex::decode(envelope).unwrap();
        expected.insert(MessageId::of(&envelope), hex::decode(plaintext).unwrap());
        items.push((session.to_owned(), envelope));
    }
    let queue: Vec<QueuedMessage> = items
        .iter()
        .map(|(s, e)| QueuedMessage {
            session_id: s,
            envelope: e,
        })
        .collect();
    let mut app_log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("app.log"))
        .unwrap();
    let mut failure = None;
    let result = bob.decrypt_batch(&queue, |m, progress| {
        match &m.outcome {
            Ok(plaintext) => {
                if expected.get(&m.message_id) != Some(plaintext) {
                    failure = Some(format!("wrong plaintext for {}", m.message_id));
                    return ControlFlow::Break(());
                }
                // The app's persistence: one line per message, flushed before going on. The
                // line goes out in one write (formatting straight into the file would issue a
                // write per hex byte, and a kill could tear the line).
                app_log
                    .write_all(format!("{}\n", m.message_id).as_bytes())
                    .unwrap();
                app_log.flush().unwrap();
            }
            Err(_) if m.is_already_seen() => {}
            Err(e) => {
                failure = Some(format!(
                    "message {} of {}: {e:?} (code {})",
                    progress.done,
                    m.session_id,
                    e.code()
                ));
                return ControlFlow::Break(());
            }
        }
        if progress.done == progress.total {
            status(&status_file, "committing");
        }
        ControlFlow::Continue(())
    });
    if let Some(f) = failure {
        status(&status_file, &format!("error: {f}"));
        panic!("{f}");
    }
    match result {
        Ok(results) => {
            let new = results.iter().filter(|m| m.outcome.is_ok()).count();
            status(&status_file, &format!("committed {new}"));
        }
        Err(e) => {
            status(&status_file, &format!("error: batch failed: {e:?}"));
            panic!("batch failed: {e:?}");
        }
    }
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
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// When to kill a child run.
#[derive(Debug, Clone, Copy)]
enum Plan {
    /// After this long since the start (may be before the open, during the batch, after it).
    Delay(Duration),
    /// After this many deliveries of this run.
    Deliveries(u64),
    /// This long after the last delivery (the commit window).
    AfterLastDelivery(Duration),
    /// As soon as the commit is reported done (the process is about to exit).
    AfterCommit,
    /// Let it finish.
    Never,
}

/// Where a kill landed, from the child's markers and the app log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Landed {
    BeforeOpen,
    BeforeFirstDelivery,
    MidBatch,
    CommitWindow,
    AfterCommit,
}

enum RunEnd {
    /// Where the kill landed, and how many messages this run delivered.
    Killed(Landed, u64),
    /// How long the run took, and how many messages it delivered.
    Completed(Duration, u64),
}

struct Harness {
    dir: PathBuf,
    rng: Rng,
    spawns: usize,
    /// Estimated time of a complete run that decrypts the whole queue.
    full_run: Duration,
}

impl Harness {
    fn log_lines(&self) -> u64 {
        std::fs::metadata(self.dir.join("app.log")).map_or(0, |m| m.len() / LOG_LINE)
    }

    fn run(&mut self, plan: Plan) -> RunEnd {
        self.spawns += 1;
        let status_file = self.dir.join(format!("status-{}.txt", self.spawns));
        let log_before = self.log_lines();
        let started = Instant::now();
        let mut child: Child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_VAR, &self.dir)
            .env("PROTEUS_CRASH_STATUS", &status_file)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let read_status = || std::fs::read_to_string(&status_file).unwrap_or_default();
        let mut last_delivery_seen: Option<Instant> = None;
        loop {
            if let Some(exit) = child.try_wait().unwrap() {
                let st = read_status();
                assert!(
                    exit.success() && st.contains("committed"),
                    "child run {} failed ({exit}):\n{st}",
                    self.spawns
                );
                return RunEnd::Completed(started.elapsed(), self.log_lines() - log_before);
            }
            let st = read_status();
            assert!(!st.contains("error"), "child run {}:\n{st}", self.spawns);
            let kill_now = match plan {
                Plan::Delay(d) => started.elapsed() >= d,
                Plan::Deliveries(n) => {
                    self.log_lines() - log_before >= n || st.contains("committing")
                }
                Plan::AfterLastDelivery(d) => {
                    if last_delivery_seen.is_none() && st.contains("committing") {
                        last_delivery_seen = Some(Instant::now());
                    }
                    last_delivery_seen.is_some_and(|t| t.elapsed() >= d)
                }
                Plan::AfterCommit => st.contains("committed"),
                Plan::Never => false,
            };
            if kill_now {
                child.kill().unwrap(); // SIGKILL
                let exit = child.wait().unwrap();
                let st = read_status();
                assert!(!st.contains("error"), "child run {}:\n{st}", self.spawns);
                let delivered = self.log_lines() - log_before;
                if exit.success() {
                    // It had already finished on its own.
                    return RunEnd::Completed(started.elapsed(), delivered);
                }
                let landed = if st.contains("committed") {
                    Landed::AfterCommit
                } else if st.contains("committing") {
                    Landed::CommitWindow
                } else if !st.contains("opened") {
                    Landed::BeforeOpen
                } else if delivered == 0 {
                    Landed::BeforeFirstDelivery
                } else {
                    Landed::MidBatch
                };
                return RunEnd::Killed(landed, delivered);
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "child run {} hangs:\n{st}",
                self.spawns
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn plan(&mut self) -> Plan {
        let full = u64::try_from(self.full_run.as_micros()).unwrap();
        match self.rng.below(100) {
            // Anywhere from the start to a little after a complete run.
            0..40 => Plan::Delay(Duration::from_micros(self.rng.below(full * 5 / 4))),
            // Early: while the process starts and opens the store.
            40..50 => Plan::Delay(Duration::from_micros(self.rng.below(8_000))),
            50..75 => Plan::Deliveries(1 + self.rng.below(QUEUE_LEN as u64 - 1)),
            75..92 => Plan::AfterLastDelivery(Duration::from_micros(self.rng.below(3_000))),
            _ => Plan::AfterCommit,
        }
    }
}

struct Sender {
    id: String,
    client: Client,
}

/// Builds one round's queue: `QUEUE_LEN` distinct messages from the active senders, encrypted in
/// a random interleaving, then reordered locally (windows of 8 shuffled).
fn build_queue(
    rng: &mut Rng,
    senders: &mut [Sender],
    active: &[usize],
    round: usize,
) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let mut q = Vec::with_capacity(QUEUE_LEN);
    for i in 0..QUEUE_LEN {
        let s = active[usize::try_from(rng.below(active.len() as u64)).unwrap()];
        let sender = &mut senders[s];
        let plaintext = format!("round {round} message {i} from {}", sender.id).into_bytes();
        let envelope = sender.client.encrypt("bob", &plaintext).unwrap();
        q.push((sender.id.clone(), envelope, plaintext));
    }
    for window in q.chunks_mut(8) {
        if rng.chance(30) {
            for i in (1..window.len()).rev() {
                let j = usize::try_from(rng.below(i as u64 + 1)).unwrap();
                window.swap(i, j);
            }
        }
    }
    q
}

/// The app log: one message id (lowercase hex) per line.
fn read_log(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("app.log")).unwrap_or_default();
    text.lines()
        .map(|l| {
            assert!(
                l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()),
                "app log line {l:?}"
            );
            l.to_owned()
        })
        .collect()
}

#[test]
fn killed_mid_batch_no_message_is_lost() {
    let kills_wanted: usize = std::env::var("PROTEUS_CRASH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("PROTEUS_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c0ff_ee15_600d);
    println!("crash test: {kills_wanted} kills, seed {seed}");
    let started = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let store = dir.join("bob.db");

    // Bob's store with prekeys for the senders that will join.
    let rounds_estimate = kills_wanted / 2 + 4;
    let bundles = {
        let mut bob = Client::open_with(&store, OpenMode::New, &SqliteOptions::default()).unwrap();
        let mut bundles = vec![bob.last_resort_bundle().unwrap()];
        bundles.extend(bob.generate_prekeys(rounds_estimate + 3).unwrap());
        bundles
    };
    let mut bundles = bundles.into_iter();
    let mut senders: Vec<Sender> = Vec::new();
    let mut add_sender = |senders: &mut Vec<Sender>| {
        let bundle = bundles.next().unwrap();
        let mut client = Client::in_memory().unwrap();
        client.create_session("bob", &bundle.to_bytes()).unwrap();
        senders.push(Sender {
            id: format!("sender-{}", senders.len()),
            client,
        });
    };
    for _ in 0..3 {
        add_sender(&mut senders);
    }

    let mut h = Harness {
        dir: dir.clone(),
        rng: Rng(seed | 1),
        spawns: 0,
        full_run: Duration::from_millis(800),
    };
    let mut kills = 0;
    let mut landed: HashMap<Landed, usize> = HashMap::new();
    let mut finished_before_kill = 0;
    let (mut commit_window_pending, mut commit_landed, mut commit_not_landed) = (false, 0, 0);
    let mut all_ids: HashSet<String> = HashSet::new();
    let mut round = 0;
    while kills < kills_wanted {
        // A new sender joins every round; the three most recent others keep talking.
        add_sender(&mut senders);
        let active: Vec<usize> = (senders.len().saturating_sub(4)..senders.len()).collect();
        let queue = build_queue(&mut h.rng, &mut senders, &active, round);
        let mut text = String::new();
        let mut round_ids = BTreeSet::new();
        for (s, e, p) in &queue {
            text.push_str(&format!("{s}\t{}\t{}\n", hex::encode(e), hex::encode(p)));
            let id = MessageId::of(e).to_string();
            assert!(round_ids.insert(id.clone()));
            assert!(all_ids.insert(id));
        }
        std::fs::write(dir.join("queue.txt"), text).unwrap();

        // Kill some runs, then let one complete.
        let kills_this_round = usize::try_from(1 + h.rng.below(6))
            .unwrap()
            .min(kills_wanted - kills);
        let mut done_kills = 0;
        loop {
            let plan = if done_kills < kills_this_round {
                h.plan()
            } else {
                Plan::Never
            };
            let end = h.run(plan);
            // After a kill in the commit window, the next run tells whether the commit had
            // landed: it delivers the messages again (it had not) or finds only duplicates.
            if commit_window_pending {
                match end {
                    RunEnd::Killed(_, n) | RunEnd::Completed(_, n) if n > 0 => {
                        commit_not_landed += 1;
                        commit_window_pending = false;
                    }
                    RunEnd::Completed(_, 0) => {
                        commit_landed += 1;
                        commit_window_pending = false;
                    }
                    _ => {}
                }
            }
            match end {
                RunEnd::Killed(where_, _) => {
                    kills += 1;
                    done_kills += 1;
                    *landed.entry(where_).or_default() += 1;
                    if where_ == Landed::CommitWindow {
                        commit_window_pending = true;
                    }
                }
                RunEnd::Completed(took, _) => {
                    if matches!(plan, Plan::Never) {
                        h.full_run = (h.full_run + took) / 2;
                        break;
                    }
                    // The kill came too late: the run had completed. Kill the next one instead.
                    finished_before_kill += 1;
                    done_kills += 1;
                }
            }
        }

        // Every message reached the app at least once; deduplicated, exactly this round's ids.
        let log = read_log(&dir);
        let delivered: BTreeSet<String> = log
            .iter()
            .filter(|id| round_ids.contains(*id))
            .cloned()
            .collect();
        assert_eq!(
            delivered.len(),
            round_ids.len(),
            "round {round}: {} messages lost",
            round_ids.len() - delivered.len()
        );
        assert_eq!(delivered, round_ids);
        assert!(
            log.iter().all(|id| all_ids.contains(id)),
            "the app log has an id no queue produced"
        );

        // After the complete run the queue is only duplicates; then Bob replies to each sender.
        let mut bob =
            Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default()).unwrap();
        let items: Vec<QueuedMessage> = queue
            .iter()
            .map(|(s, e, _)| QueuedMessage {
                session_id: s,
                envelope: e,
            })
            .collect();
        let again = bob
            .decrypt_batch(&items, |_, _| ControlFlow::Continue(()))
            .unwrap();
        for m in &again {
            assert!(
                m.is_already_seen(),
                "round {round}: re-delivery after the complete run: {:?}",
                m.outcome
            );
        }
        for &s in &active {
            let sender = &mut senders[s];
            let reply = bob
                .encrypt(&sender.id, format!("thanks, round {round}").as_bytes())
                .unwrap();
            assert_eq!(
                sender.client.decrypt("bob", &reply).unwrap(),
                format!("thanks, round {round}").as_bytes()
            );
        }
        drop(bob);
        round += 1;
    }

    // The store still opens, every session is there.
    let bob = Client::open_with(&store, OpenMode::Existing, &SqliteOptions::default());
    assert!(!matches!(
        bob,
        Err(ClientError::Store(StoreError::Corrupt(_)))
    ));
    assert_eq!(bob.unwrap().session_ids().unwrap().len(), senders.len());
    let log_lines = h.log_lines();

    let count = |l: Landed| landed.get(&l).copied().unwrap_or(0);
    let mid_batch = count(Landed::MidBatch) + count(Landed::CommitWindow);
    println!(
        "crash test: {kills} kills in {round} rounds of {QUEUE_LEN} messages ({} child runs) in {:.1} s",
        h.spawns,
        started.elapsed().as_secs_f64()
    );
    println!(
        "  landed: {} before the store was open, {} before any message reached the app (incl. \
         re-runs of an already committed queue), {} mid-batch, {} in the commit window (after \
         the last delivery, before the commit returned), {} after the commit; {} runs finished \
         before their kill",
        count(Landed::BeforeOpen),
        count(Landed::BeforeFirstDelivery),
        count(Landed::MidBatch),
        count(Landed::CommitWindow),
        count(Landed::AfterCommit),
        finished_before_kill
    );
    println!(
        "  commit-window kills: the commit had landed in {commit_landed}, had not in {commit_not_landed}, {} unknown",
        count(Landed::CommitWindow) - commit_landed - commit_not_landed
    );
    println!(
        "  mid-batch kills (after some deliveries, before the commit returned): {mid_batch}; \
         app log: {log_lines} lines for {} distinct messages",
        all_ids.len()
    );
    assert_eq!(kills, kills_wanted);
    if kills_wanted >= 20 {
        assert!(mid_batch > 0, "no kill landed mid-batch");
    }
}
