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
//! its helpers (`client/pace.rs`), and work they are late for runs on the calling thread alone.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use super::pace::{Helpers, Turnout};

/// Spins of the caller waiting for the items a helper is finishing, before it yields its CPU
/// (a helper on the caller's own CPU can only finish if the caller lets it run).
const SPINS_BEFORE_YIELD: u32 = 2_000;

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
    // Whether helpers run beside the caller or only while it is stopped (one CPU for both):
    // the items the caller finished, the helpers' items started once the caller takes items
    // too (not during `first`), and of those, the items during which it finished one.
    let by_caller = AtomicUsize::new(0);
    let caller_takes = AtomicBool::new(false);
    let watched = AtomicUsize::new(0);
    let beside = AtomicUsize::new(0);
    let take = |helper: bool| {
        let mut taken = 0;
        while let Some(slot) = slots.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Counted even if `work` panics, so that the caller's wait below ends and the
            // scope passes the panic on.
            let _count = Done(&done);
            taken += 1;
            let watching = helper && caller_takes.load(Ordering::Relaxed);
            let caller_before = by_caller.load(Ordering::Relaxed);
            work(&mut slot.lock().unwrap_or_else(PoisonError::into_inner));
            if !helper {
                by_caller.fetch_add(1, Ordering::Relaxed);
            } else if watching {
                watched.fetch_add(1, Ordering::Relaxed);
                if by_caller.load(Ordering::Relaxed) != caller_before {
                    beside.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        taken
    };
    let crew = Crew::new();
    let mut turnout = None;
    let helped = helpers.pool().in_place_scope(|scope| {
        for _ in 0..count {
            scope.spawn(|_| {
                let _aboard = crew.board();
                take(true);
            });
        }
        first();
        caller_takes.store(true, Ordering::Relaxed);
        let mine = take(false);
        turnout = Some(crew.turnout(count));
        // The caller has taken its last item; helpers may still be on theirs. Waiting for
        // them without sleeping: a sleeping caller would pay a wake-up.
        let mut wait = SpinWait::default();
        while done.load(Ordering::Acquire) < slots.len() {
            wait.once();
        }
        crew.wait_until_ashore();
        slots.len() - mine
    });
    if let Some(turnout) = turnout {
        let (watched, beside) = (watched.into_inner(), beside.into_inner());
        helpers.came(turnout.waited_until_now().beside(watched, beside));
    }
    helped
}

/// Counts the helpers that started a scope's job and those that left it, so that the calling
/// thread leaves the scope only once the helpers that started are done: leaving the scope
/// while a helper is still on its last instructions puts the caller to sleep on the scope's
/// latch, and its wake-up (tens of µs) came after every result was ready. A helper that has
/// not started yet is not waited for here (the scope does that; it then finds nothing to do).
/// It also times the helpers' start, for their pace.
pub(super) struct Crew {
    boarded: AtomicUsize,
    ashore: AtomicUsize,
    started: Instant,
    /// Nanoseconds from `started` to the latest helper's start.
    last_boarded: AtomicU64,
}

impl Crew {
    /// A crew for work starting now.
    pub(super) fn new() -> Self {
        Self {
            boarded: AtomicUsize::new(0),
            ashore: AtomicUsize::new(0),
            started: Instant::now(),
            last_boarded: AtomicU64::new(0),
        }
    }

    /// Called first by a helper's job; the guard counts it as gone when dropped (on unwinding
    /// too, so that a panic in the job reaches the caller through the scope).
    pub(super) fn board(&self) -> Aboard<'_> {
        let after = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.last_boarded.fetch_max(after, Ordering::AcqRel);
        self.boarded.fetch_add(1, Ordering::AcqRel);
        Aboard(&self.ashore)
    }

    /// How `count` helpers have come so far, the calling thread having run out of work now.
    pub(super) fn turnout(&self, count: usize) -> Turnout {
        let all_aboard = self.boarded.load(Ordering::Acquire) >= count;
        Turnout::new(
            self.started,
            all_aboard.then(|| {
                std::time::Duration::from_nanos(self.last_boarded.load(Ordering::Acquire))
            }),
        )
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

    use super::share;
    use crate::client::asleep::when_asleep;
    use crate::client::pace::Helpers;

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
        let helpers = Helpers::with_threads(1);
        let release = occupy(&helpers);
        let done = AtomicUsize::new(0);
        let mut items: Vec<u32> = vec![0; 64];
        let helped = std::thread::scope(|scope| {
            let done = &done;
            // The pool's thread is given back once the calling thread has done every item and
            // sleeps at the end of the work, waiting for the helper's job: after it judged the
            // helpers' turnout, so the helper starts after that however the threads are
            // scheduled (where /proc is missing: once every item is done, as close as it gets).
            when_asleep(
                scope,
                || done.load(Ordering::Acquire) == 64,
                || drop(release),
            );
            share(Some(&helpers), &mut items, &|count| {
                *count += 1;
                // Long enough calling-thread work to tell a late helper (300 µs).
                std::thread::sleep(Duration::from_micros(20));
                done.fetch_add(1, Ordering::Release);
            })
        });
        assert_eq!(helped, 0);
        assert!(items.iter().all(|count| *count == 1));
        assert!(helpers.late_in_a_row() > 0);
    }

    #[test]
    fn resting_helpers_are_not_waited_for() {
        let helpers = Helpers::with_threads(1);
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
        let pool = Helpers::with_threads(3);
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
        let pool = Helpers::with_threads(2);
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
