// The record buffers that cross between the wasm client and the JS stores
// (crates/proteus-client/src/storage/journal/codec.rs):
//   entry := table:u8 op:u8 key_len:u32le key [value_len:u32le value]   (the value only for op 0)
// A load is a list of puts; a commit is a list of puts and deletes.

/**
 * The tables of proteus-client (Table::ALL), by the index the buffers use: one IndexedDB object
 * store each (checked against the Rust names by ffi/web/src/lib.rs's tests).
 */
export const TABLES = ['meta', 'prekeys', 'sessions', 'staged_keys'];

export const PUT = 0;
export const DELETE = 1;

/** Packs `[{table, key, value}]` (puts) into one buffer. */
export function packRecords(records) {
  let size = 0;
  for (const r of records) size += 10 + r.key.length + r.value.length;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const r of records) {
    out[at] = r.table;
    out[at + 1] = PUT;
    view.setUint32(at + 2, r.key.length, true);
    out.set(r.key, at + 6);
    at += 6 + r.key.length;
    view.setUint32(at, r.value.length, true);
    out.set(r.value, at + 4);
    at += 4 + r.value.length;
  }
  return out;
}

/** The entries of a buffer: `{table, op, key, value}`, keys and values as views into `bytes`. */
export function* unpackWrites(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  while (at < bytes.length) {
    const table = bytes[at];
    const op = bytes[at + 1];
    const keyLength = view.getUint32(at + 2, true);
    const key = bytes.subarray(at + 6, at + 6 + keyLength);
    at += 6 + keyLength;
    let value;
    if (op === PUT) {
      const valueLength = view.getUint32(at, true);
      value = bytes.subarray(at + 4, at + 4 + valueLength);
      at += 4 + valueLength;
    } else if (op !== DELETE) {
      throw new Error(`unknown record operation ${op}`);
    }
    yield { table, op, key, value };
  }
}
