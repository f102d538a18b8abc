// importCryptobox in a real headless Chromium, on real IndexedDB: a store that Wire's REAL
// @wireapp/cryptobox 12.8.0 writes in the page (tests/cryptobox/stores.mjs, bundled for the browser
// by esbuild) through @wireapp/store-engine-dexie imports into a durable client, whose queue then
// decrypts and whose sessions go on both ways with the real cryptobox peers, before and after a
// reload; the source database is left as it was. A reload in the middle of an import leaves the
// target all or nothing, at delays spread over the import. And a benchmark, printed: 10,000
// sessions and 101 prekeys from IndexedDB into a new IndexedDB store.
// Run: CHROMIUM=/usr/bin/chromium node --test tests/browser/cryptobox.mjs
// (after ./build.sh and `npm ci --prefix ../../tests/cryptobox`).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { ENGINE, launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

const STORES = fileURLToPath(new URL('../../../../tests/cryptobox/stores.mjs', import.meta.url));
/** A bound against a hang only: a machine ten times slower than ours passes well within it. */
const TIMEOUT = 15 * 60_000;

let bundleDir;
let server;
let browser;

/** Node's `events` for the browser: the EventEmitter that Cryptobox and TransientStore extend. */
const EVENTS = `
export class EventEmitter {
  constructor() { this._events = new Map(); }
  on(name, fn) { (this._events.get(name) ?? this._events.set(name, []).get(name)).push(fn); return this; }
  addListener(name, fn) { return this.on(name, fn); }
  prependListener(name, fn) { (this._events.get(name) ?? this._events.set(name, []).get(name)).unshift(fn); return this; }
  once(name, fn) { const once = (...a) => { this.off(name, once); fn.apply(this, a); }; return this.on(name, once); }
  off(name, fn) { const l = this._events.get(name); if (l) { const i = l.indexOf(fn); if (i >= 0) l.splice(i, 1); } return this; }
  removeListener(name, fn) { return this.off(name, fn); }
  removeAllListeners(name) { if (name === undefined) this._events.clear(); else this._events.delete(name); return this; }
  emit(name, ...args) { const l = this._events.get(name); if (!l || l.length === 0) return false; for (const fn of [...l]) fn.apply(this, args); return true; }
  listeners(name) { return [...(this._events.get(name) ?? [])]; }
  listenerCount(name) { return this._events.get(name)?.length ?? 0; }
  setMaxListeners() { return this; }
}
export default EventEmitter;
`;

/**
 * Shims for the two Node built-ins the packages require outright: `events` (above) and `crypto`,
 * which @wireapp/proteus requires only where there is no `window.crypto` (an empty module here).
 * Nothing else needs one: libsodium-sumo is JavaScript through and through (no .wasm to fetch),
 * and no module that is bundled requires the `buffer` package.
 */
const shims = {
  name: 'node-builtins',
  setup(build) {
    build.onResolve({ filter: /^(events|crypto)$/ }, (args) => ({ path: args.path, namespace: 'shim' }));
    build.onLoad({ filter: /.*/, namespace: 'shim' }, (args) => ({
      contents: args.path === 'events' ? EVENTS : 'export default {};',
      loader: 'js',
    }));
  },
};

before(async () => {
  bundleDir = await mkdtemp(path.join(tmpdir(), 'proteus-cryptobox-bundle-'));
  const result = await esbuild.build({
    entryPoints: [STORES],
    bundle: true,
    format: 'esm',
    platform: 'browser',
    outfile: path.join(bundleDir, 'stores.js'),
    // What stores.mjs imports only in Node, dynamically (the fs engine, fake-indexeddb).
    external: ['@wireapp/store-engine-fs', 'fs-extra', 'node:*', 'fake-indexeddb/auto.js'],
    plugins: [shims],
    logLevel: 'silent',
  });
  assert.deepEqual(result.errors, []);
  server = await serve();
  browser = await launch('proteus-cryptobox-');
  // The bundle is not in the repository: the pages get it from the temporary directory.
  await browser.context.route('**/ffi/web/tests/browser/cryptobox-bundle/stores.js', (route) =>
    route.fulfill({ path: path.join(bundleDir, 'stores.js'), contentType: 'text/javascript; charset=utf-8' }),
  );
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (bundleDir) await rm(bundleDir, { recursive: true, force: true });
});

/** The harness page with tests/browser/cryptobox-page.js as `window.cbx` (again after a reload). */
async function ready(p) {
  await p.waitForFunction(() => window.harnessReady === true);
  await p.evaluate(async () => {
    window.cbx = await import('/ffi/web/tests/browser/cryptobox-page.js');
  });
  return p;
}

async function page() {
  const p = await browser.context.newPage();
  p.on('pageerror', (e) => console.error('page error:', e));
  await p.goto(`${server.url}/ffi/web/tests/browser/harness.html`);
  return ready(p);
}

async function reload(p) {
  await p.reload();
  return ready(p);
}

/** `fn(window.cbx, arg)` in page `p`. */
const call = (p, fn, arg) => p.evaluate(`(${fn})(window.cbx, ${JSON.stringify(arg)})`);

/** Every session goes on both ways between the target (page `t`) and the peers (page `s`). */
async function continues(t, s, peerIds, round) {
  const out = peerIds.map((id) => [id, `${round}: to ${id}`]);
  const envelopes = await call(t, (cbx, m) => cbx.targetEncrypt(m), out);
  assert.deepEqual(await call(s, (cbx, m) => cbx.peersDecrypt(m), peerIds.map((id, i) => [id, envelopes[i]])), out.map(([, text]) => text));
  const back = peerIds.map((id) => [id, `${round}: from ${id}`]);
  const replies = await call(s, (cbx, m) => cbx.peersEncrypt(m), back);
  assert.deepEqual(await call(t, (cbx, m) => cbx.targetDecrypt(m), peerIds.map((id, i) => [id, replies[i]])), back.map(([, text]) => text));
}

describe(`${ENGINE}: importCryptobox from the IndexedDB database of the real @wireapp/cryptobox`, () => {
  test('a store cryptobox wrote imports into a durable client; its queue decrypts, its sessions go on, a reload keeps it', { timeout: TIMEOUT }, async () => {
    const s = await page();
    const t = await page();
    const dbName = 'wire-cryptobox-alice';
    const expected = await call(s, (cbx, dbName) => cbx.makeSource({ dbName }), dbName);
    assert.equal(expected.sessionIds.length, 3);
    assert.equal(expected.queue.length, 15);
    const sourceBefore = await call(s, (cbx, name) => cbx.snapshot(name), dbName);
    assert.equal(sourceBefore.version, 10, 'Dexie schema version 1 is IndexedDB version 10');
    assert.deepEqual(sourceBefore.tables.keys.keys, ['local_identity']);
    assert.equal(sourceBefore.tables.prekeys.count, expected.prekeyIds.length);
    assert.deepEqual(sourceBefore.tables.sessions.keys, expected.sessionIds);

    const own = await call(t, (cbx) => cbx.openTarget('target'));
    assert.notEqual(own, expected.fingerprint);
    const { report, progress } = await call(t, (cbx, db) => cbx.importInto(db), dbName);
    assert.deepEqual(report, {
      fingerprint: expected.fingerprint,
      prekeys: expected.prekeyIds.length,
      sessions: expected.sessionIds.length,
      skipped: [],
      alreadyImported: false,
    });
    const total = 1 + expected.prekeyIds.length + expected.sessionIds.length;
    assert.ok(progress.calls >= 1 && progress.ordered, JSON.stringify(progress));
    assert.deepEqual(progress.last, { done: total, total });
    const state = await call(t, (cbx) => cbx.targetState());
    assert.equal(state.fingerprint, expected.fingerprint);
    assert.deepEqual(state.sessionIds, expected.sessionIds);
    assert.equal(state.prekeysRemaining, expected.prekeyIds.length - 1, 'every one-time prekey (not the last resort)');

    // The whole queue in one batch, in order: skipped message keys, prekey messages (two to
    // one-time prekeys, one to the last resort) from peers alice has no session with yet.
    assert.deepEqual(
      await call(t, (cbx, q) => cbx.decryptQueue(q), expected.queue),
      expected.queue.map((m) => [m.sessionId, m.plaintext]),
    );
    await continues(t, s, expected.peerIds, 'after the import');
    assert.deepEqual(await call(s, (cbx, name) => cbx.snapshot(name), dbName), sourceBefore, 'the source is only read');

    // A reload (the client not closed): the same store, and the sessions go on from where they were.
    await reload(t);
    assert.equal(await call(t, (cbx) => cbx.openTarget('target', { create: false })), expected.fingerprint);
    const reopened = await call(t, (cbx) => cbx.targetState());
    assert.deepEqual(reopened.sessionIds, [...new Set([...expected.sessionIds, ...expected.peerIds])].sort());
    const again = await call(t, (cbx, db) => cbx.importInto(db), dbName);
    assert.deepEqual(again.report.alreadyImported, true);
    assert.equal(again.report.fingerprint, expected.fingerprint);
    assert.deepEqual(await call(t, (cbx) => cbx.targetState()), reopened, 'importing again changes nothing');
    await continues(t, s, expected.peerIds, 'after the reload');
    await call(t, (cbx) => cbx.closeTarget());
    assert.deepEqual(await call(s, (cbx, name) => cbx.snapshot(name), dbName), sourceBefore, 'the source is only read');
    await t.close();
    await s.close();
  });

  test('a reload in the middle of an import leaves the target all or nothing', { timeout: TIMEOUT }, async () => {
    const SESSIONS = 3000;
    const PREKEYS = 100;
    const s = await page();
    const seed = await call(s, (cbx) => cbx.makeSource({ dbName: 'wire-cryptobox-seed', sessions: 1, prekeys: 100, seed: 5 }));
    const large = await call(s, (cbx, n) => cbx.makeLargeSource('wire-cryptobox-seed', 'wire-cryptobox-large', n), { sessions: SESSIONS, prekeys: PREKEYS });
    assert.deepEqual([large.sessions, large.prekeys], [SESSIONS, PREKEYS + 1]);
    const sourceBefore = await call(s, (cbx) => cbx.snapshot('wire-cryptobox-large'));

    // One import uninterrupted, to spread the reloads over its duration.
    const t = await page();
    await call(t, (cbx) => cbx.openTarget('interrupted-measure'));
    const measured = await call(t, (cbx) => cbx.importInto('wire-cryptobox-large'));
    assert.deepEqual([measured.report.sessions, measured.report.prekeys], [SESSIONS, PREKEYS + 1]);
    await call(t, (cbx) => cbx.closeTarget());
    await call(t, (cbx) => cbx.deleteStore('interrupted-measure'));
    const duration = measured.ms;
    const steps = 8;
    const delays = Array.from({ length: steps + 1 }, (_, i) => Math.round((duration * i) / steps));
    console.log(`uninterrupted import of ${SESSIONS} sessions + ${PREKEYS + 1} prekeys: ${duration.toFixed(0)} ms; reloads after ${delays.join(', ')} ms`);

    const outcomes = [];
    for (const [i, delay] of delays.entries()) {
      const name = `interrupted-${i}`;
      const own = await call(t, (cbx, name) => cbx.openTarget(name), name);
      await call(t, (cbx) => cbx.startImport('wire-cryptobox-large'));
      await sleep(delay);
      const when = await t.evaluate(() => window.importOutcome);
      await reload(t);
      await call(t, (cbx, name) => cbx.openTarget(name, { create: false }), name);
      const state = await call(t, (cbx) => cbx.targetState());
      await call(t, (cbx) => cbx.closeTarget());
      await call(t, (cbx, name) => cbx.deleteStore(name), name);
      const nothing = state.fingerprint === own && state.sessions === 0 && state.prekeysRemaining === 0;
      const all =
        state.fingerprint === seed.fingerprint &&
        state.sessions === SESSIONS &&
        state.idsDigest === large.idsDigest &&
        state.prekeysRemaining === PREKEYS;
      assert.ok(nothing || all, `reload after ${delay} ms left a part: ${JSON.stringify({ own, ...state })}`);
      outcomes.push(`${delay} ms: ${all ? 'all' : 'nothing'} (import ${when} at the reload)`);
    }
    console.log(`reloads during the import: ${outcomes.join('; ')}`);
    assert.deepEqual(await call(s, (cbx) => cbx.snapshot('wire-cryptobox-large')), sourceBefore, 'the source is only read');
    await t.close();
    await s.close();
  });

  test('benchmark (printed): 10,000 sessions + 101 prekeys, IndexedDB → a new IndexedDB store', { timeout: TIMEOUT }, async () => {
    const SESSIONS = 10_000;
    const PREKEYS = 100;
    const s = await page();
    await call(s, (cbx) => cbx.makeSource({ dbName: 'wire-cryptobox-bench-seed', sessions: 1, prekeys: 100, seed: 6 }));
    const large = await call(s, (cbx, n) => cbx.makeLargeSource('wire-cryptobox-bench-seed', 'wire-cryptobox-10000', n), { sessions: SESSIONS, prekeys: PREKEYS });
    await s.close();
    const t = await page();
    const runs = [];
    for (let i = 0; i < 3; i++) {
      const name = `bench-${i}`;
      await call(t, (cbx, name) => cbx.openTarget(name), name);
      const { report, ms } = await call(t, (cbx) => cbx.importInto('wire-cryptobox-10000'));
      assert.deepEqual([report.sessions, report.prekeys, report.skipped.length], [SESSIONS, PREKEYS + 1, 0]);
      const state = await call(t, (cbx) => cbx.targetState());
      assert.equal(state.idsDigest, large.idsDigest);
      await call(t, (cbx) => cbx.closeTarget());
      await call(t, (cbx, name) => cbx.deleteStore(name), name);
      runs.push(ms);
    }
    const median = [...runs].sort((a, b) => a - b)[1];
    const fmt = (ms) => ms.toFixed(0);
    console.log(
      `importCryptobox 10,000 sessions + 101 prekeys, IndexedDB → IndexedDB, ${ENGINE}: median ${fmt(median)} ms of 3 (runs: ${runs.map(fmt).join(', ')})`,
    );
    await t.close();
  });
});
