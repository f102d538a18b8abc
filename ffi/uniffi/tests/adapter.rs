//! The adapter from Rust: the lock (re-entrancy, waiting, timeouts), batch chunking and the
//! error mapping. The same API is tested from Kotlin and Swift by scripts/suites/{kotlin,swift}.sh.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod support;

use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::Duration;

use proteus_uniffi::{
    BatchDelivery, BatchProgress, BatchResult, BatchResults, Bytes, Client, ClientOptions,
    OpenMode, ProteusError, QueuedMessage, QueuedMessages, SecretBytes, bundle_fingerprint,
    message_id,
};
use support::Wait;

/// Bytes as the secret kind the import calls take.
fn secret(bytes: &[u8]) -> SecretBytes {
    SecretBytes::from(bytes.to_vec())
}

type Deliver = dyn Fn(&[BatchResult], BatchProgress) -> Result<bool, ProteusError> + Send + Sync;

/// A delivery that records what it got and then runs `then`.
struct Recorder {
    results: Mutex<Vec<BatchResult>>,
    progress: Mutex<Vec<BatchProgress>>,
    then: Box<Deliver>,
}

impl Recorder {
    fn new(
        then: impl Fn(&[BatchResult], BatchProgress) -> Result<bool, ProteusError>
        + Send
        + Sync
        + 'static,
    ) -> Arc<Self> {
        Arc::new(Self {
            results: Mutex::new(Vec::new()),
            progress: Mutex::new(Vec::new()),
            then: Box::new(then),
        })
    }
}

/// The delivery handed to the client; the test keeps the other reference.
struct Shared(Arc<Recorder>);

impl BatchDelivery for Shared {
    fn deliver(
        &self,
        results: BatchResults,
        progress: BatchProgress,
    ) -> Result<bool, ProteusError> {
        let results = results.to_vec();
        let go_on = (self.0.then)(&results, progress);
        self.0.results.lock().unwrap().extend(results);
        self.0.progress.lock().unwrap().push(progress);
        go_on
    }
}

fn boxed(
    then: impl Fn(&[BatchResult], BatchProgress) -> Result<bool, ProteusError> + Send + Sync + 'static,
) -> Box<dyn BatchDelivery> {
    Box::new(Shared(Recorder::new(then)))
}

fn pair() -> (Arc<Client>, Arc<Client>) {
    let alice = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let bob = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let bundle = bob.generate_prekeys(1).wait().unwrap().remove(0);
    alice
        .create_session("bob".into(), bundle.bytes)
        .wait()
        .unwrap();
    (alice, bob)
}

fn queue(alice: &Client, n: usize) -> QueuedMessages {
    (0..n)
        .map(|i| QueuedMessage {
            session_id: "alice".into(),
            envelope: alice
                .encrypt("bob".into(), format!("message {i}").into_bytes().into())
                .wait()
                .unwrap(),
        })
        .collect::<Vec<_>>()
        .into()
}

#[test]
fn a_batch_is_delivered_in_chunks_before_its_commit() {
    let (alice, bob) = pair();
    let queue = queue(&alice, 250);
    let recorder = Recorder::new(|_, _| Ok(true));
    let summary = bob
        .decrypt_batch(queue.clone(), Box::new(Shared(recorder.clone())), 100, 0)
        .wait()
        .unwrap();
    assert_eq!(
        (summary.total, summary.decrypted, summary.failed),
        (250, 250, 0)
    );
    let progress: Vec<i32> = recorder
        .progress
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.done)
        .collect();
    assert_eq!(progress, [100, 200, 250]);
    let results = recorder.results.lock().unwrap();
    for (i, r) in results.iter().enumerate() {
        assert_eq!(
            r.plaintext.as_deref(),
            Some(format!("message {i}").as_bytes())
        );
        assert_eq!(
            r.message_id,
            message_id(queue.iter().nth(i).unwrap().1.into())
        );
    }
    // Committed: the same envelopes are now already seen.
    let again = bob
        .decrypt_batch(queue, boxed(|_, _| Ok(true)), 1000, 0)
        .wait()
        .unwrap();
    assert_eq!(again.already_seen, 250);
}

#[test]
fn a_max_chunk_of_1_is_one_message_at_a_time_and_0_is_out_of_range() {
    let (alice, bob) = pair();
    let recorder = Recorder::new(|results, _| {
        assert_eq!(results.len(), 1);
        Ok(true)
    });
    bob.decrypt_batch(queue(&alice, 5), Box::new(Shared(recorder.clone())), 1, 0)
        .wait()
        .unwrap();
    assert_eq!(recorder.progress.lock().unwrap().len(), 5);
    let e = bob
        .decrypt_batch(queue(&alice, 1), boxed(|_, _| Ok(true)), 0, 0)
        .wait()
        .unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (309, "IntegerOutOfRange"));
}

#[test]
fn stopping_or_throwing_commits_nothing() {
    let (alice, bob) = pair();
    let queue = queue(&alice, 10);
    let stop = bob
        .decrypt_batch(queue.clone(), boxed(|_, _| Ok(false)), 3, 0)
        .wait()
        .unwrap_err();
    assert_eq!((stop.code(), stop.kind().name()), (108, "BatchAborted"));
    let thrown = bob
        .decrypt_batch(
            queue.clone(),
            boxed(|_, _| {
                Err(ProteusError::from(
                    uniffi::UnexpectedUniFFICallbackError::new("boom"),
                ))
            }),
            3,
            0,
        )
        .wait()
        .unwrap_err();
    assert_eq!(
        (thrown.code(), thrown.kind().name()),
        (121, "CallbackFailed")
    );
    // Nothing was committed: everything decrypts now.
    let summary = bob
        .decrypt_batch(queue, boxed(|_, _| Ok(true)), 100, 0)
        .wait()
        .unwrap();
    assert_eq!(summary.decrypted, 10);
}

#[test]
fn a_call_from_inside_the_callback_fails_instead_of_deadlocking() {
    let (alice, bob) = pair();
    let inner = bob.clone();
    let seen = Arc::new(Mutex::new(None));
    let seen_in = seen.clone();
    let recorder = Recorder::new(move |_, _| {
        *seen_in.lock().unwrap() = Some(inner.fingerprint().wait().unwrap_err());
        Ok(true)
    });
    bob.decrypt_batch(queue(&alice, 2), Box::new(Shared(recorder)), 100, 0)
        .wait()
        .unwrap();
    let e = seen.lock().unwrap().clone().unwrap();
    assert_eq!((e.code(), e.kind().name()), (120, "ClientBusy"));
    // The client is usable again afterwards.
    assert_eq!(bob.fingerprint().wait().unwrap().len(), 64);
}

#[test]
fn a_callback_waiting_for_another_thread_on_the_same_client_times_out() {
    let alice = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let options = ClientOptions {
        wait_timeout_ms: 200,
        ..ClientOptions::default()
    };
    let bob = Client::in_memory(options).wait().unwrap();
    let bundle = bob.generate_prekeys(1).wait().unwrap().remove(0);
    alice
        .create_session("bob".into(), bundle.bytes)
        .wait()
        .unwrap();
    let other = bob.clone();
    let recorder = Recorder::new(move |_, _| {
        let other = other.clone();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || tx.send(other.session_ids().wait()).unwrap());
        // The other thread waits for this batch, which waits for it: it gives up after the
        // client's wait timeout, 200 ms, which its error names (the default is 30 s). The
        // bound only keeps a deadlock from hanging the test.
        let e = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap()
            .unwrap_err();
        assert_eq!(e.kind().name(), "ClientBusy");
        assert!(e.to_string().contains("within 200 ms"), "{e}");
        Ok(true)
    });
    bob.decrypt_batch(queue(&alice, 1), Box::new(Shared(recorder)), 1, 0)
        .wait()
        .unwrap();
}

#[test]
fn threads_wait_for_each_other() {
    let (alice, bob) = pair();
    let first = alice
        .encrypt("bob".into(), b"hello"[..].into())
        .wait()
        .unwrap();
    bob.decrypt("alice".into(), first).wait().unwrap();
    let reply = bob
        .encrypt("alice".into(), b"hi"[..].into())
        .wait()
        .unwrap();
    alice.decrypt("bob".into(), reply).wait().unwrap();
    let handles: Vec<_> = (0..8)
        .map(|t| {
            let alice = alice.clone();
            thread::spawn(move || {
                (0..50)
                    .map(|i| {
                        alice
                            .encrypt("bob".into(), format!("{t}/{i}").into_bytes().into())
                            .wait()
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut envelopes = Vec::new();
    for h in handles {
        envelopes.extend(h.join().unwrap());
    }
    // Every envelope decrypts exactly once, whatever the interleaving was.
    let mut got = Vec::new();
    for e in envelopes {
        got.push(
            String::from_utf8(bob.decrypt("alice".into(), e).wait().unwrap().into_vec()).unwrap(),
        );
    }
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 400);
}

#[test]
fn errors_keep_the_codes_of_the_client() {
    let client = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let e = client
        .encrypt("nobody".into(), vec![1].into())
        .wait()
        .unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (104, "SessionNotFound"));
    // Session ids are user data: never in an error's text.
    assert!(!e.to_string().contains("nobody"), "{e}");
    let e = client
        .encrypt(String::new(), vec![1].into())
        .wait()
        .unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (106, "InvalidSessionId"));
    let e = client.prekey_bundle(7).wait().unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (101, "PreKeyNotFound"));
    let e = client.generate_prekeys(i32::MAX).wait().unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (110, "PreKeyIdsExhausted"));
    let e = bundle_fingerprint(vec![0xff].into()).unwrap_err();
    assert_eq!(e.code() / 100, 3, "{e}");
    let e = client
        .decrypt("someone".into(), vec![0xa1, 0x00].into())
        .wait()
        .unwrap_err();
    assert_eq!(e.code() / 100, 3, "{e}");
}

#[test]
fn stores_open_close_and_refuse_as_documented() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    let missing = Client::open(
        path.clone(),
        None,
        Some(OpenMode::Existing),
        ClientOptions::default(),
        None,
    )
    .wait()
    .unwrap_err();
    assert_eq!(missing.code(), 504);
    let client = Client::open(path.clone(), None, None, ClientOptions::default(), None)
        .wait()
        .unwrap();
    let fingerprint = client.fingerprint().wait().unwrap();
    // A second opener shares the store (an app and its extension)...
    let second = Client::open(
        path.clone(),
        None,
        Some(OpenMode::ExistingOrNew),
        ClientOptions::default(),
        None,
    )
    .wait()
    .unwrap();
    assert_eq!(second.fingerprint().wait().unwrap(), fingerprint);
    // ...but waits for a call of the other to end: from inside a batch's delivery, an opener with
    // a 50 ms busy timeout gets StoreBusy.
    let alice = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let bundle = second.generate_prekeys(1).wait().unwrap().remove(0);
    alice
        .create_session("bob".into(), bundle.bytes)
        .wait()
        .unwrap();
    let busy = Arc::new(std::sync::Mutex::new(None));
    let (busy_in, busy_path) = (busy.clone(), path.clone());
    client
        .decrypt_batch(
            queue(&alice, 1),
            boxed(move |_, _| {
                let options = ClientOptions {
                    busy_timeout_ms: 50,
                    ..ClientOptions::default()
                };
                let e = Client::open(
                    busy_path.clone(),
                    None,
                    Some(OpenMode::ExistingOrNew),
                    options,
                    None,
                )
                .wait()
                .unwrap_err();
                *busy_in.lock().unwrap() = Some((e.code(), e.kind().name().to_owned()));
                Ok(true)
            }),
            1,
            0,
        )
        .wait()
        .unwrap();
    assert_eq!(*busy.lock().unwrap(), Some((502, "StoreBusy".to_owned())));
    drop(second);
    drop(client);
    let again = Client::open(
        path.clone(),
        None,
        Some(OpenMode::Existing),
        ClientOptions::default(),
        None,
    )
    .wait()
    .unwrap();
    assert_eq!(again.fingerprint().wait().unwrap(), fingerprint);
    drop(again);
    let exists = Client::open(
        path,
        None,
        Some(OpenMode::New),
        ClientOptions::default(),
        None,
    )
    .wait()
    .unwrap_err();
    assert_eq!(exists.code(), 505);
}

#[test]
fn bundles_carry_their_id_and_identity() {
    let client = Client::in_memory(ClientOptions::default()).wait().unwrap();
    let bundles = client.generate_prekeys(3).wait().unwrap();
    let ids: Vec<i32> = bundles.iter().map(|b| b.id).collect();
    assert_eq!(ids.len(), 3);
    assert!(!ids.contains(&65_535));
    assert_eq!(client.last_resort_bundle().wait().unwrap().id, 65_535);
    assert_eq!(client.prekey_bundle(ids[1]).wait().unwrap(), bundles[1]);
    assert_eq!(
        bundle_fingerprint(bundles[0].bytes.clone()).unwrap(),
        client.fingerprint().wait().unwrap()
    );
    assert_eq!(client.prekeys_remaining().wait().unwrap(), 3);
}

#[test]
fn a_progress_interval_delivers_at_a_steady_rate() {
    let (alice, bob) = pair();
    let recorder = Recorder::new(|_, _| Ok(true));
    // 1000 messages take more than a millisecond: at least two deliveries, in order.
    bob.decrypt_batch(
        queue(&alice, 1000),
        Box::new(Shared(recorder.clone())),
        1000,
        1,
    )
    .wait()
    .unwrap();
    let progress = recorder.progress.lock().unwrap();
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress.windows(2).all(|w| w[0].done < w[1].done));
    assert_eq!(
        progress.last().map(|p| (p.done, p.total)),
        Some((1000, 1000))
    );
    assert_eq!(recorder.results.lock().unwrap().len(), 1000);
}

#[test]
fn no_input_reaches_a_panic() {
    // Random and truncated bytes into every method that takes bytes: errors, never a panic
    // (which the lock would turn into an `Internal` error and a retired client).
    let (alice, bob) = pair();
    let good = alice.encrypt("bob".into(), b"x"[..].into()).wait().unwrap();
    let bundle = bob.last_resort_bundle().wait().unwrap().bytes;
    let session = {
        bob.decrypt("alice".into(), good.clone()).wait().unwrap();
        bob.export_session("alice".into()).wait().unwrap()
    };
    let identity = bob.export_identity().wait().unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let victim = Client::in_memory(ClientOptions::default()).wait().unwrap();
    for round in 0..2000 {
        let base: &[u8] = match round % 4 {
            0 => &good,
            1 => &bundle,
            2 => &session,
            _ => &identity,
        };
        let mut input = base.to_vec();
        match next() % 3 {
            0 => input.truncate(usize::try_from(next()).unwrap() % (input.len() + 1)),
            1 => {
                for _ in 0..1 + next() % 4 {
                    let i = usize::try_from(next()).unwrap() % input.len().max(1);
                    if let Some(b) = input.get_mut(i) {
                        *b ^= 1 << (next() % 8);
                    }
                }
            }
            _ => input = (0..next() % 64).map(|_| next() as u8).collect(),
        }
        let input = Bytes(input);
        let results = [
            victim.decrypt("peer".into(), input.clone()).wait().err(),
            bob.decrypt("alice".into(), input.clone()).wait().err(),
            victim
                .create_session(format!("s{round}"), input.clone())
                .wait()
                .err(),
            victim
                .import_session(format!("i{round}"), secret(&input))
                .wait()
                .err(),
            victim.import_prekey(secret(&input)).wait().err(),
            bundle_fingerprint(input.clone()).err(),
        ];
        for e in results.into_iter().flatten() {
            assert_ne!(e.kind().name(), "Internal", "{e}");
        }
        let _ = victim.import_identity(secret(&input)).wait();
    }
    assert_eq!(victim.fingerprint().wait().unwrap().len(), 64);
}

#[test]
fn batch_threads_is_an_option_of_the_client() {
    for threads in [Some(1), Some(3), None] {
        let options = ClientOptions {
            batch_threads: threads,
            ..ClientOptions::default()
        };
        let alice = Client::in_memory(ClientOptions::default()).wait().unwrap();
        let bob = Client::in_memory(options).wait().unwrap();
        let bundle = bob.generate_prekeys(1).wait().unwrap().remove(0);
        alice
            .create_session("bob".into(), bundle.bytes)
            .wait()
            .unwrap();
        let recorder = Recorder::new(|_, _| Ok(true));
        let summary = bob
            .decrypt_batch(
                queue(&alice, 300),
                Box::new(Shared(recorder.clone())),
                64,
                0,
            )
            .wait()
            .unwrap();
        assert_eq!((summary.decrypted, summary.failed), (300, 0), "{threads:?}");
        let results = recorder.results.lock().unwrap();
        for (i, r) in results.iter().enumerate() {
            assert_eq!(
                r.plaintext.as_deref(),
                Some(format!("message {i}").as_bytes())
            );
        }
    }
}

/// The app's commit counter, in memory (the Keychain, in an app).
struct Counter(Arc<Mutex<i64>>);

impl proteus_uniffi::CommitCounter for Counter {
    fn load(&self) -> Result<i64, ProteusError> {
        Ok(*self.0.lock().unwrap())
    }

    fn store(&self, count: i64) -> Result<(), ProteusError> {
        *self.0.lock().unwrap() = count;
        Ok(())
    }
}

#[test]
fn a_store_restored_from_an_older_copy_is_refused_with_the_apps_counter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_string_lossy().into_owned();
    let backup = dir.path().join("backup.db");
    let count = Arc::new(Mutex::new(0));
    let open = |count: &Arc<Mutex<i64>>| {
        let counter: Box<dyn proteus_uniffi::CommitCounter> = Box::new(Counter(count.clone()));
        Client::open(
            path.clone(),
            None,
            None,
            ClientOptions::default(),
            Some(counter),
        )
        .wait()
    };
    let client = open(&count).unwrap();
    client.generate_prekeys(2).wait().unwrap();
    client.close().wait().unwrap();
    let stored = *count.lock().unwrap();
    assert!(stored >= 2, "the identity, then the prekeys: {stored}");
    std::fs::copy(&path, &backup).unwrap();

    let client = open(&count).unwrap();
    client.generate_prekeys(1).wait().unwrap();
    client.close().wait().unwrap();
    assert!(*count.lock().unwrap() > stored);

    // The backup comes back: refused, and left as it is.
    std::fs::copy(&backup, &path).unwrap();
    let e = open(&count).unwrap_err();
    assert_eq!((e.code(), e.kind().name()), (511, "StoreRolledBack"));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&backup).unwrap()
    );
    // Without the counter the same file opens (the app decides).
    let plain = Client::open(path.clone(), None, None, ClientOptions::default(), None).wait();
    assert!(plain.is_ok());
}
