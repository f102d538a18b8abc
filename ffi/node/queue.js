// A decryptBatch queue packed for the addon (src/batch.rs): distinct session ids, an id index per
// message, the envelopes back to back in one buffer and their lengths, walked and checked by the
// web package's walkBatch (wasm/args.js), as its own batches are. The envelopes go into a buffer kept between batches
// (the addon copies them when it is called, so nothing here is needed for its soundness): a fresh buffer of a batch's size costs a page fault
// per 4 KiB on first touch (63 for 1000 chat messages, about a fifth of what the addon adds to
// the Rust time on a busy machine). A batch takes the buffer and gives it back when it settled;
// a batch that finds it taken (another client's, in parallel) packs into a buffer of its own.
// One pass over the messages, each envelope copied as it is checked: the envelopes are cold
// in cache by the time a batch comes, and a second pass (batchParts, then join) read each
// message and envelope object twice.

import { bytes, walkBatch } from './wasm/args.js';

/** The largest buffer kept between batches (about 16,000 chat messages). */
const KEEP_AT_MOST = 4 << 20;

/** A new buffer's room per message when no kept one is big enough (a chat message's envelope). */
const GUESS_PER_MESSAGE = 320;

/** The buffer no batch holds now, if any. */
let spare;

/** `buffer`'s first `used` bytes in a buffer of at least `needed` bytes. */
function grown(buffer, used, needed) {
  const bigger = Buffer.allocUnsafe(Math.max(needed, 2 * buffer.length));
  bigger.set(buffer.subarray(0, used));
  return bigger;
}

/**
 * Packs `messages` ({ sessionId, envelope } each): `packed` is what the addon's decryptBatch
 * takes, `release()` gives the buffer back once the addon is done with it.
 */
export function packQueue(messages) {
  if (!Array.isArray(messages)) throw new TypeError('messages must be an array');
  let buffer = spare ?? Buffer.allocUnsafe(messages.length * GUESS_PER_MESSAGE);
  spare = undefined;
  let size = 0;
  let walked;
  try {
    walked = walkBatch(messages, (message, i) => {
      const envelope = bytes(message.envelope, 'envelope');
      const length = envelope.length;
      if (size + length > buffer.length) {
        buffer = grown(buffer, size, size + length + (messages.length - i) * GUESS_PER_MESSAGE);
      }
      buffer.set(envelope, size);
      size += length;
      return length;
    });
  } catch (e) {
    keep(buffer);
    throw e;
  }
  const [ids, index, lengths] = walked;
  // The addon reads `size` bytes; the rest of a kept buffer is another batch's leftovers.
  const envelopes = buffer.subarray(0, size);
  const release = () => {
    if (buffer === undefined) return;
    keep(buffer);
    buffer = undefined;
  };
  return { packed: [ids, index, envelopes, lengths], release };
}

/** Keeps `buffer` for the next batch if it is the biggest free one (within KEEP_AT_MOST). */
function keep(buffer) {
  if (buffer.length <= KEEP_AT_MOST && (spare === undefined || spare.length < buffer.length)) spare = buffer;
}
