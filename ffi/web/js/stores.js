// Where a client's records live, and how concurrent users of one store take turns.
//
// A store offers: load() -> {version, records}, version() -> number, persist(writes, expected,
// next) (all writes in ONE transaction), lock(fn) (runs fn exclusively for this store name: Web
// Locks across tabs), close(). `version` counts commits. persist is a compare-and-swap on it:
// inside its transaction it reads the stored count and, if it is not `expected` (another client,
// another tab, committed since), writes nothing and throws CommitConflict; else it stores the
// writes and `next`. That alone rules out two tabs using one message key; the lock only keeps
// such conflicts rare. The counts come from the client's journal (proteus-client), which decides.

import { RawMemoryStore } from './proteus_web.js';

/** A queue per name: one holder at a time, in order of request, within this JS realm. */
export class LocalLocks {
  #tails = new Map();

  request(name, fn) {
    const previous = this.#tails.get(name) ?? Promise.resolve();
    const run = previous.then(() => fn());
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(name, tail);
    tail.then(() => {
      if (this.#tails.get(name) === tail) this.#tails.delete(name);
    });
    return run;
  }
}

const localLocks = new LocalLocks();

/** A commit lost its compare-and-swap: the store is at `found`, not at `expected`. */
export class CommitConflict extends Error {
  constructor(expected, found) {
    super(`the store is at commit ${found}, not ${expected}: another client committed first`);
    this.name = 'CommitConflict';
  }
}

/**
 * A call that ran ahead of its transaction's read of the commit counter (IdbStore.update) ran on
 * commit `ranOn`, but the store is at `found`: nothing of it was stored, and what it returned or
 * threw is void (it ran on stale records); the client reloads and runs it again.
 */
export class StaleRun extends Error {
  constructor(ranOn, found) {
    super(`the call ran on commit ${ranOn}, but the store is at ${found}`);
    this.name = 'StaleRun';
  }
}

/** Opening with `create: false` found no store of this name. */
export class StoreMissing extends Error {
  constructor(name) {
    super(`no store ${name}`);
    this.name = 'StoreMissing';
  }
}

/**
 * The lock manager of an IndexedDB store: `locks` if given, else Web Locks (navigator.locks).
 * Without them (a plain-http origin other than localhost, an old runtime, Node), tabs cannot
 * take turns: opening then needs `allowWithoutWebLocks: true`, and uses a queue within this
 * realm only. The compare-and-swap of every commit still keeps tabs from reusing a message key;
 * what the app gets is more StoreConflict failures and re-delivered batches.
 */
export function storeLocks({ locks, allowWithoutWebLocks = false } = {}) {
  if (locks != null) {
    if (typeof locks.request !== 'function') throw new TypeError('locks must be a LockManager');
    return locks;
  }
  const web = globalThis.navigator?.locks;
  if (web && typeof web.request === 'function') return web;
  if (allowWithoutWebLocks === true) return localLocks;
  const e = new Error(
    'Web Locks (navigator.locks) are not available here (a plain-http origin other than ' +
      'localhost, or an old runtime), so tabs of this store cannot take turns. Serve the page ' +
      'over https, or pass { allowWithoutWebLocks: true } to open the store anyway: no message ' +
      'key is reused (every commit is a compare-and-swap), but calls racing another tab fail ' +
      'more often with StoreConflict (512) and batches may be delivered again.',
  );
  e.name = 'WebLocksUnavailableError';
  throw e;
}

/** Asks the browser to keep the store under storage pressure; whether it will (undefined: unknown). */
export async function askPersistence() {
  try {
    const granted = await globalThis.navigator?.storage?.persist?.();
    return typeof granted === 'boolean' ? granted : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Records in memory only: nothing survives the client. For Node, tests and short-lived clients.
 * It keeps what was persisted, apart from the client's own journal, so that a client can go back
 * to it when a commit is not persisted (a batch callback's promise rejected). The records and
 * the compare-and-swap are proteus-client's (HostMemoryStore, in the wasm module, where the
 * records are wiped when the store is closed); this only moves the buffers.
 */
export class MemoryStore {
  #raw = new RawMemoryStore();

  async load() {
    return { version: this.#raw.counter, records: this.#raw.load() };
  }

  async version() {
    return this.#raw.counter;
  }

  async persist(writes, expected, next) {
    const found = this.#raw.persist(writes, expected, next);
    if (found !== undefined) throw new CommitConflict(expected, found);
  }

  /** The client's own queue orders its calls; nothing else uses this store. */
  lock(fn) {
    return fn();
  }

  /** Wipes the records (once; a module that trapped may not free them: they go with it). */
  close() {
    try {
      this.#raw?.free();
    } catch {
      // the module trapped
    }
    this.#raw = undefined;
  }
}
