// The worker side: clients of the package living in a dedicated (module) Worker, driven by a page
// through remote.js over the protocol of wire.js. A batch then runs on the worker's thread, and
// the page's main thread stays free to paint (its progress bar, say) while it decrypts.
//
//   // proteus-worker.js, started by the page as new Worker(url, { type: 'module' })
//   import { serveClient } from '@proteus-engine/web/worker';
//   serveClient();
//
// The clients are the package's own (index.js): IndexedDB and Web Locks work in a Worker as in
// a page, so the commit, locking and error rules are the same.

import { CLIENT_CLOSED, Client, ProteusError, bundleFingerprint, init, messageId, prekeyMessageFingerprint } from './index.js';
import { setLogger } from './log.js';
import { CHUNK, join, owned, port, split, toWire } from './wire.js';

const FUNCTIONS = { messageId, bundleFingerprint, prekeyMessageFingerprint };

// What a page may call on a client: its public methods, except what the protocol does itself.
const SPECIAL = new Set(['constructor', 'decryptBatch', 'close']);
const NOT_STATIC = new Set(['open', 'inMemory']);
const callable = (method) =>
  typeof method === 'string' && !SPECIAL.has(method) && Object.hasOwn(Client.prototype, method) &&
  typeof Object.getOwnPropertyDescriptor(Client.prototype, method).value === 'function';

/**
 * Answers the requests of a page (remote.js's `connectWorker`) arriving on `scope`: the worker's
 * global scope by default, or a MessagePort (or Node's parentPort). `defaults` are options for
 * Client.open / inMemory / deleteStore that cannot cross from the page (an `indexedDB` factory,
 * `locks`, a `wasm` module); the page's options win over them.
 */
export function serveClient(scope = globalThis, defaults = {}) {
  const { listen, post } = port(scope);
  const clients = new Map();
  let nextHandle = 1;
  /** The acks a batch waits for, by request id and chunk. */
  const acks = new Map();

  const client = (handle) => {
    const c = clients.get(handle);
    if (c === undefined) throw new ProteusError('the client is closed; open the store again to go on', CLIENT_CLOSED, 'ClientClosed');
    return c;
  };
  const adopt = (c) => {
    const handle = nextHandle++;
    clients.set(handle, c);
    return { handle, created: c.created };
  };

  async function answer(request) {
    const { op } = request;
    if (op === 'open') return adopt(await Client.open(request.name, { ...defaults, ...request.options }));
    if (op === 'inMemory') return adopt(await Client.inMemory({ ...defaults, ...request.options }));
    if (op === 'static') {
      // deleteStore and the other calls on a store by its name. Their options come after their
      // `f.length` arguments (`options = {}` is not counted): they get the defaults.
      const f = Object.hasOwn(Client, request.name) ? Object.getOwnPropertyDescriptor(Client, request.name).value : undefined;
      if (typeof f !== 'function' || NOT_STATIC.has(request.name)) throw new TypeError(`no static call ${request.name}`);
      const args = [...request.args];
      if (args.length > f.length + 1) throw new TypeError(`too many arguments for ${request.name}`);
      const options = args[f.length];
      if (options !== undefined && !isPlain(options)) throw new TypeError('options must be an object');
      args[f.length] = { ...defaults, ...options };
      return f.apply(Client, args);
    }
    if (op === 'setLogger') {
      // The worker's lines go to the page, which hands them to its logger (remote.js).
      setLogger(request.level === 'off' ? null : (level, message) => post({ log: [level, message] }), request.level);
      return undefined;
    }
    if (op === 'function') {
      const f = Object.hasOwn(FUNCTIONS, request.name) ? FUNCTIONS[request.name] : undefined;
      if (f === undefined) throw new TypeError(`no function ${request.name}`);
      await init(defaults.wasm);
      return f(...request.args);
    }
    if (op === 'call') {
      const c = client(request.handle);
      if (!callable(request.method)) throw new TypeError(`no method ${request.method}`);
      return c[request.method](...request.args);
    }
    if (op === 'close') {
      const c = clients.get(request.handle);
      if (c === undefined) return undefined;
      await c.close();
      clients.delete(request.handle);
      return undefined;
    }
    if (op === 'decryptBatch') return decryptBatch(request);
    throw new TypeError(`unknown request ${op}`);
  }

  /**
   * Runs the batch, posting its results in chunks as the engine delivers them. With `ack`, the
   * last result of each chunk hands the client a Promise of the page's answer to that chunk:
   * the client commits only once every one resolved true, exactly as for a page's own callback.
   */
  async function decryptBatch({ id, handle, batch, ack }) {
    const c = client(handle);
    const [ids, index, envelopes, lengths] = batch;
    const parts = split(envelopes, lengths);
    const messages = new Array(parts.length);
    for (let i = 0; i < parts.length; i++) messages[i] = { sessionId: ids[index[i]], envelope: parts[i] };
    let results = [];
    let chunk = 0;
    const flush = (done, total) => {
      const n = chunk++;
      const plaintexts = [];
      const wire = results.map(({ plaintext, ...rest }) => {
        if (plaintext !== undefined) plaintexts.push(plaintext);
        return { ...rest, length: plaintext === undefined ? -1 : plaintext.length };
      });
      const [all] = join(plaintexts);
      results = [];
      post({ id, chunk: n, done, total, results: wire, plaintexts: all.buffer }, [all.buffer]);
      if (!ack) return undefined;
      return new Promise((resolve, reject) => acks.set(`${id} ${n}`, { resolve, reject }));
    };
    try {
      const all = await c.decryptBatch(messages, (result, done, total) => {
        results.push(result);
        if (results.length === CHUNK || done === total) return flush(done, total);
        return undefined;
      });
      return all.summary;
    } finally {
      for (const key of acks.keys()) if (key.startsWith(`${id} `)) acks.delete(key);
    }
  }

  function acknowledge({ id, chunk, answer: verdict }) {
    const waiting = acks.get(`${id} ${chunk}`);
    if (waiting === undefined) return;
    acks.delete(`${id} ${chunk}`);
    if (verdict === true || verdict === false) waiting.resolve(verdict);
    else waiting.reject(Object.assign(new Error(verdict?.message ?? 'the page\'s callback failed'), { name: verdict?.name ?? 'Error' }));
  }

  listen((request) => {
    if (request?.op === 'ack') {
      acknowledge(request);
      return;
    }
    const id = request?.id;
    Promise.resolve()
      .then(() => answer(request))
      .then(
        (value) => {
          const out = owned(value);
          post({ id, ok: true, value: out }, transferables(out));
        },
        (e) => post({ id, ok: false, error: toWire(e) }),
      );
  });
}

const isPlain = (value) => value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype;

/** The buffers of the Uint8Arrays in `value` (each owns its buffer: see `owned`). */
function transferables(value, into = []) {
  if (value instanceof Uint8Array) {
    if (!into.includes(value.buffer)) into.push(value.buffer);
  } else if (Array.isArray(value)) {
    for (const v of value) transferables(v, into);
  } else if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) transferables(v, into);
  }
  return into;
}
