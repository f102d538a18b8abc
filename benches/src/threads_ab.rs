//! `--threads-ab`: the client's batch threads off and on, in one run. For each scenario and store,
//! after one untimed run of each, runs alternate — one thread, then N threads, … — so that a
//! change of the machine's load falls on both; the load average is printed before and after.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::BoxError;
use crate::run::Bench;
use crate::scenarios::ScenarioKind;
use crate::stats::{Summary, round3};
use crate::stores::StoreKind;

/// The scenarios the A/B compares by default.
pub const SCENARIOS: [ScenarioKind; 4] = [
    ScenarioKind::Established,
    ScenarioKind::Senders,
    ScenarioKind::Conversation,
    ScenarioKind::FanOut,
];
/// The stores the A/B compares by default.
pub const STORES: [StoreKind; 2] = [StoreKind::Memory, StoreKind::SqliteBatch];

/// Default pairs of runs: up to this many, stopping once a combination has taken [`BUDGET`]
/// and has at least [`MIN_PAIRS`].
const MAX_PAIRS: usize = 21;
const MIN_PAIRS: usize = 5;
const BUDGET: Duration = Duration::from_secs(3);

/// Batch threads of every client the benches open; 0: the client's default.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Sets the batch threads of the clients opened from now on (`None`: the client's default).
pub fn set_threads(threads: Option<usize>) {
    THREADS.store(threads.unwrap_or(0), Ordering::Relaxed);
}

/// The executor of `threads` threads: one pool per count for the whole process, shared by every
/// client the bench opens, as an application would share its pool.
pub fn executor(threads: usize) -> proteus_client::Executor {
    static POOLS: std::sync::Mutex<Vec<(usize, proteus_client::Executor)>> =
        std::sync::Mutex::new(Vec::new());
    let mut pools = POOLS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((_, executor)) = pools.iter().find(|(n, _)| *n == threads) {
        return executor.clone();
    }
    let executor = proteus_client::Executor::with_threads(threads).unwrap_or_default();
    pools.push((threads, executor.clone()));
    executor
}

/// The bench's default thread count for `--threads-ab`: the processor's parallelism, at most 4.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

/// The batch threads set with [`set_threads`], if any.
pub fn threads() -> Option<usize> {
    match THREADS.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` has them.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Runs the A/B: one thread against `many` threads.
pub fn run(
    scenarios: &[ScenarioKind],
    stores: &[StoreKind],
    many: usize,
    runs: Option<usize>,
    json: bool,
) -> Result<(), BoxError> {
    let before = load_average();
    if !json {
        println!(
            "batch threads 1 against {many}, runs alternating (load average before: {before}); \
             speedup = median(1) / median({many})"
        );
        println!(
            "{:<11} {:<13} {:>11} {:>11} {:>8} {:>5}",
            "scenario",
            "store",
            "1 thread ms",
            format!("{many} thr. ms"),
            "speedup",
            "runs"
        );
    }
    for &kind in scenarios {
        let bench = Bench::new(kind, stores)?;
        for &store in stores {
            let (one, more) = alternate(&bench, store, many, runs)?;
            let one = Summary::of(kind.name(), store.name(), &one);
            let more = Summary::of(kind.name(), store.name(), &more);
            let speedup = round3(one.median_ms / more.median_ms);
            if json {
                let line = json!({
                    "scenario": kind.name(), "store": store.name(),
                    "threads_1": one, "threads_n": more, "threads": many, "speedup": speedup,
                });
                println!("{line}");
            } else {
                println!(
                    "{:<11} {:<13} {:>11.3} {:>11.3} {:>8.2} {:>5}",
                    kind.name(),
                    store.name(),
                    one.median_ms,
                    more.median_ms,
                    speedup,
                    one.runs
                );
            }
        }
    }
    let after = load_average();
    if json {
        println!("{}", json!({ "load_before": before, "load_after": after }));
    } else {
        println!("load average after: {after}");
    }
    set_threads(None);
    Ok(())
}

fn alternate(
    bench: &Bench,
    store: StoreKind,
    many: usize,
    runs: Option<usize>,
) -> Result<(Vec<Duration>, Vec<Duration>), BoxError> {
    let once = |threads: usize| {
        set_threads(Some(threads));
        bench.run_once(store).map_err(|e| {
            BoxError::from(format!(
                "{} on {store}, {threads} threads: {e}",
                bench.kind()
            ))
        })
    };
    once(1)?;
    once(many)?;
    let started = Instant::now();
    let (mut one, mut more) = (Vec::new(), Vec::new());
    loop {
        one.push(once(1)?);
        more.push(once(many)?);
        let done = one.len();
        let enough = match runs {
            Some(n) => done >= n,
            None => done >= MAX_PAIRS || (done >= MIN_PAIRS && started.elapsed() >= BUDGET),
        };
        if enough {
            return Ok((one, more));
        }
    }
}
