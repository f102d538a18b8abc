//! Where a batch's independent work runs: on the calling thread, or on a rayon pool the
//! application provides (or asks the client to build). This is the only place that knows about
//! threads, and it knows nothing else: no timing, no affinity, no process-wide state. Which work
//! is independent is decided elsewhere (`batch/plan.rs`); the results are the same either way.

#[cfg(feature = "rayon")]
use std::sync::Arc;

use proteus_core::plan::{OpenJob, Opened};

/// Where [`Client::decrypt_batch`](crate::Client::decrypt_batch) and
/// [`Client::encrypt_for`](crate::Client::encrypt_for) run their independent work: the sessions
/// of a batch, the message opens of one session's backlog, the recipients of a fan-out.
///
/// Threads belong to the application. The default is [`Executor::Inline`]: a client starts no
/// thread. Hand it a pool with [`Client::set_executor`](crate::Client::set_executor) (one pool
/// may serve every client and the rest of the app), or let it build one with
/// [`Client::set_batch_threads`](crate::Client::set_batch_threads). Results, their order, the
/// delivery and the commit are the same whatever the executor.
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Executor {
    /// Everything on the thread that calls the client.
    #[default]
    Inline,
    /// Independent work on this pool; the calling thread waits for it.
    #[cfg(feature = "rayon")]
    Rayon(Arc<rayon::ThreadPool>),
}

/// Fewer items than this run on the calling thread even with a pool: handing them over would
/// cost more than they take (libsignal's fan-out makes the same choice below 6 recipients).
/// Also the smallest share one pool thread takes of a longer list.
#[cfg(feature = "rayon")]
const MIN_SHARE: usize = 16;

impl Executor {
    /// A pool of `threads` threads, or [`Executor::Inline`] for 1 (or 0). The pool's threads
    /// are started now and sleep between batches. Fails only if the system gives no threads.
    #[cfg(feature = "rayon")]
    pub fn with_threads(threads: usize) -> Result<Self, rayon::ThreadPoolBuildError> {
        if threads <= 1 {
            return Ok(Self::Inline);
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("proteus-batch-{i}"))
            .build()?;
        Ok(Self::Rayon(Arc::new(pool)))
    }

    /// How many threads do the work: 1 inline, else the pool's.
    pub fn threads(&self) -> usize {
        #[cfg(feature = "rayon")]
        if let Self::Rayon(pool) = self {
            return pool.current_num_threads();
        }
        1
    }

    /// Runs `f` on every item, in any order and on any thread of the executor.
    pub(crate) fn for_each<T: Send>(&self, items: &mut [T], f: impl Fn(&mut T) + Sync + Send) {
        #[cfg(feature = "rayon")]
        if let Self::Rayon(pool) = self
            && items.len() > 1
        {
            use rayon::prelude::*;
            pool.install(|| items.par_iter_mut().for_each(f));
            return;
        }
        items.iter_mut().for_each(f);
    }

    /// `f` of every item, in the order of `items`.
    pub(crate) fn map<T: Sync, R: Send>(
        &self,
        items: &[T],
        f: impl Fn(&T) -> R + Sync + Send,
    ) -> Vec<R> {
        #[cfg(feature = "rayon")]
        if let Self::Rayon(pool) = self
            && items.len() >= MIN_SHARE
        {
            use rayon::prelude::*;
            return pool.install(|| items.par_iter().with_min_len(MIN_SHARE).map(f).collect());
        }
        items.iter().map(f).collect()
    }

    /// Opens a segment of one session's planned messages (`Session::decrypt_run`'s opener), in
    /// order. Inline in a web build with `batch-lanes`, four at a time in SIMD lanes.
    pub(crate) fn open(&self, jobs: &[OpenJob<'_>]) -> Vec<Opened> {
        #[cfg(feature = "rayon")]
        if let Self::Rayon(_) = self {
            return self.map(jobs, OpenJob::open);
        }
        open_inline(jobs)
    }
}

fn open_inline(jobs: &[OpenJob<'_>]) -> Vec<Opened> {
    // The lanes cost the web build about 23 KB: they are in only when asked for.
    #[cfg(feature = "batch-lanes")]
    return proteus_core::plan::open_jobs(jobs);
    #[cfg(not(feature = "batch-lanes"))]
    jobs.iter().map(OpenJob::open).collect()
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(feature = "rayon")]
        if let Self::Rayon(pool) = self {
            return write!(f, "Rayon({} threads)", pool.current_num_threads());
        }
        f.write_str("Inline")
    }
}
