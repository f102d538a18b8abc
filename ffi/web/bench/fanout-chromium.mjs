#!/usr/bin/env node
// fanout4000 in a real headless Chromium, on the browser's IndexedDB: one encryptFor of a 150-byte
// plaintext to 4000 established sessions, its commit stored with strict durability before the
// envelopes are returned; on a plain store and on a sealed one (WebCrypto AES-GCM), and in memory
// in the same page for comparison.
//
//   node bench/fanout-chromium.mjs [--runs N] [--json]        (after ./build.sh)
//
// The sender's sessions are made in Node (bench/scenarios.mjs) and imported in the page; the
// 4000 imports commit with relaxed durability (setup, not timed). Each store then sends once
// untimed (the sessions are in use, as natively) and N times timed. A receiver in Node holding a
// sample of the sessions decrypts every timed send.

import { build, oursFrom, equal } from './scenarios.mjs';
import { launch } from '../tests/support/chromium.mjs';
import { serve } from '../tests/support/serve.mjs';

const args = process.argv.slice(2);
const runs = Number.parseInt(args[args.indexOf('--runs') + 1] ?? '', 10) || 7;
const json = args.includes('--json');
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));

const sc = await build('fanout4000');
const server = await serve();
const browser = await launch('proteus-fanout-bench-');
const page = await browser.context.newPage();
page.on('pageerror', (e) => console.error('page error:', e));
await page.goto(`${server.url}/ffi/web/tests/browser/harness.html`);
await page.waitForFunction(() => window.harnessReady === true);

const samples = sc.samples.map((s) => s.index);
const lines = [];
try {
  for (const store of ['memory', 'indexeddb', 'indexeddb-sealed']) {
    const out = await page.evaluate(
      async ({ store, identity, sessions, recipients, plaintext, runs, samples }) => {
        const { Client } = await import('/ffi/web/pkg/index.js');
        const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
        const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
        const strict = IDBDatabase.prototype.transaction;
        // Setup only: the 4000 imports commit with relaxed durability.
        IDBDatabase.prototype.transaction = function (names, mode, options) {
          return strict.call(this, names, mode, mode === 'readwrite' ? { durability: 'relaxed' } : options);
        };
        let client;
        try {
          const storeKey = store === 'indexeddb-sealed' ? crypto.getRandomValues(new Uint8Array(32)) : undefined;
          client = store === 'memory' ? await Client.inMemory() : await Client.open(`fanout-${store}`, { storeKey, persist: false });
          await client.importIdentity(unb64(identity));
          for (const [id, bytes] of sessions) await client.importSession(id, unb64(bytes));
        } finally {
          IDBDatabase.prototype.transaction = strict;
        }
        const text = unb64(plaintext);
        const warm = await client.encryptFor(recipients, text);
        const times = [];
        const sends = [warm.filter((_, i) => samples.includes(i)).map((r) => b64(r.envelope))];
        for (let r = 0; r < runs; r++) {
          const start = performance.now();
          const results = await client.encryptFor(recipients, text);
          times.push(performance.now() - start);
          sends.push(samples.map((i) => b64(results[i].envelope)));
        }
        await client.close();
        return { times, sends };
      },
      {
        store,
        identity: b64(sc.sender.identity),
        sessions: sc.sender.sessions.map(([id, bytes]) => [id, b64(bytes)]),
        recipients: sc.recipients,
        plaintext: b64(sc.plaintext),
        runs,
        samples,
      },
    );
    // Every send decrypts at the sampled recipients, in order.
    const receiver = await oursFrom(sc.receiver);
    for (const send of out.sends) {
      for (const [k, { sessionId }] of sc.samples.entries()) {
        if (!equal(await receiver.decrypt(sessionId, unb64(send[k])), sc.plaintext)) throw new Error(`${store}: a sample did not decrypt`);
      }
    }
    await receiver.close();
    const sorted = [...out.times].sort((a, b) => a - b);
    const mid = sorted.length >> 1;
    const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
    const r = (x) => Math.round(x * 10) / 10;
    lines.push({ impl: 'ours (Chromium)', scenario: 'fanout4000', store, median_ms: r(median), min_ms: r(sorted[0]), max_ms: r(sorted.at(-1)), runs });
  }
} finally {
  await browser.close();
  await server.close();
}
for (const l of lines) {
  if (json) console.log(JSON.stringify(l));
  else console.log(`${l.store.padEnd(18)} median ${l.median_ms} ms (min ${l.min_ms}, max ${l.max_ms}, ${l.runs} runs)`);
}
