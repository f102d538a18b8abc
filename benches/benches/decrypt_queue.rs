//! The headline workload: a client comes back online and decrypts 1000 queued CipherMessages of
//! an established session, in memory. Also: encrypting 1000 messages.
//!
//! Setup (session establishment, encrypting the queue, restoring the session from its saved
//! bytes) is outside the timed part; the timed part decodes every envelope from its wire bytes
//! and decrypts it (or encrypts and encodes, for the second bench).

#![forbid(unsafe_code)]

use std::cell::Cell;
use std::collections::BTreeMap;
use std::error::Error;
use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use proteus_bench::{BoxError, decrypt_all, queue_of};
use proteus_core::{Envelope, OsRng};

const QUEUE_LEN: usize = 1000;

fn bench_queue(c: &mut Criterion) -> Result<(), BoxError> {
    let queue = queue_of(QUEUE_LEN)?;
    // Check once, outside the measurement, that the whole queue decrypts to what was sent.
    decrypt_all(&queue, &mut queue.restore_bob()?)?;

    let failures = Cell::new(0usize);
    let mut group = c.benchmark_group("queue");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(QUEUE_LEN as u64));

    group.bench_function("decrypt_1000", |b| {
        b.iter_batched_ref(
            || queue.restore_bob(),
            |restored| {
                let result = (|| -> Result<usize, BoxError> {
                    let session = restored.as_mut().map_err(|e| e.to_string())?;
                    let mut no_prekeys = BTreeMap::new();
                    let mut total = 0;
                    for wire in &queue.wire {
                        let envelope = Envelope::from_bytes(black_box(wire))?;
                        let plaintext =
                            session.decrypt(&mut OsRng, &queue.bob, &mut no_prekeys, &envelope)?;
                        total += black_box(plaintext).len();
                    }
                    Ok(total)
                })();
                if result.is_err() {
                    failures.set(failures.get() + 1);
                }
                result
            },
            BatchSize::PerIteration,
        );
    });

    group.bench_function("encrypt_1000", |b| {
        b.iter_batched_ref(
            || queue.restore_alice(),
            |restored| {
                let result = (|| -> Result<Vec<Vec<u8>>, BoxError> {
                    let session = restored.as_mut().map_err(|e| e.to_string())?;
                    queue
                        .plaintexts
                        .iter()
                        .map(|p| Ok(session.encrypt(black_box(p))?.to_bytes()))
                        .collect()
                })();
                if result.is_err() {
                    failures.set(failures.get() + 1);
                }
                result
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();

    match failures.get() {
        0 => Ok(()),
        n => Err(format!("{n} benchmark iterations failed").into()),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut criterion = Criterion::default().configure_from_args();
    bench_queue(&mut criterion).map_err(|e| e as Box<dyn Error>)?;
    criterion.final_summary();
    Ok(())
}
