#!/usr/bin/env node
// What the worker costs a batch: 10,000 queued messages decrypted in one batch by a client in
// this thread (Client) and by one in a worker thread driven through the protocol (RemoteClient,
// pkg/remote.js + pkg/worker.js), both in memory, with a callback that reads every plaintext.
// Each run decrypts on a fresh copy of Bob (identity and session imported, not timed).
//
//   node ffi/web/bench/worker.mjs [--runs N] [--messages N]
//
// Prints one JSON object per case: {"impl","case","messages","median_ms","min_ms","max_ms","runs","load"}.
import { loadavg } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Client, init } from '../pkg/index.js';
import { connectWorker } from '../pkg/remote.js';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at >= 0 ? Number.parseInt(args[at + 1], 10) : fallback;
};
const runs = option('--runs', 11);
const n = option('--messages', 10_000);
if (!(runs >= 1) || !(n >= 1)) throw new Error('--runs and --messages must be at least 1');

await init();
const alice = await Client.inMemory();
const bob = await Client.inMemory();
const [{ bundle }] = await bob.generatePrekeys(1);
await alice.createSession('bob', bundle);
await bob.decrypt('alice', await alice.encrypt('bob', 'hello'));
await alice.decrypt('bob', await bob.encrypt('alice', 'hi'));
const envelopes = await alice.encryptBatch(Array.from({ length: n }, (_, i) => ({ sessionId: 'bob', plaintext: `queued message ${i} ${'·'.repeat(i % 50)}` })));
const queue = envelopes.map((envelope) => ({ sessionId: 'alice', envelope }));
const identity = await bob.exportIdentity();
const session = await bob.exportSession('alice');

async function fresh(opener) {
  const c = await opener.inMemory();
  await c.importIdentity(identity);
  await c.importSession('alice', session);
  return c;
}

async function measure(opener) {
  const times = [];
  for (let r = 0; r < runs; r++) {
    const c = await fresh(opener);
    let bytes = 0;
    const started = performance.now();
    await c.decryptBatch(queue, (result) => {
      bytes += result.plaintext.length;
    });
    times.push(performance.now() - started);
    if (bytes === 0) throw new Error('nothing decrypted');
    await c.close();
  }
  times.sort((a, b) => a - b);
  return { median_ms: +times[times.length >> 1].toFixed(2), min_ms: +times[0].toFixed(2), max_ms: +times.at(-1).toFixed(2) };
}

const thread = new Worker(new URL('../tests/support/node-worker.mjs', import.meta.url));
try {
  for (const [impl, opener] of [['Client (this thread)', Client], ['RemoteClient (a worker thread)', connectWorker(thread)]]) {
    const figures = await measure(opener);
    console.log(JSON.stringify({ impl, case: 'decryptBatch', messages: n, ...figures, runs, load: loadavg()[0].toFixed(2) }));
  }
} finally {
  await thread.terminate();
}
