// The arguments of the package's calls: checked, and converted to what the wasm client takes.

import { wasmMemory } from './init.js';

const encoder = new TextEncoder();

export function bytes(value, what) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`${what} must be a Uint8Array`);
}

/** Bytes, or a string as its UTF-8 bytes. */
export function textOrBytes(value, what = 'plaintext') {
  return typeof value === 'string' ? encoder.encode(value) : bytes(value, what);
}

export function sessionId(value) {
  if (typeof value !== 'string') throw new TypeError('a session id must be a string');
  return value;
}

export function integer(value, what, max) {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new RangeError(`${what} must be an integer from 0 to ${max}`);
  }
  return value;
}

/**
 * The `batchThreads` option: undefined (the default) or an integer from 1 to 256. Natively (the
 * Node addon) the threads of one batch; WebAssembly has no threads, so there it has no effect.
 */
export function batchThreads(value) {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 1 || value > 256) {
    throw new RangeError('batchThreads must be an integer from 1 to 256');
  }
  return value;
}

/** What `walkBatch` compares the first message's session id with. */
const NO_ID = Symbol('no session id');

/**
 * Walks a batch's `messages` in order, checking each one's session id, and calls
 * `take(message, i)` for each: `[ids, index, lengths]`, the distinct session ids, each message's
 * id index and what `take` returned for it (the length of the bytes it took). One walk for the
 * web client's batches and the Node addon's queue (ffi/node/queue.js).
 */
export function walkBatch(messages, take) {
  if (!Array.isArray(messages)) throw new TypeError('messages must be an array');
  const n = messages.length;
  const ids = [];
  const byId = new Map();
  const index = new Uint32Array(n);
  const lengths = new Uint32Array(n);
  // Not a session id, so that the first message's is checked too.
  let lastId = NO_ID;
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
    lengths[i] = take(message, i);
  }
  return [ids, index, lengths];
}

/**
 * A batch's messages checked and indexed: `[ids, index, parts, lengths, size]`, the distinct
 * session ids, the id index of each message, each message's bytes, their lengths and sum.
 */
export function batchParts(messages, field, toBytes) {
  const parts = [];
  let size = 0;
  const [ids, index, lengths] = walkBatch(messages, (message) => {
    const part = toBytes(message[field]);
    parts.push(part);
    size += part.length;
    return part.length;
  });
  return [ids, index, parts, lengths, size];
}

/** `parts` back to back, written into `target` (a Uint8Array of their total size). */
export function join(parts, target) {
  let at = 0;
  for (const part of parts) {
    target.set(part, at);
    at += part.length;
  }
  return target;
}

/** A batch as the wasm client takes it: distinct ids, an id index and one buffer per message. */
export function packBatch(messages, field, toBytes) {
  const [ids, index, parts, lengths, size] = batchParts(messages, field, toBytes);
  return [ids, index, join(parts, new Uint8Array(size)), lengths];
}

/**
 * `parts` (of total `size` bytes) back to back in wasm memory, as the next batch's input of the
 * wasm client `raw`, written there in place: no concatenated copy in JS, no copy by the glue.
 */
export function toWasmInput(raw, parts, size) {
  const offset = raw.input(size);
  // The view after the allocation, which may have grown (and so detached) the memory.
  join(parts, new Uint8Array(wasmMemory().buffer, offset, size));
}

/** The `identityPinning` option: undefined (off), or a boolean. */
export function identityPinning(value) {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError('identityPinning must be a boolean');
  return value === true;
}
