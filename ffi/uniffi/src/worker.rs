//! Where the async calls run: a small, bounded pool of worker threads, so that the caller's
//! thread (an Android main thread, a Swift actor's executor) never waits for a store or a batch,
//! and never runs a call.
//!
//! UniFFI polls an exported future on the foreign side's thread, so work done inside the future
//! would block that thread. Each call instead hands a job to the pool and returns a [`Job`]
//! future that completes when the job has run. The pool grows when every worker is busy (a
//! worker may wait for the client's gate, or for a batch callback, for a long time: a pool of
//! one or two could starve a call that would otherwise free it), up to [`MAX_WORKERS`]
//! threads; beyond that, jobs wait in the queue, not on a thread of their own (300 calls
//! waiting on one busy client park at most [`MAX_WORKERS`] threads, each of which gives up
//! after the client's wait timeout). A worker idle for a while exits. If no thread can be made
//! at all (the system's limit), the job fails with `ClientBusy` (120): it never runs on the
//! caller's thread.
//!
//! Dropping a [`Job`] before it completes (a cancelled coroutine or Task) raises its
//! [`Cancel`] flag: a job that has not started does nothing, and a batch stops at its next
//! chunk, before its commit.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::error::ProteusError;

/// How long an idle worker waits for a job before it exits.
const IDLE_EXIT: Duration = Duration::from_secs(10);

/// Most worker threads the pool runs at once. Calls beyond wait in its queue. Enough for many
/// clients' calls and batch callbacks that wait on each other; a job blocked on a busy client
/// gives its thread back after the client's wait timeout, so the queue always moves.
pub(crate) const MAX_WORKERS: usize = 32;

/// A job as the pool sees it: run it (`true`), or tell it that it was refused (`false`: no
/// worker thread could be made) without running the caller's work.
type Task = Box<dyn FnOnce(bool) + Send>;

/// Starts a thread running the given function.
type Start = fn(Box<dyn FnOnce() + Send>) -> std::io::Result<()>;

#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    /// Workers waiting for a task (each counts itself in and out).
    idle: usize,
    /// Workers alive (started and not yet exited).
    workers: usize,
    /// The most workers ever alive at once.
    peak: usize,
}

struct Pool {
    queue: Mutex<Queue>,
    ready: Condvar,
    max_workers: usize,
    start: Start,
}

fn start_thread(work: Box<dyn FnOnce() + Send>) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("proteus-worker".into())
        .spawn(work)
        .map(drop)
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool::new(MAX_WORKERS, start_thread))
}

/// Locks that are never held while user code runs stay consistent if poisoned.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pool {
    fn new(max_workers: usize, start: Start) -> Self {
        Self {
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            max_workers: max_workers.max(1),
            start,
        }
    }

    fn submit(&'static self, task: Task) {
        let mut queue = lock(&self.queue);
        queue.tasks.push_back(task);
        // Each waiting worker takes one task; beyond those, a new worker is needed, if the
        // bound allows one (otherwise the task waits for a worker to finish its job).
        let spawn = queue.tasks.len() > queue.idle && queue.workers < self.max_workers;
        if spawn {
            queue.workers += 1;
            queue.peak = queue.peak.max(queue.workers);
        }
        drop(queue);
        self.ready.notify_one();
        if !spawn || (self.start)(Box::new(move || self.work())).is_ok() {
            return;
        }
        // No thread could be made (resource limits). The workers alive take the task in
        // turn; if there are none, nothing ever would: refuse the waiting tasks. Never run
        // one here, on the caller's thread.
        let mut queue = lock(&self.queue);
        queue.workers -= 1;
        let refused: Vec<Task> = match queue.workers {
            0 => queue.tasks.drain(..).collect(),
            _ => Vec::new(),
        };
        drop(queue);
        for task in refused {
            task(false);
        }
    }

    fn work(&self) {
        let mut queue = lock(&self.queue);
        loop {
            if let Some(task) = queue.tasks.pop_front() {
                drop(queue);
                // A job catches its own panics (see `spawn`); this keeps the worker alive anyway.
                let _ = catch_unwind(AssertUnwindSafe(|| task(true)));
                queue = lock(&self.queue);
                continue;
            }
            queue.idle += 1;
            let (next, timeout) = self
                .ready
                .wait_timeout(queue, IDLE_EXIT)
                .unwrap_or_else(PoisonError::into_inner);
            queue = next;
            queue.idle -= 1;
            if timeout.timed_out() && queue.tasks.is_empty() {
                queue.workers -= 1;
                return;
            }
        }
    }
}

/// Whether the caller gave up on a job (its future was dropped).
#[derive(Debug, Clone, Default)]
pub(crate) struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub(crate) fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

struct Slot<R> {
    result: Option<R>,
    waker: Option<Waker>,
}

/// The future of a job on the pool.
pub(crate) struct Job<R> {
    slot: Arc<Mutex<Slot<R>>>,
    cancel: Cancel,
    done: bool,
}

/// Runs `f` on the pool; the returned future completes with its result. A panic in `f` becomes
/// an `Internal` error (code 599).
pub(crate) fn spawn<R: Send + 'static>(
    f: impl FnOnce(&Cancel) -> Result<R, ProteusError> + Send + 'static,
) -> Job<Result<R, ProteusError>> {
    spawn_on(pool(), f)
}

fn spawn_on<R: Send + 'static>(
    pool: &'static Pool,
    f: impl FnOnce(&Cancel) -> Result<R, ProteusError> + Send + 'static,
) -> Job<Result<R, ProteusError>> {
    let slot = Arc::new(Mutex::new(Slot {
        result: None,
        waker: None,
    }));
    let cancel = Cancel::default();
    let (theirs, their_cancel) = (Arc::clone(&slot), cancel.clone());
    pool.submit(Box::new(move |run| {
        let result = if !run {
            Err(ProteusError::busy(
                "no worker thread could be started (the system's thread limit); try again",
            ))
        } else if their_cancel.is_cancelled() {
            Err(ProteusError::cancelled())
        } else {
            catch_unwind(AssertUnwindSafe(|| f(&their_cancel))).unwrap_or_else(|_| {
                Err(ProteusError::internal(
                    "a bug in the library (a panic in a worker)",
                ))
            })
        };
        let waker = {
            let mut slot = lock(&theirs);
            slot.result = Some(result);
            slot.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }));
    Job {
        slot,
        cancel,
        done: false,
    }
}

impl<R> Future for Job<R> {
    type Output = R;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<R> {
        let this = self.get_mut();
        let mut slot = lock(&this.slot);
        match slot.result.take() {
            Some(result) => {
                this.done = true;
                Poll::Ready(result)
            }
            None => {
                slot.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<R> Drop for Job<R> {
    fn drop(&mut self) {
        if !self.done {
            self.cancel.raise();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::task::Wake;

    use super::*;

    struct Signal(mpsc::SyncSender<()>);

    impl Wake for Signal {
        fn wake(self: Arc<Self>) {
            let _ = self.0.try_send(());
        }
    }

    /// Polls `fut` to completion on this thread, sleeping until woken.
    fn block_on<F: Future>(fut: F) -> F::Output {
        let (tx, rx) = mpsc::sync_channel(1);
        let waker = Waker::from(Arc::new(Signal(tx)));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(fut);
        loop {
            if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return out;
            }
            rx.recv().unwrap();
        }
    }

    #[test]
    fn jobs_run_off_the_calling_thread() {
        let me = std::thread::current().id();
        let there = block_on(spawn(|_| Ok(std::thread::current().id()))).unwrap();
        assert_ne!(me, there);
    }

    #[test]
    fn a_panicking_job_is_an_internal_error() {
        let e = block_on(spawn(|_| -> Result<(), ProteusError> {
            panic!("on purpose")
        }))
        .unwrap_err();
        assert_eq!(e.code(), 599);
    }

    #[test]
    fn many_jobs_waiting_on_each_other_do_not_starve() {
        // MAX_WORKERS jobs each waiting for the next one: a pool of fewer threads would hang.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..MAX_WORKERS).map(|_| mpsc::channel::<()>()).unzip();
        let mut rxs = rxs.into_iter();
        let first = rxs.next().unwrap();
        let jobs: Vec<_> = txs
            .into_iter()
            .zip(rxs.map(Some).chain([None]))
            .map(|(tx, rx)| {
                spawn(move |_| {
                    if let Some(rx) = rx {
                        rx.recv_timeout(Duration::from_secs(30)).unwrap();
                    }
                    tx.send(()).unwrap();
                    Ok(())
                })
            })
            .collect();
        first.recv_timeout(Duration::from_secs(30)).unwrap();
        for job in jobs {
            block_on(job).unwrap();
        }
    }

    /// Issue 31 (Low): 300 calls waiting at once (on a busy client, say) used to park 300
    /// threads. The pool stays within its bound, and every job still runs.
    #[test]
    fn the_pool_is_bounded_and_every_job_runs() {
        const JOBS: usize = 300;
        let release = Arc::new((Mutex::new(false), Condvar::new()));
        let running = Arc::new(Mutex::new((0usize, 0usize))); // (now, most at once)
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| {
                let (release, running) = (Arc::clone(&release), Arc::clone(&running));
                spawn(move |_| {
                    {
                        let mut r = running.lock().unwrap();
                        r.0 += 1;
                        r.1 = r.1.max(r.0);
                    }
                    let (lock, cv) = &*release;
                    let mut go = lock.lock().unwrap();
                    while !*go {
                        go = cv.wait(go).unwrap();
                    }
                    drop(go);
                    running.lock().unwrap().0 -= 1;
                    Ok(())
                })
            })
            .collect();
        // Let the pool start what it will.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while running.lock().unwrap().0 < MAX_WORKERS.min(JOBS)
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(200));
        let most = running.lock().unwrap().1;
        {
            let (lock, cv) = &*release;
            *lock.lock().unwrap() = true;
            cv.notify_all();
        }
        for job in jobs {
            block_on(job).unwrap();
        }
        assert!(
            most <= MAX_WORKERS,
            "{most} jobs ran at once on {most} threads"
        );
        assert!(lock(&pool().queue).peak <= MAX_WORKERS);
    }

    /// Issue 31 (Low): when no thread could be made, the job ran on the caller's thread (an
    /// Android main thread, possibly). It fails with ClientBusy instead, never running there.
    #[test]
    fn a_job_never_runs_on_the_callers_thread() {
        fn no_threads(_: Box<dyn FnOnce() + Send>) -> std::io::Result<()> {
            Err(std::io::Error::other("the thread limit"))
        }
        let pool: &'static Pool = Box::leak(Box::new(Pool::new(MAX_WORKERS, no_threads)));
        let ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let e = block_on(spawn_on(pool, move |_| {
            flag.store(true, Ordering::SeqCst);
            Ok(std::thread::current().id())
        }))
        .unwrap_err();
        assert_eq!(e.code(), 120);
        assert!(
            !ran.load(Ordering::SeqCst),
            "the job ran on the caller's thread"
        );
        assert!(lock(&pool.queue).tasks.is_empty());
    }

    #[test]
    fn dropping_a_job_raises_its_cancel_flag() {
        let (started_tx, started_rx) = mpsc::channel();
        let (seen_tx, seen_rx) = mpsc::channel();
        let job = spawn(move |cancel: &Cancel| {
            started_tx.send(()).unwrap();
            while !cancel.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            seen_tx.send(()).unwrap();
            Ok(())
        });
        started_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        drop(job);
        seen_rx.recv_timeout(Duration::from_secs(30)).unwrap();
    }
}
