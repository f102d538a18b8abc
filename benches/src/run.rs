//! One timed run of a scenario on a store, shared by the criterion bench and the runner.
//!
//! [`Bench::run_once`] creates fresh clients in the scenario's starting state (not timed), times
//! the workload through the client API, and then checks every plaintext (not timed). Closing
//! the stores and deleting their files happen after the timed part too.

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use proteus_client::{Client, Decrypted, QueuedMessage};

use crate::BoxError;
use crate::fanout::{self, FanOut};
use crate::scenarios::{ALICE, BOB, Queued, Scenario, ScenarioKind, Workload, queued_messages};
use crate::stores::{ClientSource, StoreKind};

/// The plaintexts (or why not) of a queue, in queue order.
pub type Outcomes = Vec<Result<Vec<u8>, BoxError>>;

/// The times of one run.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    /// The whole timed part.
    pub total: Duration,
    /// Of which: encrypting, with its commits (the conversation only).
    pub encrypt: Duration,
    /// Of which: from the last delivery to the return of `decrypt_batch`, i.e. building the
    /// writes and committing them (batched stores only; summed over batches).
    pub batch_commit: Option<Duration>,
}

enum Prepared {
    Queue {
        receiver: ClientSource,
        messages: Vec<Queued>,
    },
    Conversation {
        alice: ClientSource,
        bob: ClientSource,
        plaintexts: Vec<Vec<u8>>,
        flip_every: usize,
    },
    FanOut {
        sender: ClientSource,
        fan_out: FanOut,
    },
}

/// A built scenario with its SQLite templates, ready for any number of runs.
pub struct Bench {
    kind: ScenarioKind,
    prepared: Prepared,
}

impl Bench {
    /// Builds the scenario and, if any of `stores` is SQLite, its template store files.
    pub fn new(kind: ScenarioKind, stores: &[StoreKind]) -> Result<Self, BoxError> {
        let sqlite = stores.iter().any(|s| s.is_sqlite());
        let prepared = match Scenario::build(kind)?.workload {
            Workload::Queue { receiver, messages } => Prepared::Queue {
                receiver: ClientSource::new(receiver, sqlite)?,
                messages,
            },
            Workload::Conversation {
                alice,
                bob,
                plaintexts,
                flip_every,
            } => Prepared::Conversation {
                alice: ClientSource::new(alice, sqlite)?,
                bob: ClientSource::new(bob, sqlite)?,
                plaintexts,
                flip_every,
            },
            Workload::FanOut { sender, fan_out } => Prepared::FanOut {
                sender: ClientSource::new(sender, sqlite)?,
                fan_out,
            },
        };
        Ok(Self { kind, prepared })
    }

    /// The scenario.
    pub fn kind(&self) -> ScenarioKind {
        self.kind
    }

    /// How many messages one run decrypts (encrypts, for fan-out).
    pub fn messages(&self) -> usize {
        match &self.prepared {
            Prepared::Queue { messages, .. } => messages.len(),
            Prepared::Conversation { plaintexts, .. } => plaintexts.len(),
            Prepared::FanOut { fan_out, .. } => fan_out.recipients.len(),
        }
    }

    /// One run on `store`: the duration of the timed part. Fails if any message does not
    /// decrypt to what was sent.
    pub fn run_once(&self, store: StoreKind) -> Result<Duration, BoxError> {
        Ok(self.run_timed(store)?.total)
    }

    /// One run on `store`, with the time split into phases.
    pub fn run_timed(&self, store: StoreKind) -> Result<Timing, BoxError> {
        match &self.prepared {
            Prepared::Queue { receiver, messages } => {
                let mut fresh = receiver.fresh(store)?;
                let queue = queued_messages(messages);
                let (timing, plaintexts) = decrypt_queue(&mut fresh.client, &queue, store)?;
                check(messages.iter().map(|m| &m.plaintext), plaintexts)?;
                Ok(timing)
            }
            Prepared::Conversation {
                alice,
                bob,
                plaintexts,
                flip_every,
            } => {
                let mut alice = alice.fresh(store)?;
                let mut bob = bob.fresh(store)?;
                conversation(
                    &mut alice.client,
                    &mut bob.client,
                    plaintexts,
                    *flip_every,
                    store,
                )
            }
            Prepared::FanOut { sender, fan_out } => {
                let mut fresh = sender.fresh(store)?;
                let recipients: Vec<&str> = fan_out.recipients.iter().map(String::as_str).collect();
                // A send before the timed one: the sessions are cached, as in an app that has
                // written to this conversation since it started.
                fresh.client.encrypt_for(&recipients, b"warm")?;
                let start = Instant::now();
                let envelopes =
                    fanout::send(&mut fresh.client, &recipients, &fan_out.plaintext, store)?;
                let total = start.elapsed();
                fanout::check(fan_out, &envelopes)?;
                Ok(Timing {
                    total,
                    encrypt: total,
                    batch_commit: None,
                })
            }
        }
    }
}

/// Decrypts `queue` as `store` says (one batch, or one commit per message) and times it. The
/// plaintexts (or errors) come back in queue order for checking.
pub fn decrypt_queue(
    client: &mut Client,
    queue: &[QueuedMessage<'_>],
    store: StoreKind,
) -> Result<(Timing, Outcomes), BoxError> {
    if store.batched() {
        let (results, total, commit) = timed_batch(client, queue)?;
        let timing = Timing {
            total,
            encrypt: Duration::ZERO,
            batch_commit: Some(commit),
        };
        Ok((timing, outcomes(results)))
    } else {
        let mut results = Vec::with_capacity(queue.len());
        let start = Instant::now();
        for message in queue {
            results.push(client.decrypt(message.session_id, message.envelope));
        }
        let total = start.elapsed();
        let results = results
            .into_iter()
            .map(|r| r.map_err(BoxError::from))
            .collect();
        let timing = Timing {
            total,
            ..Timing::default()
        };
        Ok((timing, results))
    }
}

/// `decrypt_batch` with its time, and the time from the last delivery to its return (the
/// commit: building the writes and the store's transaction).
pub fn timed_batch(
    client: &mut Client,
    queue: &[QueuedMessage<'_>],
) -> Result<(Vec<Decrypted>, Duration, Duration), BoxError> {
    let start = Instant::now();
    let mut last_delivery = start;
    let results = client.decrypt_batch(queue, |_, progress| {
        // The clock is read at the last delivery only: a read for every message (about 20 ns
        // each) was the bench's own work inside the timed part, which the peer's loop has not.
        if progress.done == progress.total {
            last_delivery = Instant::now();
        }
        ControlFlow::Continue(())
    })?;
    let end = Instant::now();
    Ok((
        results,
        end.duration_since(start),
        end.duration_since(last_delivery),
    ))
}

/// The plaintexts (or errors) of a batch.
pub fn outcomes(results: Vec<Decrypted>) -> Outcomes {
    results
        .into_iter()
        .map(|d| d.outcome.map_err(BoxError::from))
        .collect()
}

/// Checks that every message decrypted to what was sent.
pub fn check<'e>(
    expected: impl ExactSizeIterator<Item = &'e Vec<u8>>,
    got: Outcomes,
) -> Result<(), BoxError> {
    if expected.len() != got.len() {
        return Err(format!("{} results for {} messages", got.len(), expected.len()).into());
    }
    for (i, (expected, got)) in expected.zip(got).enumerate() {
        match got {
            Ok(plaintext) if plaintext == *expected => {}
            Ok(_) => return Err(format!("message {i} decrypted to something else").into()),
            Err(e) => return Err(format!("message {i} was rejected: {e}").into()),
        }
    }
    Ok(())
}

/// The timed conversation: blocks of `flip_every` messages, Alice's first, each encrypted by its
/// sender and then decrypted by the other side, batched or one commit per message as `store`
/// says. Every plaintext is checked as it arrives (a comparison of 200 bytes, inside the timed
/// part).
pub fn conversation(
    alice: &mut Client,
    bob: &mut Client,
    plaintexts: &[Vec<u8>],
    flip_every: usize,
    store: StoreKind,
) -> Result<Timing, BoxError> {
    let mut encrypt = Duration::ZERO;
    let mut commit = Duration::ZERO;
    let start = Instant::now();
    for (block_index, block) in plaintexts.chunks(flip_every.max(1)).enumerate() {
        let (sender, to, receiver, from) = if block_index % 2 == 0 {
            (&mut *alice, BOB, &mut *bob, ALICE)
        } else {
            (&mut *bob, ALICE, &mut *alice, BOB)
        };
        let encrypt_start = Instant::now();
        // Batched stores encrypt a block with one commit, per-message stores commit each.
        let envelopes = if store.batched() {
            let messages: Vec<(&str, &[u8])> = block.iter().map(|p| (to, p.as_slice())).collect();
            sender.encrypt_batch(&messages)?
        } else {
            block
                .iter()
                .map(|p| sender.encrypt(to, p))
                .collect::<Result<Vec<_>, _>>()?
        };
        encrypt += encrypt_start.elapsed();
        let queue: Vec<QueuedMessage<'_>> = envelopes
            .iter()
            .map(|envelope| QueuedMessage {
                session_id: from,
                envelope,
            })
            .collect();
        let got = if store.batched() {
            let (results, _, batch_commit) = timed_batch(receiver, &queue)?;
            commit += batch_commit;
            outcomes(results)
        } else {
            queue
                .iter()
                .map(|m| {
                    receiver
                        .decrypt(m.session_id, m.envelope)
                        .map_err(BoxError::from)
                })
                .collect()
        };
        check(block.iter(), got)?;
    }
    Ok(Timing {
        total: start.elapsed(),
        encrypt,
        batch_commit: store.batched().then_some(commit),
    })
}
