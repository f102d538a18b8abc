//! Which CPU a thread runs on, and moving the calling thread off one (Linux and Android; a
//! no-op elsewhere).
//!
//! A helper woken ahead of a batch (`Helpers::wake`) watches on some CPU. Should the batch's
//! thread then be woken onto that same CPU, the two share it for the whole batch while another
//! CPU idles: both ran too recently for Linux's load balancer to move either (docs/benchmarks.md,
//! sessions 13 and 14). The batch's thread can see that when it offers the work, and step off.

/// A bit for the calling thread's CPU in a mask of CPUs 0 to 63 (0 where unknown or higher).
pub(super) fn cpu_bit() -> u64 {
    imp::current_cpu()
        .filter(|&cpu| cpu < 64)
        .map_or(0, |cpu| 1 << cpu)
}

/// Moves the calling thread off the CPUs of `mask` when it runs on one of them, if its affinity
/// allows another CPU; its affinity is as before afterwards.
pub(super) fn step_off(mask: u64) {
    if cpu_bit() & mask != 0 {
        imp::step_off(mask);
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};

    pub(super) fn current_cpu() -> Option<usize> {
        Some(sched_getcpu())
    }

    /// Leaving a CPU out of the thread's affinity moves it at once; putting the affinity back
    /// leaves it where it went.
    pub(super) fn step_off(mask: u64) {
        let Ok(allowed) = sched_getaffinity(None) else {
            return;
        };
        let mut elsewhere = allowed;
        (0..64)
            .filter(|cpu| mask & (1 << cpu) != 0)
            .for_each(|cpu| elsewhere.unset(cpu));
        if elsewhere.count() > 0 && sched_setaffinity(None, &elsewhere).is_ok() {
            let _ = sched_setaffinity(None, &allowed);
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    pub(super) fn current_cpu() -> Option<usize> {
        None
    }

    pub(super) fn step_off(_: u64) {}
}

#[cfg(all(test, any(target_os = "linux", target_os = "android")))]
mod tests {
    use super::*;

    /// A thread allowed on two CPUs and stepping off the one it is on ends up on the other,
    /// with its affinity as before.
    #[test]
    fn stepping_off_moves_the_thread_and_keeps_its_affinity() {
        let allowed = rustix::thread::sched_getaffinity(None).expect("affinity");
        if allowed.count() < 2 {
            return; // one CPU: nowhere to go (the no-op is the behaviour then)
        }
        std::thread::spawn(move || {
            let here = cpu_bit();
            assert_ne!(here, 0);
            step_off(here);
            assert_eq!(cpu_bit() & here, 0, "still on the CPU it stepped off");
            let after = rustix::thread::sched_getaffinity(None).expect("affinity");
            assert_eq!(after, allowed);
        })
        .join()
        .expect("the thread");
    }
}
