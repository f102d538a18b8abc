//! Where the async calls run: a small pool of worker threads, so that the caller's thread (an
//! Android main thread, a Swift actor's executor) never waits for a store or a batch.
//!
//! UniFFI polls an exported future on the foreign side's thread, so work done inside the future
//! would block that thread. Each call instead hands a job to the pool and returns a [`Job`]
//! future that completes when the job has run. The pool grows when every worker is busy (a
//! worker may wait for the client's gate, or for a batch callback, for a long time: a fixed pool
//! could starve a call that would otherwise free it) and a worker idle for a while exits.
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

type Task = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    /// Workers waiting for a task (each counts itself in and out).
    idle: usize,
}

struct Pool {
    queue: Mutex<Queue>,
    ready: Condvar,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        queue: Mutex::new(Queue::default()),
        ready: Condvar::new(),
    })
}

/// Locks that are never held while user code runs stay consistent if poisoned.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Pool {
    fn submit(&'static self, task: Task) {
        let mut queue = lock(&self.queue);
        queue.tasks.push_back(task);
        // Each waiting worker takes one task; beyond those, a new worker is needed.
        let spawn = queue.tasks.len() > queue.idle;
        drop(queue);
        if !spawn {
            self.ready.notify_one();
            return;
        }
        let spawned = std::thread::Builder::new()
            .name("proteus-worker".into())
            .spawn(move || self.work());
        if spawned.is_err() {
            // No thread could be made (resource limits): run it here rather than never.
            if let Some(task) = lock(&self.queue).tasks.pop_back() {
                task();
            }
        }
    }

    fn work(&self) {
        let mut queue = lock(&self.queue);
        loop {
            if let Some(task) = queue.tasks.pop_front() {
                drop(queue);
                // A job catches its own panics (see `spawn`); this keeps the worker alive anyway.
                let _ = catch_unwind(AssertUnwindSafe(task));
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
    let slot = Arc::new(Mutex::new(Slot {
        result: None,
        waker: None,
    }));
    let cancel = Cancel::default();
    let (theirs, their_cancel) = (Arc::clone(&slot), cancel.clone());
    pool().submit(Box::new(move || {
        let result = if their_cancel.is_cancelled() {
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
        // 64 jobs each waiting for the next one: a fixed pool smaller than 64 would hang.
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..64).map(|_| mpsc::channel::<()>()).unzip();
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
