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
//!
//! The calling thread never gives its CPU away to wait for a helper: a helper the system has
//! stopped (a busy machine, or one CPU for both) may not run again for milliseconds, and a
//! yielded CPU may go to another process for as long. It opens the parts no helper has taken
//! itself, and waits for a part a helper is opening only while the helpers make progress;
//! then it decrypts that part itself and tells the helper to drop it. A helper watches for
//! work only while the calling thread makes progress (on one CPU, its watching would be the
//! calling thread's lost time).

use std::collections::{BTreeMap, VecDeque};
use std::ops::{ControlFlow, Deref};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::pace::Helpers;
use super::share::Crew;
use proteus_core::plan::{OpenJob, Opened, PlanAhead, open_jobs};
use proteus_core::{DecryptError, Envelope, IdentityKeyPair, Session};

/// Messages planned at a time: a part is what one thread opens at a time.
const PART: usize = 32;
/// Parts planned ahead of the next one to apply.
const AHEAD: usize = 8;
/// How long the calling thread waits for the next part to apply while a helper opens it (a
/// part takes about 40 µs) before it decrypts that part itself, the ordinary way...
const TAKE_OVER_AFTER: Duration = Duration::from_micros(250);
/// ...or, sooner, once the helpers have opened nothing for this long (an open takes about
/// 1 µs): the helper was stopped mid-part.
const STALLED_AFTER: Duration = Duration::from_micros(20);
/// How long a helper with nothing to open watches for the next part before it sleeps: a
/// sleeping helper takes tens of µs to wake, longer than the calling thread takes to plan a
/// part...
const HELPER_WATCHES: Duration = Duration::from_micros(100);
/// ...unless the calling thread has made no progress for this long (it plans or applies a
/// part in about 10 µs, opens one in about 40): it is not running beside the helper.
const CALLER_QUIET: Duration = Duration::from_micros(60);

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
    posted: OwnLine<AtomicUsize>,
    /// Helpers asleep on `waiting`.
    sleeping: OwnLine<AtomicUsize>,
    /// Jobs the helpers have opened, watched by a calling thread waiting for a part.
    progress: OwnLine<AtomicUsize>,
    /// Steps of the calling thread (parts planned, applied, opened), watched by idle helpers.
    beat: OwnLine<AtomicUsize>,
    /// Parts numbered below this need no opening: applied, decrypted by the calling thread, or
    /// planned from a state the session has left. A helper opening one drops it. Changed with
    /// `parts` locked.
    needless_below: OwnLine<AtomicUsize>,
}

#[derive(Default)]
struct Parts<'e> {
    /// Parts to open, in run order: (part number, jobs).
    to_open: VecDeque<(usize, Vec<OpenJob<'e>>)>,
    /// Opened parts, by part number.
    opened: BTreeMap<usize, (Vec<OpenJob<'e>>, Vec<Opened>)>,
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
                let opened = self.open(number, &jobs);
                parts = self.lock();
                if let Some(opened) = opened
                    && number >= self.needless_below.load(Ordering::Acquire)
                {
                    parts.opened.insert(number, (jobs, opened));
                    parts.by_helpers += 1;
                }
            } else if parts.over {
                return;
            } else {
                let seen = self.posted.load(Ordering::Acquire);
                drop(parts);
                self.watch(seen);
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

    /// A helper opens part `number`'s jobs one by one, counting its progress; `None` if the
    /// part became needless meanwhile (its remaining jobs are not opened).
    fn open(&self, number: usize, jobs: &[OpenJob<'_>]) -> Option<Vec<Opened>> {
        let mut opened = Vec::with_capacity(jobs.len());
        for job in jobs {
            #[cfg(test)]
            tests::stall_if_asked(opened.len(), || {
                number < self.needless_below.load(Ordering::Acquire)
            });
            if number < self.needless_below.load(Ordering::Acquire) {
                return None;
            }
            opened.push(job.open());
            self.progress.fetch_add(1, Ordering::Release);
            #[cfg(test)]
            tests::helper_opened(opened.len());
        }
        Some(opened)
    }

    /// An idle helper watches for the next part (`posted` moving on from `seen`) while the
    /// calling thread makes progress, up to [`HELPER_WATCHES`].
    fn watch(&self, seen: usize) {
        let watching = Instant::now();
        let mut beat = self.beat.load(Ordering::Relaxed);
        let mut beat_at = watching;
        while self.posted.load(Ordering::Acquire) == seen {
            for _ in 0..64 {
                std::hint::spin_loop();
            }
            let now = Instant::now();
            let latest = self.beat.load(Ordering::Relaxed);
            if latest != beat {
                beat = latest;
                beat_at = now;
            }
            if now - watching >= HELPER_WATCHES || now - beat_at >= CALLER_QUIET {
                return;
            }
        }
    }

    /// The calling thread has made a step.
    fn beat(&self) {
        self.beat.fetch_add(1, Ordering::Relaxed);
    }

    /// Tells the helpers a part is waiting.
    fn posted(&self) {
        self.posted.fetch_add(1, Ordering::AcqRel);
        if self.sleeping.load(Ordering::Acquire) > 0 {
            self.waiting.notify_one();
        }
    }
}

/// A value on a cache line of its own: one thread writes it while another reads its
/// neighbours (the helpers' progress, the calling thread's steps), so neither slows the other.
#[repr(align(128))]
struct OwnLine<T>(T);

impl<T> Deref for OwnLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// A planned part of the run: messages `start..end`, numbered `number`.
struct Part {
    number: usize,
    start: usize,
    end: usize,
    /// The plan has a job for every message of the part.
    all_planned: bool,
}

/// Decrypts `envelopes` (a run of messages to `session`, in queue order) with `pool`'s helpers,
/// as `Session::decrypt_run` would, giving each result to `sink` in order as soon as it is
/// applied (if `sink` breaks, the run stops there); `ordinary` decrypts a message the plan did
/// not foresee (`Session::decrypt_with_cache`). Returns whether the helpers opened any part.
pub(super) fn decrypt_run_pipelined<'e>(
    helpers: &Helpers,
    session: &mut Session,
    identity: &IdentityKeyPair,
    envelopes: &[&'e Envelope<'e>],
    ordinary: &mut Ordinary<'_>,
    sink: &mut Sink<'_>,
) -> bool {
    let board = Board {
        parts: Mutex::new(Parts::default()),
        waiting: Condvar::new(),
        posted: OwnLine(AtomicUsize::new(0)),
        sleeping: OwnLine(AtomicUsize::new(0)),
        progress: OwnLine(AtomicUsize::new(0)),
        beat: OwnLine(AtomicUsize::new(0)),
        needless_below: OwnLine(AtomicUsize::new(0)),
    };
    let mut results = Results {
        done: 0,
        sink,
        stopped: false,
    };
    let crew = Crew::new();
    let count = helpers.count();
    let mut turnout = None;
    helpers.pool().in_place_scope(|scope| {
        for _ in 0..count {
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
            stalled: false,
        };
        run.decrypt(&mut results, ordinary);
        turnout = Some(crew.turnout(count).stalled(run.stalled));
        board.lock().over = true;
        board.posted.store(usize::MAX, Ordering::Release);
        board.waiting.notify_all();
        crew.wait_until_ashore();
    });
    if let Some(turnout) = turnout {
        helpers.came(turnout.waited_until_now());
    }
    board.lock().by_helpers > 0
}

/// How long the calling thread has waited for the part a helper is opening.
struct Waiting {
    since: Instant,
    /// The helpers' progress when last seen, and when it was seen to move.
    progress: usize,
    moved_at: Instant,
}

impl Waiting {
    fn start(board: &Board<'_>) -> Self {
        let now = Instant::now();
        Self {
            since: now,
            progress: board.progress.load(Ordering::Acquire),
            moved_at: now,
        }
    }

    /// Whether to stop waiting: the helpers have made no progress for [`STALLED_AFTER`], or
    /// the wait has lasted [`TAKE_OVER_AFTER`].
    fn given_up(&mut self, board: &Board<'_>) -> bool {
        let now = Instant::now();
        let progress = board.progress.load(Ordering::Acquire);
        if progress != self.progress {
            self.progress = progress;
            self.moved_at = now;
        }
        now - self.moved_at >= STALLED_AFTER || now - self.since >= TAKE_OVER_AFTER
    }
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
    /// A helper was found stopped mid-part.
    stalled: bool,
}

impl Run<'_, '_> {
    fn decrypt(&mut self, results: &mut Results<'_, '_>, ordinary: &mut Ordinary<'_>) {
        let mut waiting: Option<Waiting> = None;
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
                waiting = None;
                if let Some(part) = self.parts.pop_front() {
                    self.apply(part, jobs, opened, results, ordinary);
                }
                self.board.beat();
            } else if let Some((number, jobs)) = parts.to_open.pop_front() {
                drop(parts);
                // The helpers are behind: this thread opens the earliest waiting part.
                let opened = open_jobs(&jobs);
                self.board.lock().opened.insert(number, (jobs, opened));
                self.board.beat();
            } else {
                // A helper is opening the part: it takes a few µs, unless the helper was
                // stopped; then this thread decrypts the part itself.
                drop(parts);
                let given_up = waiting
                    .get_or_insert_with(|| Waiting::start(self.board))
                    .given_up(self.board);
                if given_up {
                    waiting = None;
                    self.stalled = true;
                    if let Some(part) = self.parts.pop_front() {
                        self.take_over(part, results, ordinary);
                    }
                    self.board.beat();
                } else {
                    for _ in 0..64 {
                        std::hint::spin_loop();
                    }
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
        self.parts.push_back(Part {
            number,
            start,
            end,
            all_planned: jobs.len() == end - start,
        });
        let mut parts = self.board.lock();
        if jobs.is_empty() {
            parts.opened.insert(number, (jobs, Vec::new()));
        } else {
            parts.to_open.push_back((number, jobs));
            drop(parts);
            self.board.posted();
        }
        self.board.beat();
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

    /// Decrypts a part the ordinary way (its helper was stopped mid-part), and tells the
    /// helper to drop it. If every message of the part was planned and decrypted, the session
    /// is where the plan has it after the part, and the next parts stand (applying them checks
    /// that again); otherwise planning starts again after the part.
    fn take_over(
        &mut self,
        part: Part,
        results: &mut Results<'_, '_>,
        ordinary: &mut Ordinary<'_>,
    ) {
        {
            let mut parts = self.board.lock();
            self.board
                .needless_below
                .fetch_max(part.number + 1, Ordering::AcqRel);
            parts.opened.remove(&part.number);
        }
        let envelopes = self.envelopes.get(part.start..part.end).unwrap_or_default();
        let mut as_planned = part.all_planned;
        for &envelope in envelopes {
            let result = ordinary(self.session, envelope);
            as_planned &= result.is_ok();
            results.push(result);
            if results.stopped {
                return;
            }
        }
        if !as_planned {
            self.replan_after(part.end - 1);
        }
    }

    /// Drops every part planned from the old state; planning starts again after message `at`.
    fn replan_after(&mut self, at: usize) {
        self.ahead = PlanAhead::default();
        self.base = at + 1;
        self.planned_to = at + 1;
        self.parts.clear();
        let mut parts = self.board.lock();
        self.board
            .needless_below
            .fetch_max(self.next_number, Ordering::AcqRel);
        parts.to_open.clear();
        parts.opened.clear();
    }
}

#[cfg(test)]
mod tests;
