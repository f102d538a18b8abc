// Loaded by faults.html, driven by tests/browser/faults.mjs through window.lab: Bob's client on
// IndexedDB in this page (or in a module Worker, faults-worker.js), the requests of its commits
// counted and faulted by faults-hook.js, imported before the package. Bytes cross as base64.
import { faults } from './faults-hook.js';
import { Client, init } from '../../pkg/index.js';
import { connectWorker } from '../../pkg/remote.js';
import { b64, text, unb64 } from './page-bytes.js';

const plain = (r) => ({ messageId: r.messageId, plaintext: r.plaintext ? text(r.plaintext) : null, errorCode: r.errorCode ?? 0 });
const failed = (e) => ({ ok: false, code: e?.code, kind: e?.kind, error: `${e?.name}: ${e?.message}` });
const messages = (queue) => queue.map(([sessionId, envelope]) => ({ sessionId, envelope: unb64(envelope) }));

// In this page, the fault's block waits for the test to close the page: a synchronous request the
// test's route holds until then.
faults.block = () => {
  const xhr = new XMLHttpRequest();
  xhr.open('GET', '/__faults/hit', false);
  try {
    xhr.send();
  } catch {
    // the page is going
  }
};

let bob;
let worker;
let channel;
let drain;

window.lab = {
  async open(name) {
    bob = await Client.open(name, { persist: false });
    return bob.fingerprint();
  },
  async close() {
    await bob?.close();
    bob = undefined;
  },
  async prekeys(n) {
    return (await bob.generatePrekeys(n)).map(({ id, bundle }) => ({ id, bundle: b64(bundle) }));
  },
  /** decryptBatch of `queue` ([sessionId, envelope b64]), each result taken by the callback. */
  async decryptBatch(queue, armed) {
    const delivered = [];
    faults.start(armed);
    try {
      const results = await bob.decryptBatch(messages(queue), (r) => {
        delivered.push(plain(r));
      });
      return { ok: true, results: results.map(plain), delivered, ...faults.stop() };
    } catch (e) {
      return { ...failed(e), delivered, ...faults.stop() };
    }
  },
  async encrypt(sessionId, plaintext, armed) {
    faults.start(armed);
    try {
      const envelope = b64(await bob.encrypt(sessionId, plaintext));
      return { ok: true, envelope, ...faults.stop() };
    } catch (e) {
      return { ...failed(e), ...faults.stop() };
    }
  },
  /**
   * Another client opened on store `name` (while Bob's stays open): its identity, its sessions,
   * and what decrypting `queue` again gives (every message of a committed batch: alreadySeen).
   */
  async inspect(name, queue) {
    const other = await Client.open(name, { persist: false });
    try {
      const fingerprint = await other.fingerprint();
      const sessions = (await other.sessionIds()).length;
      const again = queue.length ? await other.decryptBatch(messages(queue)) : [];
      return {
        fingerprint,
        sessions,
        again: again.map((r) => ({ messageId: r.messageId, plaintext: r.plaintext ? text(r.plaintext) : null, alreadySeen: r.alreadySeen })),
      };
    } finally {
      await other.close();
    }
  },
  estimate: () => navigator.storage.estimate(),
  /**
   * Writes of `bytes` in all in a database of the test's own, which the quota refuses: Chromium then
   * asks for the space left again (its IndexedDB caches it for up to 30 s). Its error's name.
   */
  async drainQuotaCache(bytes) {
    drain ??= await new Promise((resolve, reject) => {
      const req = indexedDB.open('faults-drain', 1);
      req.onupgradeneeded = () => req.result.createObjectStore('x');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    return new Promise((resolve) => {
      const tx = drain.transaction('x', 'readwrite');
      // In puts of 32 KB: a larger value is stored as a blob, outside the transaction's size.
      for (let at = 0; at < bytes; at += 32 << 10) tx.objectStore('x').put(new Uint8Array(32 << 10), at);
      tx.oncomplete = () => resolve('committed');
      tx.onabort = () => resolve(tx.error?.name ?? 'aborted');
    });
  },

  // --- Bob in a module Worker ------------------------------------------------------------------
  async workerOpen(name) {
    channel ??= new BroadcastChannel('faults');
    worker = new Worker(new URL('./faults-worker.js', import.meta.url), { type: 'module' });
    bob = await connectWorker(worker).open(name, { persist: false });
    return bob.fingerprint();
  },
  /** Arms the worker's hook (faults.start(arm)); `undefined`: stops it, resolves to its count. */
  workerHook(arm) {
    return new Promise((resolve) => {
      const answer = ({ data }) => {
        if (data?.armed || data?.stopped) {
          channel.removeEventListener('message', answer);
          resolve(data.stopped);
        }
      };
      channel.addEventListener('message', answer);
      channel.postMessage(arm === undefined ? { stop: true } : { arm });
    });
  },
  /**
   * decryptBatch of `queue` through the Worker client. `afterChunk`: the worker is terminated as
   * the page takes the last result of that chunk (of 256); a hit of the worker's armed hook
   * terminates it too. The call's outcome, or `{ pending: true }` if it did not settle within
   * `waitMs` of the termination.
   */
  async workerBatch(queue, { afterChunk, waitMs = 2000 } = {}) {
    const delivered = [];
    let terminated;
    let settle;
    const stopped = new Promise((resolve) => {
      settle = resolve;
    });
    const terminate = (at) => {
      if (terminated) return;
      worker.terminate();
      terminated = at;
      setTimeout(() => settle({ pending: true }), waitMs);
    };
    const onHit = ({ data }) => data?.hit && terminate('commit');
    channel.addEventListener('message', onHit);
    try {
      const call = bob.decryptBatch(messages(queue), (r, done, total) => {
        delivered.push(plain(r));
        if (afterChunk !== undefined && done === Math.min(afterChunk * 256, total)) terminate(`chunk ${afterChunk}`);
      });
      const outcome = await Promise.race([
        call.then(
          (results) => ({ ok: true, results: results.map(plain) }),
          (e) => failed(e),
        ),
        stopped,
      ]);
      return { ...outcome, terminated, delivered };
    } finally {
      channel.removeEventListener('message', onHit);
    }
  },
};

await init();
document.getElementById('status').textContent = 'ready';
window.labReady = true;
