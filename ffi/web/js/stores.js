// Where a client's records live, and how concurrent users of one store take turns.
//
// A store offers: load() -> {version, records}, version() -> number, persist(writes, expected,
// next) (all writes in ONE transaction), lock(fn) (runs fn exclusively for this store name: Web
// Locks across tabs), close(). `version` counts commits. persist is a compare-and-swap on it:
// inside its transaction it reads the stored count and, if it is not `expected` (another client,
// another tab, committed since), writes nothing and throws CommitConflict; else it stores the
// writes and `next`. That alone rules out two tabs using one message key; the lock only keeps
// such conflicts rare. The counts come from the client's journal (proteus-client), which decides.

import { DELETE, packRecords, unpackWrites } from './records.js';

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
 * to it when a commit is not persisted (a batch callback's promise rejected).
 */
export class MemoryStore {
  #version = 0;
  /** Per table: hex key -> {key, value}. */
  #tables = new Map();

  async load() {
    const records = [];
    for (const [table, rows] of this.#tables) {
      for (const { key, value } of rows.values()) records.push({ table, key, value });
    }
    return { version: this.#version, records: packRecords(records) };
  }

  async version() {
    return this.#version;
  }

  async persist(writes, expected, next) {
    if (expected !== this.#version) throw new CommitConflict(expected, this.#version);
    for (const w of unpackWrites(writes)) {
      let rows = this.#tables.get(w.table);
      if (rows === undefined) this.#tables.set(w.table, (rows = new Map()));
      const id = hexKey(w.key);
      if (w.op === DELETE) rows.delete(id);
      else rows.set(id, { key: w.key.slice(), value: w.value.slice() });
    }
    this.#version = next;
  }

  /** The client's own queue orders its calls; nothing else uses this store. */
  lock(fn) {
    return fn();
  }

  close() {}
}

function hexKey(key) {
  let s = '';
  for (const b of key) s += b.toString(16).padStart(2, '0');
  return s;
}

const DB_VERSION = 1;
/** The object store of the commit counter (web only; the record tables are proteus-client's). */
const SYNC = 'sync';
const COMMITS = 'commits';

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx) {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error ?? new Error('IndexedDB transaction failed'));
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'));
  });
}

/** The IndexedDB database that holds store `name`. */
export function databaseName(name) {
  return `proteus:${name}`;
}

/**
 * A store in IndexedDB: one object store per table of proteus-client (binary keys, the records
 * as proteus-client writes them) and `sync` with the commit counter. Every commit is one
 * readwrite transaction with strict durability.
 */
export class IdbStore {
  #db;
  #tables;
  #lockName;
  #locks;

  constructor(db, name, tables, locks) {
    this.#db = db;
    this.#tables = tables;
    this.#lockName = databaseName(name);
    this.#locks = locks;
  }

  /**
   * Opens (or, unless `create` is false, creates) the database of store `name`. With `create`
   * false a missing database is not created: StoreMissing.
   */
  static async open(name, tables, { indexedDB = globalThis.indexedDB, locks, create = true }) {
    if (!indexedDB) throw new Error('IndexedDB is not available in this runtime');
    const req = indexedDB.open(databaseName(name), DB_VERSION);
    let missing = false;
    req.onupgradeneeded = (event) => {
      if (event.oldVersion === 0 && !create) {
        // Aborting the upgrade of a new database leaves no database behind.
        missing = true;
        req.transaction.abort();
        return;
      }
      const db = req.result;
      for (const table of [...tables, SYNC]) {
        if (!db.objectStoreNames.contains(table)) db.createObjectStore(table);
      }
    };
    let db;
    try {
      db = await request(req);
    } catch (e) {
      if (missing) throw new StoreMissing(databaseName(name));
      throw e;
    }
    const lacking = [...tables, SYNC].filter((t) => !db.objectStoreNames.contains(t));
    if (lacking.length) {
      db.close();
      throw new Error(`IndexedDB database ${databaseName(name)} lacks ${lacking.join(', ')}`);
    }
    // Let another tab upgrade or delete the database rather than block it.
    db.onversionchange = () => db.close();
    return new IdbStore(db, name, tables, locks);
  }

  static async delete(name, { indexedDB = globalThis.indexedDB } = {}) {
    if (!indexedDB) throw new Error('IndexedDB is not available in this runtime');
    const req = indexedDB.deleteDatabase(databaseName(name));
    await request(req);
  }

  async load() {
    const tx = this.#db.transaction([...this.#tables, SYNC], 'readonly');
    const finished = done(tx);
    const reads = this.#tables.map((table) => {
      const store = tx.objectStore(table);
      return Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    });
    const version = request(tx.objectStore(SYNC).get(COMMITS));
    const tables = await Promise.all(reads);
    const commits = await version;
    await finished;
    const records = [];
    tables.forEach(([keys, values], table) => {
      keys.forEach((key, i) => {
        records.push({ table, key: new Uint8Array(key), value: new Uint8Array(values[i]) });
      });
    });
    return { version: commits ?? 0, records: packRecords(records) };
  }

  async version() {
    const tx = this.#db.transaction(SYNC, 'readonly');
    return (await request(tx.objectStore(SYNC).get(COMMITS))) ?? 0;
  }

  /**
   * One readwrite transaction: reads the commit counter and, only if it is still `expected`,
   * applies `writes` and sets the counter to `next`. Otherwise it aborts: CommitConflict.
   */
  async persist(writes, expected, next) {
    const tx = this.#db.transaction([...this.#tables, SYNC], 'readwrite', { durability: 'strict' });
    const finished = done(tx);
    let conflict;
    let failure;
    const read = tx.objectStore(SYNC).get(COMMITS);
    // The writes are made in the read's success event, while the transaction is active.
    read.onsuccess = () => {
      const stored = read.result ?? 0;
      try {
        if (stored !== expected) {
          conflict = new CommitConflict(expected, stored);
          tx.abort();
          return;
        }
        for (const w of unpackWrites(writes)) {
          const store = tx.objectStore(this.#tables[w.table]);
          // Keys are copied by IndexedDB; values are cloned with their whole buffer, so slice.
          if (w.op === DELETE) store.delete(w.key);
          else store.put(w.value.slice(), w.key);
        }
        tx.objectStore(SYNC).put(next, COMMITS);
      } catch (e) {
        failure ??= e;
        try {
          tx.abort();
        } catch {
          // already finished
        }
      }
    };
    try {
      await finished;
    } catch (e) {
      throw conflict ?? failure ?? e;
    }
  }

  lock(fn) {
    return this.#locks.request(this.#lockName, fn);
  }

  close() {
    this.#db.close();
  }
}
