//! How records and writes cross between a [`Journal`](super::Journal) and its host (the web
//! package's IndexedDB layer): one byte buffer per load or commit, so that a commit costs one copy
//! rather than one call per record.
//!
//! ```text
//! entry  := table:u8 op:u8 key_len:u32le key [value_len:u32le value]   (the value only for op 0)
//! table  := index in Table::ALL (0 meta, 1 prekeys, 2 sessions, 3 staged_keys)
//! op     := 0 put, 1 delete
//! ```
//!
//! The records and their keys are the client's unchanged, so a store written through this codec
//! holds exactly what a native store holds.

use zeroize::Zeroizing;

use crate::error::StoreError;
use crate::storage::{Table, Write};

const PUT: u8 = 0;
const DELETE: u8 = 1;

fn table_index(table: Table) -> u8 {
    match table {
        Table::Meta => 0,
        Table::PreKeys => 1,
        Table::Sessions => 2,
        Table::StagedKeys => 3,
    }
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("records from the host's store: {what}"))
}

fn push_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), StoreError> {
    let len = u32::try_from(bytes.len()).map_err(|_| corrupt("a record over 4 GiB"))?;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Encodes writes for the host, one entry after another:
///
/// ```text
/// entry  := table:u8 op:u8 key_len:u32le key [value_len:u32le value]   (the value only for op 0)
/// table  := index in Table::ALL (0 meta, 1 prekeys, 2 sessions, 3 staged_keys)
/// op     := 0 put, 1 delete
/// ```
///
/// The buffer holds secret keys and is wiped when dropped.
pub fn encode_writes(writes: &[Write]) -> Result<Zeroizing<Vec<u8>>, StoreError> {
    let size = writes
        .iter()
        .map(|w| match w {
            Write::Put { key, value, .. } => 10 + key.len() + value.len(),
            Write::Delete { key, .. } => 6 + key.len(),
        })
        .sum();
    let mut out = Zeroizing::new(Vec::with_capacity(size));
    for write in writes {
        match write {
            Write::Put { table, key, value } => {
                out.extend_from_slice(&[table_index(*table), PUT]);
                push_bytes(&mut out, key)?;
                push_bytes(&mut out, value)?;
            }
            Write::Delete { table, key } => {
                out.extend_from_slice(&[table_index(*table), DELETE]);
                push_bytes(&mut out, key)?;
            }
        }
    }
    Ok(out)
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], StoreError> {
        let (head, rest) = self
            .0
            .split_at_checked(n)
            .ok_or_else(|| corrupt("truncated"))?;
        self.0 = rest;
        Ok(head)
    }

    fn byte(&mut self) -> Result<u8, StoreError> {
        let [b] = self.take(1)? else {
            return Err(corrupt("truncated"));
        };
        Ok(*b)
    }

    fn bytes(&mut self) -> Result<&'a [u8], StoreError> {
        let len: [u8; 4] = self.take(4)?.try_into().map_err(|_| corrupt("truncated"))?;
        let len = usize::try_from(u32::from_le_bytes(len)).map_err(|_| corrupt("too long"))?;
        self.take(len)
    }
}

/// Decodes writes from the host (a load is a list of puts).
pub fn decode_writes(bytes: &[u8]) -> Result<Vec<Write>, StoreError> {
    let mut writes = Vec::new();
    let mut reader = Reader(bytes);
    while !reader.0.is_empty() {
        let table = Table::ALL
            .get(usize::from(reader.byte()?))
            .copied()
            .ok_or_else(|| corrupt("unknown table"))?;
        let op = reader.byte()?;
        let key = reader.bytes()?.to_vec();
        writes.push(match op {
            PUT => Write::Put {
                table,
                key,
                value: Zeroizing::new(reader.bytes()?.to_vec()),
            },
            DELETE => Write::Delete { table, key },
            _ => return Err(corrupt("unknown operation")),
        });
    }
    Ok(writes)
}

/// Where each entry of an [`encode_writes`] buffer is, for a host that hands the keys and
/// values to its store as views of the buffer without reading its layout: six numbers per
/// entry, `table, put, key start, key end, value start, value end` (`put` 1 for a put, 0 for a
/// delete, whose value is empty), offsets into `bytes`.
pub fn entry_bounds(bytes: &[u8]) -> Result<Vec<u32>, StoreError> {
    let offset = |rest: &[u8]| {
        u32::try_from(bytes.len() - rest.len()).map_err(|_| corrupt("a buffer over 4 GiB"))
    };
    let mut bounds = Vec::new();
    let mut reader = Reader(bytes);
    while !reader.0.is_empty() {
        let table = reader.byte()?;
        if usize::from(table) >= Table::ALL.len() {
            return Err(corrupt("unknown table"));
        }
        let op = reader.byte()?;
        let key = reader.bytes()?;
        let key_end = offset(reader.0)?;
        let key_start = key_end - u32::try_from(key.len()).map_err(|_| corrupt("too long"))?;
        let (put, value_start, value_end) = match op {
            PUT => {
                let value = reader.bytes()?;
                let end = offset(reader.0)?;
                (
                    1,
                    end - u32::try_from(value.len()).map_err(|_| corrupt("too long"))?,
                    end,
                )
            }
            DELETE => (0, key_end, key_end),
            _ => return Err(corrupt("unknown operation")),
        };
        bounds.extend_from_slice(&[
            u32::from(table),
            put,
            key_start,
            key_end,
            value_start,
            value_end,
        ]);
    }
    Ok(bounds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_round_trip() {
        let writes = vec![
            Write::Put {
                table: Table::StagedKeys,
                key: vec![0, 1, b'x', 9],
                value: Zeroizing::new(vec![7; 300]),
            },
            Write::Delete {
                table: Table::PreKeys,
                key: vec![0, 5],
            },
            Write::Put {
                table: Table::Meta,
                key: b"identity".to_vec(),
                value: Zeroizing::new(Vec::new()),
            },
        ];
        let bytes = encode_writes(&writes).unwrap();
        assert_eq!(decode_writes(&bytes).unwrap(), writes);
        let bounds = entry_bounds(&bytes).unwrap();
        assert_eq!(bounds.len(), 18);
        assert_eq!(&bounds[..2], &[3, 1]);
        assert_eq!(
            &bytes[bounds[2] as usize..bounds[3] as usize],
            &[0, 1, b'x', 9]
        );
        assert_eq!(&bytes[bounds[4] as usize..bounds[5] as usize], &[7; 300]);
        assert_eq!(&bounds[6..8], &[1, 0]);
        assert_eq!(&bytes[bounds[8] as usize..bounds[9] as usize], &[0, 5]);
        assert_eq!(bounds[10], bounds[11]);
        assert_eq!(
            &bytes[bounds[14] as usize..bounds[15] as usize],
            b"identity"
        );
        assert!(entry_bounds(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(decode_writes(&[]).unwrap(), vec![]);
    }

    #[test]
    fn damaged_buffers_are_refused() {
        let bytes = encode_writes(&[Write::Delete {
            table: Table::Sessions,
            key: b"abc".to_vec(),
        }])
        .unwrap();
        for cut in 1..bytes.len() {
            assert!(decode_writes(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        assert!(decode_writes(&[4, 0, 0, 0, 0, 0]).is_err());
        assert!(decode_writes(&[0, 2, 0, 0, 0, 0]).is_err());
    }
}
