#!/usr/bin/env node
// An idle client uses no CPU: the process's CPU time (user + system, process.cpuUsage) across one
// second of idleness with no client (Node's own), then with a client before any batch, and in the
// first and the second second after a 1000-message batch, through the native addon, for 1 batch
// thread (everything on the addon's call thread) and for a pool. The counterpart of
// `proteus-bench --idle`.
//
//   npm run bench:idle --prefix ffi/node -- [--threads N]...   (node --expose-gc bench/idle.mjs)
//
// Prints one JSON object per thread count:
// {"impl":"ours-node","threads","node_ms","before_ms","after_ms","after2_ms","batch_ms"}.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadAddon } from '../load.js';
import * as native from '../native.js';

const addon = loadAddon();
if (addon === undefined) throw new Error('the idle bench needs the native addon: run ./build.sh first');
native.useAddon(addon);

const args = process.argv.slice(2);
const threads = args.flatMap((a, i) => (a === '--threads' ? [Number.parseInt(args[i + 1], 10)] : []));
if (threads.length === 0) threads.push(1, 2);

/**
 * CPU milliseconds the process uses while it sleeps one second. The garbage of what came before
 * is collected first (with --expose-gc, as the npm script runs it): V8's collector otherwise
 * adds several milliseconds to some seconds, with or without a client.
 */
async function idleSecond() {
  globalThis.gc?.();
  const before = process.cpuUsage();
  await sleep(1000);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

const r = (x) => Math.round(x * 1000) / 1000;
for (const n of threads) {
  const node = await idleSecond();
  const alice = await native.Client.inMemory();
  const bob = await native.Client.inMemory({ batchThreads: n });
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  const queue = [];
  for (let i = 0; i < 1000; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `message ${i}`) });
  const before = await idleSecond();
  const start = performance.now();
  const results = await bob.decryptBatch(queue);
  const batch = performance.now() - start;
  if (results.length !== 1000 || results.some((x) => x.plaintext === undefined)) throw new Error('the batch failed');
  const after = await idleSecond();
  const after2 = await idleSecond();
  console.log(JSON.stringify({ impl: 'ours-node', threads: n, node_ms: r(node), before_ms: r(before), after_ms: r(after), after2_ms: r(after2), batch_ms: r(batch) }));
  await alice.close();
  await bob.close();
}
