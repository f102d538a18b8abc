//! The scale test: 10,000 to 100,000 queued messages over 1000 established sessions, decrypted
//! by a SQLite client in batches of [`SCALE_BATCH`] (one commit per batch).
//!
//! Setup ([`ScaleSetup::create`]) makes, once, the receiver's store (1000 sessions, each
//! established by a PreKeyMessage and a reply) and a queue file of CipherMessages delivered
//! round-robin over the senders, as a server hands out a backlog in arrival order. Each count is
//! then measured in a fresh child process ([`measure`]), so that its peak memory (`VmHWM`) is
//! its own: the child copies the store, reads the queue from the file one batch at a time (as an
//! app fetches a backlog page by page; reading is not timed) and times each `decrypt_batch`.

use std::fs::File;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proteus_client::{Client, QueuedMessage};
use serde::{Deserialize, Serialize};
use tempfile::TempDir;

use crate::memory::{current_rss_bytes, mib, peak_rss_bytes};
use crate::run::{check, outcomes, timed_batch};
use crate::scenarios::{BOB, SetupParty, sender_id};
use crate::stores::{Template, fresh_copy};
use crate::{BoxError, chat_plaintext};

/// How many sessions the queue is spread over.
pub const SCALE_SESSIONS: usize = 1000;
/// The queue lengths measured.
pub const SCALE_COUNTS: [usize; 3] = [10_000, 50_000, 100_000];
/// Messages per `decrypt_batch` call (and per commit).
pub const SCALE_BATCH: usize = 1000;

/// The receiver's store and the queue, made once and shared by every count.
pub struct ScaleSetup {
    template: Template,
    queue_dir: TempDir,
    sessions: usize,
    messages: usize,
}

impl ScaleSetup {
    /// Establishes `sessions` sessions with the receiver and queues `messages` messages,
    /// round-robin over the senders. `progress` hears what setup is doing.
    pub fn create(
        sessions: usize,
        messages: usize,
        mut progress: impl FnMut(&str),
    ) -> Result<Self, BoxError> {
        let start = Instant::now();
        let mut receiver = SetupParty::new()?;
        let bundles = receiver.add_prekeys(sessions)?;
        let mut senders = Vec::with_capacity(sessions);
        for (i, bundle) in bundles.iter().enumerate() {
            let mut sender = Client::in_memory()?;
            sender.create_session(BOB, bundle)?;
            let hello = sender.encrypt(BOB, b"hello")?;
            let id = sender_id(i);
            receiver.client.decrypt(&id, &hello)?;
            let reply = receiver.client.encrypt(&id, b"hi")?;
            sender.decrypt(BOB, &reply)?;
            senders.push(sender);
        }
        progress(&format!(
            "{sessions} sessions established in {:.1} s",
            start.elapsed().as_secs_f64()
        ));

        let start = Instant::now();
        let template = Template::create(&receiver.seed()?)?;
        drop(receiver);
        progress(&format!(
            "receiver store written in {:.1} s",
            start.elapsed().as_secs_f64()
        ));

        let start = Instant::now();
        let queue_dir = tempfile::Builder::new()
            .prefix("proteus-bench-scale-")
            .tempdir()?;
        let mut out = BufWriter::new(File::create(queue_dir.path().join(QUEUE_FILE))?);
        let mut position = 0;
        let mut bytes = 0;
        while position < messages {
            for (i, sender) in senders.iter_mut().enumerate() {
                if position == messages {
                    break;
                }
                let envelope = sender.encrypt(BOB, &chat_plaintext(position))?;
                write_record(&mut out, i, &envelope)?;
                bytes += envelope.len();
                position += 1;
            }
        }
        out.flush()?;
        progress(&format!(
            "{messages} messages ({:.1} MiB of envelopes) encrypted in {:.1} s",
            mib(bytes as u64),
            start.elapsed().as_secs_f64()
        ));
        Ok(Self {
            template,
            queue_dir,
            sessions,
            messages,
        })
    }

    /// The receiver's store file (copy it; do not open it).
    pub fn store_file(&self) -> PathBuf {
        self.template.path()
    }

    /// The queue file.
    pub fn queue_file(&self) -> PathBuf {
        self.queue_dir.path().join(QUEUE_FILE)
    }

    /// How many sessions.
    pub fn sessions(&self) -> usize {
        self.sessions
    }

    /// How many messages are queued (counts up to this can be measured).
    pub fn messages(&self) -> usize {
        self.messages
    }
}

const QUEUE_FILE: &str = "queue.bin";

/// A queue record: sender index (u32 LE), envelope length (u32 LE), envelope.
fn write_record(out: &mut impl Write, sender: usize, envelope: &[u8]) -> Result<(), BoxError> {
    out.write_all(&u32::try_from(sender)?.to_le_bytes())?;
    out.write_all(&u32::try_from(envelope.len())?.to_le_bytes())?;
    out.write_all(envelope)?;
    Ok(())
}

/// The next record, or `None` at the end of the file.
fn read_record(input: &mut impl Read) -> Result<Option<(usize, Vec<u8>)>, BoxError> {
    let mut header = [0u8; 8];
    match input.read_exact(&mut header) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let [s0, s1, s2, s3, l0, l1, l2, l3] = header;
    let sender = usize::try_from(u32::from_le_bytes([s0, s1, s2, s3]))?;
    let len = usize::try_from(u32::from_le_bytes([l0, l1, l2, l3]))?;
    let mut envelope = vec![0u8; len];
    input.read_exact(&mut envelope)?;
    Ok(Some((sender, envelope)))
}

/// What one count measured (one child process).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScaleResult {
    /// Messages decrypted.
    pub count: usize,
    /// Sessions they are spread over.
    pub sessions: usize,
    /// Messages per `decrypt_batch` (one commit each).
    pub batch: usize,
    /// Total time of the `decrypt_batch` calls, in milliseconds.
    pub total_ms: f64,
    /// Microseconds per message.
    pub us_per_msg: f64,
    /// Median time of one batch, in milliseconds.
    pub batch_median_ms: f64,
    /// Median time of one batch's commit (from its last delivery to the return of
    /// `decrypt_batch`), in milliseconds.
    pub commit_median_ms: f64,
    /// Mean time of the first tenth of the batches, in milliseconds (the first batch loads
    /// every session from the store).
    pub first_tenth_batch_ms: f64,
    /// Mean time of the last tenth of the batches, in milliseconds.
    pub last_tenth_batch_ms: f64,
    /// Peak resident memory of the process (`VmHWM`) once the store was open, before decrypting.
    pub start_peak_mib: f64,
    /// Peak resident memory of the process (`VmHWM`) after decrypting.
    pub peak_mib: f64,
    /// Resident memory (`VmRSS`) after decrypting, with every session cached.
    pub end_rss_mib: f64,
}

/// Decrypts the first `count` messages of `queue_file` on a fresh copy of `store_file`, in
/// batches of `batch`, checking every plaintext. Meant to run in a process of its own.
pub fn measure(
    store_file: &Path,
    queue_file: &Path,
    sessions: usize,
    count: usize,
    batch: usize,
) -> Result<ScaleResult, BoxError> {
    let mut fresh = fresh_copy(store_file)?;
    let ids: Vec<String> = (0..sessions).map(sender_id).collect();
    let mut input = BufReader::new(File::open(queue_file)?);
    let start_peak = peak_rss_bytes().unwrap_or(0);

    let mut batch_times = Vec::with_capacity(count.div_ceil(batch.max(1)));
    let mut commit_times = Vec::with_capacity(batch_times.capacity());
    let mut done = 0;
    while done < count {
        let take = batch.max(1).min(count - done);
        let mut records = Vec::with_capacity(take);
        for _ in 0..take {
            records.push(read_record(&mut input)?.ok_or("the queue file is too short")?);
        }
        let queue = records
            .iter()
            .map(|(sender, envelope)| {
                Ok(QueuedMessage {
                    session_id: ids.get(*sender).ok_or("sender index out of range")?,
                    envelope,
                })
            })
            .collect::<Result<Vec<_>, BoxError>>()?;

        let (results, elapsed, commit) = timed_batch(&mut fresh.client, &queue)?;
        batch_times.push(elapsed);
        commit_times.push(commit);

        let expected: Vec<Vec<u8>> = (done..done + take).map(chat_plaintext).collect();
        check(expected.iter(), outcomes(results))?;
        done += take;
    }
    let peak = peak_rss_bytes().unwrap_or(0);
    let end_rss = current_rss_bytes().unwrap_or(0);
    drop(fresh);

    let total: Duration = batch_times.iter().sum();
    let tenth = (batch_times.len() / 10).max(1);
    let mean_ms = |times: &[Duration]| {
        times.iter().map(|t| t.as_secs_f64() * 1e3).sum::<f64>() / times.len().max(1) as f64
    };
    let mut sorted: Vec<f64> = batch_times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
    sorted.sort_by(f64::total_cmp);
    let round = crate::stats::round3;
    Ok(ScaleResult {
        count,
        sessions,
        batch,
        total_ms: round(total.as_secs_f64() * 1e3),
        us_per_msg: round(total.as_secs_f64() * 1e6 / count.max(1) as f64),
        batch_median_ms: round(crate::stats::median(&sorted)),
        commit_median_ms: round(crate::stats::median_ms(commit_times)),
        first_tenth_batch_ms: round(mean_ms(batch_times.get(..tenth).unwrap_or(&[]))),
        last_tenth_batch_ms: round(mean_ms(
            batch_times
                .get(batch_times.len().saturating_sub(tenth)..)
                .unwrap_or(&[]),
        )),
        start_peak_mib: round(mib(start_peak)),
        peak_mib: round(mib(peak)),
        end_rss_mib: round(mib(end_rss)),
    })
}

/// A straight line through the results: total time = `fixed_ms` + `us_per_msg` × count.
#[derive(Debug, Clone, Serialize)]
pub struct LinearFit {
    /// The intercept: a cost that does not grow with the count (ms).
    pub fixed_ms: f64,
    /// The slope: the cost of each further message (µs).
    pub us_per_msg: f64,
    /// The largest distance of a result from the line, relative to its time (%).
    pub max_residual_pct: f64,
}

/// Least-squares fit of total time against count. Time is linear in the count when the
/// residuals are small.
pub fn linear_fit(results: &[ScaleResult]) -> LinearFit {
    let n = results.len().max(1) as f64;
    let mean_x = results.iter().map(|r| r.count as f64).sum::<f64>() / n;
    let mean_y = results.iter().map(|r| r.total_ms).sum::<f64>() / n;
    let sxx: f64 = results
        .iter()
        .map(|r| (r.count as f64 - mean_x).powi(2))
        .sum();
    let sxy: f64 = results
        .iter()
        .map(|r| (r.count as f64 - mean_x) * (r.total_ms - mean_y))
        .sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { f64::NAN };
    let intercept = mean_y - slope * mean_x;
    let max_residual = results
        .iter()
        .map(|r| ((intercept + slope * r.count as f64 - r.total_ms) / r.total_ms).abs() * 100.0)
        .fold(0.0, f64::max);
    let round = crate::stats::round3;
    LinearFit {
        fixed_ms: round(intercept),
        us_per_msg: round(slope * 1e3),
        max_residual_pct: round(max_residual),
    }
}
