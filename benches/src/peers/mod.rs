//! `--peers`: ours and another engine a user could pick, on the same scenarios, in one process.
//!
//! The peer is vodozemac (Matrix's Olm in Rust, [`olm`]). Runs alternate — ours, the peer,
//! ours, … — after one untimed run of each, so that a change of the machine's load falls on
//! both. Output: one JSON line per (implementation, scenario), then one line of ratios (the
//! peer's median over ours: above 1 means ours is faster), or the same as a table.

pub mod olm;

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use self::olm::OlmBench;
use crate::BoxError;
use crate::run::Bench;
use crate::scenarios::ScenarioKind;
use crate::stats::{Summary, round3};
use crate::stores::StoreKind;

/// The peer's name in reports.
pub const PEER: &str = "vodozemac";
/// Its version, as `benches/Cargo.toml` pins it.
pub const PEER_VERSION: &str = "0.11.1";

/// Default pairs of runs: up to this many...
const MAX_PAIRS: usize = 15;
/// ...but at least this many...
const MIN_PAIRS: usize = 3;
/// ...stopping once a scenario has taken this long.
const BUDGET: Duration = Duration::from_secs(4);

/// One implementation on one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Line {
    /// `ours` or [`PEER`].
    #[serde(rename = "impl")]
    pub implementation: String,
    /// The implementation's version.
    pub version: String,
    /// The runs: scenario, store (`memory` for ours; `none` for the peer, which persists
    /// nothing), median, min, max, count.
    #[serde(flatten)]
    pub summary: Summary,
}

/// Runs every scenario in `scenarios` on ours (in `store`) and on the peer, and prints the
/// results as JSON lines (`json`) or a table.
pub fn run(
    scenarios: &[ScenarioKind],
    store: StoreKind,
    runs: Option<usize>,
    json: bool,
) -> Result<(), BoxError> {
    if !json {
        println!(
            "Ours ({store} store) and {PEER} {PEER_VERSION} (Olm, nothing persisted), runs \
             alternating; ratio = {PEER} median / ours median (above 1: ours is faster)"
        );
        println!(
            "{:<10} {:<10} {:>10} {:>10} {:>10} {:>5}",
            "scenario", "impl", "median ms", "min ms", "max ms", "runs"
        );
    }
    let mut ratios = Map::new();
    for &kind in scenarios {
        let ours = Bench::new(kind, &[store])?;
        let peer = OlmBench::new(kind)?;
        let (ours_times, peer_times) = alternate(&ours, store, &peer, runs)?;
        let ours = Line {
            implementation: "ours".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            summary: Summary::of(kind.name(), store.name(), &ours_times),
        };
        let peer = Line {
            implementation: PEER.to_owned(),
            version: PEER_VERSION.to_owned(),
            summary: Summary::of(kind.name(), "none", &peer_times),
        };
        let ratio = round3(peer.summary.median_ms / ours.summary.median_ms);
        ratios.insert(kind.name().to_owned(), json!(ratio));
        for line in [&ours, &peer] {
            if json {
                println!("{}", serde_json::to_string(line)?);
            } else {
                let s = &line.summary;
                println!(
                    "{:<10} {:<10} {:>10.3} {:>10.3} {:>10.3} {:>5}",
                    s.scenario, line.implementation, s.median_ms, s.min_ms, s.max_ms, s.runs
                );
            }
        }
    }
    if json {
        let summary = json!({
            "ratios": Value::Object(ratios),
            "ratio": format!("{PEER} median / ours median"),
        });
        println!("{summary}");
    } else {
        for (name, ratio) in &ratios {
            println!("{name}: {PEER} takes {ratio}x the time of ours");
        }
    }
    Ok(())
}

/// One untimed run of each, then pairs of runs (ours first): `runs` pairs, or by default up to
/// [`MAX_PAIRS`], stopping after [`BUDGET`] once there are [`MIN_PAIRS`].
fn alternate(
    ours: &Bench,
    store: StoreKind,
    peer: &OlmBench,
    runs: Option<usize>,
) -> Result<(Vec<Duration>, Vec<Duration>), BoxError> {
    let name = ours.kind();
    let ours_once = || {
        ours.run_once(store)
            .map_err(|e| BoxError::from(format!("{name} (ours): {e}")))
    };
    let peer_once = || {
        peer.run_once()
            .map_err(|e| BoxError::from(format!("{name} ({PEER}): {e}")))
    };
    ours_once()?;
    peer_once()?;
    let started = Instant::now();
    let (mut ours_times, mut peer_times) = (Vec::new(), Vec::new());
    loop {
        ours_times.push(ours_once()?);
        peer_times.push(peer_once()?);
        let done = ours_times.len();
        let enough = match runs {
            Some(n) => done >= n,
            None => done >= MAX_PAIRS || (done >= MIN_PAIRS && started.elapsed() >= BUDGET),
        };
        if enough {
            return Ok((ours_times, peer_times));
        }
    }
}
