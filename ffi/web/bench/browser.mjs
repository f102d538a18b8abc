#!/usr/bin/env node
// 1x1000est in a real headless Chromium (tests/support/chromium.mjs: the machine's flags), the
// package on the browser's IndexedDB: 1000 queued messages of an established session decrypted
// in ONE durable decryptBatch, its commit included (the call's Promise resolves once the
// IndexedDB transaction completed).
//
//   npm run bench:browser --prefix ffi/web -- [--runs N] [--cold N] [--json] [--pkg DIR] [--profile FILE]
//
// warm: one page, one untimed batch, then N (10) timed ones; cold: N (5) page loads, each timing
// the first batch after the page loaded the package (its wasm compiled anew: the server sends
// no-store, so nothing is cached). Every batch starts from the same stored state: the store is
// deleted and the receiver's records imported before the clock starts (untimed), and every
// plaintext is checked after it. --pkg DIR also runs another build of the package (A/B): each
// package is served from its own origin (its own IndexedDB), their runs alternate in one
// browser. Each warm round also times the batch on a memory store in the same page (what
// IndexedDB adds). --profile FILE records a Chrome CPU profile of the warm runs of ffi/web/pkg (open it
// in Chrome's DevTools) of the warm batches of the package given last (a build with a name
// section shows Rust function names) and prints where their time went, by kind and by function.

import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from './scenarios.mjs';
import { ENGINE, launch } from '../tests/support/browser.mjs';
import { serve } from '../tests/support/serve.mjs';

function parse(argv) {
  const o = { runs: 10, cold: 5, json: false, pkgs: [fileURLToPath(new URL('../pkg', import.meta.url))], profile: undefined };
  for (let i = 0; i < argv.length; i++) {
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${argv[i]} needs a value`);
      return argv[++i];
    };
    const a = argv[i];
    if (a === '--runs') o.runs = Number.parseInt(value(), 10);
    else if (a === '--cold') o.cold = Number.parseInt(value(), 10);
    else if (a === '--json') o.json = true;
    else if (a === '--pkg') o.pkgs.push(path.resolve(value()));
    else if (a === '--profile') o.profile = path.resolve(value());
    else throw new Error(`unknown argument ${a}`);
  }
  if (!(o.runs >= 1) || !(o.cold >= 0)) throw new Error('--runs must be at least 1, --cold at least 0');
  if (o.profile && ENGINE !== 'Chromium') throw new Error(`--profile records a CPU profile through the Chrome DevTools protocol: Chromium only, not ${ENGINE}`);
  return o;
}

const b64 = (bytes) => Buffer.from(bytes).toString('base64');

/** In the page: imports the package and keeps what a run needs on window.bench. */
async function setUp({ seed, queue, expected }) {
  const { Client } = await import('/index.js');
  const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
  const records = { identity: unb64(seed.identity), prekeys: seed.prekeys.map(unb64), sessions: seed.sessions.map(([id, s]) => [id, unb64(s)]) };
  const messages = queue.map(([sessionId, envelope]) => ({ sessionId, envelope: unb64(envelope) }));
  const plaintexts = expected.map(unb64);
  window.bench = {
    Client,
    /** Store `name` holding the receiver's records, and nothing else. */
    async seed(name) {
      await Client.deleteStore(name);
      const c = await Client.open(name, { persist: false });
      await c.importIdentity(records.identity);
      for (const p of records.prekeys) await c.importPrekey(p);
      for (const [id, s] of records.sessions) await c.importSession(id, s);
      await c.close();
    },
    /**
     * One timed batch on store `name` (seeded; undefined: a memory store, for comparison): ms of
     * the decryptBatch, its commit included.
     */
    async run(name) {
      let client;
      if (name === undefined) {
        client = await Client.inMemory();
        await client.importIdentity(records.identity);
        for (const [id, s] of records.sessions) await client.importSession(id, s);
      } else {
        client = await Client.open(name, { persist: false, create: false });
      }
      // With --profile, the batch alone is profiled (the page's console.profile: bench.profiling).
      if (window.bench.profiling && name !== undefined) console.profile('batch');
      const start = performance.now();
      const results = await client.decryptBatch(messages);
      const ms = performance.now() - start;
      if (window.bench.profiling && name !== undefined) console.profileEnd('batch');
      await client.close();
      results.forEach((r, i) => {
        const p = r.plaintext;
        if (!p || p.length !== plaintexts[i].length || p.some((b, j) => b !== plaintexts[i][j])) {
          throw new Error(`message ${i} did not decrypt to what was sent`);
        }
      });
      return ms;
    },
  };
}

function summary(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  const r = (x) => Math.round(x * 100) / 100;
  return { median_ms: r(median), min_ms: r(sorted[0]), max_ms: r(sorted.at(-1)), runs: sorted.length };
}

/** What a profile's node is: wasm, the package's JS by file, the browser's work, idle, GC. */
function kindOf(f) {
  if (f.url.endsWith('.wasm') || f.functionName.startsWith('wasm-function') || f.url.startsWith('wasm://')) return 'wasm';
  if (f.url) return `JS ${path.basename(f.url)}`;
  return f.functionName || '(anonymous)';
}

/** Self time per function over CPU profiles, the largest first, and per kind; ms per profile. */
function selfTimes(profiles, top = 25) {
  const kinds = new Map();
  const self = new Map();
  const add = (m, key, ms) => m.set(key, (m.get(key) ?? 0) + ms / profiles.length);
  for (const profile of profiles) {
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    // timeDeltas[i] is the time from sample i-1 to sample i: sample i ran for timeDeltas[i+1].
    profile.samples.forEach((id, i) => {
      const f = byId.get(id).callFrame;
      const ms = (profile.timeDeltas[i + 1] ?? 0) / 1000;
      add(self, `${f.functionName || '(anonymous)'} ${f.url ? path.basename(f.url) : ''}`.trim(), ms);
      add(kinds, kindOf(f), ms);
    });
  }
  const total = [...kinds.values()].reduce((a, b) => a + b, 0);
  const rows = (m, n) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, ms]) => ({ name, ms: Math.round(ms * 100) / 100, share: Math.round((ms / total) * 1000) / 10 }));
  return { functions: rows(self, top), kinds: rows(kinds, 12) };
}

async function main() {
  const o = parse(process.argv.slice(2));
  const sc = await build('1x1000est');
  const data = {
    seed: {
      identity: b64(sc.receiver.identity),
      prekeys: sc.receiver.prekeys.map(b64),
      sessions: sc.receiver.sessions.map(([id, s]) => [id, b64(s)]),
    },
    queue: sc.messages.map((m) => [m.sessionId, b64(m.envelope)]),
    expected: sc.messages.map((m) => b64(m.plaintext)),
  };
  const load = [loadavg()[0]];
  const browser = await launch('proteus-browser-bench-');
  const servers = [];
  const sides = [];
  try {
    for (const dir of o.pkgs) {
      const server = await serve(dir);
      servers.push(server);
      const page = await browser.context.newPage();
      page.on('pageerror', (e) => console.error(`page error (${dir}):`, e));
      const side = { dir, server, page, warm: [], cold: [], memory: [] };
      side.load = async () => {
        await page.goto(`${server.url}/package.json`);
        await page.evaluate(setUp, data);
      };
      await side.load();
      sides.push(side);
    }
    // Warm: an untimed batch, then the timed ones, the packages taking turns.
    for (const s of sides) {
      await s.page.evaluate(() => window.bench.seed('warm'));
      await s.page.evaluate(() => window.bench.run('warm'));
    }
    // --profile: the package given last (ffi/web/pkg without --pkg).
    const profiled = sides.at(-1);
    if (o.profile) {
      const cdp = await profiled.page.context().newCDPSession(profiled.page);
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 50 });
      cdp.on('Profiler.consoleProfileFinished', ({ profile }) => (profiled.profiles ??= []).push(profile));
      await profiled.page.evaluate(() => (window.bench.profiling = true));
    }
    // The packages take turns, and which goes first alternates (paired A/B).
    const turns = (r) => (r % 2 === 0 ? sides : [...sides].reverse());
    for (let r = 0; r < o.runs; r++) {
      for (const s of turns(r)) {
        await s.page.evaluate(() => window.bench.seed('warm'));
        s.warm.push(await s.page.evaluate(() => window.bench.run('warm')));
        s.memory.push(await s.page.evaluate(() => window.bench.run(undefined)));
      }
    }
    // Cold: seed in this page, load the page again, time its first batch.
    for (let r = 0; r < o.cold; r++) {
      for (const s of turns(r)) {
        await s.page.evaluate(() => window.bench.seed('cold'));
        await s.load();
        s.cold.push(await s.page.evaluate(() => window.bench.run('cold')));
      }
    }
    if (o.profile) {
      await profiled.page.evaluate(() => (window.bench.profiling = false));
      const profiles = profiled.profiles.slice(1); // not the warm-up's
      await writeFile(o.profile, JSON.stringify(profiles.at(-1)));
      await writeFile(`${o.profile}.all.json`, JSON.stringify(profiles));
      console.log(`profile of the last warm batch: ${o.profile}; self time per batch, the mean of ${profiles.length} profiled batches (sampled every 50 µs, which slows them):`);
      const { functions, kinds } = selfTimes(profiles);
      const show = (f) => console.log(`  ${String(f.ms).padStart(8)} ms ${String(f.share).padStart(5)} %  ${f.name}`);
      console.log(' by kind:');
      kinds.forEach(show);
      console.log(' by function:');
      functions.forEach(show);
    }
  } finally {
    await browser.close();
    for (const s of servers) await s.close();
  }
  load.push(loadavg()[0]);
  const version = browser.context.browser()?.version?.() ?? ENGINE;
  for (const s of sides) {
    const line = { impl: `ours (${ENGINE}, IndexedDB)`, pkg: s.dir, scenario: '1x1000est', warm: summary(s.warm), memory: summary(s.memory), cold: o.cold ? summary(s.cold) : undefined, load_average: load.map((x) => Math.round(x * 100) / 100) };
    if (o.json) console.log(JSON.stringify(line));
    else {
      console.log(`${s.dir} (${version}, load average ${line.load_average.join(' → ')})`);
      console.log(`  warm: median ${line.warm.median_ms} ms (min ${line.warm.min_ms}, max ${line.warm.max_ms}, ${line.warm.runs} runs): ${s.warm.map((t) => t.toFixed(1)).join(' ')}`);
      console.log(`  the same batch on a memory store, same page: median ${line.memory.median_ms} ms (min ${line.memory.min_ms}, max ${line.memory.max_ms})`);
      if (line.cold) console.log(`  cold: median ${line.cold.median_ms} ms (min ${line.cold.min_ms}, max ${line.cold.max_ms}, ${line.cold.runs} page loads): ${s.cold.map((t) => t.toFixed(1)).join(' ')}`);
    }
  }
}

await main();
