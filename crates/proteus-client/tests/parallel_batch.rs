//! Batches on a rayon pool (`Executor::Rayon`) give exactly what the inline executor gives: on
//! random queues (interleaved senders, new sessions, two senders on one prekey, last-resort
//! handshakes, ratchet steps, reordering, duplicates, garbled envelopes, invalid ids, gaps past
//! the staged-key limit) the results (ids, outcomes, plaintexts, senders), the chunks they are
//! handed over in, and the stored state are those of `batch_threads = 1` (inline); a failing
//! store or an abort mid-batch commits nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::convert::Infallible;
use std::ops::ControlFlow;

use common::{Dump, TestStorage, connect, queue};
use proptest::prelude::*;
use proptest::sample::Index;
use proteus_client::{Chunking, Client, ClientError, Decrypted, Table};
use proteus_core::Session;

#[derive(Debug, Clone, Copy)]
enum Start {
    /// A session made before the batch; Bob's reply waits for the sender.
    Established,
    /// A new session from a one-time prekey.
    New,
    /// A new session from the same one-time prekey as the sender before.
    SharedPreKey,
    /// A new session from the last-resort prekey.
    LastResort,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    Send,
    Lose(u16),
    /// The sender decrypts Bob's reply: its next messages carry a new ratchet key.
    Ratchet,
}

#[derive(Debug, Clone)]
enum Mutation {
    Swap(Index, Index),
    Duplicate(Index),
    Garble(Index, Index, u8),
    InvalidId(Index),
}

fn start() -> impl Strategy<Value = Start> {
    prop_oneof![
        3 => Just(Start::Established),
        2 => Just(Start::New),
        1 => Just(Start::SharedPreKey),
        1 => Just(Start::LastResort),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        20 => Just(Step::Send),
        2 => (1u16..30).prop_map(Step::Lose),
        1 => Just(Step::Lose(1_020)),
        1 => Just(Step::Ratchet),
    ]
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        any::<Index>().prop_map(Mutation::Duplicate),
        (any::<Index>(), any::<Index>(), 1u8..=255)
            .prop_map(|(m, at, x)| Mutation::Garble(m, at, x)),
        any::<Index>().prop_map(Mutation::InvalidId),
    ]
}

type Queue = Vec<(String, Vec<u8>)>;

/// Bob's store before the batch, the queue, and the senders (to send more after it).
struct Fixture {
    dump: Dump,
    queue: Queue,
    senders: Vec<(String, Client)>,
}

fn fixture(senders: &[(Start, Vec<Step>)], picks: &[usize], mutations: &[Mutation]) -> Fixture {
    let storage = TestStorage::new();
    let mut bob = storage.client();
    let mut clients = Vec::new();
    let mut streams: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut last_bundle = bob.last_resort_bundle().unwrap().to_bytes();
    for (i, (how, steps)) in senders.iter().enumerate() {
        let id = format!("alice{i}");
        let mut alice = Client::in_memory().unwrap();
        let mut reply = None;
        match how {
            Start::Established => {
                connect(&mut alice, &id, &mut bob, "bob");
                reply = Some(bob.encrypt(&id, b"reply").unwrap());
            }
            Start::New => {
                last_bundle = common::bundle_of(&mut bob);
                alice.create_session("bob", &last_bundle).unwrap();
            }
            Start::SharedPreKey => alice.create_session("bob", &last_bundle).unwrap(),
            Start::LastResort => {
                let bundle = bob.last_resort_bundle().unwrap().to_bytes();
                alice.create_session("bob", &bundle).unwrap();
            }
        }
        let mut stream = Vec::new();
        for (n, s) in steps.iter().enumerate() {
            match s {
                Step::Send => stream.push(
                    alice
                        .encrypt("bob", format!("{id} {n}").as_bytes())
                        .unwrap(),
                ),
                Step::Lose(k) => {
                    for _ in 0..*k {
                        alice.encrypt("bob", b"lost").unwrap();
                    }
                }
                Step::Ratchet => {
                    if let Some(reply) = reply.take() {
                        alice.decrypt("bob", &reply).unwrap();
                    }
                }
            }
        }
        streams.push(stream);
        clients.push((id, alice));
    }
    // Interleave the senders' streams, each in its own order.
    let mut queue: Queue = Vec::new();
    let mut cursors = vec![0usize; streams.len()];
    let mut picks = picks.iter().cycle();
    while cursors.iter().zip(&streams).any(|(c, s)| *c < s.len()) {
        let open: Vec<usize> = (0..streams.len())
            .filter(|&s| cursors[s] < streams[s].len())
            .collect();
        let s = open[picks.next().map_or(0, |p| p % open.len())];
        queue.push((clients[s].0.clone(), streams[s][cursors[s]].clone()));
        cursors[s] += 1;
    }
    for m in mutations {
        if queue.is_empty() {
            break;
        }
        let n = queue.len();
        match m {
            Mutation::Swap(a, b) => queue.swap(a.index(n), b.index(n)),
            Mutation::Duplicate(a) => queue.insert(a.index(n), queue[a.index(n)].clone()),
            Mutation::Garble(a, at, x) => {
                let mut garbled = queue[a.index(n)].clone();
                let at = at.index(garbled.1.len());
                garbled.1[at] ^= x;
                queue.insert(a.index(n), garbled);
            }
            Mutation::InvalidId(a) => {
                let envelope = queue[a.index(n)].1.clone();
                queue.insert(a.index(n), (String::new(), envelope));
            }
        }
    }
    Fixture {
        dump: storage.dump(),
        queue,
        senders: clients,
    }
}

/// What a result says, comparable: id, session, plaintext or code, sender.
type Seen = (String, String, Result<Vec<u8>, u16>, Option<String>);

fn seen(d: &Decrypted) -> Seen {
    (
        d.message_id.to_string(),
        d.session_id.clone(),
        d.outcome
            .as_ref()
            .map(Clone::clone)
            .map_err(ClientError::code),
        d.sender.as_ref().map(|k| k.fingerprint()),
    )
}

struct Run {
    results: Vec<Seen>,
    /// (progress.done, chunk length) of every hand-over.
    chunks: Vec<(usize, usize)>,
    storage: TestStorage,
    client: Client,
}

fn run(f: &Fixture, threads: usize, chunk: usize) -> Run {
    let storage = TestStorage::from_dump(&f.dump);
    let mut client = storage.client();
    client.set_batch_threads(threads);
    let mut chunks = Vec::new();
    let results = client
        .decrypt_batch_chunked(&queue(&f.queue), Chunking::every(chunk), |c, p| {
            chunks.push((p.done, c.len()));
            Ok::<_, Infallible>(ControlFlow::Continue(()))
        })
        .unwrap();
    Run {
        results: results.iter().map(seen).collect(),
        chunks,
        storage,
        client,
    }
}

/// The stored state, comparable: every record but the sessions byte for byte; each session by
/// what a ratchet step's random keys leave alike (its tag, peer, states, pending prekey).
fn stored(run: &Run) -> Vec<(Table, Vec<u8>, Vec<u8>)> {
    let identity = *run.client.identity();
    run.storage
        .dump()
        .into_iter()
        .map(|((table, key), value)| {
            let value = if table == Table::Sessions {
                let s = Session::from_bytes(&identity, &value).unwrap();
                format!(
                    "{} {} {} {}",
                    s.session_tag(),
                    s.remote_identity().fingerprint(),
                    s.state_count(),
                    s.has_pending_prekey()
                )
                .into_bytes()
            } else {
                value
            };
            (table, key, value)
        })
        .collect()
}

/// Decrypts the fixture's queue with one thread and with `threads`, and compares everything.
fn same_with_threads(f: &mut Fixture, threads: usize, chunk: usize) -> Result<(), TestCaseError> {
    let mut one = run(f, 1, chunk);
    let mut many = run(f, threads, chunk);
    prop_assert_eq!(&many.results, &one.results);
    prop_assert_eq!(&many.chunks, &one.chunks);
    prop_assert_eq!(stored(&many), stored(&one));
    // The receive chains are the same: what the senders send next decrypts alike.
    let mut next: Queue = Vec::new();
    for (id, alice) in &mut f.senders {
        next.push((id.clone(), alice.encrypt("bob", b"after").unwrap()));
    }
    let after = |r: &mut Run| -> Vec<Seen> {
        common::run_batch(&mut r.client, &next)
            .unwrap()
            .iter()
            .map(seen)
            .collect()
    };
    prop_assert_eq!(after(&mut many), after(&mut one));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn threads_change_nothing_but_time(
        senders in prop::collection::vec((start(), prop::collection::vec(step(), 1..60)), 1..6),
        picks in prop::collection::vec(any::<usize>(), 1..40),
        mutations in prop::collection::vec(mutation(), 0..10),
        chunk in 1usize..64,
        threads in 2usize..5,
    ) {
        let mut f = fixture(&senders, &picks, &mutations);
        same_with_threads(&mut f, threads, chunk)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]

    /// Long runs of one or two senders: segments of hundreds of planned opens, which are
    /// shared out on the pool.
    #[test]
    fn long_runs_change_nothing_but_time(
        senders in prop::collection::vec((start(), prop::collection::vec(step(), 150..500)), 1..3),
        picks in prop::collection::vec(any::<usize>(), 1..10),
        mutations in prop::collection::vec(mutation(), 0..6),
        chunk in 1usize..300,
        threads in 2usize..5,
    ) {
        let mut f = fixture(&senders, &picks, &mutations);
        same_with_threads(&mut f, threads, chunk)?;
    }
}

/// A backlog of several windows from many senders, new and established.
fn backlog() -> Fixture {
    let senders: Vec<(Start, Vec<Step>)> = (0..12)
        .map(|i| {
            let how = if i % 3 == 0 {
                Start::New
            } else {
                Start::Established
            };
            (how, vec![Step::Send; 60])
        })
        .collect();
    let picks: Vec<usize> = (0..97).map(|i| i * 7919).collect();
    fixture(&senders, &picks, &[])
}

#[test]
fn a_failing_store_mid_batch_commits_nothing() {
    let mut f = backlog();
    // One sender's messages come last: its session is first read in a late window.
    f.queue.sort_by_key(|(id, _)| id == "alice11");
    assert!(f.queue.len() > 600, "several windows");
    for threads in [1, 3] {
        let storage = TestStorage::from_dump(&f.dump);
        let mut bob = storage.client();
        bob.set_batch_threads(threads);
        // Reads fail from the first hand-over on: the batch stops when it needs one.
        let handle = storage.clone();
        let mut handed = 0;
        let result = bob.decrypt_batch_chunked(&queue(&f.queue), Chunking::every(100), |_, p| {
            handed = p.done;
            handle.set_fail_reads(true);
            Ok::<_, Infallible>(ControlFlow::Continue(()))
        });
        assert!(
            matches!(
                result,
                Err(proteus_client::BatchError::Client(ClientError::Store(_)))
            ),
            "threads {threads}: {result:?}"
        );
        assert_eq!(handed, 600, "threads {threads}: handed over up to alice11");
        storage.set_fail_reads(false);
        assert_eq!(storage.dump(), f.dump, "nothing was committed");
        // A failing commit: everything handed over, nothing stored.
        storage.set_fail_commits(true);
        assert!(common::run_batch(&mut bob, &f.queue).is_err());
        storage.set_fail_commits(false);
        assert_eq!(storage.dump(), f.dump, "nothing was committed");
        // The client goes on as if neither batch had run.
        let again = common::run_batch(&mut bob, &f.queue).unwrap();
        assert!(again.iter().all(|d| d.outcome.is_ok()));
        let one = run(&f, 1, 100);
        assert_eq!(again.iter().map(seen).collect::<Vec<_>>(), one.results);
    }
}

#[test]
fn an_abort_mid_batch_commits_nothing() {
    let f = backlog();
    let storage = TestStorage::from_dump(&f.dump);
    let mut bob = storage.client();
    bob.set_batch_threads(3);
    let mut handed = 0;
    let result = bob.decrypt_batch(&queue(&f.queue), |_, p| {
        handed = p.done;
        if p.done == 300 {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    assert!(matches!(result, Err(ClientError::BatchAborted)));
    assert_eq!(handed, 300, "results were handed over during the batch");
    assert_eq!(storage.dump(), f.dump, "nothing was committed");
    let again = common::run_batch(&mut bob, &f.queue).unwrap();
    assert_eq!(
        again.iter().map(seen).collect::<Vec<_>>(),
        run(&f, 1, 1).results
    );
}

/// A backlog from one sender is one run whose results are handed over after it: stopping
/// there commits nothing, and the messages decrypt again afterwards. For a new
/// sender (its session made in the run) and an established one (a ratchet step first).
#[test]
fn an_abort_mid_backlog_from_one_sender_commits_nothing() {
    for start in [Start::Established, Start::New] {
        let f = fixture(&[(start, vec![Step::Send; 700])], &[0], &[]);
        for threads in [2, 3] {
            let storage = TestStorage::from_dump(&f.dump);
            let mut bob = storage.client();
            bob.set_batch_threads(threads);
            let mut handed = 0;
            let result = bob.decrypt_batch(&queue(&f.queue), |d, p| {
                assert!(d.outcome.is_ok(), "message {}", p.done);
                handed = p.done;
                if p.done == 300 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            assert!(matches!(result, Err(ClientError::BatchAborted)));
            assert_eq!(handed, 300, "threads {threads}: stopped at the abort");
            assert_eq!(storage.dump(), f.dump, "nothing was committed");
            let again = common::run_batch(&mut bob, &f.queue).unwrap();
            assert_eq!(
                again.iter().map(seen).collect::<Vec<_>>(),
                run(&f, 1, 1).results,
                "threads {threads}"
            );
        }
    }
}
