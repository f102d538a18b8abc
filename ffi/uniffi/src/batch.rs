//! The queue and the results of `decryptBatch`, each crossing the boundary as one buffer.
//!
//! UniFFI lifts a `Vec<QueuedMessage>` into a vector of records (a `String` and a `Vec<u8>`
//! allocated for every message), and lowers a `Vec<BatchResult>` from records built for the
//! purpose (a hex id, a copy of the session id and of the plaintext each, freed again once
//! serialised).
//!
//! Kept against UniFFI's designed route (issue 33, item 4) for what it measurably saves. Paired
//! A/B, the 1000-message `decryptBatch` in memory with the builds alternating round by round
//! (docs/benchmarks.md, "Session 19: UniFFI converters", which has the commands; medians of
//! 101 runs, 2 cores at load average 10–17): plain `Vec<QueuedMessage>` and `Vec<BatchResult>`
//! records instead of these two types cost **+20%** in Kotlin (3.52 against 2.93 ms, 8 rounds,
//! each one slower; a second set of 6 rounds +8%) and **+11%** in Swift (7.20 against 6.64 ms,
//! 8 rounds, each one slower). Apart the two are near this machine's noise: the queue's records
//! alone +6% (Kotlin) and +3% (Swift), the results' alone +3% and +7%.
//!
//! [`QueuedMessages`] and [`BatchResults`] have the wire format and the type metadata of
//! `Vec<QueuedMessage>` and `Vec<BatchResult>` (as [`Bytes`](crate::Bytes) has those of
//! `Vec<u8>`), so Kotlin still sees `List<QueuedMessage>` and `List<BatchResult>`, and Swift
//! `[QueuedMessage]` and `[BatchResult]`, with the same generated code. But the queue is read in
//! place in the buffer it came in, and each result is written straight into the buffer that
//! goes out, from what the store hands the delivery callback.

use std::ops::Range;

use proteus_client::Decrypted;
use uniffi::{FfiConverter, Lift, Lower, MetadataBuffer, RustBuffer, TypeId};

use crate::kind::ErrorKind;

use crate::types::{BatchResult, QueuedMessage};

type Tag = crate::UniFfiTag;

/// Reads a big-endian `i32` length; a negative one is an error.
fn read_len(rest: &mut &[u8], what: &str) -> uniffi::Result<usize> {
    let Some((len, after)) = rest.split_first_chunk::<4>() else {
        uniffi::deps::anyhow::bail!("{what}: the length is cut off");
    };
    let len = i32::from_be_bytes(*len);
    let Ok(len) = usize::try_from(len) else {
        uniffi::deps::anyhow::bail!("{what}: negative length {len}");
    };
    *rest = after;
    Ok(len)
}

/// Writes a length as a big-endian `i32`. Lengths here are far below `i32::MAX` (messages are
/// at most 5 MiB); saturate rather than panic.
fn write_len(buf: &mut Vec<u8>, len: usize) {
    buf.extend_from_slice(&i32::try_from(len).unwrap_or(i32::MAX).to_be_bytes());
}

/// Writes a byte string or a UTF-8 string as UniFFI does inside a buffer: length, then bytes.
fn write_bytes(buf: &mut Vec<u8>, bytes: &[u8]) {
    write_len(buf, bytes.len());
    buf.extend_from_slice(bytes);
}

// --- the queue ---------------------------------------------------------------------------------

/// The queue of `decryptBatch` (Kotlin `List<QueuedMessage>`, Swift `[QueuedMessage]`), kept as
/// the one buffer it crossed in and read in place.
#[derive(Clone, Default)]
pub struct QueuedMessages {
    buf: Vec<u8>,
    /// Where each message's session id (checked to be UTF-8) and envelope lie in `buf`.
    messages: Vec<(Range<usize>, Range<usize>)>,
}

impl QueuedMessages {
    /// How many messages are queued.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }

    /// The bytes of the queue's wire form (an estimate of what its results take).
    pub(crate) fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// The messages as `(session id, envelope)`, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.messages.iter().map(|(id, envelope)| {
            // Both ranges were checked against the buffer, and the id as UTF-8, when the queue
            // was made: the fallbacks are never taken.
            let id = self.buf.get(id.clone()).unwrap_or_default();
            let envelope = self.buf.get(envelope.clone()).unwrap_or_default();
            (std::str::from_utf8(id).unwrap_or_default(), envelope)
        })
    }

    /// Finds the messages of a `Vec<QueuedMessage>`'s wire form at the start of `buf`: where
    /// they lie in `buf`, and how many bytes the queue takes.
    #[allow(clippy::type_complexity)]
    fn locate(buf: &[u8]) -> uniffi::Result<(Vec<(Range<usize>, Range<usize>)>, usize)> {
        let mut rest = buf;
        let count = read_len(&mut rest, "a queue")?;
        // Every message takes at least 8 bytes: refuse a count the buffer cannot hold before
        // reserving room for it.
        if count > rest.len() / 8 {
            uniffi::deps::anyhow::bail!("a queue of {count} messages in {} bytes", rest.len());
        }
        let mut messages = Vec::with_capacity(count);
        for _ in 0..count {
            let id = Self::field(buf, &mut rest, "a session id")?;
            if std::str::from_utf8(buf.get(id.clone()).unwrap_or_default()).is_err() {
                uniffi::deps::anyhow::bail!("a session id is not UTF-8");
            }
            let envelope = Self::field(buf, &mut rest, "an envelope")?;
            messages.push((id, envelope));
        }
        Ok((messages, buf.len() - rest.len()))
    }

    /// Takes a length-prefixed field off `rest`, a tail of `buf`; returns where its bytes lie
    /// in `buf`.
    fn field(buf: &[u8], rest: &mut &[u8], what: &str) -> uniffi::Result<Range<usize>> {
        let len = read_len(rest, what)?;
        let Some(after) = rest.get(len..) else {
            uniffi::deps::anyhow::bail!("{what} of {len} bytes is cut off");
        };
        let from = buf.len() - rest.len();
        *rest = after;
        Ok(from..from + len)
    }
}

impl From<Vec<QueuedMessage>> for QueuedMessages {
    fn from(queue: Vec<QueuedMessage>) -> Self {
        queue
            .iter()
            .map(|m| (m.session_id.as_str(), &*m.envelope))
            .collect()
    }
}

impl<'a> FromIterator<(&'a str, &'a [u8])> for QueuedMessages {
    fn from_iter<I: IntoIterator<Item = (&'a str, &'a [u8])>>(messages: I) -> Self {
        let mut queue = Self::default();
        for (id, envelope) in messages {
            write_len(&mut queue.buf, id.len());
            let id_at = queue.buf.len()..queue.buf.len() + id.len();
            queue.buf.extend_from_slice(id.as_bytes());
            write_len(&mut queue.buf, envelope.len());
            let envelope_at = queue.buf.len()..queue.buf.len() + envelope.len();
            queue.buf.extend_from_slice(envelope);
            queue.messages.push((id_at, envelope_at));
        }
        queue
    }
}

impl std::fmt::Debug for QueuedMessages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "QueuedMessages({} messages)", self.messages.len())
    }
}

// SAFETY: the FFI type is a `RustBuffer`, made with `RustBuffer::from_vec` and taken apart with
// `destroy_into_vec`, as UniFFI's converter for `Vec<QueuedMessage>` does; the serialised form is
// the one that converter reads and writes (a big-endian `i32` count, then per message the
// session id and the envelope, each a big-endian `i32` length and the bytes), and `TYPE_ID_META`
// is `Vec<QueuedMessage>`'s, so the generated Kotlin and Swift code agree. Reading checks every
// length against the bytes left and every session id for UTF-8.
#[allow(unsafe_code)]
unsafe impl FfiConverter<Tag> for QueuedMessages {
    type FfiType = RustBuffer;

    fn lower(obj: Self) -> RustBuffer {
        let mut buf = Vec::with_capacity(obj.buf.len().saturating_add(4));
        <Self as FfiConverter<Tag>>::write(obj, &mut buf);
        RustBuffer::from_vec(buf)
    }

    fn try_lift(v: RustBuffer) -> uniffi::Result<Self> {
        let buf = v.destroy_into_vec();
        let (messages, used) = Self::locate(&buf)?;
        if used != buf.len() {
            uniffi::deps::anyhow::bail!("{} bytes left after a queue", buf.len() - used);
        }
        Ok(Self { buf, messages })
    }

    fn write(obj: Self, buf: &mut Vec<u8>) {
        write_len(buf, obj.len());
        for (id, envelope) in obj.iter() {
            write_bytes(buf, id.as_bytes());
            write_bytes(buf, envelope);
        }
    }

    fn try_read(buf: &mut &[u8]) -> uniffi::Result<Self> {
        let (messages, used) = Self::locate(buf)?;
        let (queue, rest) = buf.split_at_checked(used).unwrap_or((buf, &[]));
        let queue = Self {
            buf: queue.to_vec(),
            messages,
        };
        *buf = rest;
        Ok(queue)
    }

    const TYPE_ID_META: MetadataBuffer =
        <Vec<QueuedMessage> as TypeId<crate::UniFfiTag>>::TYPE_ID_META;
}

uniffi::derive_ffi_traits!(local QueuedMessages);

// --- the results -------------------------------------------------------------------------------

/// Results of `decryptBatch` on their way to the `BatchDelivery` callback (Kotlin
/// `List<BatchResult>`, Swift `[BatchResult]`), already in the form that crosses: one buffer.
///
/// Rust code reads them with [`to_vec`](Self::to_vec).
#[derive(Clone)]
pub struct BatchResults {
    /// The wire form of a `Vec<BatchResult>`; its first 4 bytes (the count) are set on the way
    /// out.
    buf: Vec<u8>,
    count: usize,
}

impl Default for BatchResults {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl BatchResults {
    /// No results, with room for `bytes` of them.
    pub(crate) fn with_capacity(bytes: usize) -> Self {
        let mut buf = Vec::with_capacity(bytes.saturating_add(4));
        buf.extend_from_slice(&[0; 4]);
        Self { buf, count: 0 }
    }

    /// How many results there are.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds the result of one message, as `BatchResult` describes it.
    pub(crate) fn push(&mut self, decrypted: &Decrypted) {
        let id = decrypted.message_id.hex();
        let sender = decrypted.sender.map(|key| key.fingerprint());
        let outcome = match &decrypted.outcome {
            Ok(plaintext) => Ok(plaintext.as_slice()),
            Err(e) => Err((i32::from(e.code()), ErrorKind::of(e.error_code()))),
        };
        self.push_parts(
            &id,
            &decrypted.session_id,
            outcome,
            decrypted.is_already_seen(),
            sender.as_deref(),
        );
    }

    /// Adds a result: the fields of a `BatchResult` in their order, with one of `plaintext` or
    /// `error_code` and `error_kind`.
    fn push_parts(
        &mut self,
        message_id: &[u8],
        session_id: &str,
        outcome: Result<&[u8], (i32, ErrorKind)>,
        already_seen: bool,
        sender: Option<&str>,
    ) {
        let buf = &mut self.buf;
        write_bytes(buf, message_id);
        write_bytes(buf, session_id.as_bytes());
        match outcome {
            Ok(plaintext) => {
                buf.push(1);
                write_bytes(buf, plaintext);
                buf.extend_from_slice(&[0, 0]);
            }
            Err((code, kind)) => {
                buf.push(0);
                buf.push(1);
                buf.extend_from_slice(&code.to_be_bytes());
                buf.push(1);
                <ErrorKind as Lower<Tag>>::write(kind, buf);
            }
        }
        buf.push(u8::from(already_seen));
        write_option(buf, sender, |buf, sender| {
            write_bytes(buf, sender.as_bytes())
        });
        self.count += 1;
    }

    /// Adds a result given as a record (any shape, field by field).
    fn push_result(&mut self, r: &BatchResult) {
        let buf = &mut self.buf;
        write_bytes(buf, r.message_id.as_bytes());
        write_bytes(buf, r.session_id.as_bytes());
        write_option(buf, r.plaintext.as_deref(), write_bytes);
        write_option(buf, r.error_code, |buf, code| {
            buf.extend_from_slice(&code.to_be_bytes());
        });
        write_option(buf, r.error_kind, |buf, kind| {
            <ErrorKind as Lower<Tag>>::write(kind, buf);
        });
        buf.push(u8::from(r.already_seen));
        write_option(buf, r.sender.as_deref(), |buf, sender| {
            write_bytes(buf, sender.as_bytes());
        });
        self.count += 1;
    }

    /// The results as records.
    pub fn to_vec(&self) -> Vec<BatchResult> {
        let mut rest = self.buf.get(4..).unwrap_or_default();
        let mut out = Vec::with_capacity(self.count);
        for _ in 0..self.count {
            // Written by this type: always readable.
            let Ok(r) = <BatchResult as Lift<Tag>>::try_read(&mut rest) else {
                break;
            };
            out.push(r);
        }
        out
    }

    /// The wire form, with its count.
    fn finish(mut self) -> Vec<u8> {
        let count = i32::try_from(self.count).unwrap_or(i32::MAX).to_be_bytes();
        if let Some(head) = self.buf.first_chunk_mut::<4>() {
            *head = count;
        }
        self.buf
    }
}

/// Writes an `Option` as UniFFI does: a byte 0 or 1, then the value.
fn write_option<T>(buf: &mut Vec<u8>, value: Option<T>, write: impl FnOnce(&mut Vec<u8>, T)) {
    match value {
        None => buf.push(0),
        Some(v) => {
            buf.push(1);
            write(buf, v);
        }
    }
}

impl std::fmt::Debug for BatchResults {
    /// Only the count: the results hold plaintexts.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BatchResults({} results)", self.count)
    }
}

// SAFETY: the FFI type is a `RustBuffer`, made with `RustBuffer::from_vec` and taken apart with
// `destroy_into_vec`, as UniFFI's converter for `Vec<BatchResult>` does; the serialised form is
// the one that converter writes and the generated code reads (a big-endian `i32` count, then
// the fields of each record in order: strings and byte strings as a big-endian `i32` length and
// the bytes, options as a byte 0 or 1 and the value, `i32` big-endian, `bool` as a byte), which a
// test compares with UniFFI's own; `TYPE_ID_META` is `Vec<BatchResult>`'s. Reading goes through
// UniFFI's reader of `BatchResult`, which checks every length.
#[allow(unsafe_code)]
unsafe impl FfiConverter<Tag> for BatchResults {
    type FfiType = RustBuffer;

    fn lower(obj: Self) -> RustBuffer {
        RustBuffer::from_vec(obj.finish())
    }

    fn try_lift(v: RustBuffer) -> uniffi::Result<Self> {
        let vec = v.destroy_into_vec();
        let mut buf = vec.as_slice();
        let results = <Self as FfiConverter<Tag>>::try_read(&mut buf)?;
        if !buf.is_empty() {
            uniffi::deps::anyhow::bail!("{} bytes left after batch results", buf.len());
        }
        Ok(results)
    }

    fn write(obj: Self, buf: &mut Vec<u8>) {
        buf.extend_from_slice(&obj.finish());
    }

    fn try_read(buf: &mut &[u8]) -> uniffi::Result<Self> {
        let count = read_len(buf, "batch results")?;
        // Every result takes at least 12 bytes.
        if count > buf.len() / 12 {
            uniffi::deps::anyhow::bail!("{count} batch results in {} bytes", buf.len());
        }
        let mut results = Self::with_capacity(buf.len());
        for _ in 0..count {
            results.push_result(&<BatchResult as Lift<Tag>>::try_read(buf)?);
        }
        Ok(results)
    }

    const TYPE_ID_META: MetadataBuffer =
        <Vec<BatchResult> as TypeId<crate::UniFfiTag>>::TYPE_ID_META;
}

uniffi::derive_ffi_traits!(local BatchResults);

#[cfg(test)]
mod tests {
    use proteus_client::{ClientError, MessageId};
    use proteus_core::{DecryptError, IdentityKeyPair, OsRng};
    use uniffi::{Lift, Lower};

    use super::*;

    fn decrypted(i: u8, outcome: Result<Vec<u8>, ClientError>) -> Decrypted {
        Decrypted {
            message_id: MessageId::of(&[i; 7]),
            session_id: format!("sender-{i}"),
            outcome,
            sender: None,
        }
    }

    fn samples() -> Vec<Decrypted> {
        vec![
            decrypted(1, Ok(b"hello".to_vec())),
            decrypted(2, Ok(Vec::new())),
            decrypted(3, Err(ClientError::Decrypt(DecryptError::DuplicateMessage))),
            decrypted(4, Err(ClientError::Decrypt(DecryptError::OutdatedMessage))),
            decrypted(5, Err(ClientError::SessionNotFound("x".into()))),
            decrypted(6, Ok((0..=255).collect())),
            decrypted(
                7,
                Err(ClientError::Decrypt(DecryptError::MessageKeyEvicted)),
            ),
            Decrypted {
                sender: Some(*IdentityKeyPair::generate(&mut OsRng).public_key()),
                ..decrypted(8, Ok(b"first".to_vec()))
            },
        ]
    }

    #[test]
    fn results_are_written_as_uniffi_writes_the_records() {
        let samples = samples();
        let records: Vec<BatchResult> = samples.iter().map(BatchResult::of).collect();
        assert!(records[2].already_seen && records[3].already_seen && !records[4].already_seen);
        // An evicted key's message was never decrypted: not already seen.
        assert_eq!(
            (records[6].error_code, records[6].already_seen),
            (Some(214), false)
        );
        let mut ours = BatchResults::default();
        for d in &samples {
            ours.push(d);
        }
        assert_eq!(ours.len(), samples.len());
        assert_eq!(ours.to_vec(), records);
        let theirs = <Vec<BatchResult> as Lower<Tag>>::lower(records.clone()).destroy_into_vec();
        assert_eq!(ours.clone().finish(), theirs);
        // Lifted back (any shape of record), and written into a larger buffer.
        let lifted = <BatchResults as Lift<Tag>>::try_lift(RustBuffer::from_vec(theirs.clone()));
        assert_eq!(lifted.unwrap().to_vec(), records);
        let mut odd = records[0].clone();
        odd.error_code = Some(7);
        let mut odd_buf = Vec::new();
        <Vec<BatchResult> as Lower<Tag>>::write(vec![odd.clone()], &mut odd_buf);
        let mut read = odd_buf.as_slice();
        let odd_ours = <BatchResults as Lift<Tag>>::try_read(&mut read).unwrap();
        assert!(read.is_empty());
        assert_eq!(odd_ours.to_vec(), [odd]);
        let mut nested = vec![9];
        <BatchResults as Lower<Tag>>::write(ours, &mut nested);
        assert_eq!(nested.get(1..), Some(theirs.as_slice()));
    }

    #[test]
    fn the_queue_is_read_in_place_from_uniffis_form() {
        let queue: Vec<QueuedMessage> = (0..5u8)
            .map(|i| QueuedMessage {
                session_id: format!("peer-{i}-ü"),
                envelope: vec![i; usize::from(i) * 3].into(),
            })
            .collect();
        let wire = <Vec<QueuedMessage> as Lower<Tag>>::lower(queue.clone()).destroy_into_vec();
        let ours =
            <QueuedMessages as Lift<Tag>>::try_lift(RustBuffer::from_vec(wire.clone())).unwrap();
        let read: Vec<(&str, &[u8])> = ours.iter().collect();
        let expected: Vec<(&str, &[u8])> = queue
            .iter()
            .map(|m| (m.session_id.as_str(), &*m.envelope))
            .collect();
        assert_eq!(read, expected);
        assert_eq!(ours.len(), 5);
        // Written back, and made from records, it is the same bytes.
        assert_eq!(
            <QueuedMessages as Lower<Tag>>::lower(ours).destroy_into_vec(),
            wire
        );
        let made = QueuedMessages::from(queue.clone());
        assert_eq!(
            <QueuedMessages as Lower<Tag>>::lower(made).destroy_into_vec(),
            wire
        );
        // Read from inside a larger buffer: it takes its own bytes only.
        let mut longer = wire.clone();
        longer.push(42);
        let mut rest = longer.as_slice();
        let inner = <QueuedMessages as Lift<Tag>>::try_read(&mut rest).unwrap();
        assert_eq!(rest, [42]);
        assert_eq!(inner.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn damaged_queues_and_results_are_errors() {
        let one = <Vec<QueuedMessage> as Lower<Tag>>::lower(vec![QueuedMessage {
            session_id: "ab".into(),
            envelope: vec![1, 2, 3].into(),
        }])
        .destroy_into_vec();
        // Every truncation, a trailing byte, a huge or negative count, a non-UTF-8 id.
        let mut bad: Vec<Vec<u8>> = (0..one.len()).map(|n| one[..n].to_vec()).collect();
        bad.push([one.as_slice(), &[0]].concat());
        bad.push([&[0x7f, 0xff, 0xff, 0xff][..], &one[4..]].concat());
        bad.push([&[0xff, 0xff, 0xff, 0xff][..], &one[4..]].concat());
        let mut not_utf8 = one.clone();
        not_utf8[8] = 0xff;
        bad.push(not_utf8);
        let mut negative = one.clone();
        negative[4..8].copy_from_slice(&(-1i32).to_be_bytes());
        bad.push(negative);
        for b in bad {
            assert!(<QueuedMessages as Lift<Tag>>::try_lift(RustBuffer::from_vec(b)).is_err());
        }
        let results = <Vec<BatchResult> as Lower<Tag>>::lower(
            samples().iter().map(BatchResult::of).collect(),
        )
        .destroy_into_vec();
        for n in 0..results.len() {
            let cut = RustBuffer::from_vec(results[..n].to_vec());
            assert!(<BatchResults as Lift<Tag>>::try_lift(cut).is_err());
        }
    }
}
