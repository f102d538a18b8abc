#!/usr/bin/env node
// Decrypting 1000 queued messages, and sending one message to 4000 sessions, with this package,
// with @wireapp/proteus 9.13.0 and with libolm 3.2 (@matrix-org/olm, Olm on the equivalent
// scenarios: bench/olm.mjs), in the same Node process, on the scenarios of the native bench
// (memory store; fanout4000 also on the IndexedDB store, plain and sealed, with fake-indexeddb).
//
//   npm run bench --prefix ffi/web -- [--json] [--runs N] [--scenario NAME]...
//                                     [--impl ours|wire|olm|ours-idb|ours-sealed]... [--native]
//
// With --json: one object per line, {"impl", "scenario", "median_ms", "min_ms", "max_ms", "runs"},
// then one line with the ratios (@wireapp/proteus median / ours, libolm median / ours). --native
// also runs the native bench (cargo run --release -p proteus-bench, memory store) and adds ours / native.
//
// The timed part is what the native bench times: for a queue, one decryptBatch of the 1000
// envelopes (for @wireapp/proteus: Envelope.deserialise + decrypt of each, sessions kept in
// memory); for conv10, blocks of 10 encrypted by one side and decrypted by the other, 100 times;
// for fanout4000, one encryptFor of a 150-byte plaintext to 4000 established sessions (for
// @wireapp/proteus: Session.encrypt + serialise per session), after an untimed send to all of them
// (the sessions are then in use, as natively); a sample of the recipients decrypts both.
// Every run starts from the same serialised state, loaded before the clock starts; every
// plaintext is checked (after the clock for queues, as it arrives for conv10). Each
// implementation runs each scenario once untimed first, to let the JIT settle.

import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { wireVersion } from '../tests/support/wire.mjs';
import { IDBFactory } from 'fake-indexeddb';
import { Client } from '../pkg/index.js';
import { SCENARIOS, build, converse, equal, oursFrom } from './scenarios.mjs';
import { check, checkFanout, measure, runWire } from './runs.mjs';
import { buildOlm, olmVersion, runOlm } from './olm.mjs';

const IMPLS = { ours: 'ours', wire: '@wireapp/proteus', olm: 'libolm', 'ours-idb': 'ours (IndexedDB)', 'ours-sealed': 'ours (sealed IDB)' };
/** The IndexedDB implementations run fanout4000 only (the queues are timed in memory, as natively). */
const FANOUT_ONLY = ['ours-idb', 'ours-sealed'];

function parse(argv) {
  const o = { json: false, runs: undefined, scenarios: [], impls: [], native: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--json') o.json = true;
    else if (a === '--native') o.native = true;
    else if (a === '--runs') o.runs = Number.parseInt(value(), 10);
    else if (a === '--scenario') o.scenarios.push(value());
    else if (a === '--impl') o.impls.push(value());
    else if (a === '--help' || a === '-h') {
      console.log('usage: bench.mjs [--json] [--runs N] [--scenario 1x1000|1x1000est|50x20|conv10|fanout4000]... [--impl ours|wire|olm|ours-idb|ours-sealed]... [--native]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  for (const s of o.scenarios) if (!SCENARIOS.includes(s)) throw new Error(`unknown scenario ${s}`);
  for (const i of o.impls) if (!(i in IMPLS)) throw new Error(`unknown impl ${i} (${Object.keys(IMPLS).join(', ')})`);
  if (o.runs !== undefined && !(o.runs >= 1)) throw new Error('--runs must be at least 1');
  if (!o.scenarios.length) o.scenarios = SCENARIOS;
  if (!o.impls.length) o.impls = Object.keys(IMPLS);
  return o;
}

// --- one run of each implementation ------------------------------------------------------

async function runOurs(sc) {
  if (sc.kind === 'fanout') {
    const client = await oursFrom(sc.sender);
    const warm = await client.encryptFor(sc.recipients, sc.plaintext);
    const start = performance.now();
    const results = await client.encryptFor(sc.recipients, sc.plaintext);
    const ms = performance.now() - start;
    await client.close();
    await checkFanout(sc, [warm, results].map((send) => send.map((r) => r.envelope)), 'ours', oursFrom);
    return ms;
  }
  if (sc.kind === 'queue') {
    const client = await oursFrom(sc.receiver);
    const queue = sc.messages.map(({ sessionId, envelope }) => ({ sessionId, envelope }));
    const start = performance.now();
    const results = await client.decryptBatch(queue);
    const ms = performance.now() - start;
    check(sc.messages.map((m) => m.plaintext), results.map((r) => r.plaintext), 'ours');
    await client.close();
    return ms;
  }
  const alice = await oursFrom(sc.alice);
  const bob = await oursFrom(sc.bob);
  const start = performance.now();
  await converse(sc, alice, bob, (block, results) => check(block, results.map((r) => r.plaintext), 'ours'));
  const ms = performance.now() - start;
  await alice.close();
  await bob.close();
  return ms;
}

/**
 * fanout4000 on the package's IndexedDB store (fake-indexeddb in Node: the package's whole
 * IndexedDB path, sealing included, but not a browser's disk), plain or sealed. One client per
 * scenario, made on the first (untimed) run: importing 4000 sessions is 4000 commits. Each run is
 * one encryptFor; a receiver holding the sample sessions decrypts every send in order.
 */
function runOursIdb(sealed) {
  const clients = new Map();
  const noLocks = { request: (_name, fn) => fn() };
  return async (sc) => {
    let s = clients.get(sc);
    if (s === undefined) {
      const storeKey = sealed ? crypto.getRandomValues(new Uint8Array(32)) : undefined;
      const client = await Client.open('fanout', { indexedDB: new IDBFactory(), locks: noLocks, persist: false, storeKey });
      await client.importIdentity(sc.sender.identity);
      for (const [id, bytes] of sc.sender.sessions) await client.importSession(id, bytes);
      s = { client, receiver: await oursFrom(sc.receiver) };
      clients.set(sc, s);
    }
    const start = performance.now();
    const results = await s.client.encryptFor(sc.recipients, sc.plaintext);
    const ms = performance.now() - start;
    for (const { index, sessionId } of sc.samples) {
      if (!equal(await s.receiver.decrypt(sessionId, results[index].envelope), sc.plaintext)) {
        throw new Error(`ours (IndexedDB): recipient ${index} did not decrypt what was sent`);
      }
    }
    return ms;
  };
}

// --- statistics and output -----------------------------------------------------------------

function native(scenarios) {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const args = ['run', '--release', '--locked', '-q', '-p', 'proteus-bench', '--', '--json', '--store', 'memory'];
  for (const s of scenarios) args.push('--scenario', s);
  const out = execFileSync('cargo', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  return Object.fromEntries(lines.map((l) => [l.scenario, l]));
}

async function main() {
  const o = parse(process.argv.slice(2));
  const results = {};
  if (!o.json) {
    console.log(
      `decrypting 1000 queued messages, fanout4000: one message to 4000 sessions (memory store), Node ${process.version}, @wireapp/proteus ${wireVersion}, libolm ${await olmVersion()}`,
    );
    console.log('impl               scenario     median ms    min ms    max ms  runs');
  }
  const runners = { ours: runOurs, wire: (sc) => runWire(sc, oursFrom), olm: runOlm, 'ours-idb': runOursIdb(false), 'ours-sealed': runOursIdb(true) };
  for (const name of o.scenarios) {
    const sc = await build(name);
    // libolm's own state and messages for this scenario (bench/olm.mjs).
    const olm = o.impls.includes('olm') ? await buildOlm(name) : undefined;
    for (const impl of o.impls) {
      if (FANOUT_ONLY.includes(impl) && sc.kind !== 'fanout') continue;
      const input = impl === 'olm' ? olm : sc;
      const s = await measure(() => runners[impl](input), o.runs);
      (results[name] ??= {})[impl] = s;
      const line = { impl: IMPLS[impl], scenario: name, ...s };
      if (o.json) console.log(JSON.stringify(line));
      else {
        console.log(
          `${IMPLS[impl].padEnd(18)} ${name.padEnd(10)} ${s.median_ms.toFixed(3).padStart(11)} ${s.min_ms.toFixed(3).padStart(9)} ${s.max_ms.toFixed(3).padStart(9)} ${String(s.runs).padStart(5)}`,
        );
      }
    }
  }
  const ratios = {};
  const olmRatios = {};
  const ratio = (peer, ours) => Math.round((peer.median_ms / ours.median_ms) * 100) / 100;
  for (const [name, r] of Object.entries(results)) {
    if (r.ours && r.wire) ratios[name] = Math.round((r.wire.median_ms / r.ours.median_ms) * 10) / 10;
    if (r.ours && r.olm) olmRatios[name] = ratio(r.olm, r.ours);
  }
  const summaryLine = {
    ratios,
    ratio: '@wireapp/proteus median / ours median',
    olm_ratios: olmRatios,
    olm_ratio: 'libolm median / ours median (above 1: ours is ahead)',
  };
  if (o.native) {
    const n = native(o.scenarios);
    summaryLine.native_median_ms = {};
    summaryLine.ours_over_native = {};
    for (const [name, r] of Object.entries(results)) {
      if (!n[name] || !r.ours) continue;
      summaryLine.native_median_ms[name] = n[name].median_ms;
      summaryLine.ours_over_native[name] = Math.round((r.ours.median_ms / n[name].median_ms) * 100) / 100;
    }
  }
  if (o.json) console.log(JSON.stringify(summaryLine));
  else {
    for (const [name, x] of Object.entries(ratios)) console.log(`${name}: ours is ${x}x faster than @wireapp/proteus`);
    for (const [name, x] of Object.entries(olmRatios)) {
      console.log(`${name}: ${x >= 1 ? `ours is ${x}x faster than libolm` : `libolm is ${Math.round(100 / x) / 100}x faster than ours`}`);
    }
    for (const [name, x] of Object.entries(summaryLine.ours_over_native ?? {})) {
      console.log(`${name}: ours takes ${x}x the time of the native engine (${summaryLine.native_median_ms[name]} ms)`);
    }
  }
}

await main();
