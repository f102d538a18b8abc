// The results of a decryptBatch as the wasm client delivers them, in chunks, to the JS side: the
// sink the wasm client calls, which builds each result and hands it to the application's callback.

import { CALLBACK_FAILED, ERROR_KINDS, isAlreadySeen } from './codes.js';
import { failure } from './errors.js';

/**
 * Reads one chunk of a batch's results (ffi/web/src/delivery.rs, ffi/node/src/batch.rs): `meta`
 * holds (code, plaintext length, names a sender) per message; `ids` the message ids in hex, 64
 * digits each; the plaintexts lie back to back, `plaintext(offset, length)` giving each one;
 * `senders` the sender fingerprints of those that name one, 64 digits each. A failed message's
 * kind is the registry's for its code (ERROR_KINDS). Message i of the batch (from `first`) has
 * session `sessionIds[index[i]]`. Calls `each(result, i)` per message and returns false as soon as it
 * does, else true.
 */
export function readChunk({ first, meta, ids, senders }, sessionIds, index, plaintext, each) {
  let at = 0;
  let senderAt = 0;
  for (let j = 0; 3 * j < meta.length; j++) {
    const i = first + j;
    const code = meta[3 * j];
    const length = meta[3 * j + 1];
    let sender;
    if (meta[3 * j + 2] === 1) {
      sender = senders.slice(senderAt, senderAt + 64);
      senderAt += 64;
    }
    const result = {
      messageId: ids.slice(64 * j, 64 * j + 64),
      sessionId: sessionIds[index[i]],
      plaintext: code === 0 ? plaintext(at, length) : undefined,
      errorCode: code === 0 ? undefined : code,
      errorKind: code === 0 ? undefined : ERROR_KINDS[code],
      // The registry's rule: not 214 (MessageKeyEvicted), that message was never decrypted.
      alreadySeen: isAlreadySeen(code),
      sender,
    };
    at += length;
    if (each(result, i) === false) return false;
  }
  return true;
}

/**
 * A sink for a batch of `index.length` messages (`sessionIds[index[i]]` is message i's session):
 * `results` fills as `sink.deliver` is called; each result goes to `onMessage(result, done,
 * total)` if given, and the Promises it returns to `pending`.
 */
export function deliverySink(sessionIds, index, onMessage, pending) {
  const total = index.length;
  const results = new Array(total);
  const sink = {
    // One call per chunk of results (readChunk). An exception of the callback leaves through
    // here, as a CallbackFailed the batch returns.
    deliver(first, meta, ids, plaintexts, senders) {
      // The chunk's plaintexts copied out of wasm memory at once, each result's a view of its
      // part: one allocation per chunk, of the plaintexts' size (one buffer of the envelopes'
      // size for the whole batch, zero-filled first, cost more).
      const buffer = plaintexts.slice();
      const view = (at, length) => buffer.subarray(at, at + length);
      return readChunk({ first, meta, ids, senders }, sessionIds, index, view, (result, i) => {
        results[i] = result;
        if (onMessage === undefined) return true;
        let answer;
        try {
          answer = onMessage(result, i + 1, total);
        } catch (e) {
          throw failure(CALLBACK_FAILED, 'the batch callback threw; nothing of the batch was committed', { cause: e });
        }
        if (typeof answer?.then === 'function') pending.push(answer);
        return answer !== false;
      });
    },
  };
  return { results, sink };
}
