//! Keeping a batch's helper threads off the CPU of the thread that offers them work (Linux and
//! Android; a no-op elsewhere).
//!
//! A thread woken after a rest tends to be placed on its waker's CPU rather than on an idle one
//! (the kernel of the virtual machines measured here packs wake-ups onto running virtual CPUs).
//! There it waits until the waker's time slice ends: a batch whose thread woke its helper ran
//! on one CPU while the other idled, and a helper woken ahead of a batch by another thread (the
//! Node addon's JS thread) could find the batch's thread woken onto its own CPU
//! (docs/benchmarks.md, sessions 13 to 15). So before helpers are woken or offered work, the
//! offering thread takes its own CPU out of their affinity ([`Homes::keep_off_caller`]): the
//! kernel then wakes them elsewhere, or moves a running one at once. They stay off that CPU
//! until a thread on another CPU offers them work; a call costs a system call per helper only
//! when the offering thread's CPU changed.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A pool's helper threads, by index: where each may run.
pub(super) struct Homes {
    threads: Vec<Home>,
}

#[derive(Default)]
struct Home {
    /// The thread's id and its affinity, once it started.
    started: OnceLock<(i32, imp::Cpus)>,
    /// The CPU it is kept off, plus one (0: none).
    kept_off: AtomicUsize,
}

impl Homes {
    /// For a pool of `threads` threads.
    pub(super) fn new(threads: usize) -> Self {
        Self {
            threads: (0..threads).map(|_| Home::default()).collect(),
        }
    }

    /// Called by helper `index` as it starts (the pool's start handler).
    pub(super) fn arrived(&self, index: usize) {
        if let Some(home) = self.threads.get(index)
            && let Some(started) = imp::this_thread()
        {
            let _ = home.started.set(started);
        }
    }

    /// Keeps every started helper off the calling thread's CPU (see the module docs). Call it
    /// just before waking the helpers or offering them work.
    pub(super) fn keep_off_caller(&self) {
        let Some(cpu) = imp::current_cpu() else {
            return;
        };
        for home in &self.threads {
            if home.kept_off.load(Ordering::Relaxed) != cpu + 1
                && let Some((tid, allowed)) = home.started.get()
                && imp::narrow(*tid, allowed, cpu)
            {
                home.kept_off.store(cpu + 1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use rustix::thread::{CpuSet, Pid, gettid, sched_getaffinity, sched_getcpu, sched_setaffinity};

    pub(super) type Cpus = CpuSet;

    /// The calling thread's id and affinity.
    pub(super) fn this_thread() -> Option<(i32, CpuSet)> {
        Some((
            gettid().as_raw_nonzero().get(),
            sched_getaffinity(None).ok()?,
        ))
    }

    pub(super) fn current_cpu() -> Option<usize> {
        Some(sched_getcpu())
    }

    /// Thread `tid` allowed on `allowed` but `cpu`; false if that leaves no CPU or fails.
    pub(super) fn narrow(tid: i32, allowed: &CpuSet, cpu: usize) -> bool {
        // A set holds CPUs 0 to MAX_CPU - 1 (1024); past that, leave the thread alone.
        if cpu >= CpuSet::MAX_CPU {
            return false;
        }
        let mut elsewhere = *allowed;
        elsewhere.unset(cpu);
        elsewhere.count() > 0
            && Pid::from_raw(tid)
                .is_some_and(|pid| sched_setaffinity(Some(pid), &elsewhere).is_ok())
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    pub(super) type Cpus = ();

    pub(super) fn this_thread() -> Option<(i32, ())> {
        None
    }

    pub(super) fn current_cpu() -> Option<usize> {
        None
    }

    pub(super) fn narrow(_: i32, _: &(), _: usize) -> bool {
        false
    }
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;

    /// A CPU number past what a set can hold narrows nothing, and does not panic.
    #[test]
    fn a_cpu_past_the_sets_size_narrows_nothing() {
        let (tid, allowed) = imp::this_thread().expect("this thread");
        assert!(!imp::narrow(tid, &allowed, rustix::thread::CpuSet::MAX_CPU));
        assert_eq!(
            rustix::thread::sched_getaffinity(None).expect("affinity"),
            allowed
        );
    }

    /// A helper kept off the caller's CPU runs elsewhere, however often the caller moves.
    #[test]
    fn a_helper_kept_off_the_callers_cpu_runs_elsewhere() {
        let allowed = rustix::thread::sched_getaffinity(None).expect("affinity");
        if allowed.count() < 2 {
            return; // one CPU: nowhere to go (nothing is narrowed then)
        }
        let homes = std::sync::Arc::new(Homes::new(1));
        let arriving = std::sync::Arc::clone(&homes);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .start_handler(move |i| arriving.arrived(i))
            .build()
            .expect("a pool");
        pool.install(|| ()); // started
        let cpus: Vec<usize> = (0..1024).filter(|&c| allowed.is_set(c)).take(2).collect();
        for round in 0..20 {
            // The caller on one CPU, then on another, busy there while the helper is woken: a
            // helper woken onto that CPU would run only once the caller's time slice ended.
            let caller = cpus[round % 2];
            let mut here = rustix::thread::CpuSet::new();
            here.set(caller);
            rustix::thread::sched_setaffinity(None, &here).expect("pin the caller");
            std::thread::sleep(std::time::Duration::from_millis(2));
            homes.keep_off_caller();
            let ran_on = std::sync::Arc::new(AtomicUsize::new(0));
            let record = std::sync::Arc::clone(&ran_on);
            pool.spawn(move || record.store(rustix::thread::sched_getcpu() + 1, Ordering::Release));
            while ran_on.load(Ordering::Acquire) == 0 {
                std::hint::spin_loop();
            }
            assert_ne!(
                ran_on.load(Ordering::Acquire),
                caller + 1,
                "round {round}: the helper ran on the caller's CPU"
            );
        }
        rustix::thread::sched_setaffinity(None, &allowed).expect("the caller's affinity back");
    }
}
