// The commit engine of a Client (index.js): it holds the wasm client (RawClient over RawJournal:
// proteus-client's storage/journal.rs, the records in memory) and the store, runs each call on
// the wasm client and stores what the call committed.
//   * Calls of one client run one at a time; calls on one store take turns across tabs through
//     Web Locks (navigator.locks). Every commit is a compare-and-swap on the store's commit
//     counter, so even without the lock two tabs never reuse a message key or lose a commit.
//   * Every step of a call is decided in wasm by the journal's driver (proteus-client's
//     storage/journal/driver.rs, through ffi/web/src/commit.rs): read the counter, run in one
//     transaction and ahead of its read or not, reload, run, wait for the application, store,
//     run again or fail with StoreConflict. This module executes each action and reports how it
//     went: it keeps the IndexedDB I/O, the locks, the call of the application's function and
//     the platform's error objects (a trap among them: after one, wasm is not asked again).

import { log } from './log.js';
import { RawClient, RawJournal } from './proteus_web.js';
import { CommitConflict, LocalLocks, StaleRun } from './stores.js';
import {
  adopt,
  busyError,
  closedError,
  conflictError,
  internalError,
  notFoundError,
  storeFailure,
  wasm,
} from './errors.js';

// The driver's actions and the reports of them, numbered as in ffi/web/src/commit.rs. An action
// of AHEAD + counter runs the call in one transaction, ahead of its read, on that counter.
const [READ, TRANSACTION, RELOAD, RUN, AWAIT, STORE, STORE_STRICT, WRITE, LEAVE, RETURN, FAIL_CALL, FAIL, MISREPORTED, AHEAD] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
const [COUNTER, DONE, RAN, DEFERRED, THREW, CONFLICT, STALE_RUN, FAILED] = [0, 1, 2, 3, 4, 5, 6, 7];

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

/** The wasm client of one Client on its store: runs the Client's calls and stores their commits. */
export class CommitEngine {
  #raw;
  /** Made by start(), where a trap (out of wasm memory) fails the open with Internal. */
  #journal;
  #store;
  #closed = false;
  /**
   * The wasm trap that failed this client for good. Known here, not in wasm: a trapped module's
   * state is in doubt (a lock or a borrow left held), so it is not asked anything again.
   */
  #failed;
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
      const op = { opening: true, mustExist, durability: 'strict' };
      return await store.lock(() => this.#drive(this.#inWasm(() => this.#journal.open()), op));
    } catch (e) {
      this.#free();
      store.close();
      throw e;
    }
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
   * starts from the stored state. `delivers`: `fn` hands results to the application before its
   * commit (then a lost compare-and-swap fails the call with StoreConflict rather than run it
   * again). `durability`: of the commit's IndexedDB transaction ('relaxed' only for decrypt-only
   * commits: idb.js, update). The driver decides the rest.
   */
  run(fn, { beforePersist, delivers = false, durability = 'strict' } = {}) {
    if (this.#closed) return Promise.reject(closedError());
    if (this.delivering) return Promise.reject(busyError());
    return this.#calls.request('calls', () =>
      this.#store.lock(async () => {
        try {
          if (this.#closed) throw closedError();
          if (this.#failed) throw internalError(this.#failed);
          const op = { fn, beforePersist, durability };
          const inOne = this.#store.updatesInOne === true;
          return await this.#drive(this.#inWasm(() => this.#journal.call(inOne, delivers)), op);
        } finally {
          this.delivering = false;
        }
      }),
    );
  }

  /**
   * Executes the driver's actions from `action` until it returns or fails. `op`: the operation
   * (its function, settlement and durability, or `opening`), where what it returned, its own
   * error and the last failure reported are kept.
   */
  async #drive(action, op) {
    for (;;) {
      switch (action) {
        case READ:
          action = await this.#report(() => this.#store.version(), op, COUNTER);
          break;
        case TRANSACTION:
          action = await this.#transaction(op, undefined);
          break;
        case RELOAD:
          if (!op.opening) log('info', 'another process or tab committed: reloading');
          action = await this.#report(async () => this.#open(await load(this.#store), op), op);
          break;
        case RUN:
          action = this.#next(this.#call(op));
          break;
        case AWAIT: {
          let report = DONE;
          try {
            await op.waitFor;
          } catch (e) {
            op.error = e;
            report = FAILED;
          }
          action = this.#next(report);
          break;
        }
        case STORE:
        case STORE_STRICT: {
          const durability = action === STORE ? op.durability : 'strict';
          action = await this.#report(() => {
            const commit = this.#inWasm(() => this.#journal.takeCommit());
            return commit && this.#store.persist(...commit, durability);
          }, op);
          break;
        }
        case RETURN:
          return op.result;
        case FAIL_CALL:
          throw adopt(op.callError);
        case FAIL:
          throw op.error;
        case MISREPORTED:
          throw internalError(new Error('the commit engine reported a step it was not asked for'));
        default:
          action = await this.#transaction(op, action - AHEAD);
      }
    }
  }

  /**
   * The call in ONE IndexedDB transaction (a plain IndexedDB store, idb.js update): its read of
   * the commit counter is reported in the read's success event, and the call runs and its commit
   * is written while the transaction is active, as the driver asks. `ranOn`: the counter to run
   * on ahead of the read (the transaction aborts with StaleRun if the store is elsewhere).
   */
  async #transaction(op, ranOn) {
    // The driver's last answer in the transaction. The operation ended there if it is none of
    // these (the settlement threw): that answer is final, whatever the transaction did.
    let last;
    const step = (counter) => {
      for (last = this.#next(COUNTER, counter); last === RUN; ) last = this.#next(this.#call(op));
      return last === WRITE ? this.#inWasm(() => this.#journal.takeCommit()) : undefined;
    };
    const ended = () => last !== undefined && last !== RUN && last !== WRITE && last !== LEAVE;
    try {
      await this.#store.update(step, op.durability, ranOn);
    } catch (e) {
      return ended() && this.#failed === undefined ? last : this.#failure(e, op);
    }
    return ended() ? last : this.#next(DONE);
  }

  /** Runs the call, then hands its result to `beforePersist` if given: the report. */
  #call(op) {
    try {
      op.result = op.fn(this.#raw);
    } catch (e) {
      this.#failOnTrap(e);
      op.callError = e;
      return THREW;
    }
    if (op.beforePersist === undefined) return RAN;
    try {
      op.waitFor = op.beforePersist(op.result);
    } catch (e) {
      op.error = e;
      return FAILED;
    }
    if (op.waitFor === undefined) return RAN;
    // Awaited once the transaction is over (AWAIT); until then its rejection is not unhandled.
    op.waitFor.catch(() => {});
    return DEFERRED;
  }

  /** Awaits `io()`, then reports `done` with what it resolved to (a counter), or its failure. */
  async #report(io, op, done = DONE) {
    let value;
    try {
      value = await io();
    } catch (e) {
      return this.#failure(e, op);
    }
    return this.#next(done, value);
  }

  /** Reports the failure `e` of an action: the platform's error, kept for the driver's FAIL. */
  #failure(e, op) {
    // A trap in the action (the call in a transaction, takeCommit): wasm is not asked again.
    if (this.#failed !== undefined) throw internalError(this.#failed);
    // The store calls into wasm too (the records' bounds, a sealed store's sealing): a trap there
    // fails the client as one in the client's own.
    this.#failOnTrap(e);
    if (e instanceof StaleRun) return this.#next(STALE_RUN);
    if (!(e instanceof CommitConflict)) {
      op.error = storeFailure(e);
      return this.#next(FAILED);
    }
    op.error = conflictError(e);
    this.delivering = false;
    const action = this.#next(CONFLICT);
    if (!op.opening) {
      log('info', action === FAIL
        ? 'commit conflict: another tab committed first; the call fails with StoreConflict'
        : 'commit conflict: another tab committed first; the call runs again');
    }
    return action;
  }

  /** The driver's answer to `report`. */
  #next(report, counter = 0) {
    return this.#inWasm(() => this.#journal.next(report, counter));
  }

  /** Opens the wasm client on `loaded` (the journal then holds it); the previous one goes. */
  #open(loaded, op) {
    const created = loaded.records.length === 0;
    if (created && op.mustExist !== undefined) throw notFoundError(op.mustExist);
    const raw = this.#inWasm(() => new RawClient(loaded.records, loaded.version, this.#journal));
    this.#raw?.free();
    this.#raw = raw;
    if (this.maxCounterGap !== undefined) raw.setMaxCounterGap(this.maxCounterGap);
    if (this.identityPinning) raw.setIdentityPinning(true);
    if (op.opening) op.result = created;
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
   * `f()`, a call into the wasm client outside the call's own `fn`: opening it, the journal, its
   * driver's steps, and its commit (takeCommit encodes the writes in wasm memory). A trap there (out of
   * memory: tests/faults/memory.mjs) fails the client with Internal as a trap in `fn` does,
   * before anything is stored, rather than escaping as a bare RuntimeError (or, from takeCommit,
   * a StorageFailure) and leaving a journal that traps at every later step.
   */
  #inWasm(f) {
    try {
      return wasm(f);
    } catch (e) {
      this.#failOnTrap(e);
      throw e;
    }
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
