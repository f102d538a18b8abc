// The page side: drives clients living in a dedicated Worker (worker.js's serveClient) over the
// protocol of wire.js. A RemoteClient has the methods of Client with the same arguments, Promises
// and errors (ProteusError with the same code and kind), so a page can move its client into a
// Worker by changing how it opens it:
//
//   import { connectWorker } from '@proteus-engine/web/remote';
//   const worker = new Worker(new URL('./proteus-worker.js', import.meta.url), { type: 'module' });
//   const client = await connectWorker(worker).open('alice');
//   await client.decryptBatch(queue, (result, done, total) => { bar.value = done; });
//
// Arguments are checked on the page, as Client checks them (a TypeError or RangeError is thrown
// at once); bytes are copied to the worker (a batch's in one buffer, transferred).

import { CLIENT_CLOSED, Client, ProteusError } from './index.js';
import { checkArguments } from './client-calls.js';
import { checkLogger } from './log.js';
import { bytes, integer, packBatch, textOrBytes } from './args.js';
import { fromWire, own, owned, port, split, toWire } from './wire.js';

const CONSTRUCT = Symbol('construct');

/**
 * The page's end of a worker serving clients: `open`, `inMemory` and `deleteStore` as Client's
 * static methods, and the module functions that need the wasm (answered by the worker).
 */
class WorkerConnection {
  #post;
  #nextId = 1;
  /** Why the worker is unusable (it failed to load, or threw at its top level). */
  #failed;
  /** The requests waiting for their answer, by id: { resolve, reject, onChunk }. */
  #pending = new Map();

  constructor(token, target) {
    if (token !== CONSTRUCT) throw new TypeError('use connectWorker(worker)');
    const { listen, post } = port(target);
    this.#post = post;
    listen((message) => this.#receive(message));
    // A worker that fails to load or throws at its top level: every call fails, now and later.
    const failed = (event) => {
      const e = new Error(`the worker failed: ${event?.message || 'it did not load'}`);
      e.name = 'WorkerError';
      this.#failed = e;
      for (const { reject } of this.#pending.values()) reject(e);
      this.#pending.clear();
    };
    if (typeof target.addEventListener === 'function') target.addEventListener('error', failed);
    else target.on?.('error', failed);
    // A worker terminated by the page answers nothing more, and a browser's Worker fires no event
    // for it: its calls fail the same way (what the worker had not committed, it never will).
    if (typeof target.terminate === 'function') {
      const terminate = target.terminate.bind(target);
      target.terminate = (...args) => {
        const done = terminate(...args);
        failed({ message: 'it was terminated' });
        return done;
      };
    }
  }

  /** The page's logger of the worker's log lines (setLogger). */
  #logger;

  #receive(message) {
    if (Array.isArray(message?.log)) {
      try {
        this.#logger?.(...message.log);
      } catch {
        // The app's logger failed: its problem.
      }
      return;
    }
    const waiting = this.#pending.get(message?.id);
    if (waiting === undefined) return;
    if (message.chunk !== undefined) {
      waiting.onChunk?.(message);
      return;
    }
    this.#pending.delete(message.id);
    if (message.ok) waiting.resolve(message.value);
    else waiting.reject(fromWire(message.error, (...a) => new ProteusError(...a), waiting.cause?.()));
  }

  /** Sends a request; resolves to the worker's answer. `extra` may add onChunk and cause. */
  request(body, transfer = [], extra = {}) {
    const id = this.#nextId++;
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, ...extra });
      this.#post({ id, ...body }, transfer);
    });
  }

  /** Answers a chunk of a decryptBatch. */
  ack(id, chunk, answer) {
    this.#post({ op: 'ack', id, chunk, answer });
  }

  /** The id the next request will have. */
  get nextId() {
    return this.#nextId;
  }

  /**
   * Opens (or creates) the client stored in IndexedDB under `name` in the worker: the options of
   * Client.open that can be posted (create, allowWithoutWebLocks, a store key, a wasm URL). The
   * page asks for persistent storage (workers cannot) unless `persist` is false.
   */
  async open(name, options = {}) {
    if (typeof name !== 'string' || name === '') throw new TypeError('a store name must be a non-empty string');
    const { persist, ...rest } = options;
    const { handle, created } = await this.request({ op: 'open', name, options: { ...rest, persist: false } });
    const persisted = persist === false ? Promise.resolve(undefined) : askPersistence();
    return new RemoteClient(CONSTRUCT, this, handle, created, persisted);
  }

  /** A client in the worker whose records live in memory only. */
  async inMemory(options = {}) {
    const { handle, created } = await this.request({ op: 'inMemory', options });
    return new RemoteClient(CONSTRUCT, this, handle, created, Promise.resolve(undefined));
  }

  /** Deletes the IndexedDB database of store `name` (clients on it must be closed). */
  deleteStore(name, options = {}) {
    return this.request({ op: 'static', name: 'deleteStore', args: [name, options] });
  }

  // Client's other static calls on a store by its name (those without their own method here):
  // forwarded as they are, their bytes copied.
  static {
    for (const name of Object.getOwnPropertyNames(Client)) {
      const method = Object.getOwnPropertyDescriptor(Client, name).value;
      if (typeof method !== 'function' || ['open', 'inMemory'].includes(name) || name in WorkerConnection.prototype) continue;
      Object.defineProperty(WorkerConnection.prototype, name, {
        value(...args) {
          return this.request({ op: 'static', name, args: args.map(owned) });
        },
        writable: true,
        configurable: true,
      });
    }
  }

  /**
   * setLogger for the worker's package: its log lines come to `fn(level, message)` here; null or
   * 'off' turns its log off. Resolves once the worker has it.
   */
  setLogger(fn, level = 'info') {
    checkLogger(fn, level);
    this.#logger = fn ?? undefined;
    return this.request({ op: 'setLogger', level: fn == null ? 'off' : level });
  }

  /** messageId(envelope), computed in the worker. */
  messageId(envelope) {
    return this.request({ op: 'function', name: 'messageId', args: [own(bytes(envelope, 'envelope'))] });
  }

  /** prekeyMessageFingerprint(envelope), computed in the worker. */
  prekeyMessageFingerprint(envelope) {
    return this.request({ op: 'function', name: 'prekeyMessageFingerprint', args: [own(bytes(envelope, 'envelope'))] });
  }

  /** bundleFingerprint(bundle), computed in the worker. */
  bundleFingerprint(bundle) {
    return this.request({ op: 'function', name: 'bundleFingerprint', args: [own(bytes(bundle, 'bundle'))] });
  }
}

async function askPersistence() {
  try {
    const granted = await globalThis.navigator?.storage?.persist?.();
    return typeof granted === 'boolean' ? granted : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Connects to a Worker (or MessagePort) whose script called serveClient(). One worker can serve
 * several clients.
 */
export function connectWorker(worker) {
  return new WorkerConnection(CONSTRUCT, worker);
}

/** A client living in a worker: the methods of Client, each a request to the worker. */
export class RemoteClient {
  #connection;
  #handle;
  #closed = false;

  constructor(token, connection, handle, created, persisted) {
    if (token !== CONSTRUCT) throw new TypeError('use connectWorker(worker).open(name)');
    this.#connection = connection;
    this.#handle = handle;
    /** Whether opening found no identity in the store and made a new one. */
    this.created = created;
    /** A Promise of whether the browser granted persistent storage (undefined: unknown). */
    this.persisted = persisted;
  }

  #call(method, ...args) {
    if (this.#closed) return Promise.reject(closedError());
    return this.#connection.request({ op: 'call', handle: this.#handle, method, args });
  }

  setMaxCounterGap(gap) {
    return this.#call('setMaxCounterGap', integer(gap, 'gap', 0xffffffff));
  }

  encryptBatch(messages) {
    const [ids, index, all, lengths] = packBatch(messages, 'plaintext', textOrBytes);
    // Each plaintext in a buffer of its own: a view would take the whole batch's buffer along.
    const parts = split(all, lengths);
    return this.#call('encryptBatch', Array.from(index, (k, i) => ({ sessionId: ids[k], plaintext: parts[i].slice() })));
  }

  /**
   * Client.decryptBatch, run in the worker. The results come to the page in chunks while the
   * worker decrypts; `onMessage(result, done, total)` gets each one, and the batch commits only
   * once it took every result (its promises resolved): a throw or rejection fails the batch
   * with CallbackFailed (121, the page's error as its cause), false with BatchAborted (108),
   * and nothing is committed. Resolves to every result once the commit is stored, with the
   * batch's `summary` (measured in the worker).
   */
  decryptBatch(messages, onMessage) {
    if (onMessage !== undefined && typeof onMessage !== 'function') {
      throw new TypeError('onMessage must be a function');
    }
    const batch = packBatch(messages, 'envelope', (e) => bytes(e, 'envelope'));
    if (this.#closed) return Promise.reject(closedError());
    const connection = this.#connection;
    const id = connection.nextId;
    const results = new Array(batch[1].length);
    let stopped = false;
    // What the callback threw, or its promise rejected with (the first one).
    let failed = false;
    let thrown;
    const fail = (e) => {
      if (!failed) [failed, thrown] = [true, e];
    };
    const take = (chunk) => {
      const buffer = new Uint8Array(chunk.plaintexts);
      let at = 0;
      let i = chunk.done - chunk.results.length;
      const pending = [];
      for (const { length, ...result } of chunk.results) {
        result.plaintext = length >= 0 ? buffer.subarray(at, at + length) : undefined;
        if (length >= 0) at += length;
        results[i++] = result;
        if (onMessage === undefined || stopped) continue;
        try {
          const answer = onMessage(result, i, chunk.total);
          if (typeof answer?.then === 'function') pending.push(answer);
          else if (answer === false) stopped = true;
        } catch (e) {
          stopped = true;
          fail(e);
        }
      }
      if (onMessage === undefined) return;
      if (failed) {
        connection.ack(id, chunk.chunk, toWire(thrown));
        return;
      }
      // Answered once the callback's promises for this chunk settled: the worker commits only
      // after every chunk was answered true.
      Promise.all(pending).then(
        (outcomes) => connection.ack(id, chunk.chunk, !stopped && !outcomes.includes(false)),
        (e) => {
          fail(e);
          connection.ack(id, chunk.chunk, toWire(e));
        },
      );
    };
    const request = { op: 'decryptBatch', handle: this.#handle, batch, ack: onMessage !== undefined };
    return connection
      .request(request, [batch[2].buffer], { onChunk: take, cause: () => thrown })
      .then((summary) => Object.defineProperty(results, 'summary', { value: summary }));
  }

  /**
   * Client's importCryptobox, run in the worker (which reads an `indexedDB` source itself).
   * `onProgress` stays on this side: it hears the end of the import only.
   */
  async importCryptobox(source, options = {}) {
    const { onProgress, ...rest } = options ?? {};
    if (onProgress !== undefined && typeof onProgress !== 'function') throw new TypeError('onProgress must be a function');
    const report = await this.#call('importCryptobox', owned(source), rest);
    const total = 1 + report.prekeys + report.sessions + report.skipped.length;
    onProgress?.({ done: total, total });
    return report;
  }

  /** Closes the client in the worker (waiting for its calls); the worker keeps running. */
  async close() {
    if (this.#closed) return;
    await this.#connection.request({ op: 'close', handle: this.#handle });
    this.#closed = true;
  }

  /** The same as close(), for `await using`. */
  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }

  // Client's methods without their own definition here: their arguments checked as Client
  // checks them (client-calls.js), then forwarded, their bytes copied.
  static {
    for (const name of Object.getOwnPropertyNames(Client.prototype)) {
      const method = Object.getOwnPropertyDescriptor(Client.prototype, name).value;
      if (name === 'constructor' || typeof method !== 'function' || name in RemoteClient.prototype) continue;
      Object.defineProperty(RemoteClient.prototype, name, {
        value(...args) {
          return this.#call(name, ...checkArguments(name, args).map(owned));
        },
        writable: true,
        configurable: true,
      });
    }
  }
}

function closedError() {
  return new ProteusError('the client is closed; open the store again to go on', CLIENT_CLOSED, 'ClientClosed');
}
