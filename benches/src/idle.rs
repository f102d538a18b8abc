//! An idle client uses no CPU: the process's CPU time (every thread's, from
//! `/proc/self/task/*/schedstat`, Linux) across one second of idleness before any batch and
//! after one, with the client's batch pool of `threads` threads alive.

use std::ops::ControlFlow;
use std::time::Duration;

use proteus_client::{Client, QueuedMessage};

use crate::BoxError;

/// CPU time of the two idle seconds: of the whole process (the measuring thread included:
/// its reads of `/proc` and its wake-up), and of every thread but the measuring one (the
/// batch pool's).
pub struct Idle {
    /// The threads of the process during the measurement.
    pub threads: usize,
    /// CPU time across a second before the first batch: the process, the other threads.
    pub before: (Duration, Duration),
    /// CPU time across a second after a 1000-message batch: the process, the other threads.
    pub after: (Duration, Duration),
}

/// The CPU time of every live thread of this process so far, of the threads other than the
/// main one, and how many threads there are.
fn process_cpu() -> Result<(u64, u64, usize), BoxError> {
    let main = std::process::id().to_string();
    let (mut total, mut others, mut threads) = (0u64, 0u64, 0);
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?;
        let stat = std::fs::read_to_string(task.path().join("schedstat"))?;
        let ns: u64 = stat.split_whitespace().next().unwrap_or("0").parse()?;
        total += ns;
        if task.file_name().to_str() != Some(main.as_str()) {
            others += ns;
        }
        threads += 1;
    }
    Ok((total, others, threads))
}

fn idle_second() -> Result<((Duration, Duration), usize), BoxError> {
    let (total, others, _) = process_cpu()?;
    std::thread::sleep(Duration::from_secs(1));
    let (total_end, others_end, threads) = process_cpu()?;
    let ns = |a: u64, b: u64| Duration::from_nanos(b.saturating_sub(a));
    Ok(((ns(total, total_end), ns(others, others_end)), threads))
}

/// Measures a client with a pool of `threads` (1: inline).
pub fn measure(threads: usize) -> Result<Idle, BoxError> {
    let (mut alice, mut bob) = (Client::in_memory()?, Client::in_memory()?);
    bob.set_batch_threads(threads);
    let bundle = bob.generate_prekeys(1)?.remove(0).to_bytes();
    alice.create_session("bob", &bundle)?;
    let envelopes = (0..1000)
        .map(|i| alice.encrypt("bob", format!("message {i}").as_bytes()))
        .collect::<Result<Vec<_>, _>>()?;
    let queue: Vec<QueuedMessage<'_>> = envelopes
        .iter()
        .map(|envelope| QueuedMessage {
            session_id: "alice",
            envelope,
        })
        .collect();
    let (before, _) = idle_second()?;
    let results = bob.decrypt_batch(&queue, |_, _| ControlFlow::Continue(()))?;
    if results.iter().any(|r| r.outcome.is_err()) {
        return Err("the batch failed".into());
    }
    let (after, threads) = idle_second()?;
    Ok(Idle {
        threads,
        before,
        after,
    })
}
