//! An idle client uses no CPU: the process's CPU time (every thread's, from
//! `/proc/self/task/*/schedstat`, Linux) across one second of idleness before any batch and
//! after one, with the client's batch pool of `threads` threads alive.

use std::ops::ControlFlow;
use std::time::Duration;

use proteus_client::{Client, QueuedMessage};

use crate::BoxError;

/// CPU time of the two idle seconds.
pub struct Idle {
    /// The threads of the process during the measurement.
    pub threads: usize,
    /// CPU time across a second before the first batch.
    pub before: Duration,
    /// CPU time across a second after a 1000-message batch.
    pub after: Duration,
}

/// The CPU time of every live thread of this process so far.
fn process_cpu() -> Result<(Duration, usize), BoxError> {
    let mut total = 0u64;
    let mut threads = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        let stat = std::fs::read_to_string(task?.path().join("schedstat"))?;
        let ns: u64 = stat.split_whitespace().next().unwrap_or("0").parse()?;
        total += ns;
        threads += 1;
    }
    Ok((Duration::from_nanos(total), threads))
}

fn idle_second() -> Result<(Duration, usize), BoxError> {
    let (start, _) = process_cpu()?;
    std::thread::sleep(Duration::from_secs(1));
    let (end, threads) = process_cpu()?;
    Ok((end.saturating_sub(start), threads))
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
