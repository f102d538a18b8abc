//! "Decrypt 1000 queued messages" through the client of `proteus-client`: every scenario
//! (1x1000, 1x1000est, 50x20, conv10) on every store (memory, sqlite-batch, sqlite-per-message).
//!
//! Each iteration starts from fresh clients in the scenario's starting state (SQLite: a copy of
//! a prepared store file); only the workload is timed (`iter_custom`), see
//! `proteus_bench::run`. Bench ids are `client/<scenario>/<store>`; filter as usual, e.g.
//! `cargo bench -p proteus-bench --bench client_queue -- sqlite-batch`.

#![forbid(unsafe_code)]

use std::cell::Cell;
use std::error::Error;
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput};
use proteus_bench::BoxError;
use proteus_bench::run::Bench;
use proteus_bench::scenarios::ScenarioKind;
use proteus_bench::stores::StoreKind;

fn bench_client(c: &mut Criterion) -> Result<(), BoxError> {
    let failures = Cell::new(0usize);
    let mut group = c.benchmark_group("client");
    // One iteration is a whole queue (milliseconds to seconds), so sample iterations one at a
    // time: flat sampling, ten samples, and a longer measurement for the durable stores.
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500));
    for kind in ScenarioKind::ALL {
        let bench = Bench::new(kind, &StoreKind::ALL)?;
        group.throughput(Throughput::Elements(bench.messages() as u64));
        for store in StoreKind::ALL {
            group.measurement_time(match store {
                StoreKind::Memory => Duration::from_secs(3),
                StoreKind::SqliteBatch | StoreKind::SqliteEncrypted => Duration::from_secs(5),
                StoreKind::SqlitePerMessage => Duration::from_secs(10),
            });
            group.bench_function(format!("{kind}/{store}"), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        match bench.run_once(store) {
                            Ok(elapsed) => total += elapsed,
                            Err(e) => {
                                eprintln!("{kind}/{store}: {e}");
                                failures.set(failures.get() + 1);
                            }
                        }
                    }
                    total
                });
            });
        }
    }
    group.finish();
    match failures.get() {
        0 => Ok(()),
        n => Err(format!("{n} benchmark iterations failed").into()),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut criterion = Criterion::default().configure_from_args();
    bench_client(&mut criterion).map_err(|e| e as Box<dyn Error>)?;
    criterion.final_summary();
    Ok(())
}
