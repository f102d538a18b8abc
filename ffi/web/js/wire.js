// The message protocol between a page (remote.js) and a client living in a Worker (worker.js).
//
// Every message is a plain object sent with postMessage; byte buffers are transferred, not
// copied, where the sender made them. The page sends requests, each with a fresh `id`:
//
//   { id, op: 'open', name, options }              → { handle, created }   (Client.open)
//   { id, op: 'inMemory', options }                → { handle, created }   (Client.inMemory)
//   { id, op: 'static', name, args }               → Client[name](...args): deleteStore and the
//                                                    other static calls on a store by its name
//   { id, op: 'function', name, args }             → a module function: messageId, bundleFingerprint,
//                                                    prekeyMessageFingerprint
//   { id, op: 'call', handle, method, args }       → what client[method](...args) resolves to
//   { id, op: 'decryptBatch', handle, batch, ack } → the batch's summary, once it committed; `batch` is
//                                                    `packBatch`'s [ids, index, envelopes, lengths]
//                                                    (envelopes transferred); `ack`: wait for the
//                                                    page's answer to every chunk before committing
//   { id, op: 'close', handle }                    → undefined
//
// The worker answers each request once: `{ id, ok: true, value }` or `{ id, ok: false, error }`,
// `error` as `toWire` makes it (name, message, and the ProteusError's code and kind), which the
// page throws again as the package's own error type (`fromWire`).
//
// During a decryptBatch the worker sends its results in chunks of CHUNK, as the engine hands them
// over and before the batch commits: `{ id, chunk: n, done, total, results, plaintexts }` with
// `results` the batch results of the chunk without their plaintext but with `length` (the
// plaintext's length, or -1), and `plaintexts` one ArrayBuffer (transferred) holding them back
// to back. When `ack` is set, the page answers each chunk after its callback took every result:
// `{ op: 'ack', id, chunk: n, answer }` with `answer` true (go on), false (the callback returned
// false: BatchAborted 108) or an error object (the callback threw or its promise rejected:
// CallbackFailed 121). The worker's client commits only once every chunk was answered true.

/** Results per chunk message of a decryptBatch. */
export const CHUNK = 256;

/** An error as a message carries it. */
export function toWire(e) {
  if (e instanceof Error || (typeof e === 'object' && e !== null)) {
    const wire = { name: String(e.name ?? 'Error'), message: String(e.message ?? '') };
    if (typeof e.code === 'number') wire.code = e.code;
    if (typeof e.kind === 'string') wire.kind = e.kind;
    return wire;
  }
  return { name: 'Error', message: String(e) };
}

/**
 * The error a message carried, as its original type: a ProteusError (made by `makeProteusError`)
 * when it has a numeric code and a kind, a TypeError or RangeError as such, else an Error with
 * the same name (e.g. "WorkerError").
 */
export function fromWire(wire, makeProteusError, cause) {
  const options = cause === undefined ? undefined : { cause };
  if (typeof wire?.code === 'number' && typeof wire.kind === 'string') {
    return makeProteusError(wire.message, wire.code, wire.kind, options);
  }
  const Type = wire?.name === 'TypeError' ? TypeError : wire?.name === 'RangeError' ? RangeError : Error;
  const e = new Type(wire?.message ?? 'unknown error from the worker', options);
  if (Type === Error && typeof wire?.name === 'string') e.name = wire.name;
  return e;
}

/**
 * `bytes` in a buffer of its own, so that posting it copies or transfers only its bytes (a view
 * into a larger buffer would take the whole buffer along).
 */
export function own(bytes) {
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice();
}

/** `value` with every Uint8Array in it owning its buffer (arrays and plain objects walked). */
export function owned(value) {
  if (value instanceof Uint8Array) return own(value);
  if (Array.isArray(value)) return value.map(owned);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = owned(v);
    return out;
  }
  return value;
}

/** The parts of `all` as views, `lengths[i]` bytes each, one after the other. */
export function split(all, lengths) {
  const parts = new Array(lengths.length);
  let at = 0;
  for (let i = 0; i < lengths.length; i++) {
    parts[i] = all.subarray(at, at + lengths[i]);
    at += lengths[i];
  }
  return parts;
}

/** Packs byte arrays into one buffer and their lengths: [buffer, lengths]. */
export function join(parts) {
  const lengths = new Uint32Array(parts.length);
  let size = 0;
  for (let i = 0; i < parts.length; i++) {
    lengths[i] = parts[i].length;
    size += parts[i].length;
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    all.set(part, at);
    at += part.length;
  }
  return [all, lengths];
}

/**
 * A port for either side: a browser Worker or DedicatedWorkerGlobalScope, a MessagePort, or
 * Node's worker_threads Worker and parentPort. `listen(fn)` calls fn(data) per message.
 */
export function port(target) {
  const listen = (fn) => {
    if (typeof target.addEventListener === 'function') {
      target.addEventListener('message', (event) => fn(event.data));
      target.start?.();
    } else if (typeof target.on === 'function') {
      target.on('message', fn);
    } else {
      throw new TypeError('not a Worker, worker scope or MessagePort');
    }
  };
  return { listen, post: (message, transfer = []) => target.postMessage(message, transfer) };
}
