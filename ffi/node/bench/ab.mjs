#!/usr/bin/env node
// Paired A/B of two builds of the native backend in one Node process, on a loaded machine:
//
//   node bench/ab.mjs DIR_A DIR_B [--runs N] [--scenario NAME] [--store memory|sqlite]... [--rust-every K] [--threads T] [--callback]
//
// A build is a directory holding the package's native.js, queue.js and wasm/ and the addon
// (proteus.<triple>.node), e.g. a copy of ffi/node made before a change. Each round runs one
// decryptBatch of the scenario's queue (timed as bench.mjs times it) with A and with B on every
// store, alternating which goes first. With --rust-every K the Rust bench (target/release or
// $CARGO_TARGET_DIR/release/proteus-bench, built with `cargo build --release -p proteus-bench`)
// runs every K rounds inside the same script, for the same minutes. Prints one JSON line: per
// build and store the quartiles (25/50/75 %) in ms, the median of the paired ratios B / A, the
// median of the Rust medians and the median load average. --threads T sets the batch threads of
// both builds and of the Rust bench (default: the client's): with 1, no run depends on whether
// a batch's helper thread got a core of a busy machine (docs/benchmarks.md, session 13).
// --callback passes decryptBatch a callback that accepts every result (the addon's
// decryptBatchTo, its results crossing in chunks before the commit).

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { platformTriple } from '../load.js';
import { build, equal } from '../../web/bench/scenarios.mjs';

const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
const option = (name) => args.flatMap((a, i) => (a === name ? [args[i + 1]] : []));
const FLAGS = ['--callback'];
const dirs = args.filter((a, i) => !a.startsWith('--') && (FLAGS.includes(args[i - 1]) || !(args[i - 1] ?? '').startsWith('--')));
if (dirs.length !== 2) {
  throw new Error('usage: ab.mjs DIR_A DIR_B [--runs N] [--scenario NAME] [--store memory|sqlite]... [--rust-every K] [--threads T] [--callback]');
}
const rounds = Number(option('--runs')[0] ?? 41);
const scenario = option('--scenario')[0] ?? '1x1000est';
const stores = option('--store').length ? option('--store') : ['memory', 'sqlite'];
const rustEvery = Number(option('--rust-every')[0] ?? 0);
const threads = option('--threads')[0] === undefined ? undefined : Number(option('--threads')[0]);
const callback = args.includes('--callback');
const accept = () => true;
for (const s of stores) if (s !== 'memory' && s !== 'sqlite') throw new Error(`unknown store ${s}`);

async function backend(dir) {
  const native = await import(pathToFileURL(resolve(dir, 'native.js')).href);
  native.useAddon(require(resolve(dir, `proteus.${platformTriple()}.node`)));
  return native;
}
const builds = { A: await backend(dirs[0]), B: await backend(dirs[1]) };
const sc = await build(scenario);
if (sc.kind !== 'queue') throw new Error(`${scenario}: only queue scenarios`);
const queue = sc.messages.map(({ sessionId, envelope }) => ({ sessionId, envelope }));

const dir = mkdtempSync(join(tmpdir(), 'proteus-node-ab-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const templates = {};

async function load(client, s) {
  await client.importIdentity(s.identity);
  for (const p of s.prekeys) await client.importPrekey(p);
  for (const [id, bytes] of s.sessions) await client.importSession(id, bytes);
  return client;
}

/** A client of build `name` holding the receiver's seed; on SQLite, a copy of a template file. */
async function from(name, store) {
  const { Client } = builds[name];
  const options = threads === undefined ? {} : { batchThreads: threads };
  if (store === 'memory') return load(await Client.inMemory(options), sc.receiver);
  if (templates[name] === undefined) {
    templates[name] = join(dir, `template-${files++}.db`);
    await (await load(await Client.open(templates[name]), sc.receiver)).close();
  }
  const path = join(dir, `store-${files++}.db`);
  copyFileSync(templates[name], path);
  if (existsSync(`${templates[name]}-wal`)) copyFileSync(`${templates[name]}-wal`, `${path}-wal`);
  return Client.open(path, options);
}

async function run(name, store) {
  const client = await from(name, store);
  const start = performance.now();
  const results = await (callback ? client.decryptBatch(queue, accept) : client.decryptBatch(queue));
  const ms = performance.now() - start;
  for (let i = 0; i < results.length; i++) {
    if (!equal(results[i].plaintext, sc.messages[i].plaintext)) throw new Error(`${name}: message ${i} did not decrypt to what was sent`);
  }
  await client.close();
  return ms;
}

const rust = {};
function rustBench() {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const bin = join(process.env.CARGO_TARGET_DIR ?? join(root, 'target'), 'release', 'proteus-bench');
  const argv = ['--json', '--runs', '15', '--scenario', scenario];
  if (threads !== undefined) argv.push('--threads', String(threads));
  for (const s of stores) argv.push('--store', s === 'sqlite' ? 'sqlite-batch' : s);
  for (const line of execFileSync(bin, argv, { encoding: 'utf8' }).split('\n')) {
    if (!line.startsWith('{')) continue;
    const { store, median_ms } = JSON.parse(line);
    (rust[store === 'sqlite-batch' ? 'sqlite' : store] ??= []).push(median_ms);
  }
}

const times = {};
const loads = [];
for (const store of stores) for (const name of ['A', 'B']) await run(name, store); // untimed warm-up
for (let r = 0; r < rounds; r++) {
  if (rustEvery > 0 && r % rustEvery === 0) rustBench();
  loads.push(loadavg()[0]);
  for (const store of stores) {
    for (const name of r % 2 ? ['A', 'B'] : ['B', 'A']) (times[`${name}-${store}`] ??= []).push(await run(name, store));
  }
}

const sorted = (xs) => [...xs].sort((a, b) => a - b);
const quantile = (xs, q) => sorted(xs)[Math.floor(q * (xs.length - 1))];
const median = (xs) => {
  const s = sorted(xs);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const round = (x) => Math.round(x * 1000) / 1000;
const out = { scenario, rounds, threads: threads ?? 'default', callback, load_median: round(median(loads)) };
for (const [key, xs] of Object.entries(times)) out[`${key}_ms`] = [0.25, 0.5, 0.75].map((q) => round(q === 0.5 ? median(xs) : quantile(xs, q))).join('/');
for (const store of stores) {
  const a = times[`A-${store}`];
  out[`B/A-${store}_paired_median`] = round(median(times[`B-${store}`].map((b, i) => b / a[i])));
  if (rust[store]) out[`rust-${store}_ms_median_of_${rust[store].length}`] = round(median(rust[store]));
}
console.log(JSON.stringify(out));
