// The Proteus client for the web: the public ES module of the package.
//
// `Client` wraps the wasm client (RawClient, synchronous, over RawJournal: proteus-client's
// storage/journal.rs, the records in memory) with Promises, persistence and locking:
//   * Client.open(name): records in IndexedDB. Opening loads every record; every call that
//     commits resolves only after its writes are stored in ONE IndexedDB transaction (so an
//     envelope from encrypt() is returned only once the advanced chain is durable).
//     With { storeKey }, every record is sealed with WebCrypto AES-GCM first (sealing.js, idb.js).
//   * Client.inMemory(): records in memory only (Node, tests).
//   * Calls of one client run one at a time, and calls on one store take turns across tabs;
//     every commit is a compare-and-swap on the store's commit counter (commit-engine.js).
// Errors are ProteusError objects with the same numeric `code` and `kind` as the native client.

import { batchParts, batchThreads, bytes, identityPinning, integer, packBatch, sessionId, textOrBytes, toWasmInput } from './args.js';
import { init } from './init.js';
import { defineClientCalls } from './client-calls.js';
import { TABLES } from './records.js';
import { deliverySink } from './delivery.js';
import { IdbStore } from './idb.js';
import { Sealer } from './sealing.js';
import { CommitConflict, MemoryStore, StoreMissing, askPersistence, storeLocks } from './stores.js';
import { CommitEngine } from './commit-engine.js';
import { batchLine, batchSummary, log } from './log.js';
import { BATCH_ABORTED, CALLBACK_FAILED, ERROR_KINDS, STORE_NOT_FOUND } from './codes.js';
import {
  ProteusError,
  conflictError,
  failure,
  notFoundError,
  storageFailure,
  storeFailure,
  unavailableError,
} from './errors.js';

export { init };

// Every error code, generated from the native registry (codes.js), and isAlreadySeen(code).
export * from './codes.js';
export { ProteusError };
export { bundleFingerprint, messageId, prekeyMessageFingerprint } from './functions.js';
export { setLogger } from './log.js';
export { isDecodeError, isDecryptError, isEngineError, isInputError, isSystemError } from './errors.js';

/** The sealer of an `options.storeKey`, if given (a TypeError for a key of another shape). */
const sealerOf = (storeKey) => (storeKey === undefined ? undefined : Sealer.of(storeKey));

function storeName(name) {
  if (typeof name !== 'string' || name === '') throw new TypeError('a store name must be a non-empty string');
}

/** `options.indexedDB`, else the runtime's IndexedDB; neither (Node.js): StoreUnavailable (513). */
function indexedDBOf(options) {
  const factory = options.indexedDB ?? globalThis.indexedDB;
  if (factory == null) throw unavailableError();
  return factory;
}

// --- the client ----------------------------------------------------------------------------

const CONSTRUCT = Symbol('construct');

/**
 * A Proteus client: an identity, its prekeys and its sessions, persisted in a store. Every
 * method returns a Promise; calls run one at a time, in order.
 */
export class Client {
  #engine;

  #inMemory;

  constructor(token, engine, persisted, inMemory) {
    if (token !== CONSTRUCT) throw new TypeError('use Client.open(name) or Client.inMemory()');
    this.#engine = engine;
    this.#inMemory = inMemory;
    /** Whether opening found no identity in the store and made a new one. */
    this.created = false;
    /** A Promise of whether the browser granted persistent storage (undefined: unknown). */
    this.persisted = persisted;
  }

  /**
   * Opens the client stored in IndexedDB under `name`, creating it (with a new identity) if
   * there is none, unless `create` is false: then a missing store fails with StoreNotFound (504).
   * `client.created` says whether a new identity was made. Asks for persistent storage
   * (navigator.storage.persist(), unless `persist` is false): `client.persisted`. Without
   * IndexedDB (Node.js) and no `indexedDB` option, fails with StoreUnavailable (513). Without Web
   * Locks, refuses unless `allowWithoutWebLocks` is true. Other options: `indexedDB` (an
   * IDBFactory, default the global one), `locks` (a LockManager, default navigator.locks),
   * `wasm` (what init() takes). With `storeKey` (32 bytes, or an HKDF CryptoKey), every record
   * is sealed in IndexedDB (a new store is created sealed); a sealed store opened without its
   * key fails with StoreKeyRequired (510), with another key WrongStoreKey (508), and a plain
   * store with a key StoreNotSealed (509): nothing is changed. With `identityPinning: true` the
   * first identity seen for a session id is pinned, and a PreKeyMessage or a bundle of another
   * one is refused with RemoteIdentityChanged (204) until acceptIdentity (give it at every open).
   */
  static async open(name, options = {}) {
    storeName(name);
    batchThreads(options.batchThreads);
    const pinning = identityPinning(options.identityPinning);
    const indexedDB = indexedDBOf(options);
    const locks = storeLocks(options);
    const create = options.create !== false;
    const sealer = await sealerOf(options.storeKey);
    await init(options.wasm);
    let store;
    try {
      store = await IdbStore.open(name, TABLES, { indexedDB, locks, create, sealer });
    } catch (e) {
      throw e instanceof StoreMissing ? notFoundError(name) : storeFailure(e);
    }
    const persisted = options.persist === false ? Promise.resolve(undefined) : askPersistence();
    return Client.#start(store, create ? undefined : name, persisted, pinning);
  }

  /** A client whose records live in memory only. */
  static async inMemory(options = {}) {
    batchThreads(options.batchThreads);
    const pinning = identityPinning(options.identityPinning);
    await init(options.wasm);
    return Client.#start(new MemoryStore(), undefined, Promise.resolve(undefined), pinning);
  }

  /** Deletes the IndexedDB database of store `name` (clients on it must be closed). */
  static async deleteStore(name, options = {}) {
    const indexedDB = indexedDBOf(options);
    try {
      await IdbStore.delete(name, { indexedDB });
    } catch (e) {
      throw storageFailure(e);
    }
  }

  /**
   * Seals every record of the existing plain store `name` with `storeKey` (see open), in one
   * transaction: no plain record remains. A store sealed already fails with StoreCorrupt (503),
   * a missing one with StoreNotFound (504). Clients still open on it fail with StoreKeyRequired
   * (510) from their next call on: close them first.
   */
  static async sealStore(name, storeKey, options = {}) {
    return Client.#reseal(name, options, undefined, storeKey);
  }

  /**
   * Seals every record of store `name`, sealed with `oldKey`, with `newKey` instead, in one
   * transaction: no record sealed with the old key remains. A wrong `oldKey` fails with
   * WrongStoreKey (508), a plain store with StoreNotSealed (509), and nothing is changed.
   */
  static async rekeyStore(name, oldKey, newKey, options = {}) {
    if (oldKey === undefined) throw new TypeError('rekeyStore needs the old key');
    return Client.#reseal(name, options, oldKey, newKey);
  }

  static async #reseal(name, options, fromKey, toKey) {
    storeName(name);
    if (toKey === undefined) throw new TypeError('a store key is needed');
    const indexedDB = indexedDBOf(options);
    const locks = storeLocks(options);
    const [from, to] = await Promise.all([sealerOf(fromKey), sealerOf(toKey)]);
    // The sealing runs in the wasm module (proteus-client's web sealed format).
    await init(options.wasm);
    try {
      await IdbStore.reseal(name, TABLES, { indexedDB, locks }, from, to);
    } catch (e) {
      if (e instanceof StoreMissing) throw failure(STORE_NOT_FOUND, `no store proteus:${name} to seal`);
      throw e instanceof CommitConflict ? conflictError(e) : storeFailure(e);
    }
  }

  /** Loads the store; an empty one gets an identity, unless `mustExist` (its name) is given. */
  static async #start(store, mustExist, persisted, pinning) {
    const engine = new CommitEngine(store);
    engine.identityPinning = pinning;
    const client = new Client(CONSTRUCT, engine, persisted, store instanceof MemoryStore);
    client.created = await engine.start(mustExist);
    log('info', `client opened: ${client.created ? 'new' : 'existing'} identity`);
    return client;
  }

  /** Runs `fn(raw)` on the wasm client and stores its commit (CommitEngine.run). */
  #run(fn, options) {
    return this.#engine.run(fn, options);
  }

  // fingerprint, identityKey, sign, the prekeys, the sessions, encrypt, decrypt, import and
  // export: the methods the Node package's Client shares (client-calls.js), run here by #run.
  static {
    defineClientCalls(this, (client, fn, options) => client.#run(fn, options));
  }

  /** Raises the counter-gap limit of every session (default 1000). */
  setMaxCounterGap(gap) {
    integer(gap, 'gap', 0xffffffff);
    return this.#run((raw) => {
      raw.setMaxCounterGap(gap);
      this.#engine.maxCounterGap = gap;
    });
  }

  /** Encrypts `[{sessionId, plaintext}]` with one commit; resolves to the envelopes in order. */
  encryptBatch(messages) {
    const packed = packBatch(messages, 'plaintext', textOrBytes);
    return this.#run((raw) => raw.encryptBatch(...packed));
  }

  /**
   * Encrypts one plaintext for each of `sessionIds` (every device of a conversation) with ONE
   * commit, stored before any envelope is returned. Resolves to a result per recipient, in the
   * order given: `{sessionId, envelope}`, or `{sessionId, errorCode, errorKind}` for a session
   * that is missing or cannot encrypt (a result, not a failure of the call). An id listed twice
   * gets two envelopes. The envelopes are views into one buffer.
   */
  encryptFor(sessionIds, plaintext) {
    if (!Array.isArray(sessionIds)) throw new TypeError('sessionIds must be an array of strings');
    for (const id of sessionIds) sessionId(id);
    const p = textOrBytes(plaintext);
    return this.#run((raw) => {
      // Per recipient an i32 (its envelope's length, or minus its error code), then the envelopes.
      const out = raw.encryptFor(sessionIds, p);
      const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
      const results = new Array(sessionIds.length);
      let at = 4 * sessionIds.length;
      for (let i = 0; i < sessionIds.length; i++) {
        const outcome = view.getInt32(4 * i, true);
        if (outcome >= 0) {
          results[i] = { sessionId: sessionIds[i], envelope: out.subarray(at, at + outcome) };
          at += outcome;
        } else {
          results[i] = { sessionId: sessionIds[i], errorCode: -outcome, errorKind: ERROR_KINDS[-outcome] };
        }
      }
      return results;
    });
  }

  /**
   * Whether what earlier calls deleted (a consumed prekey, used message keys) is gone from the
   * disk now. In memory, true. On IndexedDB, false: the browser keeps deleted values in its
   * files until it compacts them, and no API asks for that (the README: seal the store with a
   * key you rotate, rekeyStore, so that what is left is unreadable).
   */
  eraseDeleted() {
    return this.#run(() => this.#inMemory);
  }

  /**
   * Decrypts a queue `[{sessionId, envelope}]` and commits all of it in one transaction.
   * `onMessage(result, done, total)` receives each result BEFORE the commit: store the
   * plaintext there, keyed by `result.messageId`; return false to stop (nothing is committed,
   * BatchAborted 108). If it throws, nothing is committed (CallbackFailed 121). It may return a
   * Promise (an IndexedDB write, say): the commit then waits for every such Promise, and if one
   * rejects or resolves to false, nothing is committed (CallbackFailed 121, BatchAborted 108).
   * Resolves to every result `{messageId, sessionId, plaintext?, errorCode?, errorKind?,
   * alreadySeen}` once the commit is stored, the array's `summary` holding the outcomes counted
   * and the times (BatchSummary). Rejected messages are results, not errors. The
   * plaintexts of a batch are views into one buffer. Until the callback's promises settle, calls
   * on this client fail with ClientBusy (120). If another tab committed meanwhile: StoreConflict
   * (512), nothing committed, and the messages decrypt again later under the same ids.
   */
  decryptBatch(messages, onMessage) {
    if (onMessage !== undefined && typeof onMessage !== 'function') {
      throw new TypeError('onMessage must be a function');
    }
    const [sessionIds, index, parts, lengths, size] = batchParts(messages, 'envelope', (e) => bytes(e, 'envelope'));
    // The times of the summary: the wasm module has no clock, so they are measured here.
    const times = { decryptMs: 0, deliveryMs: 0, commitMs: 0 };
    let committing = 0;
    const deliver = onMessage && ((...args) => {
      const start = performance.now();
      try {
        return onMessage(...args);
      } finally {
        times.deliveryMs += performance.now() - start;
      }
    });
    // What onMessage promised to finish before the commit.
    const pending = [];
    // Called before the commit: undefined when nothing is pending (the commit follows at once),
    // else a Promise that settles the callback's promises.
    const settle = () => (pending.length === 0 ? undefined : settlePending());
    const settlePending = async () => {
      let outcomes;
      const start = performance.now();
      try {
        outcomes = await Promise.all(pending);
        times.deliveryMs += performance.now() - start;
        committing = performance.now();
      } catch (e) {
        this.#engine.delivering = false;
        throw failure(CALLBACK_FAILED, 'a batch callback\'s promise rejected; nothing of the batch was committed', { cause: e });
      }
      this.#engine.delivering = false;
      if (outcomes.includes(false)) {
        throw failure(BATCH_ABORTED, 'the batch was stopped by the application before its commit');
      }
    };
    let counts;
    const run = this.#run((raw) => {
      const { results, sink } = deliverySink(sessionIds, index, deliver, pending);
      toWasmInput(raw, parts, size);
      // Until the callback's promises settle, a call on this client from the callback would wait
      // for the batch, which waits for it: such calls fail with ClientBusy instead.
      if (onMessage !== undefined) this.#engine.delivering = true;
      times.deliveryMs = 0;
      const start = performance.now();
      try {
        raw.decryptBatch(sessionIds, index, lengths, sink);
        counts = raw.lastBatchCounts();
        committing = performance.now();
        times.decryptMs = committing - start - times.deliveryMs;
      } catch (e) {
        this.#engine.delivering = false;
        // Nothing waits for these any more; keep their rejections from going unhandled.
        for (const p of pending) Promise.resolve(p).catch(() => {});
        throw e;
      }
      if (pending.length === 0) this.#engine.delivering = false;
      return results;
    }, { beforePersist: settle, delivers: onMessage !== undefined, durability: 'relaxed' });
    return run.then((results) => {
      times.commitMs = performance.now() - committing;
      const summary = batchSummary(counts, times);
      // Not enumerable: the array compares, prints and serialises as the results alone.
      Object.defineProperty(results, 'summary', { value: summary });
      log('info', batchLine(summary));
      return results;
    });
  }

  /** Waits for calls in progress, wipes the keys in wasm memory and closes the store. */
  async close() {
    return this.#engine.close();
  }

  /** The same as close(), for `await using`. */
  [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    return this.close();
  }
}
