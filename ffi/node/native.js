// The native backend: the public `Client` of the package over the Node-API addon (RawClient,
// src/lib.rs), with the web package's API, types, argument checks and errors. The addon runs
// each call off the JS thread on the native SQLite store (or in memory) and resolves a Promise;
// this module checks arguments, runs one call of a client at a time in order, and throws the
// failures the addon resolves to (code, kind and message, as data) as the web package's
// ProteusError.

import { ProteusError, CALLBACK_FAILED, CLIENT_BUSY, CLIENT_CLOSED, ERROR_KINDS, INTERNAL } from './wasm/index.js';
import { batchThreads, bytes, identityPinning, integer, sessionId, textOrBytes } from './wasm/args.js';
import { packQueue } from './queue.js';
import { readChunk } from './wasm/delivery.js';
import { batchLine, log, logs, setLogger as setWebLogger } from './wasm/log.js';
import { defineClientCalls } from './wasm/client-calls.js';

/** Loads the addon; set by index.js. */
let addon;
export function useAddon(loaded) {
  addon = loaded;
}

/**
 * A call's result as the package gives it: the addon resolves a failure of the library to a
 * RawFailure (its registry code, kind and message, as data: src/error.rs), thrown here as the
 * web package's ProteusError (the same class, so `instanceof` and the family guards work
 * whichever backend runs).
 */
function value(result) {
  passLog();
  if (result instanceof addon.RawFailure) throw new ProteusError(result.message, result.code, result.kind);
  return result;
}

const LOG_LEVELS = ['off', 'error', 'warn', 'info', 'debug', 'trace'];

/**
 * The web package's setLogger (the same checks and levels), for the addon's log too: the addon
 * keeps its lines (src/log.rs) and they are passed on after each call, on this thread.
 */
export function setLogger(fn, level = 'info') {
  setWebLogger(fn, level);
  addon.setLogLevel(fn == null ? 0 : LOG_LEVELS.indexOf(level));
}

/** Hands the lines the addon kept to the app's logger. */
function passLog() {
  if (!logs('error')) return;
  for (const { level, message } of addon.takeLog()) log(level, message);
}

async function call(promise) {
  return value(await promise);
}

function failure(code, message, options) {
  return new ProteusError(message, code, ERROR_KINDS[code], options);
}

function busyError() {
  return failure(
    CLIENT_BUSY,
    'the client is busy: a decryptBatch is delivering its results (a call from its callback would wait for the batch, which waits for the callback); call after the batch resolved',
  );
}

/**
 * A batch without a callback whose results could not reach the application after its commit
 * (Node could not allocate them): Internal (599). Committed is committed: the messages come
 * back as duplicates, so a caller that must never lose a plaintext passes a callback, which
 * gets each result before the commit.
 */
function lostResults(cause) {
  return failure(
    INTERNAL,
    'the batch was committed, but its results could not be handed to JavaScript (out of memory?): ' +
      'its messages will not decrypt again (they come back as DuplicateMessage, 209); a decryptBatch ' +
      'with a callback receives each result before the commit',
    { cause },
  );
}

function closedError() {
  return new ProteusError('the client is closed; open the store again to go on', CLIENT_CLOSED, 'ClientClosed');
}

function storeKey(key) {
  if (key === undefined) return undefined;
  const b = bytes(key, 'storeKey');
  if (b.length !== 32) throw new TypeError(`a store key must be 32 bytes, not ${b.length}`);
  return b;
}

/**
 * The `commitCounter` option: the count its `load()` gives now, and a `store(count)` that the
 * addon calls after each commit without waiting (a count that fails to store is stored by the
 * next commit; the store is on disk already).
 */
async function commitCounter(counter) {
  if (counter === undefined) return [];
  if (counter === null || typeof counter.load !== 'function' || typeof counter.store !== 'function') {
    throw new TypeError('commitCounter must have load() and store(count)');
  }
  const loaded = await counter.load();
  if (!Number.isSafeInteger(loaded) || loaded < 0) {
    throw new TypeError('commitCounter.load() must give a count: an integer from 0');
  }
  const store = (count) => {
    try {
      Promise.resolve(counter.store(count)).catch(() => {});
    } catch {
      // As a rejection: the next commit stores its count again.
    }
  };
  return [loaded, store];
}

function storePath(path) {
  if (typeof path !== 'string' || path === '') throw new TypeError('a store path must be a non-empty string');
  return path;
}

function sessionIdArray(ids) {
  if (!Array.isArray(ids)) throw new TypeError('sessionIds must be an array');
  return ids.map(sessionId);
}

const CONSTRUCT = Symbol('construct');

/**
 * A Proteus client: an identity, its prekeys and its sessions, in the native SQLite store (or in
 * memory). Every method returns a Promise; calls run one at a time, in order, and a call that
 * changes state resolves only once the change is committed. A failed call changes nothing.
 */
export class Client {
  #raw;
  #closed = false;
  /** The last call queued: the next one starts when it settled. */
  #tail = Promise.resolve();
  /** A decryptBatch is delivering: calls fail with ClientBusy rather than wait for it. */
  #delivering = false;

  constructor(token, raw) {
    if (token !== CONSTRUCT) throw new TypeError('use Client.open(path) or Client.inMemory()');
    this.#raw = raw;
    /** Whether opening found no identity in the store and made a new one. */
    this.created = raw.created;
    /** Persistent storage is a browser matter: unknown here. */
    this.persisted = Promise.resolve(undefined);
  }

  /**
   * Opens the native SQLite store at `path` (a file; other processes may use it at the same
   * time), creating it with a new identity unless `create` is false (then StoreNotFound, 504).
   * With `storeKey` (32 bytes) every record is sealed.
   */
  static async open(path, options = {}) {
    storePath(path);
    const key = storeKey(options.storeKey);
    const threads = batchThreads(options.batchThreads) ?? null;
    const pinning = identityPinning(options.identityPinning);
    const counter = await commitCounter(options.commitCounter);
    const raw = await call(addon.openStore(path, key, options.create !== false, threads, ...counter));
    if (pinning) await call(raw.setIdentityPinning(true));
    return new Client(CONSTRUCT, raw);
  }

  /** A client whose records live in memory only. */
  static async inMemory(options = {}) {
    const threads = batchThreads(options.batchThreads) ?? null;
    const pinning = identityPinning(options.identityPinning);
    const raw = await call(addon.inMemory(threads));
    if (pinning) await call(raw.setIdentityPinning(true));
    return new Client(CONSTRUCT, raw);
  }

  /** Deletes the store at `path` (clients on it must be closed). */
  static async deleteStore(path) {
    await call(addon.deleteStore(storePath(path)));
  }

  /** Seals every record of the existing plain store at `path` with `storeKey`, in one transaction. */
  static async sealStore(path, key) {
    await call(addon.sealStore(storePath(path), storeKey(key)));
  }

  /** Seals every record of the store at `path` with `newKey` instead of `oldKey`. */
  static async rekeyStore(path, oldKey, newKey) {
    await call(addon.rekeyStore(storePath(path), storeKey(oldKey), storeKey(newKey)));
  }

  /** Runs `fn(raw)` after the calls before it; its errors are ProteusErrors. */
  #run(fn) {
    if (this.#closed) return Promise.reject(closedError());
    if (this.#delivering) return Promise.reject(busyError());
    // Calls queued before close() still run: close waits for them.
    const result = this.#tail.then(() => call(fn(this.#raw)));
    this.#tail = result.catch(() => {});
    return result;
  }

  // fingerprint, identityKey, sign, the prekeys, the sessions, encrypt, decrypt, import and export: the
  // web package's methods (wasm/client-calls.js, its documentation there), run here by #run.
  static {
    defineClientCalls(this, (client, fn) => client.#run(fn), { readsDirectories: true });
  }

  setMaxCounterGap(gap) {
    integer(gap, 'gap', 0xffffffff);
    return this.#run((raw) => raw.setMaxCounterGap(gap));
  }

  encryptBatch(messages) {
    if (!Array.isArray(messages)) throw new TypeError('messages must be an array');
    const ids = messages.map((m) => sessionId(m?.sessionId));
    const plaintexts = messages.map((m) => textOrBytes(m.plaintext));
    return this.#run((raw) => raw.encryptBatch(ids, plaintexts));
  }

  encryptFor(sessionIds, plaintext) {
    const ids = sessionIdArray(sessionIds);
    const p = textOrBytes(plaintext);
    return this.#run(async (raw) => {
      // Per recipient its envelope's length or minus its error code; the envelopes back to back
      // (src/fanout.rs): each result's envelope is a view of that buffer.
      const { outcomes, envelopes } = value(await raw.encryptFor(ids, p));
      const results = new Array(ids.length);
      let at = 0;
      for (let i = 0; i < ids.length; i++) {
        const outcome = outcomes[i];
        if (outcome >= 0) {
          results[i] = { sessionId: ids[i], envelope: envelopes.subarray(at, at + outcome) };
          at += outcome;
        } else {
          results[i] = { sessionId: ids[i], errorCode: -outcome, errorKind: ERROR_KINDS[-outcome] };
        }
      }
      return results;
    });
  }

  /**
   * Makes sure that what earlier calls deleted (a consumed prekey, used message keys) is gone
   * from the disk now; resolves to whether it is. False while another connection still reads an
   * older snapshot of the SQLite store (a backup, another process): the store keeps trying after
   * later calls, and this can be called again. In memory, true.
   */
  eraseDeleted() {
    return this.#run((raw) => raw.eraseDeleted());
  }

  /**
   * Decrypts a queue with one commit, after `onMessage` accepted every result (see the web
   * package: false stops the batch, BatchAborted 108; a throw or a rejected promise stops it,
   * CallbackFailed 121; nothing is committed then). Without a callback the results cross
   * into JS after the commit: should that fail (out of memory), the call rejects with Internal
   * (599), the batch committed all the same.
   */
  decryptBatch(messages, onMessage) {
    if (onMessage !== undefined && typeof onMessage !== 'function') {
      throw new TypeError('onMessage must be a function');
    }
    // Distinct session ids, an id index per message, the envelopes back to back (in a buffer
    // lent to this call: given back once it settled) and their lengths.
    const { packed, release } = packQueue(messages);
    const [sessionIds, index] = packed;
    const total = index.length;
    const results = new Array(total);
    // A chunk of results (src/batch.rs, read as the web package reads its own): each result's
    // plaintext is a Uint8Array view of the chunk's buffer.
    const unpack = (chunk, each) => {
      const { buffer, byteOffset } = chunk.plaintexts;
      return readChunk(chunk, sessionIds, index, (at, length) => new Uint8Array(buffer, byteOffset + at, length), (result, i) => {
        results[i] = result;
        return each === undefined || each(result, i);
      });
    };
    if (onMessage === undefined) {
      return this.#fed(packed, unpack, release).then((summary) => Object.defineProperty(results, 'summary', { value: summary }));
    }
    return this.#run(async (raw) => {
      const pending = [];
      let thrown;
      const each = (result, i) => {
        let answer;
        try {
          answer = onMessage(result, i + 1, total);
        } catch (e) {
          thrown = failure(CALLBACK_FAILED, 'the batch callback threw; nothing of the batch was committed', { cause: e });
          throw thrown;
        }
        if (typeof answer?.then === 'function') pending.push(answer);
        return answer !== false;
      };
      // One call per chunk; its Promise answers whether to go on, and the last chunk's waits for
      // the callback's promises: the batch commits after it.
      const sink = async (chunk) => {
        if (!unpack(chunk, each)) return false;
        if (chunk.first + chunk.meta.length / 3 < total || pending.length === 0) return true;
        let outcomes;
        try {
          outcomes = await Promise.all(pending);
        } catch (e) {
          thrown = failure(CALLBACK_FAILED, "a batch callback's promise rejected; nothing of the batch was committed", { cause: e });
          throw thrown;
        }
        return !outcomes.includes(false);
      };
      this.#delivering = true;
      try {
        Object.defineProperty(results, 'summary', { value: value(await raw.decryptBatchTo(...packed, sink)) });
      } catch (e) {
        for (const p of pending) Promise.resolve(p).catch(() => {});
        if (thrown !== undefined) throw thrown;
        throw e;
      } finally {
        this.#delivering = false;
      }
      return results;
    }).finally(release);
  }

  /**
   * A decryptBatch without a callback, after the calls before it: the addon hands the results
   * to `feed` once committed, and the returned promise settles on them (or on the call's
   * error); the next call waits for the addon's call to end (it frees the
   * engine's results after handing them over).
   */
  #fed(packed, unpack, release) {
    if (this.#closed || this.#delivering) {
      release();
      return Promise.reject(this.#closed ? closedError() : busyError());
    }
    let ended;
    const committed = this.#tail.then(
      () =>
        new Promise((resolve, reject) => {
          // Called once, after the commit: with the results, or with the error that kept Node
          // from making their JS values. Whatever fails here rejects, or the promise would
          // never settle (and the client would wait for it for good).
          // Settled once both came, in either order: the results (`feed`) and the call's end,
          // with the batch's summary.
          let fed = false;
          let lost;
          let summary;
          const settle = () => {
            if (!fed || summary === undefined) return;
            if (lost !== undefined) reject(lost);
            else resolve(summary);
          };
          const feed = (error, chunk) => {
            try {
              if (error) throw error;
              unpack(chunk);
            } catch (e) {
              lost = lostResults(e);
            }
            fed = true;
            settle();
          };
          ended = this.#raw.decryptBatch(...packed, feed);
          ended
            .then((outcome) => {
              summary = value(outcome);
              settle();
            })
            .catch(reject);
        }),
    );
    const settled = committed.then(
      () => ended,
      () => ended,
    );
    // The queue's buffer is the addon's until its call ended; so is the client for the next call.
    this.#tail = settled.then(release, release);
    return committed;
  }

  /** Waits for calls in progress, wipes the keys and closes the store. */
  async close() {
    if (this.#closed) return;
    if (this.#delivering) throw busyError();
    const closing = this.#tail.then(() => call(this.#raw.close()));
    this.#closed = true;
    this.#tail = closing.catch(() => {});
    await closing;
  }

  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }
}

export function messageId(envelope) {
  return addon.messageId(bytes(envelope, 'envelope'));
}

export function prekeyMessageFingerprint(envelope) {
  return value(addon.prekeyMessageFingerprint(bytes(envelope, 'envelope'))) ?? undefined;
}

export function bundleFingerprint(bundle) {
  return value(addon.bundleFingerprint(bytes(bundle, 'bundle')));
}
