//! Work shared between the calling thread and a batch pool's helper threads (native builds).
//!
//! The calling thread is one of a batch's threads: it takes items of the work itself, and the
//! pool's helpers take items too once they are running. So a batch never waits for a helper to
//! wake up or to be given a CPU before work starts, and if the system runs a helper late, or on
//! the caller's own CPU, the caller has simply done more of the work: a batch on threads is
//! then about as fast as on one thread, never much slower. (With `ThreadPool::install` the
//! caller slept while the pool worked: every hand-over paid two wake-ups, about 50 µs each on a
//! virtual machine's idle CPU, and two workers put on one CPU ran the batch at half speed.)
//!
//! What the caller cannot avoid is waiting, when the work is done, for a helper that has not
//! started yet (the work it would have touched is borrowed from the caller): on a busy machine
//! that is a wait for another process's time slice, milliseconds. So the pool keeps the pace of
//! its helpers ([`Helpers`]): after work they came too late for, the next work runs on the
//! calling thread alone for a while (one thread's speed), then the helpers are asked again.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rayon::ThreadPool;

/// Spins of the caller waiting for the items a helper is finishing, before it yields its CPU
/// (a helper on the caller's own CPU can only finish if the caller lets it run).
const SPINS_BEFORE_YIELD: u32 = 2_000;

/// Calling-thread work shorter than this says nothing of a helper that had not started when it
/// ended: waking a sleeping helper takes tens of µs.
const LONG_ENOUGH: Duration = Duration::from_micros(300);
/// Waiting this long at the end for the helpers means they are not getting a CPU in time.
const LATE_WAIT: Duration = Duration::from_micros(500);
/// How long the helpers rest after work they were late for, doubled for every such work in a
/// row up to [`LONGEST_REST`]: a busy machine stays busy for a while, and asking the helpers
/// while it is costs the wait above, once per rest.
const FIRST_REST: Duration = Duration::from_millis(1);
const LONGEST_REST: Duration = Duration::from_millis(128);

/// A batch pool's helper threads and their pace (shared by every client with that thread count).
pub(crate) struct Helpers {
    pool: ThreadPool,
    pace: Pace,
}

impl Helpers {
    pub(crate) fn new(pool: ThreadPool) -> Self {
        Self {
            pool,
            pace: Pace::new(),
        }
    }

    /// The helpers, unless they were late lately and are resting: then `None`, and the work
    /// runs on the calling thread.
    pub(crate) fn on_time(&self) -> Option<&Self> {
        self.pace.asked().then_some(self)
    }

    pub(super) fn pool(&self) -> &ThreadPool {
        &self.pool
    }

    /// How many helpers.
    pub(super) fn count(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Late turnouts in a row.
    #[cfg(test)]
    pub(super) fn late_in_a_row(&self) -> u32 {
        self.pace.late_in_a_row.load(Ordering::Relaxed)
    }

    /// Makes the helpers rest for `rest`, as if they had been late.
    #[cfg(test)]
    pub(super) fn rest_for(&self, rest: Duration) {
        let until = self
            .pace
            .now()
            .saturating_add(rest.as_nanos().try_into().unwrap_or(u64::MAX));
        self.pace.rest_until.store(until, Ordering::Relaxed);
    }

    /// Records how the helpers came to one piece of work (see [`Turnout`]).
    pub(super) fn came(&self, turnout: Turnout) {
        match turnout.late() {
            Some(true) => self.pace.late(),
            Some(false) => self.pace.on_time(),
            None => {}
        }
    }
}

/// How the helpers came to one piece of work: whether all had started when the calling thread
/// ran out of work, after how long, and how long it then waited for them.
pub(super) struct Turnout {
    pub(super) all_aboard: bool,
    pub(super) caller_worked: Duration,
    pub(super) waited: Duration,
    /// The caller found a helper stopped in the middle of the work and did its share.
    pub(super) stalled: bool,
}

impl Turnout {
    /// Late, on time, or too short to tell.
    fn late(&self) -> Option<bool> {
        if self.stalled || self.waited >= LATE_WAIT {
            Some(true)
        } else if self.all_aboard {
            Some(false)
        } else if self.caller_worked >= LONG_ENOUGH {
            Some(true)
        } else {
            None
        }
    }
}

/// The helpers' lateness: consecutive late turnouts, and until when they rest.
struct Pace {
    epoch: Instant,
    late_in_a_row: AtomicU32,
    /// Nanoseconds since `epoch`.
    rest_until: AtomicU64,
}

impl Pace {
    fn new() -> Self {
        Self {
            epoch: Instant::now(),
            late_in_a_row: AtomicU32::new(0),
            rest_until: AtomicU64::new(0),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn asked(&self) -> bool {
        self.now() >= self.rest_until.load(Ordering::Relaxed)
    }

    fn late(&self) {
        let row = self.late_in_a_row.fetch_add(1, Ordering::Relaxed);
        let rest = FIRST_REST
            .saturating_mul(1 << row.min(16))
            .min(LONGEST_REST);
        let rest = u64::try_from(rest.as_nanos()).unwrap_or(u64::MAX);
        self.rest_until
            .store(self.now().saturating_add(rest), Ordering::Relaxed);
    }

    fn on_time(&self) {
        self.late_in_a_row.store(0, Ordering::Relaxed);
    }
}

/// Runs `work` on every item, each exactly once, on the calling thread and on up to all of
/// `pool`'s threads: each thread takes the next item nobody has taken. Returns when every item
/// is done (and every helper has left), with how many items the helpers took (0: they came
/// too late, or there were none). `None`, a single item, or resting helpers: on the calling
/// thread only.
pub(crate) fn share<T: Send>(
    pool: Option<&Helpers>,
    items: &mut [T],
    work: &(dyn Fn(&mut T) + Sync),
) -> usize {
    share_after(pool, items, work, || ())
}

/// [`share`], the calling thread doing `first` (work of its own, which need not be `Send`)
/// before it takes items: the helpers start on the items meanwhile.
pub(crate) fn share_after<T: Send>(
    helpers: Option<&Helpers>,
    items: &mut [T],
    work: &(dyn Fn(&mut T) + Sync),
    first: impl FnOnce(),
) -> usize {
    let helpers = helpers.and_then(Helpers::on_time);
    let count = helpers.map_or(0, |h| h.count().min(items.len()));
    let Some(helpers) = helpers.filter(|_| count > 0) else {
        first();
        items.iter_mut().for_each(work);
        return 0;
    };
    let slots: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let take = || {
        let mut taken = 0;
        while let Some(slot) = slots.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Counted even if `work` panics, so that the caller's wait below ends and the
            // scope passes the panic on.
            let _count = Done(&done);
            taken += 1;
            work(&mut slot.lock().unwrap_or_else(PoisonError::into_inner));
        }
        taken
    };
    let crew = Crew::default();
    let started = Instant::now();
    let mut turnout = None;
    let helped = helpers.pool().in_place_scope(|scope| {
        for _ in 0..count {
            scope.spawn(|_| {
                let _aboard = crew.board();
                take();
            });
        }
        first();
        let mine = take();
        let caller_done = Instant::now();
        turnout = Some((crew.aboard() >= count, caller_done - started, caller_done));
        // The caller has taken its last item; helpers may still be on theirs. Waiting for
        // them without sleeping: a sleeping caller would pay a wake-up.
        let mut wait = SpinWait::default();
        while done.load(Ordering::Acquire) < slots.len() {
            wait.once();
        }
        crew.wait_until_ashore();
        slots.len() - mine
    });
    if let Some((all_aboard, caller_worked, caller_done)) = turnout {
        helpers.came(Turnout {
            all_aboard,
            caller_worked,
            waited: caller_done.elapsed(),
            stalled: false,
        });
    }
    helped
}

/// Counts the helpers that started a scope's job and those that left it, so that the calling
/// thread leaves the scope only once the helpers that started are done: leaving the scope
/// while a helper is still on its last instructions puts the caller to sleep on the scope's
/// latch, and its wake-up (tens of µs) came after every result was ready. A helper that has
/// not started yet is not waited for here (the scope does that; it then finds nothing to do).
#[derive(Default)]
pub(super) struct Crew {
    boarded: AtomicUsize,
    ashore: AtomicUsize,
}

impl Crew {
    /// Called first by a helper's job; the guard counts it as gone when dropped (on unwinding
    /// too, so that a panic in the job reaches the caller through the scope).
    pub(super) fn board(&self) -> Aboard<'_> {
        self.boarded.fetch_add(1, Ordering::AcqRel);
        Aboard(&self.ashore)
    }

    /// How many helpers have started so far.
    pub(super) fn aboard(&self) -> usize {
        self.boarded.load(Ordering::Acquire)
    }

    /// Waits, without sleeping, until every helper that started has left.
    pub(super) fn wait_until_ashore(&self) {
        let mut wait = SpinWait::default();
        while self.ashore.load(Ordering::Acquire) < self.boarded.load(Ordering::Acquire) {
            wait.once();
        }
    }
}

/// A helper in its job (see [`Crew::board`]).
pub(super) struct Aboard<'a>(&'a AtomicUsize);

impl Drop for Aboard<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// Spinning, then yielding the CPU (a helper on the caller's own CPU can only go on if the
/// caller lets it run).
#[derive(Default)]
pub(super) struct SpinWait {
    spins: u32,
}

impl SpinWait {
    pub(super) fn once(&mut self) {
        if self.spins < SPINS_BEFORE_YIELD {
            self.spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
}

/// Counts an item as done when dropped.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::{Helpers, share};

    fn pool(threads: usize) -> Helpers {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        Helpers::new(pool)
    }

    /// Occupies the pool's only thread until the returned sender is dropped.
    fn occupy(helpers: &Helpers) -> mpsc::Sender<()> {
        let (release, busy) = mpsc::channel::<()>();
        helpers.pool().spawn(move || {
            let _ = busy.recv();
        });
        release
    }

    #[test]
    fn work_a_helper_never_starts_on_is_done_by_the_caller_and_rests_the_helpers() {
        let helpers = pool(1);
        let release = std::sync::Mutex::new(Some(occupy(&helpers)));
        let done = AtomicUsize::new(0);
        let mut items: Vec<u32> = vec![0; 64];
        let helped = share(Some(&helpers), &mut items, &|count| {
            *count += 1;
            // Long enough calling-thread work to tell a late helper (300 µs).
            std::thread::sleep(Duration::from_micros(20));
            if done.fetch_add(1, Ordering::Relaxed) + 1 == 64 {
                release.lock().unwrap().take();
            }
        });
        assert_eq!(helped, 0);
        assert!(items.iter().all(|count| *count == 1));
        assert!(helpers.late_in_a_row() > 0);
    }

    #[test]
    fn resting_helpers_are_not_waited_for() {
        let helpers = pool(1);
        helpers.rest_for(Duration::from_secs(3600));
        // The pool's thread is busy until the work is done: if the work were offered to it,
        // the caller would wait at the end for it to start, which it cannot.
        let release = occupy(&helpers);
        let (finished, done) = mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut items = vec![0u32; 64];
                let helped = share(Some(&helpers), &mut items, &|count| *count += 1);
                let _ = finished.send((helped, items));
            });
            // A liveness bound, not a timing: the work takes microseconds.
            let outcome = done.recv_timeout(Duration::from_secs(30));
            drop(release);
            let (helped, items) = outcome.expect("the work waited for a resting helper");
            assert_eq!(helped, 0);
            assert!(items.iter().all(|count| *count == 1));
        });
    }

    #[test]
    fn every_item_is_worked_on_exactly_once() {
        let pool = pool(3);
        for len in [0, 1, 2, 3, 7, 100, 1000] {
            let mut items: Vec<(usize, u32)> = (0..len).map(|i| (i, 0)).collect();
            let helped = share(Some(&pool), &mut items, &|(i, count)| {
                *count += 1;
                // Uneven work, so that threads take different numbers of items.
                if *i % 7 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(50));
                }
            });
            assert!(items.iter().all(|(_, count)| *count == 1), "len {len}");
            assert!(helped <= len);
        }
        let mut alone = vec![0u32; 10];
        assert_eq!(share(None, &mut alone, &|count| *count += 1), 0);
        assert!(alone.iter().all(|count| *count == 1));
    }

    #[test]
    fn a_panic_in_the_work_reaches_the_caller_and_nothing_hangs() {
        let pool = pool(2);
        let mut items: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            share(Some(&pool), &mut items, &|i| {
                if *i == 40 {
                    panic!("item 40");
                }
            });
        }));
        assert!(caught.is_err());
        // The pool still works.
        let mut again = vec![0u32; 64];
        share(Some(&pool), &mut again, &|count| *count += 1);
        assert!(again.iter().all(|count| *count == 1));
    }
}
