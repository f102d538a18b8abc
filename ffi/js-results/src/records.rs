//! The records of `importCryptobox`, as the shared JS method packs them (`packCryptobox` in
//! `ffi/web/js/cryptobox.js`): the identity, then the prekeys and the sessions, each as their ids
//! and their bytes back to back with a length each.

use proteus_client::{CryptoboxRecords, SourceRecord};
use zeroize::Zeroizing;

/// One table's records: ids, the bytes back to back, the length of each.
pub type Packed<'a> = (Vec<String>, &'a [u8], &'a [u32]);

/// The source the packed records make, or what is wrong with the packing.
pub fn unpack_cryptobox(
    identity: &[u8],
    prekeys: Packed<'_>,
    sessions: Packed<'_>,
) -> Result<CryptoboxRecords, &'static str> {
    Ok(CryptoboxRecords::new(
        Zeroizing::new(identity.to_vec()),
        unpack(prekeys)?,
        unpack(sessions)?,
    ))
}

fn unpack((ids, bytes, lengths): Packed<'_>) -> Result<Vec<SourceRecord>, &'static str> {
    if ids.len() != lengths.len() {
        return Err("one length per record");
    }
    let parts = split(bytes, lengths)?;
    Ok(ids
        .into_iter()
        .zip(parts)
        .map(|(id, record)| SourceRecord::new(id, record))
        .collect())
}

/// `bytes` cut into parts of `lengths`, one after the other.
pub fn split<'a>(mut bytes: &'a [u8], lengths: &[u32]) -> Result<Vec<&'a [u8]>, &'static str> {
    let mut parts = Vec::with_capacity(lengths.len());
    for len in lengths {
        let (part, rest) = usize::try_from(*len)
            .ok()
            .and_then(|len| bytes.split_at_checked(len))
            .ok_or("the lengths exceed the bytes")?;
        parts.push(part);
        bytes = rest;
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn records_are_split_by_their_lengths_and_bad_packings_refused() {
        let ids = || vec!["a".to_owned(), "b".to_owned()];
        let source =
            unpack_cryptobox(&[9], (vec![], &[], &[]), (ids(), &[1, 2, 3], &[1, 2])).unwrap();
        let got: Vec<(&str, &[u8])> = source
            .sessions
            .iter()
            .map(|r| (r.id.as_str(), r.bytes.as_slice()))
            .collect();
        assert_eq!(got, [("a", &[1][..]), ("b", &[2, 3][..])]);
        assert_eq!(*source.identity, [9]);
        assert!(unpack_cryptobox(&[], (ids(), &[1], &[1]), (vec![], &[], &[])).is_err());
        assert!(unpack_cryptobox(&[], (ids(), &[1], &[1, 1]), (vec![], &[], &[])).is_err());
    }
}
