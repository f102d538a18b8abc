//! A small CBOR codec for exactly what Proteus uses.
//!
//! We write our own rather than use a general CBOR crate because the wire needs two things at once
//! that those crates do not give together: the encoder must produce *canonical* bytes (definite,
//! minimal lengths, ascending integer keys; docs/protocol.md §3.1), and the decoder must be lenient
//! about key order and unknown keys while bounding every length and nesting depth and handing out
//! borrowed slices (so the envelope MAC is checked over the exact bytes received and ciphertexts
//! are not copied). Proteus needs only unsigned integers, byte strings, arrays, maps and `null`.

use zeroize::Zeroize;

use crate::error::DecodeError;
use crate::limits::{MAX_ARRAY_LEN, MAX_BYTES_LEN, MAX_MAP_LEN, MAX_NESTING_DEPTH};

const MAJOR_UINT: u8 = 0;
const MAJOR_NEGINT: u8 = 1;
const MAJOR_BYTES: u8 = 2;
const MAJOR_TEXT: u8 = 3;
const MAJOR_ARRAY: u8 = 4;
const MAJOR_MAP: u8 = 5;
const MAJOR_TAG: u8 = 6;
const MAJOR_SIMPLE: u8 = 7;
const NULL: u8 = 0xf6;

/// Canonical CBOR writer.
///
/// What it writes can hold secret keys (sessions, key pairs), so its buffer grows without
/// leaving copies in freed memory: the old buffer is wiped after the move.
#[derive(Default)]
pub(crate) struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self {
            buf: Vec::with_capacity(capacity),
        }
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    fn reserve(&mut self, additional: usize) {
        let needed = self.buf.len().saturating_add(additional);
        if needed > self.buf.capacity() {
            let mut grown = Vec::with_capacity(needed.max(self.buf.capacity().saturating_mul(2)));
            grown.extend_from_slice(&self.buf);
            std::mem::replace(&mut self.buf, grown).zeroize();
        }
    }

    fn put(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    fn head(&mut self, major: u8, value: u64) {
        let m = major << 5;
        // Preferred (shortest) encoding of the argument, as RFC 8949 §4.2.1 requires.
        if value < 24 {
            self.put(&[m | value as u8]);
        } else if value <= u64::from(u8::MAX) {
            self.put(&[m | 24, value as u8]);
        } else if value <= u64::from(u16::MAX) {
            self.put(&[m | 25]);
            self.put(&(value as u16).to_be_bytes());
        } else if value <= u64::from(u32::MAX) {
            self.put(&[m | 26]);
            self.put(&(value as u32).to_be_bytes());
        } else {
            self.put(&[m | 27]);
            self.put(&value.to_be_bytes());
        }
    }

    pub(crate) fn u64(&mut self, value: u64) -> &mut Self {
        self.head(MAJOR_UINT, value);
        self
    }

    pub(crate) fn bytes(&mut self, value: &[u8]) -> &mut Self {
        self.head(MAJOR_BYTES, value.len() as u64);
        self.put(value);
        self
    }

    pub(crate) fn map(&mut self, entries: usize) -> &mut Self {
        self.head(MAJOR_MAP, entries as u64);
        self
    }

    pub(crate) fn array(&mut self, len: usize) -> &mut Self {
        self.head(MAJOR_ARRAY, len as u64);
        self
    }

    pub(crate) fn null(&mut self) -> &mut Self {
        self.put(&[NULL]);
        self
    }

    /// A map entry key (keys are small unsigned integers).
    pub(crate) fn key(&mut self, key: u8) -> &mut Self {
        self.u64(u64::from(key))
    }

    /// `{0: bstr}`: the wrapper Proteus puts around keys, MACs and signatures.
    pub(crate) fn wrapped_bytes(&mut self, value: &[u8]) -> &mut Self {
        self.map(1).key(0).bytes(value)
    }
}

/// Bounded, borrowing CBOR reader.
pub(crate) struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Decoder<'a> {
    pub(crate) fn new(input: &'a [u8]) -> Self {
        Self { input, pos: 0 }
    }

    /// The bytes not yet consumed.
    pub(crate) fn remaining(&self) -> &'a [u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// Fails unless every byte of the input was consumed.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.pos == self.input.len() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes)
        }
    }

    fn byte(&mut self) -> Result<u8, DecodeError> {
        let b = *self.input.get(self.pos).ok_or(DecodeError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self.pos.checked_add(n).ok_or(DecodeError::Truncated)?;
        let slice = self
            .input
            .get(self.pos..end)
            .ok_or(DecodeError::Truncated)?;
        self.pos = end;
        Ok(slice)
    }

    fn peek(&self) -> Result<u8, DecodeError> {
        self.input
            .get(self.pos)
            .copied()
            .ok_or(DecodeError::Truncated)
    }

    /// Reads an item head: (major type, argument). Indefinite lengths are rejected.
    fn head(&mut self) -> Result<(u8, u64), DecodeError> {
        let initial = self.byte()?;
        let major = initial >> 5;
        let info = initial & 0x1f;
        let value = match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.byte()?),
            25 => u64::from(u16::from_be_bytes(self.array_of::<2>()?)),
            26 => u64::from(u32::from_be_bytes(self.array_of::<4>()?)),
            27 => u64::from_be_bytes(self.array_of::<8>()?),
            _ => return Err(DecodeError::UnsupportedCbor),
        };
        Ok((major, value))
    }

    fn array_of<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    // Inlined into each typed reader, which decoding an envelope calls a dozen times; the web
    // build's size-tuned inline threshold would keep it out of line (about 1% of a wasm batch).
    #[inline]
    fn expect(&mut self, major: u8) -> Result<u64, DecodeError> {
        let (m, v) = self.head()?;
        if m == major {
            Ok(v)
        } else {
            Err(DecodeError::UnexpectedType)
        }
    }

    pub(crate) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.expect(MAJOR_UINT)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, DecodeError> {
        u32::try_from(self.u64()?).map_err(|_| DecodeError::IntegerOutOfRange)
    }

    pub(crate) fn u16(&mut self) -> Result<u16, DecodeError> {
        u16::try_from(self.u64()?).map_err(|_| DecodeError::IntegerOutOfRange)
    }

    pub(crate) fn u8(&mut self) -> Result<u8, DecodeError> {
        u8::try_from(self.u64()?).map_err(|_| DecodeError::IntegerOutOfRange)
    }

    /// A byte string, borrowed from the input.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], DecodeError> {
        let len = self.expect(MAJOR_BYTES)?;
        let len = usize::try_from(len).map_err(|_| DecodeError::LimitExceeded("byte string"))?;
        if len > MAX_BYTES_LEN {
            return Err(DecodeError::LimitExceeded("byte string"));
        }
        self.take(len)
    }

    /// A byte string of exactly `N` bytes.
    pub(crate) fn fixed<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let b = self.bytes()?;
        <[u8; N]>::try_from(b).map_err(|_| DecodeError::InvalidLength {
            field,
            expected: N,
            actual: b.len(),
        })
    }

    /// `{0: bstr(N)}`, the wrapper around keys and MACs. Unknown keys are skipped.
    pub(crate) fn wrapped<const N: usize>(
        &mut self,
        field: &'static str,
    ) -> Result<[u8; N], DecodeError> {
        let mut value = None;
        let mut seen = Seen::default();
        for _ in 0..self.map()? {
            match seen.key(self)? {
                0 => value = Some(self.fixed::<N>(field)?),
                _ => self.skip()?,
            }
        }
        value.ok_or(DecodeError::MissingField(field))
    }

    /// A map head; returns the number of entries.
    pub(crate) fn map(&mut self) -> Result<usize, DecodeError> {
        let n = self.expect(MAJOR_MAP)?;
        self.bounded_count(n, MAX_MAP_LEN, 2, "map")
    }

    /// An array head; returns the number of elements.
    pub(crate) fn array(&mut self) -> Result<usize, DecodeError> {
        let n = self.expect(MAJOR_ARRAY)?;
        self.bounded_count(n, MAX_ARRAY_LEN, 1, "array")
    }

    /// Checks a claimed element count against the limit and against the bytes that are left
    /// (every element takes at least `min_item_len` bytes), so a claim never sizes an allocation.
    fn bounded_count(
        &self,
        n: u64,
        limit: usize,
        min_item_len: usize,
        what: &'static str,
    ) -> Result<usize, DecodeError> {
        let n = usize::try_from(n).map_err(|_| DecodeError::LimitExceeded(what))?;
        if n > limit {
            return Err(DecodeError::LimitExceeded(what));
        }
        let remaining = self.input.len().saturating_sub(self.pos);
        if n.saturating_mul(min_item_len) > remaining {
            return Err(DecodeError::Truncated);
        }
        Ok(n)
    }

    /// Consumes a `null` if one is next; returns whether it did.
    pub(crate) fn null(&mut self) -> Result<bool, DecodeError> {
        if self.peek()? == NULL {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Skips one value of any supported type, following at most [`MAX_NESTING_DEPTH`] levels.
    pub(crate) fn skip(&mut self) -> Result<(), DecodeError> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Result<(), DecodeError> {
        if depth >= MAX_NESTING_DEPTH {
            return Err(DecodeError::TooDeep);
        }
        let (major, value) = self.head()?;
        match major {
            MAJOR_UINT | MAJOR_NEGINT => {}
            MAJOR_BYTES | MAJOR_TEXT => {
                let len = usize::try_from(value)
                    .map_err(|_| DecodeError::LimitExceeded("byte string"))?;
                if len > MAX_BYTES_LEN {
                    return Err(DecodeError::LimitExceeded("byte string"));
                }
                self.take(len)?;
            }
            MAJOR_ARRAY => {
                for _ in 0..self.bounded_count(value, MAX_ARRAY_LEN, 1, "array")? {
                    self.skip_at(depth + 1)?;
                }
            }
            MAJOR_MAP => {
                for _ in 0..self.bounded_count(value, MAX_MAP_LEN, 2, "map")? {
                    self.skip_at(depth + 1)?;
                    self.skip_at(depth + 1)?;
                }
            }
            MAJOR_TAG => return Err(DecodeError::UnsupportedCbor),
            // Simple values: false, true, null, undefined. Floats are not part of Proteus.
            MAJOR_SIMPLE if (20..=23).contains(&value) => {}
            _ => return Err(DecodeError::UnsupportedCbor),
        }
        Ok(())
    }
}

/// Tracks the small integer keys seen in one map, so a repeated key is an error.
#[derive(Default)]
pub(crate) struct Seen(u64);

impl Seen {
    /// Reads the next map key, which must be an unsigned integer, and checks it is new.
    /// Keys of 64 and above are never Proteus fields and are returned as `u8::MAX` (skipped).
    pub(crate) fn key(&mut self, d: &mut Decoder<'_>) -> Result<u8, DecodeError> {
        let k = d.u64()?;
        if k >= 64 {
            return Ok(u8::MAX);
        }
        let bit = 1u64 << k;
        if self.0 & bit != 0 {
            return Err(DecodeError::DuplicateField(k as u8));
        }
        self.0 |= bit;
        Ok(k as u8)
    }
}

/// Unwraps a required field that a map decoder collected.
pub(crate) fn required<T>(value: Option<T>, field: &'static str) -> Result<T, DecodeError> {
    value.ok_or(DecodeError::MissingField(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_use_the_shortest_form() {
        for (len, head) in [
            (23usize, vec![0x57]),
            (24, vec![0x58, 24]),
            (255, vec![0x58, 0xff]),
            (256, vec![0x59, 1, 0]),
            (65_535, vec![0x59, 0xff, 0xff]),
            (65_536, vec![0x5a, 0, 1, 0, 0]),
            (70_000, vec![0x5a, 0, 1, 0x11, 0x70]),
        ] {
            let mut e = Encoder::default();
            e.bytes(&vec![7u8; len]);
            let out = e.into_bytes();
            assert_eq!(&out[..head.len()], &head[..], "length {len}");
            assert_eq!(out.len(), head.len() + len);
        }
    }

    #[test]
    fn non_minimal_lengths_are_accepted() {
        // Wire's Rust encoder writes 8-byte lengths for 64 KiB..1 MiB (docs/protocol.md §13.1).
        let mut input = vec![0x5b, 0, 0, 0, 0, 0, 0, 0, 3];
        input.extend_from_slice(b"abc");
        let mut d = Decoder::new(&input);
        assert_eq!(d.bytes().unwrap(), b"abc");
        d.finish().unwrap();
    }

    #[test]
    fn hostile_length_claims_do_not_allocate() {
        let mut d = Decoder::new(&[0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(d.array(), Err(DecodeError::LimitExceeded(_))));
        let mut d = Decoder::new(&[0x99, 0x03, 0xe8]);
        assert!(matches!(d.array(), Err(DecodeError::Truncated)));
        let mut d = Decoder::new(&[0x5a, 0xff, 0xff, 0xff, 0xff]);
        assert!(matches!(d.bytes(), Err(DecodeError::LimitExceeded(_))));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let input = vec![0x81u8; 64];
        let mut d = Decoder::new(&input);
        assert!(matches!(d.skip(), Err(DecodeError::TooDeep)));
    }

    #[test]
    fn indefinite_lengths_and_tags_are_refused() {
        assert!(matches!(
            Decoder::new(&[0x5f]).bytes(),
            Err(DecodeError::UnsupportedCbor)
        ));
        assert!(matches!(
            Decoder::new(&[0xc2, 0x40]).skip(),
            Err(DecodeError::UnsupportedCbor)
        ));
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let input = [0xa2, 0x00, 0x01, 0x00, 0x02];
        let mut d = Decoder::new(&input);
        let mut seen = Seen::default();
        assert_eq!(d.map().unwrap(), 2);
        assert_eq!(seen.key(&mut d).unwrap(), 0);
        d.skip().unwrap();
        assert!(matches!(
            seen.key(&mut d),
            Err(DecodeError::DuplicateField(0))
        ));
    }
}
