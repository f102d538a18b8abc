// The commit engine of a Client (index.js): it holds the wasm client (RawClient over RawJournal:
// proteus-client's storage/journal.rs, the records in memory) and the store, runs each call on
// the wasm client and stores what the call committed.
//   * Calls of one client run one at a time; calls on one store take turns across tabs through
//     Web Locks (navigator.locks). Under the lock, a client whose store was changed by another
//     tab reloads first. Every commit is a compare-and-swap on the store's commit counter, so
//     even without the lock two tabs never reuse a message key or lose a commit: the loser
//     reloads and runs its call again (or fails with StoreConflict if it delivered results).
//     The journal decides each of these steps (begin: reload first? takeCommit: what to store,
//     with which compare-and-swap? retry: run again or StoreConflict?); this module does the
//     IndexedDB I/O and holds the locks.

import { log } from './log.js';
import { RawClient, RawJournal } from './proteus_web.js';
import { CommitConflict, LocalLocks, StaleRun } from './stores.js';
import {
  adopt,
  busyError,
  closedError,
  conflictError,
  internalError,
  isConflict,
  notFoundError,
  storeFailure,
  wasm,
} from './errors.js';

/**
 * The store's records. The store calls into wasm too (the records packed for the client, a
 * sealed store's sealing): a trap there is rethrown as it is, for the engine to fail on.
 */
async function load(store) {
  try {
    return await store.load();
  } catch (e) {
    throw e instanceof WebAssembly.RuntimeError ? e : storeFailure(e);
  }
}

/** #attemptInOne ran nothing: the client must reload first. */
const STALE = Symbol('stale');

/** The wasm client of one Client on its store: runs the Client's calls and stores their commits. */
export class CommitEngine {
  #raw;
  /** Made by start(), where a trap (out of wasm memory) fails the open with Internal. */
  #journal;
  #store;
  #closed = false;
  #failed;
  /** The store's commit counter as this client last loaded or stored it. */
  #known = 0;
  /**
   * Whether the last call found the store where this client had left it: only then does a call
   * run ahead of its read (#attemptInOne), which another tab's commit in between makes a wasted
   * run.
   */
  #aheadPays = true;
  /** This client's calls, one at a time (the store's lock is for other clients, other tabs). */
  #calls = new LocalLocks();
  /** A decryptBatch is delivering: calls fail with ClientBusy rather than wait for it. */
  delivering = false;
  /** The counter-gap limit the application set (setMaxCounterGap): every reload applies it. */
  maxCounterGap;
  /** Whether identities are pinned (the identityPinning option): every reload applies it. */
  identityPinning = false;

  constructor(store) {
    this.#store = store;
  }

  /**
   * Loads the store; an empty one gets an identity, unless `mustExist` (its name) is given.
   * Resolves to whether a new identity was made; on failure, the store is closed.
   */
  async start(mustExist) {
    const store = this.#store;
    try {
      this.#journal = this.#inWasm(() => new RawJournal());
      return await store.lock(async () => {
        for (;;) {
          const loaded = await this.#loadFrom(store);
          const created = loaded.records.length === 0;
          if (created && mustExist !== undefined) throw notFoundError(mustExist);
          this.#open(loaded);
          try {
            await this.#persist();
            this.#journal.end();
            return created;
          } catch (e) {
            // Another tab stored its new identity first: load that one.
            if (!isConflict(e) || !this.#journal.retry()) throw e;
          }
        }
      });
    } catch (e) {
      this.#free();
      store.close();
      throw e;
    }
  }

  /** Opens the wasm client on `loaded` (the journal then holds it); the previous one goes. */
  #open(loaded) {
    const raw = this.#inWasm(() => new RawClient(loaded.records, loaded.version, this.#journal));
    this.#raw?.free();
    this.#raw = raw;
    this.#known = loaded.version;
    if (this.maxCounterGap !== undefined) raw.setMaxCounterGap(this.maxCounterGap);
    if (this.identityPinning) raw.setIdentityPinning(true);
  }

  /** Wipes the keys in wasm memory. */
  #free() {
    try {
      this.#raw?.free();
      this.#journal?.free();
    } catch {
      // a failed client may not free; its memory goes with the page
    }
  }

  /**
   * Runs `fn(raw)` on fresh state, one call at a time and under the store's lock, and persists
   * what it committed. `beforePersist(result)`, if given, is called in between; if it returns a
   * Promise, that is awaited, and if it throws or rejects, nothing is persisted and the next call
   * starts from the stored state. If the commit loses its compare-and-swap, the client reloads
   * and runs `fn` again if the journal allows it (not when `fn` delivered results, `delivers`):
   * else the call fails with StoreConflict. `durability`: of the commit's IndexedDB transaction
   * ('relaxed' only for decrypt-only commits: idb.js, update). A call that delivers nothing runs
   * ahead of its transaction's read of the counter (#attemptInOne).
   */
  run(fn, { beforePersist, delivers = false, durability = 'strict' } = {}) {
    if (this.#closed) return Promise.reject(closedError());
    if (this.delivering) return Promise.reject(busyError());
    const run = delivers
      ? (raw) => {
          this.#journal.handOut();
          return fn(raw);
        }
      : fn;
    return this.#calls.request('calls', () =>
      this.#store.lock(async () => {
        try {
          for (;;) {
            try {
              return await this.#attempt(run, beforePersist, durability, !delivers);
            } catch (e) {
              if (!isConflict(e)) throw e;
              if (!this.#journal.retry()) {
                log('info', 'commit conflict: another tab committed first; the call fails with StoreConflict');
                throw e;
              }
              log('info', 'commit conflict: another tab committed first; the call runs again');
            } finally {
              this.delivering = false;
            }
          }
        } finally {
          if (!this.#closed && !this.#failed) this.#journal.end();
        }
      }),
    );
  }

  async #attempt(fn, beforePersist, durability, ahead) {
    if (this.#closed) throw closedError();
    if (this.#failed) throw internalError(this.#failed);
    if (this.#store.updatesInOne) {
      const outcome = await this.#attemptInOne(fn, beforePersist, durability, ahead);
      if (outcome !== STALE) return outcome;
    }
    let counter;
    try {
      counter = await this.#store.version();
    } catch (e) {
      throw storeFailure(e);
    }
    if (this.#journal.begin(counter)) await this.#reload();
    let result;
    try {
      result = fn(this.#raw);
    } catch (e) {
      this.#failOnTrap(e);
      // A failed call changes nothing; persist anyway should a commit be pending.
      await this.#persist(durability);
      throw adopt(e);
    }
    // If it throws, the commit is not stored, and the journal is stale until the next reload.
    if (beforePersist !== undefined) await beforePersist(result);
    await this.#persist(durability);
    return result;
  }

  /**
   * The call in ONE IndexedDB transaction (a plain IndexedDB store): its read of the commit
   * counter decides whether the client is stale, and `fn` runs and its commit is written while
   * the transaction is active, instead of a transaction to read the counter and another to write.
   * Resolves to STALE (nothing ran) when the client must reload first, or the call's commit must
   * wait for a Promise of `beforePersist` (the batch callback's): then it is persisted after it
   * in a transaction of its own, the compare-and-swap keeping it exact.
   * `ahead` (a call that hands nothing to the application before its commit): `fn` runs at once
   * on the counter this client knows, while the read is in flight, so the wasm work hides its
   * latency. If another tab committed since, the read aborts the transaction (StaleRun: nothing
   * stored, and what `fn` returned or threw is void, nothing of it was handed out): STALE, and
   * the call runs again after a reload, as when the read comes first. Once a call found the
   * store changed, calls read first until one finds it unchanged (#aheadPays).
   */
  async #attemptInOne(fn, beforePersist, durability, ahead) {
    const ranOn = ahead && this.#aheadPays ? this.#known : undefined;
    let ran = false;
    let result;
    let error;
    let waitFor;
    let commit;
    let stored;
    try {
      stored = await this.#store.update((counter) => {
        if (this.#journal.begin(counter)) return undefined;
        ran = true;
        try {
          result = fn(this.#raw);
        } catch (e) {
          this.#failOnTrap(e);
          // A failed call changes nothing; persist anyway should a commit be pending.
          error = e;
        }
        if (error === undefined && beforePersist !== undefined) {
          waitFor = beforePersist(result);
          if (waitFor !== undefined) {
            // Awaited once the transaction is over; until then its rejection is not unhandled.
            waitFor.catch(() => {});
            return undefined;
          }
        }
        commit = this.#inWasm(() => this.#journal.takeCommit());
        return commit;
      }, durability, ranOn);
    } catch (e) {
      if (e instanceof StaleRun) {
        this.#aheadPays = false;
        return STALE;
      }
      // The store calls into wasm for the writes' bounds (and a sealed store to seal them).
      this.#failOnTrap(e);
      throw e instanceof CommitConflict ? conflictError(e) : storeFailure(e);
    }
    this.#aheadPays = ran;
    if (!ran) return STALE;
    if (stored) this.#committed(commit);
    if (error !== undefined) throw adopt(error);
    if (waitFor !== undefined) {
      await waitFor;
      await this.#persist(durability);
    }
    return result;
  }

  /**
   * Takes what a call on the wasm client threw. A wasm trap (WebAssembly.RuntimeError) leaves the
   * wasm client unusable: this client fails for good (InternalError, now and on every later
   * call). Any other error is the call's own; the caller handles it.
   */
  #failOnTrap(e) {
    if (e instanceof WebAssembly.RuntimeError) {
      this.#failed = e;
      throw internalError(e);
    }
  }

  /**
   * `f()`, a call into the wasm client outside the call's own `fn`: opening it, the journal, and
   * its commit (takeCommit encodes the writes in wasm memory). A trap there (out of memory:
   * tests/faults/memory.mjs) fails the client with Internal as a trap in `fn` does, before
   * anything is stored, rather than escaping as a bare RuntimeError (or, from takeCommit, a
   * StorageFailure) and leaving a journal that traps at every later step.
   */
  #inWasm(f) {
    try {
      return wasm(f);
    } catch (e) {
      this.#failOnTrap(e);
      throw e;
    }
  }

  /** `load(store)`, a trap in its calls into wasm failing the client as one in the client's own. */
  async #loadFrom(store) {
    try {
      return await load(store);
    } catch (e) {
      this.#failOnTrap(e);
      throw e;
    }
  }

  async #reload() {
    log('info', 'another process or tab committed: reloading');
    this.#open(await this.#loadFrom(this.#store));
    await this.#persist();
  }

  /**
   * Stores the journal's commit, if any, in one transaction that is a compare-and-swap on the
   * commit counter. On failure (StorageFailure, or StoreConflict) the journal is stale and the
   * next call reloads.
   */
  async #persist(durability = 'strict') {
    const commit = this.#inWasm(() => this.#journal.takeCommit());
    if (commit === undefined) return;
    const [writes, expected, next] = commit;
    try {
      await this.#store.persist(writes, expected, next, durability);
    } catch (e) {
      this.#failOnTrap(e);
      throw e instanceof CommitConflict ? conflictError(e) : storeFailure(e);
    }
    this.#committed(commit);
  }

  /** `commit` (`[writes, expected, next]`) is stored: the store is at `next`. */
  #committed(commit) {
    this.#journal.committed();
    this.#known = commit[2];
  }

  /** Waits for calls in progress, wipes the keys in wasm memory and closes the store. */
  async close() {
    if (this.#closed) return;
    if (this.delivering) throw busyError();
    await this.#calls
      .request('calls', () =>
        this.#store.lock(async () => {
          if (this.#closed) return;
          this.#closed = true;
          this.#free();
        }),
      )
      .finally(() => this.#store.close());
  }
}
