//! What a batch did, counted by outcome, and where its time went: what an application sends as
//! telemetry without walking the results.

use std::fmt;
use std::time::Duration;

use crate::codes::ErrorCode;
use crate::error::ClientError;

/// Counts of a batch's outcomes and the time it took, for
/// [`Client::last_batch_summary`](crate::Client::last_batch_summary).
///
/// Every message is counted once: `decrypted + already_seen + key_evicted` plus the counts in
/// `failed` is `total`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BatchSummary {
    /// Messages in the batch.
    pub total: usize,
    /// Messages that decrypted.
    pub decrypted: usize,
    /// Messages decrypted before: duplicates (209) and outdated ones (208), dropped silently.
    pub already_seen: usize,
    /// Messages whose skipped key had been evicted (214): never decrypted, and now they cannot be.
    pub key_evicted: usize,
    /// Every other rejection, as (stable code, count), in ascending order of code.
    pub failed: Vec<(u16, usize)>,
    /// Time spent decrypting: the whole call less the application's delivery and the commit.
    /// Zero where there is no clock (`wasm32-unknown-unknown`: the web package measures it).
    pub decrypt_time: Duration,
    /// Time spent in the application's delivery callback.
    pub delivery_time: Duration,
    /// Time spent committing.
    pub commit_time: Duration,
}

impl BatchSummary {
    /// Messages rejected for another reason than being seen before or evicted: the sum of
    /// [`failed`](Self::failed).
    pub fn failed_total(&self) -> usize {
        self.failed.iter().map(|(_, n)| n).sum()
    }

    pub(crate) fn count(&mut self, outcome: &Result<Vec<u8>, ClientError>) {
        self.total += 1;
        let code = match outcome {
            Ok(_) => {
                self.decrypted += 1;
                return;
            }
            Err(e) => e.error_code(),
        };
        if code.is_already_seen() {
            self.already_seen += 1;
        } else if code == ErrorCode::Core(proteus_core::ErrorCode::MessageKeyEvicted) {
            self.key_evicted += 1;
        } else {
            let code = code.number();
            match self.failed.binary_search_by_key(&code, |(c, _)| *c) {
                Ok(i) => {
                    if let Some((_, n)) = self.failed.get_mut(i) {
                        *n += 1;
                    }
                }
                Err(i) => self.failed.insert(i, (code, 1)),
            }
        }
    }
}

/// One line, for a log: counts, then the codes of the failures, then the times.
impl fmt::Display for BatchSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} messages: {} decrypted, {} already seen, {} key evicted, {} failed",
            self.total,
            self.decrypted,
            self.already_seen,
            self.key_evicted,
            self.failed_total()
        )?;
        for (i, (code, n)) in self.failed.iter().enumerate() {
            f.write_str(if i == 0 { " (" } else { ", " })?;
            write!(f, "{n} × {code}")?;
        }
        if !self.failed.is_empty() {
            f.write_str(")")?;
        }
        // Whole microseconds: the formatting of `Duration`'s Debug costs the web module 2 KB.
        let micros = |d: Duration| u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        write!(
            f,
            "; decrypt {} µs, delivery {} µs, commit {} µs",
            micros(self.decrypt_time),
            micros(self.delivery_time),
            micros(self.commit_time)
        )
    }
}

/// Time since it started, where the platform has a clock: `None` in `wasm32-unknown-unknown`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stopwatch {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    start: std::time::Instant,
}

impl Stopwatch {
    pub(crate) fn start() -> Option<Self> {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        return Some(Self {
            start: std::time::Instant::now(),
        });
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        None
    }

    pub(crate) fn elapsed(&self) -> Duration {
        #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
        return self.start.elapsed();
        #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
        Duration::ZERO
    }
}

/// Elapsed time of an optional stopwatch: zero without one.
pub(crate) fn elapsed(watch: Option<Stopwatch>) -> Duration {
    watch.map(|w| w.elapsed()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proteus_core::{CounterPosition, DecryptError};

    #[test]
    fn each_outcome_is_counted_once_and_failures_by_code() {
        let mut summary = BatchSummary::default();
        let outcomes: Vec<Result<Vec<u8>, ClientError>> = vec![
            Ok(b"hi".to_vec()),
            Err(ClientError::Decrypt(DecryptError::DuplicateMessage)),
            Err(ClientError::Decrypt(DecryptError::MessageKeyEvicted)),
            Err(ClientError::Decrypt(DecryptError::InvalidSignature(
                CounterPosition::InSync,
            ))),
            Err(ClientError::SessionNotFound("a".into())),
            Err(ClientError::Decrypt(DecryptError::InvalidSignature(
                CounterPosition::InSync,
            ))),
            Ok(Vec::new()),
        ];
        for outcome in &outcomes {
            summary.count(outcome);
        }
        assert_eq!(
            (
                summary.total,
                summary.decrypted,
                summary.already_seen,
                summary.key_evicted
            ),
            (7, 2, 1, 1)
        );
        let invalid = ClientError::Decrypt(DecryptError::InvalidSignature(CounterPosition::InSync))
            .error_code()
            .number();
        let not_found = ClientError::SessionNotFound(String::new())
            .error_code()
            .number();
        let mut expected = vec![(invalid, 2), (not_found, 1)];
        expected.sort();
        assert_eq!(summary.failed, expected);
        assert_eq!(summary.failed_total(), 3);
        let line = summary.to_string();
        assert!(
            line.starts_with("7 messages: 2 decrypted, 1 already seen, 1 key evicted, 3 failed ("),
            "{line}"
        );
        assert!(line.contains(&format!("2 × {invalid}")), "{line}");
    }
}
