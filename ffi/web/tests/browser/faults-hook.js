// Loaded first by faults.html and faults-worker.js (tests/browser/faults.mjs): counts the requests
// of every readwrite IndexedDB transaction a call makes (the reads of the commit counter, the
// writes, in their order) and injects a fault at one of them. Installed on the prototypes before
// the package is imported.
//   faults.start({ at: n, action })   counts from 0; at request n:
//     'abort-before'  the transaction is aborted as the package makes its n-th request (which
//                     then throws, the transaction being finished),
//     'abort-after'   the transaction is aborted in the n-th request's success event (the requests
//                     after it pending, as when the browser aborts a transaction mid-commit),
//     'block'         faults.block() is called in the n-th request's success event (the page or
//                     worker is then closed or terminated from outside, the commit not made).
//   faults.start({ complete: t, action: 'block' })   block in the complete event of the t-th
//                     readwrite transaction (the commit made, the call not yet returned).
//   faults.stop()     what was counted: { log: [{ n, tx, op, store, bytes }], txs, hits }.

const sizeOf = (v) => (v == null ? 0 : ArrayBuffer.isView(v) || v instanceof ArrayBuffer ? v.byteLength : typeof v === 'number' ? 8 : 0);

export const faults = {
  on: false,
  requests: 0,
  txs: 0,
  log: [],
  armed: undefined,
  hits: 0,
  /** Set by the page or the worker: waits to be closed or terminated. */
  block() {
    throw new Error('faults.block is not set');
  },
  start(armed) {
    Object.assign(this, { on: true, requests: 0, txs: 0, log: [], armed, hits: 0 });
  },
  stop() {
    this.on = false;
    this.armed = undefined;
    return { log: this.log, txs: this.txs, hits: this.hits };
  },
};

const transaction = IDBDatabase.prototype.transaction;
IDBDatabase.prototype.transaction = function (names, mode, options) {
  const tx = transaction.call(this, names, mode, options);
  if (faults.on && mode === 'readwrite') {
    const t = ++faults.txs;
    txNumbers.set(tx, t);
    const armed = faults.armed;
    tx.addEventListener('complete', () => {
      if (armed !== undefined && armed === faults.armed && armed.complete === t) {
        faults.hits += 1;
        faults.block();
      }
    });
  }
  return tx;
};
const txNumbers = new WeakMap();

for (const op of ['get', 'put', 'add', 'delete', 'clear']) {
  const original = IDBObjectStore.prototype[op];
  IDBObjectStore.prototype[op] = function (...args) {
    const tx = this.transaction;
    if (!faults.on || tx.mode !== 'readwrite') return original.apply(this, args);
    const n = ++faults.requests;
    const bytes = op === 'put' || op === 'add' ? sizeOf(args[0]) + sizeOf(args[1]) : op === 'delete' ? sizeOf(args[0]) : 0;
    faults.log.push({ n, tx: txNumbers.get(tx), op, store: this.name, bytes });
    const armed = faults.armed;
    if (armed?.at !== n) return original.apply(this, args);
    faults.hits += 1;
    if (armed.action === 'abort-before') {
      tx.abort();
      return original.apply(this, args);
    }
    const req = original.apply(this, args);
    req.addEventListener('success', () => {
      if (armed.action === 'abort-after') tx.abort();
      else faults.block();
    });
    return req;
  };
}
