#!/usr/bin/env node
// Decrypting 1000 queued messages with the native addon (in memory and on its durable SQLite
// store), the wasm fallback (its lanes module, in memory) and @wireapp/proteus 9.13.0, in the same Node process, on
// the scenarios of the native bench: the web bench's scenarios (ffi/web/bench/scenarios.mjs),
// built once and loaded into every implementation from the same serialised state.
//
//   npm run bench --prefix ffi/node -- [--runs N] [--scenario NAME]... [--impl NAME]... [--native]
//
// Prints one JSON object per line: {"impl", "scenario", "median_ms", "min_ms", "max_ms", "runs"}
// per implementation and scenario, then one line with the ratios (@wireapp/proteus median /
// each one's median). The timed part is the web bench's: one decryptBatch of the queue (for
// @wireapp/proteus: deserialise + decrypt each envelope); for conv10, blocks of 10 encrypted by
// one side and decrypted by the other. The durable store commits each call to its file, as the
// application would (a fresh file per run, loaded before the clock starts). Every plaintext is
// checked; each implementation runs each scenario once untimed first. fanout4000 (when the
// scenarios have it): one encryptFor of 150 bytes to 4000 established sessions, after an untimed
// one (for @wireapp/proteus: encrypt + serialise per session); sample recipients decrypt both. --native also runs the
// Rust bench (cargo run --release -p proteus-bench, stores memory and sqlite-batch) and adds the
// addon's median over the Rust one for the same store.

import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadAddon } from '../load.js';
import * as native from '../native.js';
import { Client as WasmClient, init as initWasm } from '../wasm/index.js';
import { SCENARIOS, build, converse } from '../../web/bench/scenarios.mjs';
import { check, checkFanout, measure, runWire } from '../../web/bench/runs.mjs';

const addon = loadAddon();
if (addon === undefined) throw new Error('the bench needs the native addon: run ./build.sh first');
native.useAddon(addon);
// The wasm fallback's module (the lanes one, under the default's name: build.sh), as index.js loads it.
await initWasm();

const dir = mkdtempSync(join(tmpdir(), 'proteus-node-bench-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
let files = 0;

/** The implementations of this package: how each makes an empty client. */
const OURS = {
  native: () => native.Client.inMemory(),
  'native-sqlite': (path) => native.Client.open(path ?? join(dir, `store-${files++}.db`)),
  wasm: () => WasmClient.inMemory(),
};
const IMPLS = [...Object.keys(OURS), 'wire'];
const NAMES = { wire: '@wireapp/proteus' };

function parse(argv) {
  const o = { runs: undefined, scenarios: [], impls: [], native: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--runs') o.runs = Number.parseInt(value(), 10);
    else if (a === '--scenario') o.scenarios.push(value());
    else if (a === '--impl') o.impls.push(value());
    else if (a === '--native') o.native = true;
    else throw new Error(`unknown argument ${a}; usage: bench.mjs [--runs N] [--scenario ${SCENARIOS.join('|')}]... [--impl ${IMPLS.join('|')}]... [--native]`);
  }
  for (const s of o.scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}`);
  for (const i of o.impls) if (!IMPLS.includes(i)) throw new Error(`unknown impl ${i}`);
  if (o.runs !== undefined && !(o.runs >= 1)) throw new Error('--runs must be at least 1');
  if (!o.scenarios.length) o.scenarios = SCENARIOS;
  if (!o.impls.length) o.impls = IMPLS;
  return o;
}

/** The SQLite file of each seed, made once: each run opens a copy (thousands of sessions are a
 * commit each to import). */
const templates = new WeakMap();

/** A client of `impl` holding a seed (identity, prekeys, sessions). */
async function from(impl, s) {
  if (impl === 'native-sqlite') {
    let template = templates.get(s);
    if (template === undefined) {
      template = join(dir, `template-${files++}.db`);
      const client = await load(await OURS[impl](template), s);
      await client.close();
      templates.set(s, template);
    }
    const path = join(dir, `store-${files++}.db`);
    copyFileSync(template, path);
    if (existsSync(`${template}-wal`)) copyFileSync(`${template}-wal`, `${path}-wal`);
    return OURS[impl](path);
  }
  return load(await OURS[impl](), s);
}

async function load(client, s) {
  await client.importIdentity(s.identity);
  for (const p of s.prekeys) await client.importPrekey(p);
  for (const [id, bytes] of s.sessions) await client.importSession(id, bytes);
  return client;
}

/** The client a fanout's sample recipients decrypt on: the native one. */
const receiverOf = (s) => from('native', s);

async function runOurs(impl, sc) {
  if (sc.kind === 'fanout') {
    // After an untimed send to all (the sessions are then in use, as natively).
    const client = await from(impl, sc.sender);
    const warm = await client.encryptFor(sc.recipients, sc.plaintext);
    const start = performance.now();
    const results = await client.encryptFor(sc.recipients, sc.plaintext);
    const ms = performance.now() - start;
    await client.close();
    await checkFanout(sc, [warm, results].map((send) => send.map((r) => r.envelope)), impl, receiverOf);
    return ms;
  }
  if (sc.kind === 'queue') {
    const client = await from(impl, sc.receiver);
    const queue = sc.messages.map(({ sessionId, envelope }) => ({ sessionId, envelope }));
    const start = performance.now();
    const results = await client.decryptBatch(queue);
    const ms = performance.now() - start;
    check(sc.messages.map((m) => m.plaintext), results.map((r) => r.plaintext), impl);
    await client.close();
    return ms;
  }
  const alice = await from(impl, sc.alice);
  const bob = await from(impl, sc.bob);
  const start = performance.now();
  await converse(sc, alice, bob, (block, results) => check(block, results.map((r) => r.plaintext), impl));
  const ms = performance.now() - start;
  await alice.close();
  await bob.close();
  return ms;
}

/** The Rust bench's medians: {scenario: {memory, 'sqlite-batch'}}. */
function rustBench(scenarios) {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const args = ['run', '--release', '--locked', '-q', '-p', 'proteus-bench', '--', '--json', '--store', 'memory', '--store', 'sqlite-batch'];
  for (const name of scenarios) args.push('--scenario', name);
  const out = execFileSync('cargo', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const medians = {};
  for (const line of out.split('\n').filter((l) => l.startsWith('{'))) {
    const { scenario, store, median_ms } = JSON.parse(line);
    (medians[scenario] ??= {})[store] = median_ms;
  }
  return medians;
}

const o = parse(process.argv.slice(2));
const ratios = {};
const addonMedians = {};
for (const name of o.scenarios) {
  const sc = await build(name);
  const medians = {};
  for (const impl of o.impls) {
    const s = await measure(() => (impl === 'wire' ? runWire(sc, receiverOf) : runOurs(impl, sc)), o.runs);
    medians[impl] = s.median_ms;
    if (impl.startsWith('native')) (addonMedians[name] ??= {})[impl] = s.median_ms;
    console.log(JSON.stringify({ impl: NAMES[impl] ?? impl, scenario: name, ...s }));
  }
  if (medians.wire !== undefined) {
    for (const impl of Object.keys(OURS)) {
      if (medians[impl] !== undefined) (ratios[name] ??= {})[impl] = Math.round((medians.wire / medians[impl]) * 10) / 10;
    }
  }
}
const summaryLine = { ratios, ratio: '@wireapp/proteus median / this implementation median' };
if (o.native) {
  const rust = rustBench(o.scenarios);
  const stores = { native: 'memory', 'native-sqlite': 'sqlite-batch' };
  summaryLine.rust_median_ms = rust;
  summaryLine.addon_over_rust = {};
  for (const [name, medians] of Object.entries(addonMedians)) {
    for (const [impl, ms] of Object.entries(medians)) {
      const r = rust[name]?.[stores[impl]];
      if (r) (summaryLine.addon_over_rust[name] ??= {})[impl] = Math.round((ms / r) * 100) / 100;
    }
  }
}
console.log(JSON.stringify(summaryLine));
