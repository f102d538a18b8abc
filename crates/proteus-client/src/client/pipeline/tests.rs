#![allow(clippy::unwrap_used, clippy::indexing_slicing)]

use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, mpsc};
use std::time::{Duration, Instant};

use proteus_core::plan::Opened;
use proteus_core::{Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session};

use super::decrypt_run_pipelined;
use crate::client::asleep::when_asleep;
use crate::client::pace::Helpers;

/// Makes a helper stop after the first job of every part it opens, until the calling thread
/// has taken the part over (a helper the system stopped mid-part).
static STALL: AtomicBool = AtomicBool::new(false);
/// Parts the helpers opened a job of, and jobs they opened. A part a helper took but found
/// needless before its first job (the calling thread took it over while the helper was not
/// running yet) is not counted: how often that happens depends on the machine's scheduling.
static HELPER_PARTS: AtomicUsize = AtomicUsize::new(0);
static HELPER_OPENS: AtomicUsize = AtomicUsize::new(0);
/// The tests below share these hooks: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    STALL.store(false, Ordering::Relaxed);
    HELPER_PARTS.store(0, Ordering::Relaxed);
    HELPER_OPENS.store(0, Ordering::Relaxed);
    guard
}

/// A helper has opened `opened` jobs of its part, the last one just now.
pub(super) fn helper_opened(opened: usize) {
    if opened == 1 {
        HELPER_PARTS.fetch_add(1, Ordering::Relaxed);
    }
    HELPER_OPENS.fetch_add(1, Ordering::Relaxed);
}

/// How long a stopped helper waits for the take-over at most: a bound that keeps a broken
/// take-over from hanging the tests (the counts then fail), far longer than a whole run takes on
/// a machine ten times slower than ours (the caller takes a part over when it reaches it).
const STALL_AT_MOST: Duration = Duration::from_secs(120);

/// A helper with `opened` jobs of its part done stops (if asked) until `taken_over` says so,
/// for at most [`STALL_AT_MOST`].
pub(super) fn stall_if_asked(opened: usize, taken_over: impl Fn() -> bool) {
    if opened == 1 && STALL.load(Ordering::Relaxed) {
        let since = Instant::now();
        while !taken_over() && since.elapsed() < STALL_AT_MOST {
            std::thread::sleep(Duration::from_micros(200));
        }
    }
}

/// Bob's identity and session, and `n` messages from Alice with a lost one and a reordered
/// pair in the middle.
fn backlog(n: usize) -> (IdentityKeyPair, Vec<u8>, Vec<Envelope<'static>>) {
    let (alice, bob) = (
        IdentityKeyPair::generate(&mut OsRng),
        IdentityKeyPair::generate(&mut OsRng),
    );
    let prekey = PreKey::generate(PreKeyId::new(1), &mut OsRng);
    let bundle = PreKeyBundle::new(bob.public_key(), &prekey);
    let mut prekeys = BTreeMap::from([(prekey.id(), prekey)]);
    let mut a = Session::init_from_prekey(&mut OsRng, &alice, &bundle).unwrap();
    let hello = a.encrypt(b"hello").unwrap();
    let b = Session::init_from_message(&mut OsRng, &bob, &mut prekeys, &hello)
        .unwrap()
        .session;
    let mut queue: Vec<Envelope<'static>> = (0..n)
        .map(|i| a.encrypt(&i.to_be_bytes()).unwrap())
        .collect();
    queue.remove(n / 3);
    queue.swap(n / 2, n / 2 + 1);
    (bob, b.to_bytes().to_vec(), queue)
}

fn one_by_one(bob: &IdentityKeyPair, session: &[u8], queue: &[Envelope<'_>]) -> Vec<String> {
    let mut s = Session::from_bytes(bob.public_key(), session).unwrap();
    let mut none = BTreeMap::new();
    queue
        .iter()
        .map(|e| format!("{:?}", s.decrypt(&mut OsRng, bob, &mut none, e)))
        .collect()
}

fn pipelined(
    helpers: &Helpers,
    bob: &IdentityKeyPair,
    session: &[u8],
    queue: &[Envelope<'_>],
) -> (Vec<String>, bool) {
    pipelined_until(helpers, bob, session, queue, usize::MAX, || ())
}

/// [`pipelined`] with a sink that breaks once it has `stop_after` results, and calls `last`
/// with the last result of the queue.
fn pipelined_until(
    helpers: &Helpers,
    bob: &IdentityKeyPair,
    session: &[u8],
    queue: &[Envelope<'_>],
    stop_after: usize,
    mut last: impl FnMut(),
) -> (Vec<String>, bool) {
    let mut s = Session::from_bytes(bob.public_key(), session).unwrap();
    let run: Vec<&Envelope<'_>> = queue.iter().collect();
    let mut none = BTreeMap::new();
    let mut ordinary = |s: &mut Session, e: &Envelope<'_>| {
        s.decrypt_with_cache(&mut OsRng, bob, &mut none, &mut (), e)
    };
    let mut results = Vec::new();
    let mut sink = |r: Opened| {
        results.push(format!("{r:?}"));
        if results.len() == queue.len() {
            last();
        }
        if results.len() == stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let helped = decrypt_run_pipelined(helpers, &mut s, bob, &run, &mut ordinary, &mut sink);
    (results, helped)
}

#[test]
fn a_pipelined_run_decrypts_as_one_message_at_a_time() {
    let _serial = serial();
    let helpers = Helpers::with_threads(2);
    let (bob, session, queue) = backlog(600);
    let expected = one_by_one(&bob, &session, &queue);
    let (got, _) = pipelined(&helpers, &bob, &session, &queue);
    assert_eq!(got, expected);
}

#[test]
fn parts_of_helpers_stopped_mid_part_are_decrypted_by_the_caller_and_dropped_by_them() {
    let _serial = serial();
    let helpers = Helpers::with_threads(2);
    let (bob, session, queue) = backlog(600);
    let expected = one_by_one(&bob, &session, &queue);
    STALL.store(true, Ordering::Relaxed);
    let (got, _) = pipelined(&helpers, &bob, &session, &queue);
    STALL.store(false, Ordering::Relaxed);
    assert_eq!(got, expected);

    // Each part a helper opened a job of: its first job opened, then the helper stopped until
    // the caller took the part over, then it dropped the rest (no job opened twice over).
    assert_eq!(
        HELPER_OPENS.load(Ordering::Relaxed),
        HELPER_PARTS.load(Ordering::Relaxed)
    );
}

#[test]
fn a_helper_that_never_starts_neither_holds_up_the_run_nor_opens_anything() {
    let _serial = serial();
    let helpers = Helpers::with_threads(1);
    let (bob, session, queue) = backlog(600);
    let expected = one_by_one(&bob, &session, &queue);
    // The pool's one thread is busy until the run has given its last result and the calling
    // thread sleeps at its end, waiting for the helper job: the job starts only after the run
    // judged the helpers' turnout, however the threads are scheduled (the run then waits for it
    // to leave, as it must).
    let (release, busy) = mpsc::channel::<()>();
    helpers.pool().spawn(move || {
        let _ = busy.recv();
    });
    let last_given = AtomicBool::new(false);
    let (got, helped) = std::thread::scope(|scope| {
        let last_given = &last_given;
        when_asleep(
            scope,
            || last_given.load(Ordering::Acquire),
            || drop(release),
        );
        pipelined_until(&helpers, &bob, &session, &queue, usize::MAX, || {
            last_given.store(true, Ordering::Release);
        })
    });
    assert_eq!(got, expected);
    assert!(!helped);
    assert_eq!(HELPER_OPENS.load(Ordering::Relaxed), 0);
    // The helpers were late: they rest, and the batch's next work stays on its thread.
    assert!(helpers.late_in_a_row() > 0);
}

#[test]
fn a_sink_that_breaks_stops_the_run_there() {
    let _serial = serial();
    let helpers = Helpers::with_threads(2);
    let (bob, session, queue) = backlog(600);
    let expected = one_by_one(&bob, &session, &queue);
    let (got, _) = pipelined_until(&helpers, &bob, &session, &queue, 250, || ());
    assert_eq!(got, expected[..250]);
}
