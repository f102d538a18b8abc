//! For tests of the batch threads: doing something only once a thread is asleep (blocked, not
//! merely descheduled), as seen from another thread in /proc (Linux and Android). A test that
//! gives a helper its CPU back only once the calling thread sleeps at the end of the work knows
//! the helper starts after everything the calling thread did before, however the threads are
//! scheduled.

use std::path::{Path, PathBuf};
use std::thread::Scope;
use std::time::{Duration, Instant};

/// A bound against a hang: how long [`when_asleep`] waits at most.
const AT_MOST: Duration = Duration::from_secs(60);

/// The calling thread's entry in /proc; `None` where there is none.
fn this_thread_stat() -> Option<PathBuf> {
    if !cfg!(any(target_os = "linux", target_os = "android")) {
        return None;
    }
    let task = std::fs::read_link("/proc/thread-self").ok()?;
    Some(Path::new("/proc").join(task).join("stat"))
}

/// Whether the thread of `stat` is asleep (state S; a thread that is merely descheduled is R).
fn asleep(stat: &Path) -> bool {
    std::fs::read_to_string(stat).ok().is_some_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('S'))
    })
}

/// Runs `then` on a thread of `scope` once `ready()` says so and the thread that called this
/// is asleep after that (without /proc: once `ready()`); at the latest after [`AT_MOST`].
pub(super) fn when_asleep<'scope>(
    scope: &'scope Scope<'scope, '_>,
    ready: impl Fn() -> bool + Send + 'scope,
    then: impl FnOnce() + Send + 'scope,
) {
    let caller = this_thread_stat();
    scope.spawn(move || {
        let since = Instant::now();
        while !(ready() && caller.as_deref().is_none_or(asleep)) && since.elapsed() < AT_MOST {
            std::thread::sleep(Duration::from_micros(100));
        }
        then();
    });
}
