// A client's store in IndexedDB, plain or sealed (sealing.js): the store interface of stores.js
// (load, version, persist as a compare-and-swap on the commit counter, lock, close), and the
// conversions of a whole store from plain to sealed and from one key to another.

import { concat, packed, writesOf } from './records.js';
import { openStep, sealChanged } from './sealing.js';
import { CommitConflict, StaleRun, StoreMissing } from './stores.js';

const DB_VERSION = 1;
/** The object store of the commit counter (web only; the record tables are proteus-client's). */
const SYNC = 'sync';
const COMMITS = 'commits';
/** In `sync`, a sealed store's check value (sealing.js); absent in a plain store. */
const SEAL = 'seal';
/** In `sync`, a sealed store's manifest (sealing.js): store id, commit, digest of the records. */
// Which records a sealed commit writes, under which keys, sealed how, and the manifest and check
// value: proteus-client's web sealed format decides (sealing.js runs its Web Crypto operations).
const MANIFEST = 'manifest';

/**
 * The steps of opening a store, as openStep (sealing.js; proteus-client's web_sealed::open_step)
 * numbers them: open it as it is (0); verify its check value with the key (1); seal the empty
 * store (2); re-seal every record in format 2, reading them with the store's manifest (3) or,
 * legacy, without one (4).
 */
const [READY, VERIFY, SEAL_EMPTY, RESEAL, RESEAL_LEGACY] = [0, 1, 2, 3, 4];

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

const bytesOf = (value) => (value === undefined ? undefined : new Uint8Array(value));

/** Whether two check values (public: sealed constants) are the same bytes. */
function equalBytes(a, b) {
  if (a === b) return true;
  if (a === undefined || b === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The IndexedDB database that holds store `name`. */
export function databaseName(name) {
  return `proteus:${name}`;
}

/**
 * A store in IndexedDB: one object store per table of proteus-client (binary keys, the records
 * as proteus-client writes them, or sealed) and `sync` with the commit counter and, in a sealed
 * store, the check value of its key. Every commit is one readwrite transaction (strict
 * durability unless it only decrypts: `update`), which also checks that the store is still
 * sealed as it was when opened.
 */
export class IdbStore {
  #db;
  #tables;
  #lockName;
  #locks;
  #sealer;
  /** The check value this store was opened with (undefined: plain). */
  #check;

  constructor(db, name, tables, locks, sealer) {
    this.#db = db;
    this.#tables = tables;
    this.#lockName = databaseName(name);
    this.#locks = locks;
    this.#sealer = sealer;
  }

  /**
   * Opens (or, unless `create` is false, creates) the database of store `name`. With `create`
   * false a missing database is not created: StoreMissing. With a `sealer`, the store must be
   * sealed with its key (an empty store is sealed now); without, it must be plain. A refusal
   * (StoreKeyRequired 510, WrongStoreKey 508, StoreNotSealed 509) changes nothing.
   */
  static async open(name, tables, { indexedDB = globalThis.indexedDB, locks, create = true, sealer }) {
    const db = await openDatabase(name, tables, indexedDB, create);
    try {
      // Let another tab upgrade or delete the database rather than block it.
      db.onversionchange = () => db.close();
      const store = new IdbStore(db, name, tables, locks, sealer);
      await store.#admit(false, sealer);
      return store;
    } catch (e) {
      db.close();
      throw e;
    }
  }

  static async delete(name, { indexedDB = globalThis.indexedDB } = {}) {
    if (!indexedDB) throw new Error('IndexedDB is not available in this runtime');
    await request(indexedDB.deleteDatabase(databaseName(name)));
  }

  /**
   * Re-seals every record of existing store `name` with `to`: a plain store (`from`
   * undefined; a sealed one is refused with StoreCorrupt 503, as natively) or one sealed with
   * `from`. One transaction under the store's lock: no record sealed with the old key (or plain)
   * remains, and the commit counter moves so that clients still open on it reload (and fail
   * with 510/508 until opened with the new key).
   */
  static async reseal(name, tables, { indexedDB = globalThis.indexedDB, locks }, from, to) {
    const db = await openDatabase(name, tables, indexedDB, false);
    try {
      await new IdbStore(db, name, tables, locks, from).#admit(true, to);
    } finally {
      db.close();
      from?.close();
      to.close();
    }
  }

  /**
   * Takes the steps proteus-client decides (openStep) until the store is open (`convert`
   * false) or, converted, re-sealed with `to` (`Client.sealStore` and `rekeyStore`: this
   * store's sealer is the old key, or undefined). Each step is asked on the `sync` table as
   * read just before: a check value verified with this store's sealer, an empty store sealed
   * (only if that is still the step in the transaction that marks it: two tabs seal it once),
   * every record re-sealed (under the store's lock, only if that is still the step there:
   * another tab may have done it). Then `#check` is the store's check value.
   */
  async #admit(convert, to) {
    const sealer = this.#sealer;
    // The sealer's verification of a check value, for those bytes (a reseal writes new ones).
    let verified;
    const stepOf = (state) => {
      const known = verified !== undefined && equalBytes(state.check, verified.check);
      return openStep(convert, state, sealer !== undefined, known ? verified.ok : undefined);
    };
    for (;;) {
      const state = await readSync(this.#db);
      this.#check = state.check;
      const step = stepOf(state);
      if (step === READY) return;
      if (step === VERIFY) {
        verified = { check: state.check, ok: await sealer.verify(state.check) };
      } else if (step === SEAL_EMPTY) {
        const check = await sealer.check();
        await sealEmpty(this.#db, check, (now) => stepOf(now) === SEAL_EMPTY);
        // Made with this key (another tab's, stored first, is verified at the next step).
        verified = { check, ok: true };
      } else {
        // RESEAL or RESEAL_LEGACY; the same step under the lock reads the same check value.
        const resealed = await this.lock(async () => {
          if (stepOf(await readSync(this.#db)) !== step) return false;
          verified = { check: await this.#reseal(to, step === RESEAL_LEGACY), ok: true };
          return true;
        });
        if (resealed && convert) return;
      }
    }
  }

  /**
   * Re-seals every record with `to` (format 2, a new store id, at the next commit), with a new
   * check value and manifest, in one transaction: the new check value. `legacy`: the store is
   * plain or sealed in format 1 (no manifest yet).
   */
  async #reseal(to, legacy) {
    const { commits, records } = await this.#read(legacy);
    const sealed = await to.reseal(records, commits);
    await this.#transaction(commits, (tx) => this.#putSealed(tx, sealed));
    return sealed.check;
  }

  /** Stores a sealed commit (`Sealer.persist`'s or `reseal`'s) in transaction `tx`. */
  #putSealed(tx, sealed) {
    if (sealed.replaceAll) for (const table of this.#tables) tx.objectStore(table).clear();
    this.#write(tx, sealedEntries(sealed), sealed.commit);
    const sync = tx.objectStore(SYNC);
    if (sealed.check !== undefined) sync.put(sealed.check, SEAL);
    sync.put(sealed.manifest, MANIFEST);
  }

  /**
   * Every record, opened: `{commits, records}`, a record buffer. A sealed store's records are
   * checked against its manifest by the sealer (proteus-client's web sealed format): a record
   * missing, older than the store committed, moved or from another store is refused with
   * StoreTampered (514), a manifest that went back while this store was open with
   * StoreRolledBack (511). `legacy`: a store without a manifest (plain, or sealed in format 1)
   * is read as it is, to be re-sealed.
   */
  async #read(legacy = false) {
    const tx = this.#db.transaction([...this.#tables, SYNC], 'readonly');
    const finished = done(tx);
    const reads = this.#tables.map((table) => {
      const store = tx.objectStore(table);
      return Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    });
    const sync = tx.objectStore(SYNC);
    const state = Promise.all([request(sync.get(COMMITS)), request(sync.get(SEAL)), request(sync.get(MANIFEST))]);
    const tables = await Promise.all(reads);
    const [commits, check, manifest] = await state;
    await finished;
    if (!equalBytes(bytesOf(check), this.#check)) throw sealChanged(check !== undefined, this.#sealer);
    const stored = [];
    tables.forEach(([keys, values], table) => {
      keys.forEach((key, i) => stored.push({ table, key: new Uint8Array(key), value: new Uint8Array(values[i]) }));
    });
    if (this.#sealer === undefined) return { commits: commits ?? 0, records: packed(stored) };
    const tableOf = Uint8Array.from(stored, (r) => r.table);
    const [bytes, lengths] = concat(stored.flatMap((r) => [r.key, r.value]));
    const opened = await this.#sealer.load(tableOf, bytes, lengths, commits ?? 0, bytesOf(manifest), legacy);
    return { commits: commits ?? 0, records: opened.records };
  }

  async load() {
    const { commits, records } = await this.#read();
    return { version: commits, records };
  }

  async version() {
    const tx = this.#db.transaction(SYNC, 'readonly');
    return (await request(tx.objectStore(SYNC).get(COMMITS))) ?? 0;
  }

  /**
   * One readwrite transaction: reads the commit counter and, only if it is still `expected`,
   * applies `writes` (sealed first, if the store is) and sets the counter to `next`. Otherwise
   * it aborts: CommitConflict. `durability` is the transaction's: 'strict' unless the commit may
   * be lost in a crash (a decrypt-only commit, see `update`).
   */
  async persist(writes, expected, next, durability = 'strict') {
    if (this.#sealer !== undefined) return this.#persistSealed(writes, expected, next, durability);
    const entries = plainEntries(writes);
    await this.#transaction(expected, (tx) => this.#write(tx, entries, next), durability);
  }

  /**
   * `persist` for a sealed store: the writes sealed at commit `next` with the manifest moved by
   * them (Sealer.persist), stored in one transaction; then the sealer's manifest is this one.
   */
  async #persistSealed(writes, expected, next, durability) {
    const sealer = this.#sealer;
    const sealed = await sealer.persist(writes, expected, next);
    // The manifest known here is not the store's at `expected`: reload first.
    if (sealed === undefined) throw new CommitConflict(expected, sealer.commit ?? -1);
    await this.#transaction(expected, (tx) => this.#putSealed(tx, sealed), durability);
    sealer.committed();
  }

  /** Whether `update` can run a whole call in one transaction (a sealed store seals asynchronously). */
  get updatesInOne() {
    return this.#sealer === undefined;
  }

  /**
   * A whole call in ONE readwrite transaction (plain stores only): reads the commit counter and
   * calls `step(counter)` in the read's success event, synchronously, while the transaction is
   * active. `step` returns the commit to store, `[writes, expected, next]` (stored only if the
   * counter is `expected`, else CommitConflict and nothing is stored), or undefined to store
   * nothing. If it throws, nothing is stored and its exception is rethrown. `durability`
   * 'relaxed' may be used for a commit that only decrypts: a crash may lose it (the browser
   * returns once the write reached the OS, without flushing it to disk), and then the same
   * messages decrypt again under the same ids, which the batch contract allows; never for a
   * commit whose loss could reuse a message key (encrypt).
   *
   * With `ranOn` (a counter), `step(ranOn)` runs at once, on the caller's belief that the store
   * is at `ranOn`, while the read of the counter is in flight (the caller's work hides the read's
   * latency), and its writes are queued behind the read. The read's success event aborts the
   * transaction, so that none of them is stored, if the store is at another counter (StaleRun:
   * whatever `step` did is void) or its seal changed. IndexedDB cannot commit a transaction
   * before every request's event was dispatched, so the compare-and-swap is as exact as without.
   */
  async update(step, durability = 'strict', ranOn = undefined) {
    if (ranOn !== undefined) return this.#updateAhead(step, durability, ranOn);
    let commit;
    await this.#transaction(undefined, (tx, stored) => {
      commit = step(stored);
      if (commit === undefined) return;
      const [writes, expected, next] = commit;
      if (stored !== expected) throw new CommitConflict(expected, stored);
      this.#write(tx, plainEntries(writes), next);
    }, durability);
    return commit !== undefined;
  }

  async #updateAhead(step, durability, ranOn) {
    const tx = this.#db.transaction([...this.#tables, SYNC], 'readwrite', { durability });
    const finished = done(tx);
    // Awaited below; if a request throws first (the browser aborted the transaction), the call
    // fails with that error and this one must not be left unhandled.
    finished.catch(() => {});
    const sync = tx.objectStore(SYNC);
    const commits = sync.get(COMMITS);
    const seal = sync.get(SEAL);
    let commit;
    let refused;
    seal.onsuccess = () => {
      const stored = commits.result ?? 0;
      const check = bytesOf(seal.result);
      if (!equalBytes(check, this.#check)) refused = sealChanged(check !== undefined, this.#sealer);
      else if (stored !== ranOn) refused = new StaleRun(ranOn, stored);
      if (refused !== undefined) tx.abort();
    };
    try {
      commit = step(ranOn);
      if (commit !== undefined) this.#write(tx, plainEntries(commit[0]), commit[2]);
    } catch (e) {
      // Nothing is stored; the transaction's own failure is this one.
      try {
        tx.abort();
      } catch {
        // already finished
      }
      throw e;
    }
    try {
      await finished;
    } catch (e) {
      throw refused ?? e;
    }
    return commit !== undefined;
  }

  #write(tx, entries, next) {
    for (const w of entries) {
      const store = tx.objectStore(this.#tables[w.table]);
      if (w.put) store.put(w.value, w.key);
      else store.delete(w.key);
    }
    tx.objectStore(SYNC).put(next, COMMITS);
  }

  /**
   * Runs `write(tx, counter)` in one readwrite transaction over every table, only if the commit
   * counter is still `expected` (else CommitConflict; undefined: any counter, `write` decides)
   * and the store is sealed as when it was opened. If `write` throws, nothing is stored.
   */
  async #transaction(expected, write, durability = 'strict') {
    const tx = this.#db.transaction([...this.#tables, SYNC], 'readwrite', { durability });
    const finished = done(tx);
    // As in #updateAhead: handled where it is awaited, never left unhandled by a throw before.
    finished.catch(() => {});
    let refused;
    let failed;
    const sync = tx.objectStore(SYNC);
    const commits = sync.get(COMMITS);
    const seal = sync.get(SEAL);
    // The writes are made in the last read's success event, while the transaction is active.
    seal.onsuccess = () => {
      const stored = commits.result ?? 0;
      const check = bytesOf(seal.result);
      try {
        if (!equalBytes(check, this.#check)) refused = sealChanged(check !== undefined, this.#sealer);
        else if (expected !== undefined && stored !== expected) refused = new CommitConflict(expected, stored);
        if (refused !== undefined) {
          tx.abort();
          return;
        }
        write(tx, stored);
      } catch (e) {
        failed ??= e;
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
      throw refused ?? failed ?? e;
    }
  }

  lock(fn) {
    return this.#locks.request(this.#lockName, fn);
  }

  close() {
    this.#db.close();
    this.#sealer?.close();
  }
}

/**
 * The entries of a commit buffer as a plain store stores them: keys are copied by IndexedDB, but
 * a value view would be cloned with its whole buffer, so each value is sliced out.
 */
function plainEntries(writes) {
  const entries = [];
  for (const w of writesOf(writes)) entries.push(w.put ? { ...w, value: w.value.slice() } : w);
  return entries;
}

/** The entries of a sealed commit, values sliced out as in `plainEntries`. */
function sealedEntries({ bytes, bounds }) {
  const entries = [];
  for (const w of writesOf(bytes, bounds)) entries.push(w.put ? { ...w, value: w.value.slice() } : w);
  return entries;
}

/** Opens the database of store `name`, creating it (unless `create` is false: StoreMissing). */
async function openDatabase(name, tables, indexedDB, create) {
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
  return db;
}

/**
 * Reads the store's `{check, commits, manifest}` (check value and manifest undefined: plain;
 * manifest undefined: sealed in format 1, or empty) in one transaction of `mode` and returns
 * `then(state, sync)`, called while the transaction is active (`sync`: its object store).
 */
async function withSync(db, mode, then) {
  const tx = db.transaction(SYNC, mode, mode === 'readwrite' ? { durability: 'strict' } : undefined);
  const finished = done(tx);
  const sync = tx.objectStore(SYNC);
  const [check, commits, manifest] = [SEAL, COMMITS, MANIFEST].map((key) => sync.get(key));
  let result;
  manifest.onsuccess = () => {
    result = then({ check: bytesOf(check.result), commits: commits.result ?? 0, manifest: bytesOf(manifest.result) }, sync);
  };
  await finished;
  return result;
}

/** The store's `{check, commits, manifest}`. */
const readSync = (db) => withSync(db, 'readonly', (state) => state);

/**
 * Marks an empty store as sealed with `check` if `seals(state)` on what the same transaction
 * reads: not if another tab sealed it first, or committed. A refusal writes nothing (the next
 * step, asked on what is stored, reports it).
 */
const sealEmpty = (db, check, seals) =>
  withSync(db, 'readwrite', (state, sync) => {
    try {
      if (seals(state)) sync.put(check, SEAL);
    } catch {
      // refused: nothing is written
    }
  });
