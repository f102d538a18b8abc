//! The bench runner: "decrypt 1000 queued messages" on every scenario and store, a few runs each,
//! and `fanout4000`, one message encrypted for 4000 sessions.
//!
//! ```text
//! cargo run --release -p proteus-bench -- [--json] [--runs N] [--scenario NAME]... [--store NAME]...
//! cargo run --release -p proteus-bench -- --scale [--json] [--runs N]
//! cargo run --release -p proteus-bench -- --fast-forward [--runs N]
//! cargo run --release -p proteus-bench -- --peers [--json] [--runs N] [--scenario NAME]... [--store NAME]
//! cargo run --release -p proteus-bench -- --threads-ab [--threads N] [--json] [--runs N] [--scenario NAME]... [--store NAME]...
//! ```
//!
//! `--threads N` gives every client of ours N batch threads (default: the client's default);
//! `--threads-ab` runs one thread against N (default: the client's default), alternating.
//!
//! Without `--json` it prints a table; with it, one JSON object per line:
//! `{"scenario":…,"store":…,"median_ms":…,"min_ms":…,"max_ms":…,"runs":…}`.
//! `--scale` measures 10k, 50k and 100k queued messages over 1000 sessions instead, each count
//! in a child process of its own (this binary, run with `--scale-child`). `--peers` runs
//! vodozemac (Olm) on the same scenarios beside ours, runs alternating, and ends with the ratios
//! (see [`proteus_bench::peers`]).

#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use proteus_bench::BoxError;
use proteus_bench::run::{Bench, Timing};
use proteus_bench::scale::{
    SCALE_BATCH, SCALE_COUNTS, SCALE_SESSIONS, ScaleResult, ScaleSetup, linear_fit, measure,
};
use proteus_bench::scenarios::ScenarioKind;
use proteus_bench::stats::{Summary, median_ms, table_header, table_row};
use proteus_bench::stores::StoreKind;

const USAGE: &str = "\
usage: proteus-bench [--json] [--runs N] [--scenario NAME]... [--store NAME]...
       proteus-bench --scale [--json] [--runs N]
       proteus-bench --fast-forward [--runs N]
       proteus-bench --forged [--runs N]
       proteus-bench --idle [--threads N]
       proteus-bench --import [--runs N]
       proteus-bench --extension [--runs N]
       proteus-bench --extension-setup DIR [SESSIONS]
       proteus-bench --peers [--json] [--runs N] [--scenario NAME]... [--store NAME]
       proteus-bench --threads-ab [--threads N] [--json] [--runs N] [--scenario NAME]... [--store NAME]...

  --json         one JSON object per line instead of a table
  --runs N       runs per scenario and store (default: up to 15, fewer for slow ones; each
                 combination stops after about 2 s once it has 3 runs). With --scale: child
                 processes per count (default 3; the median-time one is reported)
  --scenario S   only these scenarios: 1x1000, 1x1000est, 50x20, conv10, fanout4000 (one
                 message to 4000 sessions: encrypt_for; per-message: one encrypt each)
  --store S      only these stores: memory, sqlite-batch, sqlite-per-message, sqlite-encrypted
  --scale        10k, 50k and 100k queued messages over 1000 sessions (sqlite-batch, batches
                 of 1000), each count in a fresh child process: time and peak memory
  --fast-forward one message at the largest counter gap (MAX_FAST_FORWARD), forged and
                 genuine, on a fresh copy of the session each run (default 15 runs)
  --forged       a forged message at the largest gap through the client: a CipherMessage and
                 a PreKeyMessage, each through decrypt and decrypt_batch (default 15 runs)
  --import       importCryptobox of a store with 10,000 sessions and 100 prekeys, into a new
                 store in memory and a new SQLite file
  --extension    a notification extension's path: a cold process opens a store of 10,000
                 (then 100,000) sessions and 1000 prekeys, decrypts one message, closes; time
                 and peak memory growth, the page cache dropped first where allowed (root)
  --extension-setup DIR [SESSIONS]
                 only write that store (SESSIONS sessions, default 10,000) and its message
                 into DIR: template.db, message.bin, session-id (for ffi/uniffi/bench/
                 extension.sh, which measures the path from Kotlin and Swift)
  --idle         the process's CPU time across one idle second before any batch and after a
                 1000-message batch, with --threads N batch threads (default 2)
  --peers        ours (memory store, or the one --store names) and vodozemac (Olm) on the
                 same scenarios, runs alternating (--runs: pairs); JSON: one line per
                 implementation and scenario, then one line of ratios (vodozemac / ours)
  --threads N    our clients' batch threads: one rayon pool of N shared by every client
                 (Client::set_executor; default: the client's, inline); applies to every mode
  --threads-ab   batch threads 1 against N (--threads, or the processor's parallelism up to
                 4), runs alternating,
                 with the load average; default scenarios 1x1000est, 50x20, conv10,
                 fanout4000 and stores memory, sqlite-batch";

/// Default runs: up to this many...
const MAX_RUNS: usize = 15;
/// ...but at least this many...
const MIN_RUNS: usize = 3;
/// ...stopping once a combination has taken this long.
const BUDGET: Duration = Duration::from_secs(2);

struct Options {
    json: bool,
    runs: Option<usize>,
    scenarios: Vec<ScenarioKind>,
    stores: Vec<StoreKind>,
    scale: bool,
    fast_forward: bool,
    forged: bool,
    import: bool,
    extension: bool,
    idle: bool,
    peers: bool,
    threads: Option<usize>,
    threads_ab: bool,
}

enum Mode {
    Bench(Options),
    ScaleChild {
        store: PathBuf,
        queue: PathBuf,
        sessions: usize,
        count: usize,
        batch: usize,
    },
    ExtensionChild {
        store: PathBuf,
        envelope: PathBuf,
        session_id: String,
    },
    ExtensionSetup {
        dir: PathBuf,
        sessions: usize,
    },
    Help,
}

fn parse(args: &[String]) -> Result<Mode, BoxError> {
    let mut options = Options {
        json: false,
        runs: None,
        scenarios: Vec::new(),
        stores: Vec::new(),
        scale: false,
        fast_forward: false,
        forged: false,
        import: false,
        extension: false,
        idle: false,
        peers: false,
        threads: None,
        threads_ab: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--json" => options.json = true,
            "--scale" => options.scale = true,
            "--fast-forward" => options.fast_forward = true,
            "--forged" => options.forged = true,
            "--import" => options.import = true,
            "--extension" => options.extension = true,
            "--extension-child" => {
                return Ok(Mode::ExtensionChild {
                    store: value()?.into(),
                    envelope: value()?.into(),
                    session_id: value()?.clone(),
                });
            }
            "--extension-setup" => {
                let dir = value()?.into();
                let sessions = match args.next() {
                    Some(n) => n.parse()?,
                    None => proteus_bench::extension::EXTENSION_SESSIONS,
                };
                return Ok(Mode::ExtensionSetup { dir, sessions });
            }
            "--idle" => options.idle = true,
            "--peers" => options.peers = true,
            "--threads-ab" => options.threads_ab = true,
            "--threads" => {
                let threads: usize = value()?.parse()?;
                if threads == 0 {
                    return Err("--threads must be at least 1".into());
                }
                options.threads = Some(threads);
            }
            "--runs" => {
                let runs: usize = value()?.parse()?;
                if runs == 0 {
                    return Err("--runs must be at least 1".into());
                }
                options.runs = Some(runs);
            }
            "--scenario" => {
                for name in value()?.split(',') {
                    let kind = ScenarioKind::from_name(name)
                        .ok_or_else(|| format!("unknown scenario {name:?}"))?;
                    options.scenarios.push(kind);
                }
            }
            "--store" => {
                for name in value()?.split(',') {
                    let store = StoreKind::from_name(name)
                        .ok_or_else(|| format!("unknown store {name:?}"))?;
                    options.stores.push(store);
                }
            }
            "--scale-child" => {
                return Ok(Mode::ScaleChild {
                    store: value()?.into(),
                    queue: value()?.into(),
                    sessions: value()?.parse()?,
                    count: value()?.parse()?,
                    batch: value()?.parse()?,
                });
            }
            "-h" | "--help" => return Ok(Mode::Help),
            // `cargo bench` passes this to every target; ignore it.
            "--bench" => {}
            other => return Err(format!("unknown argument {other:?}\n{USAGE}").into()),
        }
    }
    if options.scenarios.is_empty() {
        options.scenarios = if options.threads_ab {
            proteus_bench::threads_ab::SCENARIOS.to_vec()
        } else {
            ScenarioKind::ALL.to_vec()
        };
    }
    if options.stores.is_empty() {
        options.stores = if options.threads_ab {
            proteus_bench::threads_ab::STORES.to_vec()
        } else {
            StoreKind::ALL.to_vec()
        };
    }
    Ok(Mode::Bench(options))
}

fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = parse(&args)?;
    if let Mode::Bench(options) = &mode {
        proteus_bench::threads_ab::set_threads(options.threads);
    }
    match mode {
        Mode::Help => println!("{USAGE}"),
        Mode::ScaleChild {
            store,
            queue,
            sessions,
            count,
            batch,
        } => {
            let result = measure(&store, &queue, sessions, count, batch)?;
            println!("{}", serde_json::to_string(&result)?);
        }
        Mode::Bench(options) if options.threads_ab => proteus_bench::threads_ab::run(
            &options.scenarios,
            &options.stores,
            options
                .threads
                .unwrap_or_else(proteus_bench::threads_ab::default_threads),
            options.runs,
            options.json,
        )?,
        Mode::Bench(options) if options.scale => scale(&options)?,
        Mode::Bench(options) if options.fast_forward => fast_forward(options.runs)?,
        Mode::Bench(options) if options.forged => forged(options.runs)?,
        Mode::Bench(options) if options.import => import(options.runs)?,
        Mode::Bench(options) if options.extension => extension(options.runs)?,
        Mode::ExtensionChild {
            store,
            envelope,
            session_id,
        } => {
            let result = proteus_bench::extension::measure(&store, &envelope, &session_id)?;
            println!("{}", serde_json::to_string(&result)?);
        }
        Mode::ExtensionSetup { dir, sessions } => {
            let setup = proteus_bench::extension::ExtensionSetup::create(sessions)?;
            setup.write_to(&dir)?;
            println!("{}", setup.session_id);
        }
        Mode::Bench(options) if options.idle => idle(options.threads.unwrap_or(2))?,
        Mode::Bench(options) if options.peers => peers(&options)?,
        Mode::Bench(options) => scenarios(&options)?,
    }
    Ok(())
}

/// Every chosen scenario on every chosen store.
fn scenarios(options: &Options) -> Result<(), BoxError> {
    if !options.json {
        println!(
            "Decrypt 1000 queued messages; fanout4000: encrypt one message for 4000 sessions \
             (setup not timed; µs/msg from the median; encrypt ms: the conversation's encrypt \
             calls; commit ms: from the last delivery to the return of decrypt_batch, summed \
             over batches)"
        );
        println!("{}", table_header());
    }
    for &kind in &options.scenarios {
        let bench = Bench::new(kind, &options.stores)?;
        for &store in &options.stores {
            let timings = runs(&bench, store, options.runs)?;
            let totals: Vec<Duration> = timings.iter().map(|t| t.total).collect();
            let summary = Summary::of(kind.name(), store.name(), &totals);
            if options.json {
                println!("{}", summary.to_json()?);
            } else {
                let encrypt = (kind == ScenarioKind::Conversation)
                    .then(|| median_ms(timings.iter().map(|t| t.encrypt)));
                let commits: Option<Vec<Duration>> =
                    timings.iter().map(|t| t.batch_commit).collect();
                let commit = commits.map(median_ms);
                println!("{}", table_row(&summary, bench.messages(), encrypt, commit));
            }
        }
    }
    Ok(())
}

/// The runs of one combination: `runs` of them, or by default up to [`MAX_RUNS`], stopping
/// after [`BUDGET`] once there are [`MIN_RUNS`].
fn runs(bench: &Bench, store: StoreKind, runs: Option<usize>) -> Result<Vec<Timing>, BoxError> {
    let started = Instant::now();
    let mut times = Vec::new();
    loop {
        times.push(
            bench
                .run_timed(store)
                .map_err(|e| format!("{} on {store}: {e}", bench.kind()))?,
        );
        let enough = match runs {
            Some(n) => times.len() >= n,
            None => {
                times.len() >= MAX_RUNS || (times.len() >= MIN_RUNS && started.elapsed() >= BUDGET)
            }
        };
        if enough {
            return Ok(times);
        }
    }
}

/// The scale test: setup once, then each count in child processes of this binary.
fn scale(options: &Options) -> Result<(), BoxError> {
    let max = SCALE_COUNTS.iter().copied().max().unwrap_or(0);
    eprintln!("scale: setting up {SCALE_SESSIONS} sessions and {max} queued messages (not timed)…");
    let setup = ScaleSetup::create(SCALE_SESSIONS, max, |what| eprintln!("scale: {what}"))?;
    let exe = std::env::current_exe()?;
    let runs = options.runs.unwrap_or(3);
    let mut chosen = Vec::new();
    for count in SCALE_COUNTS {
        let mut results = Vec::new();
        for _ in 0..runs {
            let output = Command::new(&exe)
                .arg("--scale-child")
                .arg(setup.store_file())
                .arg(setup.queue_file())
                .arg(setup.sessions().to_string())
                .arg(count.to_string())
                .arg(SCALE_BATCH.to_string())
                .output()?;
            if !output.status.success() {
                return Err(format!(
                    "the child for {count} messages failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                )
                .into());
            }
            let result: ScaleResult = serde_json::from_slice(&output.stdout)?;
            results.push(result);
        }
        // The run with the median time represents the count; peak memory is the worst run's.
        results.sort_by(|a, b| a.total_ms.total_cmp(&b.total_ms));
        let peak = results.iter().map(|r| r.peak_mib).fold(0.0, f64::max);
        let mut median = results
            .get(results.len() / 2)
            .cloned()
            .ok_or("no scale result")?;
        median.peak_mib = peak;
        if options.json {
            println!("{}", serde_json::to_string(&median)?);
        } else {
            eprintln!("scale: {count} messages done");
        }
        chosen.push(median);
    }
    let fit = linear_fit(&chosen);
    if options.json {
        println!("{}", serde_json::json!({ "linear_fit": fit }));
        return Ok(());
    }
    println!(
        "Queued messages over {SCALE_SESSIONS} sessions, sqlite-batch, batches of {SCALE_BATCH} \
         (one commit each), each count in a fresh process, {runs} run(s) per count"
    );
    println!(
        "{:>8} {:>10} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9}",
        "count",
        "total ms",
        "µs/msg",
        "batch med",
        "commit med",
        "1st 10%",
        "last 10%",
        "start MiB",
        "peak MiB",
        "end RSS"
    );
    for result in &chosen {
        println!(
            "{:>8} {:>10.1} {:>8.2} {:>10.2} {:>10.2} {:>10.2} {:>10.2} {:>10.1} {:>9.1} {:>9.1}",
            result.count,
            result.total_ms,
            result.us_per_msg,
            result.batch_median_ms,
            result.commit_median_ms,
            result.first_tenth_batch_ms,
            result.last_tenth_batch_ms,
            result.start_peak_mib,
            result.peak_mib,
            result.end_rss_mib
        );
    }
    println!(
        "(batch med / commit med: median ms of one batch of {SCALE_BATCH} and of its commit; \
         1st / last 10%: mean ms per batch over the first and last tenth of the batches; \
         MiB: VmHWM once the store is open, VmHWM at the end, VmRSS at the end)"
    );
    println!(
        "least-squares line: total = {:.1} ms + {:.2} µs × count; largest residual {:.1}% \
         (the fixed part is mostly each session's first message, which carries a new ratchet \
         key: one DH ratchet step per session)",
        fit.fixed_ms, fit.us_per_msg, fit.max_residual_pct
    );
    Ok(())
}

/// Ours and vodozemac side by side, on one store of ours (memory unless `--store` names one).
fn peers(options: &Options) -> Result<(), BoxError> {
    let store = match options.stores.as_slice() {
        [one] => *one,
        _ if options.stores == StoreKind::ALL => StoreKind::Memory,
        _ => return Err("--peers takes at most one --store".into()),
    };
    proteus_bench::peers::run(&options.scenarios, store, options.runs, options.json)
}

/// A forged message at the largest gap through the client, on each path: the median of each.
fn forged(runs: Option<usize>) -> Result<(), BoxError> {
    let paths = proteus_bench::forged::measure(runs.unwrap_or(MAX_RUNS))?;
    println!(
        "a forged message at a gap of {} (MAX_FAST_FORWARD), client in memory, median of {} runs \
         (load average {}):",
        proteus_core::limits::MAX_FAST_FORWARD,
        paths.first().map_or(0, |p| p.times.len()),
        proteus_bench::threads_ab::load_average()
    );
    let mut one = None;
    for path in paths {
        let median = median_ms(path.times);
        let ratio = one.map_or(String::new(), |one: f64| {
            format!(" ({:.2}x one fast-forward)", median / one)
        });
        one.get_or_insert(median);
        println!("  {:<44} {median:.1} ms{ratio}", path.name);
    }
    Ok(())
}

/// A notification extension's path, each run in a child process: the median time, the worst
/// memory growth.
fn extension(runs: Option<usize>) -> Result<(), BoxError> {
    use proteus_bench::extension::{
        EXTENSION_PREKEYS, EXTENSION_SESSIONS, EXTENSION_SESSIONS_LARGE, ExtensionResult,
        ExtensionSetup, drop_page_cache,
    };
    let runs = runs.unwrap_or(11);
    let exe = std::env::current_exe()?;
    for sessions in [EXTENSION_SESSIONS, EXTENSION_SESSIONS_LARGE] {
        let setup = ExtensionSetup::create(sessions)?;
        let mut results: Vec<ExtensionResult> = Vec::with_capacity(runs);
        let mut cold = true;
        for run in 0..runs {
            let (store, envelope) = setup.fresh(run)?;
            // PROTEUS_BENCH_WARM=1: the page cache left as it is (to tell the disk from the rest).
            cold &= std::env::var_os("PROTEUS_BENCH_WARM").is_none() && drop_page_cache();
            let output = Command::new(&exe)
                .arg("--extension-child")
                .arg(&store)
                .arg(&envelope)
                .arg(&setup.session_id)
                .output()?;
            if !output.status.success() {
                return Err(format!(
                    "the extension child failed ({}): {}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                )
                .into());
            }
            results.push(serde_json::from_slice(&output.stdout)?);
            std::fs::remove_file(&store)?;
        }
        let median = |f: fn(&ExtensionResult) -> f64| {
            let mut v: Vec<f64> = results.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let worst = results.iter().map(|r| r.rss_growth_mib).fold(0.0, f64::max);
        let session_id = setup.session_id.clone();
        setup.keep_if_asked();
        println!(
            "notification extension, {sessions} sessions and {} prekeys, {} (load average {}), \
             median of {runs}: {:.2} ms (open {:.2}, decrypt {:.2}, close {:.2}); peak memory \
             growth at most {worst:.2} MiB (message for {session_id})",
            EXTENSION_PREKEYS + 1,
            if cold {
                "page cache dropped"
            } else {
                "page cache NOT dropped (not root)"
            },
            proteus_bench::threads_ab::load_average(),
            median(|r| r.total_ms),
            median(|r| r.open_ms),
            median(|r| r.decrypt_ms),
            median(|r| r.close_ms),
        );
    }
    Ok(())
}

/// importCryptobox of issue 34's store: the median into each kind of store.
fn import(runs: Option<usize>) -> Result<(), BoxError> {
    let result = proteus_bench::import::measure(runs.unwrap_or(11))?;
    println!(
        "importCryptobox of {} sessions and {} prekeys, median of {} runs (load average {}): \
         into memory {:.1} ms, into a new SQLite store {:.1} ms",
        proteus_bench::import::SESSIONS,
        proteus_bench::import::PREKEYS + 1,
        result.memory.len(),
        proteus_bench::threads_ab::load_average(),
        median_ms(result.memory.iter().copied()),
        median_ms(result.sqlite.iter().copied())
    );
    Ok(())
}

/// The process's CPU time across an idle second before and after a batch.
fn idle(threads: usize) -> Result<(), BoxError> {
    let idle = proteus_bench::idle::measure(threads)?;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    println!(
        "batch threads {threads} ({} threads in the process), CPU time across 1 s idle \
         (load average {}): before any batch {:.3} ms (threads other than the measuring one: \
         {:.3} ms), after a 1000-message batch {:.3} ms ({:.3} ms)",
        idle.threads,
        proteus_bench::threads_ab::load_average(),
        ms(idle.before.0),
        ms(idle.before.1),
        ms(idle.after.0),
        ms(idle.after.1)
    );
    Ok(())
}

/// The worst case of a fast-forward: the median of each case.
fn fast_forward(runs: Option<usize>) -> Result<(), BoxError> {
    let result = proteus_bench::fast_forward::measure(runs.unwrap_or(MAX_RUNS))?;
    println!(
        "one message at a gap of {} (MAX_FAST_FORWARD), median of {} runs: forged (MAC fails) \
         {:.1} ms, genuine {:.1} ms",
        proteus_core::limits::MAX_FAST_FORWARD,
        result.forged.len(),
        median_ms(result.forged.iter().copied()),
        median_ms(result.genuine.iter().copied())
    );
    Ok(())
}
