//! Received messages: the backlog at start (with a progress bar and timings), pages that
//! arrive while online, each decrypted with the batch API and recorded before the engine
//! commits, then shown and acknowledged.

use std::collections::{HashMap, HashSet};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use proteus_client::{BatchError, Chunking, ClientError, QueuedMessage, claimed_sender};

use super::identity::{first_seen, is_identity_changed, pinned};
use super::records::{Held, Received};

/// Results handed to the chat (and the progress bar moved) this many at a time.
const PROGRESS_CHUNK: usize = 16;
use super::terminal::{printable, say};
use super::{Chat, ChatError, PAGE, PROGRESS_FROM, lock};
use crate::api::{self, QueuePage};

/// What a page of messages gave.
pub(super) struct Outcome {
    lines: Vec<String>,
    notes: Vec<String>,
    count: usize,
    /// Time spent writing the plaintexts to the chat's records.
    recording: Duration,
}

impl Chat {
    /// Fetches and decrypts everything queued while we were away, with a progress bar for a
    /// large backlog and the time it took. Returns the last sequence number seen.
    pub(super) async fn backlog(&mut self) -> Result<u64, ChatError> {
        let mut cursor = 0;
        let mut bar: Option<ProgressBar> = None;
        let (mut fetching, mut decrypting, mut recording) =
            (Duration::ZERO, Duration::ZERO, Duration::ZERO);
        let mut total = 0usize;
        let mut senders = HashSet::new();
        loop {
            let started = Instant::now();
            let page = match self.relay.fetch(cursor, PAGE, Duration::ZERO).await {
                Ok(page) => page,
                Err(e) => {
                    say(format!("! could not fetch queued messages: {e}"));
                    break;
                }
            };
            fetching += started.elapsed();
            let Some(last) = page.messages.last().map(|m| m.seq) else {
                self.top_up(page.prekeys_remaining, false).await;
                break;
            };
            let queued = page.messages.len() as u64 + page.remaining;
            if bar.is_none() && total == 0 && queued >= PROGRESS_FROM {
                let b = ProgressBar::new(queued);
                b.set_style(
                    ProgressStyle::with_template(
                        "{spinner} decrypting the backlog {bar:40} {pos}/{len} messages",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                bar = Some(b);
            }
            senders.extend(page.messages.iter().map(|m| m.from.clone()));
            let started = Instant::now();
            let outcome = self.process(&page, bar.as_ref(), total as u64)?;
            decrypting += started.elapsed();
            recording += outcome.recording;
            total += outcome.count;
            if let Some(b) = &bar {
                b.suspend(|| show(&outcome));
            } else {
                show(&outcome);
            }
            self.db.mark_shown()?;
            self.acknowledge(last).await;
            cursor = last;
            self.top_up(page.prekeys_remaining, false).await;
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        if total > 0 {
            say(format!(
                "* {total} queued message{} from {} sender{} decrypted in {:.1} ms with the batch API ({:.1} ms of it saving them to the chat's records; fetched in {:.1} ms)",
                if total == 1 { "" } else { "s" },
                senders.len(),
                if senders.len() == 1 { "" } else { "s" },
                decrypting.as_secs_f64() * 1e3,
                recording.as_secs_f64() * 1e3,
                fetching.as_secs_f64() * 1e3,
            ));
        }
        Ok(cursor)
    }

    /// A page that arrived while we are online.
    pub(super) async fn live(&mut self, page: QueuePage) -> Result<u64, ChatError> {
        let Some(last) = page.messages.last().map(|m| m.seq) else {
            return Ok(0);
        };
        let outcome = self.process(&page, None, 0)?;
        show(&outcome);
        self.db.mark_shown()?;
        self.acknowledge(last).await;
        self.top_up(page.prekeys_remaining, false).await;
        Ok(last)
    }

    pub(super) async fn acknowledge(&self, up_to: u64) {
        // A failed ack only means the same envelopes come again: they are dropped by id.
        if let Err(e) = self.relay.ack(up_to).await {
            say(format!(
                "! could not acknowledge messages at the relay: {e}"
            ));
        }
    }

    /// Decrypts a page with the batch API. The plaintexts are recorded in the chat's records
    /// by message id in the batch's last `deliver` call, i.e. before the engine commits; lines
    /// already recorded (a re-delivery) are dropped.
    pub(super) fn process(
        &mut self,
        page: &QueuePage,
        bar: Option<&ProgressBar>,
        offset: u64,
    ) -> Result<Outcome, ChatError> {
        let mut notes = Vec::new();
        let mut envelopes = Vec::with_capacity(page.messages.len());
        for m in &page.messages {
            match api::unb64(&m.envelope) {
                Some(e) if api::valid_name(&m.from) => envelopes.push((m.from.clone(), e)),
                _ => notes.push(format!(
                    "! the relay sent a malformed message (#{}); dropped",
                    m.seq
                )),
            }
        }
        self.decrypt(&envelopes, bar, offset, notes)
    }

    pub(super) fn decrypt(
        &mut self,
        envelopes: &[(String, Vec<u8>)],
        bar: Option<&ProgressBar>,
        offset: u64,
        mut notes: Vec<String>,
    ) -> Result<Outcome, ChatError> {
        let queue: Vec<QueuedMessage<'_>> = envelopes
            .iter()
            .map(|(from, envelope)| QueuedMessage {
                session_id: from,
                envelope,
            })
            .collect();
        // Who had no pinned identity before: a session made now is a first sight.
        let mut unpinned = HashSet::new();
        for (from, envelope) in envelopes {
            if !unpinned.contains(from)
                && matches!(claimed_sender(envelope), Ok(Some(_)))
                && pinned(&mut self.client(), from)?.is_none()
            {
                unpinned.insert(from.clone());
            }
        }
        let mut held = Vec::new();
        let mut handed = 0;
        let mut received = Vec::new();
        let mut fresh = Vec::new();
        let mut recording = Duration::ZERO;
        // The identity each new session's first message named (the engine's decrypt result).
        let mut senders = HashMap::new();
        let client = self.client.clone();
        let mut client = lock(&client);
        let db = &mut self.db;
        let result = client.decrypt_batch_chunked(
            &queue,
            Chunking::every(PROGRESS_CHUNK),
            |chunk, progress| {
                for d in chunk {
                    let index = handed;
                    handed += 1;
                    if let Some(sender) = &d.sender {
                        senders.insert(d.session_id.clone(), sender.fingerprint());
                    }
                    match &d.outcome {
                        // Another identity than the pinned one: held, unread, until /accept.
                        Err(e) if is_identity_changed(e) => {
                            if let (Some(sender), Some((_, envelope))) =
                                (&d.sender, envelopes.get(index))
                            {
                                held.push(Held {
                                    from: d.session_id.clone(),
                                    fingerprint: sender.fingerprint(),
                                    envelope: envelope.clone(),
                                });
                            }
                        }
                        Ok(plaintext) => received.push(Received {
                            id: d.message_id,
                            from: d.session_id.clone(),
                            text: String::from_utf8_lossy(plaintext).into_owned(),
                        }),
                        Err(_) if d.is_already_seen() => {}
                        Err(e) => notes.push(format!(
                            "! a message from {} could not be decrypted: {e} ({} {}){}",
                            d.session_id,
                            e.kind(),
                            e.code(),
                            if matches!(e, ClientError::SessionNotFound(_)) {
                                format!("; {} may have to /reset the session", d.session_id)
                            } else {
                                String::new()
                            }
                        )),
                    }
                }
                if let Some(bar) = bar {
                    bar.set_position(offset + progress.done as u64);
                }
                if progress.done == progress.total {
                    // Before the engine commits: the plaintexts must be safe first.
                    let started = Instant::now();
                    fresh = db.record_batch(&received)?;
                    recording = started.elapsed();
                }
                Ok::<_, rusqlite::Error>(ControlFlow::Continue(()))
            },
        );
        match result {
            Ok(_) => {}
            Err(BatchError::Client(e)) => return Err(e.into()),
            Err(BatchError::Delivery(e)) => return Err(e.into()),
        }

        // The engine pinned first-seen identities: say so.
        let mut seen = HashSet::new();
        for m in &received {
            if seen.insert(m.from.clone())
                && unpinned.contains(&m.from)
                && let Some(fingerprint) = senders.remove(&m.from)
            {
                notes.push(first_seen(&m.from, &fingerprint));
            }
        }
        drop(client);
        notes.extend(self.hold(&held)?);
        let lines = received
            .iter()
            .zip(fresh.iter().chain(std::iter::repeat(&false)))
            .filter(|(_, fresh)| **fresh)
            .map(|(m, _)| format!("{}: {}", m.from, printable(&m.text)))
            .collect();
        Ok(Outcome {
            lines,
            notes,
            count: envelopes.len(),
            recording,
        })
    }
}

/// Prints the notes of a page, then its lines.
pub(super) fn show(outcome: &Outcome) {
    for l in outcome.notes.iter().chain(&outcome.lines) {
        say(l);
    }
}
