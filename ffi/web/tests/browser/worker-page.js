// Loaded by worker.html, driven by tests/browser/worker.mjs: decrypts a large batch either in a
// module Worker (pkg/remote.js + pkg/worker.js) or on the page's main thread (pkg/index.js), while
// counting the page's animation frames, the longest gap between two of them, and the progress
// values the frames saw.
import { Client } from '../../pkg/index.js';
import { connectWorker } from '../../pkg/remote.js';

const text = (bytes) => new TextDecoder().decode(bytes);

/** Counts animation frames until stop(): how many, the longest gap, the progress seen. */
function frames(progress) {
  let count = 0;
  let longest = 0;
  let last = performance.now();
  let running = true;
  const seen = new Set();
  const tick = (now) => {
    if (!running) return;
    longest = Math.max(longest, now - last);
    last = now;
    count += 1;
    seen.add(progress.value);
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
  return () => {
    running = false;
    longest = Math.max(longest, performance.now() - last);
    return { frames: count, longestGapMs: Math.round(longest), progressSeen: [...seen] };
  };
}

/** Opens Bob on IndexedDB and Alice in memory, in a worker or here, and queues `n` messages. */
async function setUp(where, store, n) {
  let opener;
  let worker;
  if (where === 'worker') {
    worker = new Worker(new URL('./proteus-worker.js', import.meta.url), { type: 'module' });
    opener = connectWorker(worker);
  } else {
    opener = Client;
  }
  const bob = await opener.open(store, { persist: false });
  const alice = await opener.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  const plaintexts = Array.from({ length: n }, (_, i) => `backlog message ${i + 1} of ${n}`);
  const envelopes = await alice.encryptBatch(plaintexts.map((plaintext) => ({ sessionId: 'bob', plaintext })));
  return { bob, alice, worker, plaintexts, queue: envelopes.map((envelope) => ({ sessionId: 'alice', envelope })) };
}

window.harness = {
  /** A worker script that does not exist: the calls fail instead of waiting for ever. */
  async missingWorker() {
    const worker = new Worker(new URL('./no-such-worker.js', import.meta.url), { type: 'module' });
    try {
      await connectWorker(worker).open('never');
      return 'opened';
    } catch (e) {
      return `${e.name}: ${e.message}`;
    } finally {
      worker.terminate();
    }
  },

  /** Decrypts an n-message backlog in one batch ('worker' or 'main'), measuring the frames. */
  async backlog(where, store, n) {
    const { bob, alice, worker, plaintexts, queue } = await setUp(where, store, n);
    const progress = document.getElementById('progress');
    progress.max = n;
    progress.value = 0;
    // A few frames first, so the counter measures a running page.
    await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
    const stop = frames(progress);
    const started = performance.now();
    let good = 0;
    const results = await bob.decryptBatch(queue, (r, done) => {
      if (text(r.plaintext) === plaintexts[done - 1]) good += 1;
      progress.value = done;
    });
    const ms = Math.round(performance.now() - started);
    const measured = stop();
    const again = await bob.decryptBatch(queue.slice(0, 3));
    await Promise.all([bob.close(), alice.close()]);
    worker?.terminate();
    return { ...measured, ms, results: results.length, good, committed: again.every((r) => r.alreadySeen) };
  },

  /** A page callback that throws: the batch fails as the direct API's does, nothing committed. */
  async failing(store) {
    const { bob, alice, worker, queue } = await setUp('worker', store, 600);
    const outcome = {};
    try {
      await bob.decryptBatch(queue, (_, done) => {
        if (done === 300) throw new Error('the page could not store it');
      });
    } catch (e) {
      Object.assign(outcome, { name: e.name, code: e.code, kind: e.kind, cause: e.cause?.message });
    }
    try {
      await bob.decryptBatch(queue, () => false);
    } catch (e) {
      outcome.aborted = e.code;
    }
    outcome.afterwards = (await bob.decryptBatch(queue)).filter((r) => r.plaintext).length;
    await Promise.all([bob.close(), alice.close()]);
    worker.terminate();
    return outcome;
  },
};
document.getElementById('status').textContent = 'ready';
window.harnessReady = true;
