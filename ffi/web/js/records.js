// How records cross between the JS stores and the wasm client, without this side reading their
// layout (crates/proteus-client/src/storage/journal/codec.rs has it): records read from a store
// go into wasm as one buffer with the length of each key and value, and come back as the record
// buffer a client opens on (packRecords); a commit's writes come out of wasm as a buffer with
// the bounds of each key and value (recordBounds, or a sealed commit's own), cut out here.

import { packRecords, recordBounds } from './proteus_web.js';

/**
 * The tables of proteus-client (Table::ALL), by the index the buffers use: one IndexedDB object
 * store each (checked against the Rust names by ffi/web/src/lib.rs's tests).
 */
export const TABLES = ['meta', 'prekeys', 'sessions', 'staged_keys'];

/** Concatenates byte arrays: `[bytes, lengths]`, how lists of byte strings cross into wasm. */
export function concat(parts) {
  const lengths = new Uint32Array(parts.length);
  let size = 0;
  parts.forEach((p, i) => {
    lengths[i] = p.length;
    size += p.length;
  });
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.length;
  }
  return [bytes, lengths];
}

/** Records `[{table, key, value}]` as wasm takes them: `[tables, bytes, lengths]`. */
export function crossing(records) {
  const tables = new Uint8Array(records.length);
  const parts = [];
  records.forEach((r, i) => {
    tables[i] = r.table;
    parts.push(r.key, r.value);
  });
  return [tables, ...concat(parts)];
}

/** Records `[{table, key, value}]` (puts) as the record buffer a client opens on. */
export const packed = (records) => packRecords(...crossing(records));

/**
 * The writes in `bytes` where `bounds` says (six numbers per write: table, put (1) or delete
 * (0), key start and end, value start and end): `{table, put, key, value}`, views of `bytes`.
 */
export function* writesOf(bytes, bounds = recordBounds(bytes)) {
  for (let i = 0; i < bounds.length; i += 6) {
    const put = bounds[i + 1] === 1;
    yield {
      table: bounds[i],
      put,
      key: bytes.subarray(bounds[i + 2], bounds[i + 3]),
      value: put ? bytes.subarray(bounds[i + 4], bounds[i + 5]) : undefined,
    };
  }
}
