//! Byte strings across the boundary, copied in one piece.
//!
//! UniFFI 0.32 passes a `Vec<u8>` as a sequence of `u8`: its generic `Vec<T>` converter reads
//! and writes the bytes one at a time, with a bounds check each. For a batch of 1000 envelopes
//! and plaintexts that alone cost more than a millisecond, about half the time of the decryption.
//! [`Bytes`] has the same metadata as `Vec<u8>`, so the foreign code sees it as `ByteArray`
//! (Kotlin) or `Data` (Swift) and the wire format is unchanged (a big-endian `i32` length, then
//! the bytes), but it is read and written with one copy.

use std::ops::Deref;

use uniffi::{FfiConverter, MetadataBuffer, RustBuffer, TypeId};
use zeroize::Zeroizing;

/// Bytes to or from Kotlin (`ByteArray`) or Swift (`Data`).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Bytes(pub Vec<u8>);

impl Bytes {
    /// The vector.
    pub fn into_vec(self) -> Vec<u8> {
        self.0
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }
}

impl From<&[u8]> for Bytes {
    fn from(bytes: &[u8]) -> Self {
        Self(bytes.to_vec())
    }
}

impl std::fmt::Debug for Bytes {
    /// Only the length: these are often plaintexts or secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.0.len())
    }
}

// SAFETY: the FFI type is a `RustBuffer`, made with `RustBuffer::from_vec` and taken apart with
// `destroy_into_vec`, as UniFFI's own converter for `Vec<u8>` does; the serialised form is the
// one that converter writes and the generated Kotlin and Swift code read (a big-endian `i32`
// length followed by that many bytes), and `TYPE_ID_META` is `Vec<u8>`'s, so both sides agree on
// the type. Reading checks every length against the bytes left and never reads past them.
#[allow(unsafe_code)]
unsafe impl FfiConverter<crate::UniFfiTag> for Bytes {
    type FfiType = RustBuffer;

    fn lower(obj: Self) -> RustBuffer {
        let mut buf = Vec::with_capacity(obj.0.len().saturating_add(4));
        write_wire(&obj.0, &mut buf);
        RustBuffer::from_vec(buf)
    }

    fn try_lift(v: RustBuffer) -> uniffi::Result<Self> {
        Ok(Self(read_whole(&v.destroy_into_vec())?.to_vec()))
    }

    fn write(obj: Self, buf: &mut Vec<u8>) {
        write_wire(&obj.0, buf);
    }

    fn try_read(buf: &mut &[u8]) -> uniffi::Result<Self> {
        Ok(Self(read_wire(buf)?.to_vec()))
    }

    const TYPE_ID_META: MetadataBuffer = <Vec<u8> as TypeId<crate::UniFfiTag>>::TYPE_ID_META;
}

uniffi::derive_ffi_traits!(local Bytes);

/// Secret bytes to or from Kotlin or Swift (an identity, a session, a prekey): the wire form of
/// [`Bytes`], but every copy made on this side is wiped when freed. The buffer that carries them
/// across is the foreign side's to free once it has copied them out (UniFFI frees it unwiped;
/// the app wipes its `ByteArray`/`Data`). Used only as a whole argument or return value, never
/// inside a record, so the buffer written is never regrown (which would free a stale copy).
pub struct SecretBytes(Zeroizing<Vec<u8>>);

impl SecretBytes {
    /// Takes a secret that is already wiped on drop.
    pub fn new(bytes: Zeroizing<Vec<u8>>) -> Self {
        Self(bytes)
    }
}

impl From<Vec<u8>> for SecretBytes {
    fn from(bytes: Vec<u8>) -> Self {
        Self(Zeroizing::new(bytes))
    }
}

impl Deref for SecretBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for SecretBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretBytes({} bytes)", self.0.len())
    }
}

// SAFETY: as for `Bytes` above: the same FFI type, serialised form and type metadata; the buffers
// are made and taken apart with UniFFI's own `RustBuffer` functions.
#[allow(unsafe_code)]
unsafe impl FfiConverter<crate::UniFfiTag> for SecretBytes {
    type FfiType = RustBuffer;

    fn lower(obj: Self) -> RustBuffer {
        // Sized exactly, so writing never reallocates and leaves no stale copy behind.
        let mut buf = Vec::with_capacity(obj.0.len().saturating_add(4));
        write_wire(&obj.0, &mut buf);
        RustBuffer::from_vec(buf)
    }

    fn try_lift(v: RustBuffer) -> uniffi::Result<Self> {
        let vec = Zeroizing::new(v.destroy_into_vec());
        Ok(Self(Zeroizing::new(read_whole(&vec)?.to_vec())))
    }

    fn write(obj: Self, buf: &mut Vec<u8>) {
        write_wire(&obj.0, buf);
    }

    fn try_read(buf: &mut &[u8]) -> uniffi::Result<Self> {
        Ok(Self(Zeroizing::new(read_wire(buf)?.to_vec())))
    }

    const TYPE_ID_META: MetadataBuffer = <Vec<u8> as TypeId<crate::UniFfiTag>>::TYPE_ID_META;
}

uniffi::derive_ffi_traits!(local SecretBytes);

/// Writes `bytes` in the wire form of `Vec<u8>`: a big-endian `i32` length, then the bytes.
fn write_wire(bytes: &[u8], buf: &mut Vec<u8>) {
    // Lengths beyond i32::MAX cannot come from this crate (messages are at most 5 MiB);
    // saturate rather than panic.
    let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(bytes.get(..len.unsigned_abs() as usize).unwrap_or(bytes));
}

/// Reads one byte string in that form from the front of `buf`, checking its length.
fn read_wire<'a>(buf: &mut &'a [u8]) -> uniffi::Result<&'a [u8]> {
    let Some((len, rest)) = buf.split_first_chunk::<4>() else {
        uniffi::deps::anyhow::bail!("a byte string's length is cut off");
    };
    let len = usize::try_from(i32::from_be_bytes(*len))?;
    let Some((bytes, rest)) = rest.split_at_checked(len) else {
        uniffi::deps::anyhow::bail!("a byte string of {len} bytes is cut off");
    };
    *buf = rest;
    Ok(bytes)
}

/// Reads a buffer that holds exactly one byte string.
fn read_whole(vec: &[u8]) -> uniffi::Result<&[u8]> {
    let mut buf = vec;
    let bytes = read_wire(&mut buf)?;
    if !buf.is_empty() {
        uniffi::deps::anyhow::bail!("{} bytes left after a byte string", buf.len());
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use uniffi::{Lift, Lower};

    use super::*;

    type Tag = crate::UniFfiTag;

    #[test]
    fn the_wire_format_is_that_of_vec_u8() {
        for bytes in [vec![], vec![0u8], (0..=255u8).collect::<Vec<_>>()] {
            let mut ours = Vec::new();
            <Bytes as Lower<Tag>>::write(Bytes(bytes.clone()), &mut ours);
            let mut theirs = Vec::new();
            <Vec<u8> as Lower<Tag>>::write(bytes.clone(), &mut theirs);
            assert_eq!(ours, theirs);
            let mut read = theirs.as_slice();
            assert_eq!(<Bytes as Lift<Tag>>::try_read(&mut read).unwrap().0, bytes);
            assert!(read.is_empty());
            let lifted =
                <Bytes as Lift<Tag>>::try_lift(<Vec<u8> as Lower<Tag>>::lower(bytes.clone()));
            assert_eq!(lifted.unwrap().0, bytes);
        }
    }

    #[test]
    fn short_or_negative_lengths_are_errors() {
        for bad in [
            &[0u8, 0, 0][..],
            &[0, 0, 0, 2, 1],
            &[0xff, 0xff, 0xff, 0xff],
        ] {
            let mut buf = bad;
            assert!(<Bytes as Lift<Tag>>::try_read(&mut buf).is_err());
        }
    }
}
