// A decryptBatch queue packed for the addon (src/batch.rs): distinct session ids, an id index per
// message, the envelopes back to back in one buffer and their lengths, as the web package's
// packBatch (wasm/args.js) packs them for the wasm client, with the same checks. The envelopes go
// into a buffer kept between batches: the addon reads them where they lie, and a fresh buffer of
// a batch's size costs a page fault per 4 KiB on first touch (63 for 1000 chat messages, about a
// fifth of what the addon adds to the Rust time on a busy machine). A batch takes the buffer and
// gives it back when it settled; a batch that finds it taken (another client's, in parallel)
// packs into a buffer of its own.

import { bytes, sessionId } from './wasm/args.js';

/** The largest buffer kept between batches (about 16,000 chat messages). */
const KEEP_AT_MOST = 4 << 20;

/** The buffer no batch holds now, if any. */
let spare;

/**
 * Packs `messages` ({ sessionId, envelope } each): `packed` is what the addon's decryptBatch
 * takes, `release()` gives the buffer back once the addon is done with it.
 */
export function packQueue(messages) {
  if (!Array.isArray(messages)) throw new TypeError('messages must be an array');
  const n = messages.length;
  const ids = [];
  const byId = new Map();
  const index = new Uint32Array(n);
  const lengths = new Uint32Array(n);
  const parts = new Array(n);
  let size = 0;
  let lastId;
  let lastK = 0;
  for (let i = 0; i < n; i++) {
    const message = messages[i];
    const id = message?.sessionId;
    if (id !== lastId) {
      let k = byId.get(sessionId(id));
      if (k === undefined) {
        k = ids.length;
        ids.push(id);
        byId.set(id, k);
      }
      lastId = id;
      lastK = k;
    }
    index[i] = lastK;
    const part = bytes(message.envelope, 'envelope');
    parts[i] = part;
    lengths[i] = part.length;
    size += part.length;
  }
  let buffer = spare !== undefined && spare.length >= size ? spare : Buffer.allocUnsafe(size);
  if (buffer === spare) spare = undefined;
  let at = 0;
  for (const part of parts) {
    buffer.set(part, at);
    at += part.length;
  }
  const release = () => {
    if (buffer === undefined) return;
    if (buffer.length <= KEEP_AT_MOST && (spare === undefined || spare.length < buffer.length)) spare = buffer;
    buffer = undefined;
  };
  // The addon reads `size` bytes; the rest of a kept buffer is another batch's leftovers.
  return { packed: [ids, index, buffer.subarray(0, size), lengths], release };
}
