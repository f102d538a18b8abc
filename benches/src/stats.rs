//! Summaries of repeated runs, as JSON lines or a table.

use std::time::Duration;

use serde::Serialize;

/// The runs of one scenario on one store.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// The store's name.
    pub store: String,
    /// Median of the runs, in milliseconds.
    pub median_ms: f64,
    /// Fastest run, in milliseconds.
    pub min_ms: f64,
    /// Slowest run, in milliseconds.
    pub max_ms: f64,
    /// How many runs.
    pub runs: usize,
}

impl Summary {
    /// Summarises `times` (at least one).
    pub fn of(scenario: &str, store: &str, times: &[Duration]) -> Self {
        let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        Self {
            scenario: scenario.to_owned(),
            store: store.to_owned(),
            median_ms: round3(median(&ms)),
            min_ms: round3(ms.first().copied().unwrap_or(f64::NAN)),
            max_ms: round3(ms.last().copied().unwrap_or(f64::NAN)),
            runs: ms.len(),
        }
    }

    /// One JSON object, on one line.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string(self)
    }
}

/// The median of sorted values (the mean of the middle two for an even count).
pub fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let upper = sorted.get(n / 2).copied().unwrap_or(f64::NAN);
    if n.is_multiple_of(2) {
        let lower = sorted.get(n / 2 - 1).copied().unwrap_or(f64::NAN);
        (lower + upper) / 2.0
    } else {
        upper
    }
}

/// Rounded to microseconds.
pub fn round3(ms: f64) -> f64 {
    (ms * 1e3).round() / 1e3
}

/// The median of some durations, in milliseconds.
pub fn median_ms(times: impl IntoIterator<Item = Duration>) -> f64 {
    let mut ms: Vec<f64> = times.into_iter().map(|t| t.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    median(&ms)
}

/// The header of the human-readable table.
pub fn table_header() -> String {
    format!(
        "{:<10} {:<19} {:>10} {:>10} {:>10} {:>5} {:>8} {:>11} {:>10}",
        "scenario",
        "store",
        "median ms",
        "min ms",
        "max ms",
        "runs",
        "µs/msg",
        "encrypt ms",
        "commit ms"
    )
}

/// One row of the human-readable table. `messages` per run gives the per-message column;
/// `encrypt_ms` and `commit_ms` are the medians of those phases, where they apply (see
/// [`Timing`](crate::run::Timing)).
pub fn table_row(
    summary: &Summary,
    messages: usize,
    encrypt_ms: Option<f64>,
    commit_ms: Option<f64>,
) -> String {
    let per_message = summary.median_ms * 1e3 / messages.max(1) as f64;
    let phase = |ms: Option<f64>| ms.map_or_else(|| "-".to_owned(), |ms| format!("{ms:.3}"));
    format!(
        "{:<10} {:<19} {:>10.3} {:>10.3} {:>10.3} {:>5} {:>8.2} {:>11} {:>10}",
        summary.scenario,
        summary.store,
        summary.median_ms,
        summary.min_ms,
        summary.max_ms,
        summary.runs,
        per_message,
        phase(encrypt_ms),
        phase(commit_ms)
    )
}
