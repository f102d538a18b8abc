//! One session's long run on a batch's threads, pipelined (native builds). The calling thread
//! plans the run a part at a time (`Session::plan_more`) and leaves each part's opens (message
//! keys, MAC check, ChaCha20) to the helpers while it plans the next parts; it then applies the
//! opened messages in queue order (`Session::apply_opened`), and opens parts itself whenever
//! the helpers are behind. So the calling thread's sequential work — stepping the chain,
//! applying — runs while the helpers open, instead of before and after them.
//!
//! A message the plan did not foresee (a new ratchet key, a forgery, a reordering) goes the
//! ordinary way, and planning starts again from the session as it then is; parts planned from
//! the old state are dropped. The results and the session after the run are those of
//! decrypting the messages one by one, as with `Session::decrypt_run`. Each result goes to the
//! run's sink as soon as it is applied, in order, so the batch hands results over to the
//! application while the helpers open the next parts (the sink can stop the run).

use std::collections::{BTreeMap, VecDeque};
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use proteus_core::plan::{OpenJob, Opened, PlanAhead, open_jobs};
use proteus_core::{DecryptError, Envelope, IdentityKeyPair, Session};
use rayon::ThreadPool;

use super::share::Crew;

/// Messages planned at a time: a part is what one thread opens at a time.
const PART: usize = 32;
/// Parts planned ahead of the next one to apply.
const AHEAD: usize = 8;
/// Spins of the calling thread waiting for a part a helper is opening, before it yields.
const SPINS_BEFORE_YIELD: u32 = 2_000;
/// How long the calling thread waits for the next part to apply while a helper opens it (a
/// part takes about 40 µs) before it decrypts that part itself, the ordinary way: a helper
/// that the system stopped mid-part (a busy machine) may not run again for milliseconds.
const TAKE_OVER_AFTER: Duration = Duration::from_micros(250);
/// How long a helper with nothing to open watches for the next part before it sleeps: a
/// sleeping helper takes tens of µs to wake, longer than the calling thread takes to plan a
/// part.
const HELPER_WATCHES: Duration = Duration::from_micros(100);

/// How a message the plan did not foresee is decrypted (`Session::decrypt_with_cache`).
pub(super) type Ordinary<'a> =
    dyn FnMut(&mut Session, &Envelope<'_>) -> Result<Vec<u8>, DecryptError> + 'a;

/// Where a run's results go, one at a time in run order; `Break` stops the run.
pub(super) type Sink<'a> = dyn FnMut(Opened) -> ControlFlow<()> + 'a;

/// The results given to the sink so far.
struct Results<'s, 'a> {
    done: usize,
    sink: &'s mut Sink<'a>,
    stopped: bool,
}

impl Results<'_, '_> {
    fn push(&mut self, result: Opened) {
        self.done += 1;
        if (self.sink)(result).is_break() {
            self.stopped = true;
        }
    }
}

/// The parts between the calling thread and the helpers.
struct Board<'e> {
    parts: Mutex<Parts<'e>>,
    /// Signalled when a part is waiting, and when the run is over.
    waiting: Condvar,
    /// Parts planned so far (the run is over: `usize::MAX`), watched by idle helpers.
    posted: AtomicUsize,
    /// Helpers asleep on `waiting`.
    sleeping: AtomicUsize,
}

#[derive(Default)]
struct Parts<'e> {
    /// Parts to open, in run order: (part number, jobs).
    to_open: VecDeque<(usize, Vec<OpenJob<'e>>)>,
    /// Opened parts, by part number.
    opened: BTreeMap<usize, (Vec<OpenJob<'e>>, Vec<Opened>)>,
    /// Parts numbered below this were planned from a state the session has left: a helper
    /// that opened one drops it.
    valid_from: usize,
    /// Parts the helpers opened (0 at the end: they came too late to help).
    by_helpers: usize,
    over: bool,
}

impl<'e> Board<'e> {
    fn lock(&self) -> MutexGuard<'_, Parts<'e>> {
        self.parts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A helper: opens waiting parts until the run is over.
    fn help(&self) {
        let mut parts = self.lock();
        loop {
            if let Some((number, jobs)) = parts.to_open.pop_front() {
                drop(parts);
                #[cfg(test)]
                tests::stall_if_asked();
                let opened = open_jobs(&jobs);
                parts = self.lock();
                if number >= parts.valid_from {
                    parts.opened.insert(number, (jobs, opened));
                    parts.by_helpers += 1;
                }
            } else if parts.over {
                return;
            } else {
                let seen = self.posted.load(Ordering::Acquire);
                drop(parts);
                let watching = Instant::now();
                while self.posted.load(Ordering::Acquire) == seen
                    && watching.elapsed() < HELPER_WATCHES
                {
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
                }
                parts = self.lock();
                if parts.to_open.is_empty() && !parts.over {
                    self.sleeping.fetch_add(1, Ordering::AcqRel);
                    parts = self
                        .waiting
                        .wait(parts)
                        .unwrap_or_else(PoisonError::into_inner);
                    self.sleeping.fetch_sub(1, Ordering::AcqRel);
                }
            }
        }
    }

    /// Tells the helpers a part is waiting.
    fn posted(&self) {
        self.posted.fetch_add(1, Ordering::AcqRel);
        if self.sleeping.load(Ordering::Acquire) > 0 {
            self.waiting.notify_one();
        }
    }
}

/// A planned part of the run: messages `start..end`, numbered `number`.
struct Part {
    number: usize,
    start: usize,
    end: usize,
}

/// Decrypts `envelopes` (a run of messages to `session`, in queue order) with `pool`'s helpers,
/// as `Session::decrypt_run` would, giving each result to `sink` in order as soon as it is
/// applied (if `sink` breaks, the run stops there); `ordinary` decrypts a message the plan did
/// not foresee (`Session::decrypt_with_cache`). Returns whether the helpers opened any part.
pub(super) fn decrypt_run_pipelined<'e>(
    pool: &ThreadPool,
    session: &mut Session,
    identity: &IdentityKeyPair,
    envelopes: &[&'e Envelope<'e>],
    ordinary: &mut Ordinary<'_>,
    sink: &mut Sink<'_>,
) -> bool {
    let board = Board {
        parts: Mutex::new(Parts::default()),
        waiting: Condvar::new(),
        posted: AtomicUsize::new(0),
        sleeping: AtomicUsize::new(0),
    };
    let mut results = Results {
        done: 0,
        sink,
        stopped: false,
    };
    let crew = Crew::default();
    pool.in_place_scope(|scope| {
        for _ in 0..pool.current_num_threads() {
            scope.spawn(|_| {
                let _aboard = crew.board();
                board.help();
            });
        }
        let mut run = Run {
            board: &board,
            session,
            identity,
            envelopes,
            ahead: PlanAhead::default(),
            base: 0,
            planned_to: 0,
            parts: VecDeque::new(),
            next_number: 0,
        };
        run.decrypt(&mut results, ordinary);
        board.lock().over = true;
        board.posted.store(usize::MAX, Ordering::Release);
        board.waiting.notify_all();
        crew.wait_until_ashore();
    });
    board.lock().by_helpers > 0
}

/// The calling thread's side of a pipelined run.
struct Run<'b, 'e> {
    board: &'b Board<'e>,
    session: &'b mut Session,
    identity: &'b IdentityKeyPair,
    envelopes: &'b [&'e Envelope<'e>],
    /// The plan since `base` (its job indices count from `base`).
    ahead: PlanAhead,
    base: usize,
    /// The messages before this one are planned.
    planned_to: usize,
    /// Planned parts not applied yet, in run order.
    parts: VecDeque<Part>,
    next_number: usize,
}

impl Run<'_, '_> {
    fn decrypt(&mut self, results: &mut Results<'_, '_>, ordinary: &mut Ordinary<'_>) {
        let mut spins = 0;
        let mut waiting_since = None;
        while results.done < self.envelopes.len() && !results.stopped {
            if self.planned_to < self.envelopes.len() && self.parts.len() < AHEAD {
                self.plan_part();
                continue;
            }
            let Some(front) = self.parts.front() else {
                // Nothing planned and nothing left to plan: never expected (the loop plans
                // while messages are left); the rest goes the ordinary way.
                let envelope = self.envelopes.get(results.done).copied();
                if let Some(envelope) = envelope {
                    results.push(ordinary(self.session, envelope));
                }
                continue;
            };
            let number = front.number;
            let mut parts = self.board.lock();
            if let Some((jobs, opened)) = parts.opened.remove(&number) {
                drop(parts);
                spins = 0;
                waiting_since = None;
                if let Some(part) = self.parts.pop_front() {
                    self.apply(part, jobs, opened, results, ordinary);
                }
            } else if let Some((number, jobs)) = parts.to_open.pop_front() {
                drop(parts);
                // The helpers are behind: this thread opens the earliest waiting part.
                let opened = open_jobs(&jobs);
                self.board.lock().opened.insert(number, (jobs, opened));
            } else {
                // A helper is opening the part: it takes a few µs, unless the helper was
                // stopped; then this thread decrypts the part and plans again after it.
                drop(parts);
                let since = *waiting_since.get_or_insert_with(Instant::now);
                if since.elapsed() > TAKE_OVER_AFTER {
                    if let Some(part) = self.parts.pop_front() {
                        self.take_over(part, results, ordinary);
                    }
                    spins = 0;
                    waiting_since = None;
                } else if spins < SPINS_BEFORE_YIELD {
                    spins += 1;
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Plans the next part and leaves its opens to whichever thread comes first.
    fn plan_part(&mut self) {
        let start = self.planned_to;
        let end = (start + PART).min(self.envelopes.len());
        let part = self.envelopes.get(start..end).unwrap_or_default();
        let jobs = self.session.plan_more(&mut self.ahead, part);
        let number = self.next_number;
        self.next_number += 1;
        self.planned_to = end;
        self.parts.push_back(Part { number, start, end });
        let mut parts = self.board.lock();
        if jobs.is_empty() {
            parts.opened.insert(number, (jobs, Vec::new()));
        } else {
            parts.to_open.push_back((number, jobs));
            drop(parts);
            self.board.posted();
        }
    }

    /// Applies an opened part in order; a message the plan did not foresee goes the ordinary
    /// way, and if it changed the session, the plan starts again after it.
    fn apply(
        &mut self,
        part: Part,
        jobs: Vec<OpenJob<'_>>,
        opened: Vec<Opened>,
        results: &mut Results<'_, '_>,
        ordinary: &mut Ordinary<'_>,
    ) {
        let mut planned = jobs.into_iter().zip(opened).peekable();
        for at in part.start..part.end {
            let Some(&envelope) = self.envelopes.get(at) else {
                return;
            };
            let job = planned.next_if(|(job, _)| self.base + job.index() == at);
            let (result, changed_unplanned) = match job {
                Some((job, opened)) => {
                    match self.session.apply_opened(self.identity, job, opened) {
                        Some(plaintext) => (Ok(plaintext), false),
                        None => (ordinary(self.session, envelope), true),
                    }
                }
                None => {
                    let result = ordinary(self.session, envelope);
                    // A rejected message changed nothing; a decrypted one the plan did not
                    // foresee (a ratchet step, a new state) changed the chains it planned.
                    let changed = result.is_ok();
                    (result, changed)
                }
            };
            results.push(result);
            if results.stopped {
                return;
            }
            if changed_unplanned {
                self.replan_after(at);
                return;
            }
        }
    }

    /// Decrypts a part the ordinary way (its helper is late); planning starts again after it.
    fn take_over(
        &mut self,
        part: Part,
        results: &mut Results<'_, '_>,
        ordinary: &mut Ordinary<'_>,
    ) {
        let envelopes = self.envelopes.get(part.start..part.end).unwrap_or_default();
        for &envelope in envelopes {
            results.push(ordinary(self.session, envelope));
            if results.stopped {
                return;
            }
        }
        self.replan_after(part.end - 1);
    }

    /// Drops every part planned from the old state; planning starts again after message `at`.
    fn replan_after(&mut self, at: usize) {
        self.ahead = PlanAhead::default();
        self.base = at + 1;
        self.planned_to = at + 1;
        self.parts.clear();
        let mut parts = self.board.lock();
        parts.valid_from = self.next_number;
        parts.to_open.clear();
        parts.opened.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    use std::ops::ControlFlow;

    use proteus_core::plan::Opened;
    use proteus_core::{Envelope, IdentityKeyPair, OsRng, PreKey, PreKeyBundle, PreKeyId, Session};

    use super::decrypt_run_pipelined;

    /// Makes every helper stop for 2 ms in each part it opens (a helper the system stopped).
    static STALL: AtomicBool = AtomicBool::new(false);

    pub(super) fn stall_if_asked() {
        if STALL.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(2));
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
        pool: &rayon::ThreadPool,
        bob: &IdentityKeyPair,
        session: &[u8],
        queue: &[Envelope<'_>],
    ) -> (Vec<String>, bool) {
        pipelined_until(pool, bob, session, queue, usize::MAX)
    }

    /// [`pipelined`] with a sink that breaks once it has `stop_after` results.
    fn pipelined_until(
        pool: &rayon::ThreadPool,
        bob: &IdentityKeyPair,
        session: &[u8],
        queue: &[Envelope<'_>],
        stop_after: usize,
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
            if results.len() == stop_after {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        let helped = decrypt_run_pipelined(pool, &mut s, bob, &run, &mut ordinary, &mut sink);
        (results, helped)
    }

    #[test]
    fn a_pipelined_run_decrypts_as_one_message_at_a_time_even_with_stalled_helpers() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (bob, session, queue) = backlog(600);
        let expected = one_by_one(&bob, &session, &queue);
        let (got, _) = pipelined(&pool, &bob, &session, &queue);
        assert_eq!(got, expected);
        // Helpers that stop mid-part: the calling thread takes their parts over.
        STALL.store(true, Ordering::Relaxed);
        let (got, _) = pipelined(&pool, &bob, &session, &queue);
        STALL.store(false, Ordering::Relaxed);
        assert_eq!(got, expected);
    }

    #[test]
    fn a_sink_that_breaks_stops_the_run_there() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        let (bob, session, queue) = backlog(600);
        let expected = one_by_one(&bob, &session, &queue);
        let (got, _) = pipelined_until(&pool, &bob, &session, &queue, 250);
        assert_eq!(got, expected[..250]);
    }
}
