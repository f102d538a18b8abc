//! Byte strings across the boundary, copied in one piece.
//!
//! UniFFI 0.32 passes a `Vec<u8>` as a sequence of `u8`: its generic `Vec<T>` converter reads
//! and writes the bytes one at a time (`get_u8`/`put_u8`, with a bounds check each, into a
//! buffer grown by doubling). [`Bytes`] has the same metadata as `Vec<u8>`, so the foreign code
//! sees it as `ByteArray` (Kotlin) or `Data` (Swift) and the wire format is unchanged (a
//! big-endian `i32` length, then the bytes), but it is read and written with one copy.
//!
//! Why not UniFFI's own route for a custom type, `uniffi::custom_type!(Bytes, Vec<u8>, ..)`
//! (issue 33, item 4): its Rust side goes through that generic converter, and it costs
//! measurably more wherever byte strings cross in numbers. Paired A/B with the Kotlin batch
//! benchmark (docs/benchmarks.md, "Session 19: UniFFI converters"; 1000-message `decryptBatch`
//! in memory, 8 rounds alternating the builds, medians of 101 runs each, load average 13.6–16.7
//! on 2 cores): with the queue and the results as plain records (so that every envelope and
//! plaintext goes through `Bytes`), `custom_type!` took 4.24 ms against 3.52 ms with this
//! converter, **+21%** paired (rounds +10% to +42%); in Swift, the same builds with its twin of
//! that benchmark, +6% (rounds −16% to +104%, noisier). With the batch's own buffers
//! (`batch.rs`, which do not use `Bytes`) the two builds are the same within noise (2.95 against
//! 2.93 ms, +1.8%, rounds −8% to +18%): there only `encrypt`, `decrypt`, `encryptBatch`,
//! `encryptFor` and the bundle and import calls pay it. The commands are in that section.

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

// Why not `uniffi::custom_type!(SecretBytes, Vec<u8>, ..)` (issue 33, item 4): not for speed
// (secrets cross once per call, never in a batch) but because UniFFI's generic path leaves
// un-wiped copies of the secret in freed memory, before and after any code of ours could wipe
// them. Lifting, `Vec<u8>`'s `try_lift` (`try_lift_from_rust_buffer`) takes the incoming
// `RustBuffer` apart into a `Vec`, reads the bytes out of it into a new one, and drops the first
// unwiped, all before the custom type's closure gets the result. Lowering, the closure must hand
// over a plain `Vec<u8>`, which the generic writer consumes and frees unwiped, after copying it
// byte by byte into a buffer started empty and grown by doubling (each smaller buffer, holding a
// prefix of the secret, freed unwiped). Checked with `tests/secret_crossing.rs`, whose allocator
// looks into every freed block for a planted identity seed: with `custom_type!` (lower
// `mem::take` of the inner vector, lift `Zeroizing::new`) both of its tests fail (an exported
// identity: 2 freed copies; an imported one: 1); with this converter none is found.
//
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
