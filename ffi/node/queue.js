// A decryptBatch queue packed for the addon (src/batch.rs): distinct session ids, an id index per
// message, the envelopes back to back in one buffer and their lengths, as the web package's
// batchParts (wasm/args.js) splits them for the wasm client, with the same checks. The envelopes go
// into a buffer kept between batches: the addon reads them where they lie, and a fresh buffer of
// a batch's size costs a page fault per 4 KiB on first touch (63 for 1000 chat messages, about a
// fifth of what the addon adds to the Rust time on a busy machine). A batch takes the buffer and
// gives it back when it settled; a batch that finds it taken (another client's, in parallel)
// packs into a buffer of its own.

import { batchParts, bytes, join } from './wasm/args.js';

/** The largest buffer kept between batches (about 16,000 chat messages). */
const KEEP_AT_MOST = 4 << 20;

/** The buffer no batch holds now, if any. */
let spare;

/**
 * Packs `messages` ({ sessionId, envelope } each): `packed` is what the addon's decryptBatch
 * takes, `release()` gives the buffer back once the addon is done with it.
 */
export function packQueue(messages) {
  const [ids, index, parts, lengths, size] = batchParts(messages, 'envelope', (e) => bytes(e, 'envelope'));
  let buffer = spare !== undefined && spare.length >= size ? spare : Buffer.allocUnsafe(size);
  if (buffer === spare) spare = undefined;
  // The addon reads `size` bytes; the rest of a kept buffer is another batch's leftovers.
  const envelopes = join(parts, buffer.subarray(0, size));
  const release = () => {
    if (buffer === undefined) return;
    if (buffer.length <= KEEP_AT_MOST && (spare === undefined || spare.length < buffer.length)) spare = buffer;
    buffer = undefined;
  };
  return { packed: [ids, index, envelopes, lengths], release };
}
