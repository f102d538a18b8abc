//! Work shared between the calling thread and a batch pool's helper threads (native builds).
//!
//! The calling thread is one of a batch's threads: it takes items of the work itself, and the
//! pool's helpers take items too once they are running. So a batch never waits for a helper to
//! wake up or to be given a CPU before work starts, and if the system runs a helper late, or on
//! the caller's own CPU, the caller has simply done more of the work: a batch on threads is
//! then about as fast as on one thread, never much slower. (With `ThreadPool::install` the
//! caller slept while the pool worked: every hand-over paid two wake-ups, about 50 µs each on a
//! virtual machine's idle CPU, and two workers put on one CPU ran the batch at half speed.)

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use rayon::ThreadPool;

/// Spins of the caller waiting for the items a helper is finishing, before it yields its CPU
/// (a helper on the caller's own CPU can only finish if the caller lets it run).
const SPINS_BEFORE_YIELD: u32 = 2_000;

/// Runs `work` on every item, each exactly once, on the calling thread and on up to all of
/// `pool`'s threads: each thread takes the next item nobody has taken. Returns when every item
/// is done (and every helper has left). `None`, or a single item: on the calling thread only.
pub(crate) fn share<T: Send>(
    pool: Option<&ThreadPool>,
    items: &mut [T],
    work: &(dyn Fn(&mut T) + Sync),
) {
    let helpers = pool.map_or(0, |pool| {
        pool.current_num_threads()
            .min(items.len().saturating_sub(1))
    });
    let Some(pool) = pool.filter(|_| helpers > 0) else {
        items.iter_mut().for_each(|item| work(item));
        return;
    };
    let slots: Vec<Mutex<&mut T>> = items.iter_mut().map(Mutex::new).collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let take = || {
        while let Some(slot) = slots.get(next.fetch_add(1, Ordering::Relaxed)) {
            // Counted even if `work` panics, so that the caller's wait below ends and the
            // scope passes the panic on.
            let _count = Done(&done);
            work(&mut slot.lock().unwrap_or_else(PoisonError::into_inner));
        }
    };
    pool.in_place_scope(|scope| {
        for _ in 0..helpers {
            scope.spawn(|_| take());
        }
        take();
        // The caller has taken its last item; helpers may still be on theirs. Waiting for
        // them without sleeping: a sleeping caller would pay a wake-up.
        let mut spins = 0;
        while done.load(Ordering::Acquire) < slots.len() {
            if spins < SPINS_BEFORE_YIELD {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    });
}

/// Counts an item as done when dropped.
struct Done<'a>(&'a AtomicUsize);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}
