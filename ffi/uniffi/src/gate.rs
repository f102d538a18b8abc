//! One call at a time on a client, without deadlocks and without panics.
//!
//! A plain `Mutex` would do for threads that only wait for each other: every call finishes in
//! Rust. But `decrypt_batch` calls back into the application while it holds the client, and the
//! application may call the same client from inside that callback (a deadlock on the same
//! thread, or a panic of `std`'s mutex), or wait there for another thread that does. So the gate
//! records which thread holds the client:
//!
//! * a call from the thread that already holds it fails at once with `ClientBusy`;
//! * a call from another thread waits, at most the client's wait timeout, then fails with
//!   `ClientBusy`: nothing blocks forever.
//!
//! Panics are caught here too: a panic (a bug) becomes an `Internal` error, and the client then
//! refuses every further call, since its in-memory state may be half updated (the store is not:
//! commits are atomic).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::error::ProteusError;

#[derive(Debug, Default)]
struct State {
    /// The thread running a call on the value, if any.
    owner: Option<ThreadId>,
    /// A call panicked: the value must not be used again.
    broken: bool,
}

/// A value used by one call at a time (see the module docs).
#[derive(Debug)]
pub(crate) struct Gate<T> {
    state: Mutex<State>,
    released: Condvar,
    /// Only ever locked by the thread recorded as `owner`, so locking it never waits.
    value: Mutex<T>,
    wait_timeout: Duration,
}

impl<T> Gate<T> {
    pub(crate) fn new(value: T, wait_timeout: Duration) -> Self {
        Self {
            state: Mutex::new(State::default()),
            released: Condvar::new(),
            value: Mutex::new(value),
            wait_timeout,
        }
    }

    /// The state lock is never held while foreign or fallible code runs, so it cannot be
    /// poisoned; if it were, its data (three plain fields) would still be consistent.
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the current thread is inside a call on the value (then in one of its callbacks).
    pub(crate) fn is_held_here(&self) -> bool {
        self.state().owner == Some(thread::current().id())
    }

    /// Runs `f` on the value, as the only call doing so.
    pub(crate) fn with<R>(
        &self,
        f: impl FnOnce(&mut T) -> Result<R, ProteusError>,
    ) -> Result<R, ProteusError> {
        let _turn = self.enter()?;
        // Panics are caught below, before they could poison this lock.
        let mut value = self.value.lock().unwrap_or_else(PoisonError::into_inner);
        match catch_unwind(AssertUnwindSafe(|| f(&mut value))) {
            Ok(result) => result,
            Err(payload) => {
                self.state().broken = true;
                let what = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(ProteusError::internal(format!(
                    "a bug in the library (panic: {what}); close the client and open it again"
                )))
            }
        }
    }

    fn enter(&self) -> Result<Turn<'_, T>, ProteusError> {
        let me = thread::current().id();
        let deadline = Instant::now().checked_add(self.wait_timeout);
        let mut state = self.state();
        loop {
            if state.broken {
                return Err(ProteusError::internal(
                    "an earlier call hit a bug; close the client and open it again",
                ));
            }
            match state.owner {
                None => break,
                Some(owner) if owner == me => {
                    return Err(ProteusError::busy(
                        "the client was called from inside one of its own callbacks",
                    ));
                }
                Some(_) => {
                    let left = match deadline {
                        Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                        None => Duration::from_secs(3600),
                    };
                    if left.is_zero() {
                        return Err(ProteusError::busy(format!(
                            "another call of this client did not finish within {} ms",
                            self.wait_timeout.as_millis()
                        )));
                    }
                    state = self
                        .released
                        .wait_timeout(state, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        state.owner = Some(me);
        Ok(Turn { gate: self })
    }
}

/// The right to use the value; gives it back on drop.
struct Turn<'g, T> {
    gate: &'g Gate<T>,
}

impl<T> Drop for Turn<'_, T> {
    fn drop(&mut self) {
        self.gate.state().owner = None;
        self.gate.released.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_and_retires_the_value() {
        let gate = Gate::new(0u32, Duration::from_secs(1));
        let e = gate
            .with(|_| -> Result<(), ProteusError> { panic!("on purpose") })
            .unwrap_err();
        assert_eq!((e.code(), e.kind().name()), (599, "Internal"));
        assert!(e.to_string().contains("on purpose"));
        let again = gate.with(|v| Ok(*v)).unwrap_err();
        assert_eq!(again.kind().name(), "Internal");
    }

    #[test]
    fn re_entering_on_the_same_thread_is_busy() {
        let gate = Gate::new(0u32, Duration::from_secs(60));
        let inner = gate
            .with(|_| Ok(gate.with(|v| Ok(*v)).unwrap_err()))
            .unwrap();
        assert_eq!((inner.code(), inner.kind().name()), (120, "ClientBusy"));
        assert_eq!(gate.with(|v| Ok(*v + 1)).unwrap(), 1);
    }
}
