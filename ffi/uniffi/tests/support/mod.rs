//! Waiting for the client's futures in tests, as the foreign side's executor would.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// `.wait()` on any future: polls it on this thread, parking until woken.
pub(crate) trait Wait: Future + Sized {
    fn wait(self) -> Self::Output {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = std::pin::pin!(self);
        loop {
            if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
                return out;
            }
            thread::park();
        }
    }
}

impl<F: Future> Wait for F {}
