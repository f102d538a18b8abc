#!/usr/bin/env node
// Where a queue scenario's decryptBatch spends its time: V8's sampling profiler (node:inspector)
// records only the batches, then prints the functions with the most samples of their own.
//
//   node bench/profile.mjs [--pkg DIR] [--scenario NAME] [--runs N] [--interval US] [--top N]
//
// Rust names need a build with a name section, e.g. from the last ./build.sh:
//   wasm-bindgen --keep-debug --target web --out-dir /tmp/named $CARGO_TARGET_DIR/wasm32-unknown-unknown/release-wasm/proteus_web.wasm
//   node_modules/.bin/wasm-opt -O2 -g --enable-simd --enable-bulk-memory ... /tmp/named/proteus_web_bg.wasm -o DIR/proteus_web_bg.wasm
// with DIR a copy of pkg/ and /tmp/named/proteus_web.js copied over DIR's. Sampling slows the
// batch; read shares, not times (docs/benchmarks.md, "A new session in wasm").
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { build } from './scenarios.mjs';

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const dir = opt('--pkg', fileURLToPath(new URL('../pkg', import.meta.url)));
const name = opt('--scenario', '50x20');
const runs = Number(opt('--runs', '20'));
const interval = Number(opt('--interval', '50'));
const top = Number(opt('--top', '25'));

const { Client } = await import(pathToFileURL(path.resolve(dir, 'index.js')).href);
const sc = await build(name);
if (sc.kind !== 'queue') throw new Error(`${name}: only queue scenarios`);
const queue = sc.messages.map(({ sessionId, envelope }) => ({ sessionId, envelope }));

async function receiver() {
  const client = await Client.inMemory();
  await client.importIdentity(sc.receiver.identity);
  for (const p of sc.receiver.prekeys) await client.importPrekey(p);
  for (const [id, bytes] of sc.receiver.sessions) await client.importSession(id, bytes);
  return client;
}

// One untimed batch first, so the profile sees optimised code.
await (await receiver()).decryptBatch(queue);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval });
const clients = [];
for (let r = 0; r < runs; r++) clients.push(await receiver());
await session.post('Profiler.start');
for (const client of clients) await client.decryptBatch(queue);
const { profile } = await session.post('Profiler.stop');

const self = new Map();
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
let total = 0;
for (const id of profile.samples) {
  const frame = byId.get(id).callFrame;
  const fn = (frame.functionName || `(${frame.url || 'program'})`).replace(/::h[0-9a-f]{16}$/, '');
  if (fn === '(idle)') continue;
  self.set(fn, (self.get(fn) ?? 0) + 1);
  total += 1;
}
console.log(`${name}: ${runs} batches, ${total} samples every ${interval} µs (${dir})`);
for (const [fn, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${((100 * n) / total).toFixed(1).padStart(5)} %  ${fn.slice(0, 150)}`);
}
