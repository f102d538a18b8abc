//! Whether a batch pool's helper threads are getting a CPU in time (native builds).
//!
//! A batch's calling thread works too and never waits for a helper to start (`client/share.rs`,
//! `client/pipeline.rs`), except at the end: the work a helper would touch is borrowed from the
//! caller, so the caller waits for a helper that has not started yet. On a busy machine (another
//! process on the helper's CPU, or one CPU for both threads) that is a wait for the other
//! process's time slice, milliseconds — a batch on two threads then took three times as long
//! as on one. So the pool keeps its helpers' pace: after work they were late for, the next work
//! runs on the calling thread alone (one thread's speed) while the helpers rest, for 1 ms, then
//! twice as long after each late turnout in a row, up to 128 ms. When a rest is over, a probe —
//! an empty job on the pool, which nobody waits for — tells whether a helper now starts
//! promptly; only then is work offered to the helpers again. A busy machine stays busy for a
//! while (hundreds of batches), so this costs one slow piece of work when it becomes busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

use super::placement::Homes;

/// A helper that starts within this much of being asked is on time (waking a sleeping thread on
/// an idle CPU takes tens of µs); calling-thread work shorter than this says nothing of a
/// helper that had not started when it ended.
const PROMPT: Duration = Duration::from_micros(300);
/// Helpers that did at least this many items of shared work...
const ITEMS_TO_TELL: usize = 8;
/// ...and finished fewer than this share of them while the calling thread finished one of its
/// own ran only while it was stopped: one CPU for both, where sharing only costs.
const BESIDE_AT_LEAST: usize = 4;
/// Waiting this long at the end for the helpers means they were late.
const LATE_WAIT: Duration = Duration::from_micros(500);
/// The helpers' first rest after late work; doubled for every late turnout in a row, up to
/// [`LONGEST_REST`].
const FIRST_REST: Duration = Duration::from_millis(1);
const LONGEST_REST: Duration = Duration::from_millis(128);
/// How long a helper woken ahead of a batch ([`Helpers::wake`]) watches for it: longer than
/// the hand-over of a call to a worker thread (tens of µs), short enough to cost little when
/// no batch comes.
const WATCH: Duration = Duration::from_millis(1);

/// Whether helpers keep a pace (tests turn it off: `Client::set_batch_pace`, feature
/// `test-support`).
static PACED: AtomicBool = AtomicBool::new(true);

#[cfg(feature = "test-support")]
impl crate::Client {
    /// Whether the batch threads of this process keep their helpers' pace (the default): after
    /// work the helper threads came too late for, batches run on the calling thread alone for
    /// a while (see docs/benchmarks.md, "session 13"). `false` offers every batch to the
    /// helpers, late or not: for tests that must take the parallel path, and measurements.
    pub fn set_batch_pace(paced: bool) {
        PACED.store(paced, Ordering::Relaxed);
    }
}

/// A batch pool's helper threads and their pace (shared by every client with that thread count).
pub(crate) struct Helpers {
    pool: ThreadPool,
    pace: Pace,
    /// Bumped whenever work may be offered: it ends the helpers' watch ([`Helpers::wake`]).
    offers: Arc<AtomicU64>,
    /// How long a watch lasts at most: [`WATCH`] (tests make it longer).
    watch: Duration,
    /// Where the pool's threads may run (`client/placement.rs`).
    homes: Arc<Homes>,
}

impl Helpers {
    /// `threads` helper threads on a pool of their own; `None` if the system gives no threads.
    pub(crate) fn start(threads: usize) -> Option<Self> {
        let homes = Arc::new(Homes::new(threads));
        let arriving = Arc::clone(&homes);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("proteus-batch-{i}"))
            .start_handler(move |i| arriving.arrived(i))
            .build()
            .ok()?;
        Some(Self {
            pool,
            pace: Pace::new(),
            offers: Arc::default(),
            watch: WATCH,
            homes,
        })
    }

    /// Helpers on a pool of their own of `threads` threads.
    #[cfg(test)]
    pub(super) fn with_threads(threads: usize) -> Self {
        Self::start(threads).expect("a thread pool")
    }

    /// The same helpers with watches of at most `watch`.
    #[cfg(test)]
    fn watching_for(mut self, watch: Duration) -> Self {
        self.watch = watch;
        self
    }

    /// The helpers, unless they were late lately and are resting: then `None`, and the work
    /// runs on the calling thread.
    pub(crate) fn on_time(&self) -> Option<&Self> {
        self.offers.fetch_add(1, Ordering::Release);
        let asked = self.pace.asked(&self.pool, &self.homes);
        if asked {
            // A helper woken or watching on this thread's CPU would wait behind it.
            self.homes.keep_off_caller();
        }
        asked.then_some(self)
    }

    /// Wakes the helpers now, off the calling thread's CPU (`client/placement.rs`), ahead of a
    /// batch that another thread is about to run (`Client::wake_batch_helpers`): each watches
    /// (yields) until work is offered, for at most [`WATCH`].
    pub(crate) fn wake(&self) {
        if self.pace.resting() {
            return;
        }
        let seen = self.offers.load(Ordering::Acquire);
        let offers = Arc::clone(&self.offers);
        let watch = self.watch;
        self.homes.keep_off_caller();
        self.pool.spawn_broadcast(move |_| {
            let start = Instant::now();
            while offers.load(Ordering::Acquire) == seen && start.elapsed() < watch {
                // Yields rather than spins: should the batch's thread be woken onto this
                // CPU, it runs at once (and keeps this helper off its CPU as it offers work).
                std::thread::yield_now();
            }
        });
    }

    pub(super) fn pool(&self) -> &ThreadPool {
        &self.pool
    }

    /// How many helpers.
    pub(super) fn count(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Records how the helpers came to one piece of work.
    pub(super) fn came(&self, turnout: Turnout) {
        match turnout.late() {
            Some(true) => self.pace.late(),
            Some(false) => self.pace.late_in_a_row.store(0, Ordering::Relaxed),
            None => return,
        }
        self.pace.trial.store(false, Ordering::Relaxed);
    }

    /// Late turnouts in a row.
    #[cfg(test)]
    pub(super) fn late_in_a_row(&self) -> u32 {
        self.pace.late_in_a_row.load(Ordering::Relaxed)
    }

    /// Makes the helpers rest for `rest`, as after late work.
    #[cfg(test)]
    pub(super) fn rest_for(&self, rest: Duration) {
        self.pace.late_in_a_row.fetch_add(1, Ordering::Relaxed);
        let until = self.pace.now().saturating_add(nanos(rest));
        self.pace.rest_until.store(until, Ordering::Relaxed);
    }
}

/// How the helpers came to one piece of work.
pub(super) struct Turnout {
    /// When the last helper started, from the start of the work; `None` if not all had started
    /// when the calling thread ran out of work.
    boarded_after: Option<Duration>,
    /// How long the calling thread worked, and then waited for the helpers.
    caller_worked: Duration,
    caller_done: Instant,
    waited: Duration,
    /// The calling thread found a helper stopped mid-work and did that work itself.
    stalled: bool,
    /// Items the helpers did, and of those, items during which the calling thread finished one.
    helper_items: usize,
    beside: usize,
}

impl Turnout {
    /// The turnout of work started at `started`, the calling thread having run out of work now.
    pub(super) fn new(started: Instant, boarded_after: Option<Duration>) -> Self {
        let caller_done = Instant::now();
        Self {
            boarded_after,
            caller_worked: caller_done - started,
            caller_done,
            waited: Duration::ZERO,
            stalled: false,
            helper_items: 0,
            beside: 0,
        }
    }

    /// The helpers did `items`, of which `beside` while the calling thread finished one.
    pub(super) fn beside(mut self, items: usize, beside: usize) -> Self {
        self.helper_items = items;
        self.beside = beside;
        self
    }

    /// The calling thread has waited for the helpers until now.
    pub(super) fn waited_until_now(mut self) -> Self {
        self.waited = self.caller_done.elapsed();
        self
    }

    pub(super) fn stalled(mut self, stalled: bool) -> Self {
        self.stalled = stalled;
        self
    }

    /// Late (the caller waited for them, or did all the work of long work, or they ran only
    /// while it was stopped), on time (all started promptly), or nothing to tell (short work;
    /// or they started late but in time to do a share).
    fn late(&self) -> Option<bool> {
        let not_beside = self.helper_items >= ITEMS_TO_TELL
            && self.beside.saturating_mul(BESIDE_AT_LEAST) < self.helper_items;
        if self.stalled || self.waited >= LATE_WAIT || not_beside {
            return Some(true);
        }
        let long = self.caller_worked >= PROMPT;
        match self.boarded_after {
            Some(after) if after <= PROMPT => Some(false),
            Some(after) if self.caller_worked.saturating_sub(after) >= PROMPT => None,
            _ => long.then_some(true),
        }
    }
}

/// The helpers' lateness: late turnouts in a row, until when they rest, and the probe.
struct Pace {
    epoch: Instant,
    late_in_a_row: AtomicU32,
    /// A probe started promptly: work is offered to the helpers until a turnout is known.
    trial: AtomicBool,
    /// Nanoseconds since `epoch`.
    rest_until: AtomicU64,
    probe: Arc<Probe>,
}

/// An empty job sent to the pool when a rest is over. Times are nanoseconds since the pace's
/// epoch, plus one (0: none).
#[derive(Default)]
struct Probe {
    sent: AtomicU64,
    started: AtomicU64,
}

impl Pace {
    fn new() -> Self {
        Self {
            epoch: Instant::now(),
            late_in_a_row: AtomicU32::new(0),
            trial: AtomicBool::new(false),
            rest_until: AtomicU64::new(0),
            probe: Arc::default(),
        }
    }

    fn now(&self) -> u64 {
        nanos(self.epoch.elapsed())
    }

    /// Whether the helpers are resting after late work (no probe sent, nothing changed).
    fn resting(&self) -> bool {
        PACED.load(Ordering::Relaxed)
            && self.late_in_a_row.load(Ordering::Relaxed) != 0
            && !self.trial.load(Ordering::Relaxed)
            && self.now() < self.rest_until.load(Ordering::Relaxed)
    }

    /// Whether to offer work to the helpers now.
    fn asked(&self, pool: &ThreadPool, homes: &Homes) -> bool {
        if !PACED.load(Ordering::Relaxed) {
            return true;
        }
        if self.late_in_a_row.load(Ordering::Relaxed) == 0 || self.trial.load(Ordering::Relaxed) {
            return true;
        }
        let now = self.now();
        if now < self.rest_until.load(Ordering::Relaxed) {
            return false;
        }
        let sent = self.probe.sent.load(Ordering::Acquire);
        if sent == 0 {
            self.send_probe(pool, homes, now);
            return false;
        }
        let started = self.probe.started.load(Ordering::Acquire);
        if started == 0 {
            // Not started yet: late if it is overdue (it is judged again once it starts).
            if now + 1 - sent > nanos(PROMPT) {
                self.late();
            }
            return false;
        }
        self.probe.sent.store(0, Ordering::Release);
        if started - sent <= nanos(PROMPT) {
            self.trial.store(true, Ordering::Relaxed);
            true
        } else {
            self.late();
            false
        }
    }

    fn send_probe(&self, pool: &ThreadPool, homes: &Homes, now: u64) {
        let sending =
            self.probe
                .sent
                .compare_exchange(0, now + 1, Ordering::AcqRel, Ordering::Acquire);
        if sending.is_ok() {
            self.probe.started.store(0, Ordering::Release);
            let probe = Arc::clone(&self.probe);
            let epoch = self.epoch;
            homes.keep_off_caller();
            pool.spawn(move || {
                let started = nanos(epoch.elapsed()) + 1;
                probe.started.store(started, Ordering::Release);
            });
        }
    }

    fn late(&self) {
        let row = self.late_in_a_row.fetch_add(1, Ordering::Relaxed);
        let rest = FIRST_REST
            .saturating_mul(1 << row.min(16))
            .min(LONGEST_REST);
        let until = self.now().saturating_add(nanos(rest));
        self.rest_until.store(until, Ordering::Relaxed);
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::{Helpers, Turnout};

    #[test]
    fn a_probe_nobody_waits_for_ends_a_rest_only_once_a_helper_has_started() {
        let helpers = Helpers::with_threads(1);
        assert!(helpers.on_time().is_some());
        helpers.rest_for(Duration::ZERO);
        // The pool's thread is busy: the probe cannot start, and nothing waits for it.
        let (release, busy) = mpsc::channel::<()>();
        helpers.pool().spawn(move || {
            let _ = busy.recv();
        });
        assert!(
            helpers.on_time().is_none(),
            "the rest's end sends the probe"
        );
        assert!(helpers.on_time().is_none(), "the probe has not started");
        // The probe waits at least this long for a thread (more than PROMPT).
        std::thread::sleep(Duration::from_millis(1));
        drop(release);
        // Started now, but late: the helpers rest again, longer.
        while helpers
            .pace
            .probe
            .started
            .load(std::sync::atomic::Ordering::Acquire)
            == 0
        {
            std::thread::yield_now();
        }
        let _ = helpers.on_time();
        assert!(helpers.late_in_a_row() >= 2);
    }

    /// Longer than any test: a watch that is not ended by an offer keeps the pool's thread.
    const FOR_GOOD: Duration = Duration::from_secs(3600);

    #[test]
    fn a_woken_helper_watches_until_work_is_offered() {
        let helpers = Helpers::with_threads(1).watching_for(FOR_GOOD);
        helpers.wake();
        // The batch starts: its first question to the pace ends the watch, whether the helper
        // has begun watching yet or not.
        assert!(helpers.on_time().is_some());
        // The pool's only thread is free again for the batch's work.
        assert_eq!(helpers.pool().install(|| 7), 7);
    }

    #[test]
    fn resting_helpers_are_not_woken() {
        let helpers = Helpers::with_threads(1).watching_for(FOR_GOOD);
        helpers.rest_for(FOR_GOOD);
        helpers.wake();
        // No watch holds the pool's thread (nothing offers work to end one here).
        assert_eq!(helpers.pool().install(|| 7), 7);
        assert!(helpers.on_time().is_none(), "still resting");
    }

    /// A turnout whose times are the test's, not measured while it runs (a test thread
    /// descheduled between two readings of the clock would change what it tells): the calling
    /// thread worked `worked`, the last helper started `boarded_after` into the work, and the
    /// calling thread then waited `waited` for the helpers.
    fn turnout(worked: Duration, boarded_after: Option<Duration>, waited: Duration) -> Turnout {
        Turnout {
            boarded_after,
            caller_worked: worked,
            caller_done: Instant::now(),
            waited,
            stalled: false,
            helper_items: 0,
            beside: 0,
        }
    }

    #[test]
    fn the_turnout_tells_late_from_on_time_and_from_nothing_to_tell() {
        let ms = Duration::from_millis;
        let helpers = Helpers::with_threads(1);
        helpers.came(turnout(ms(5), None, Duration::ZERO));
        assert_eq!(helpers.late_in_a_row(), 1, "not started after 5 ms of work");
        helpers.came(turnout(Duration::from_micros(10), None, Duration::ZERO));
        assert_eq!(helpers.late_in_a_row(), 1, "short work tells nothing");
        helpers.came(turnout(ms(5), Some(ms(2)), Duration::ZERO));
        assert_eq!(
            helpers.late_in_a_row(),
            1,
            "started late, in time to do a share"
        );
        helpers.came(turnout(ms(5), Some(ms(5)), Duration::ZERO));
        assert_eq!(helpers.late_in_a_row(), 2, "started as the caller finished");
        helpers.came(turnout(ms(5), None, ms(1)));
        assert_eq!(helpers.late_in_a_row(), 3, "the caller waited for them");
        helpers.came(turnout(ms(5), Some(Duration::ZERO), Duration::ZERO).stalled(true));
        assert_eq!(helpers.late_in_a_row(), 4, "stopped mid-work");
        helpers.came(turnout(ms(5), Some(Duration::from_micros(50)), Duration::ZERO).beside(40, 2));
        assert_eq!(
            helpers.late_in_a_row(),
            5,
            "ran only while the caller was stopped"
        );
        helpers
            .came(turnout(ms(5), Some(Duration::from_micros(50)), Duration::ZERO).beside(40, 30));
        assert_eq!(
            helpers.late_in_a_row(),
            0,
            "started promptly, ran beside the caller"
        );
    }

    /// The clock-reading constructor: work started 5 ms ago, no helper started, is late
    /// however long the test thread takes between its readings (they only add to both times).
    #[test]
    fn a_measured_turnout_of_long_work_no_helper_started_is_late() {
        let helpers = Helpers::with_threads(1);
        let five_ms_ago = Instant::now() - Duration::from_millis(5);
        helpers.came(Turnout::new(five_ms_ago, None).waited_until_now());
        assert_eq!(helpers.late_in_a_row(), 1);
    }
}
