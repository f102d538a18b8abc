// The package in a real headless Chromium (Debian's, driven by playwright-core), pages served on
// 127.0.0.1: IndexedDB persistence across a reload with a 1000-message queue, two pages of one
// client committing at once, the demo page, opening with { create: false }, and the lanes
// entry of before (initLanes()). The peer runs in Node (the same package, in memory).
// Run: node --test tests/browser/chromium.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Client } from '../../pkg/index.js';
import { ENGINE, launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

const text = (bytes) => new TextDecoder().decode(bytes);
const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));

let server;
let browser;
let context;

before(async () => {
  server = await serve();
  browser = await launch();
  context = browser.context;
});

after(async () => {
  await browser?.close();
  await server?.close();
});

/** A new page on the harness, the package loaded. */
async function harnessPage() {
  const page = await context.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  await page.goto(`${server.url}/ffi/web/tests/browser/harness.html`);
  await page.waitForFunction(() => window.harnessReady === true);
  return page;
}

async function reload(page) {
  await page.reload();
  await page.waitForFunction(() => window.harnessReady === true);
}

const call = (page, fn, ...args) => page.evaluate(([f, a]) => window.harness[f](...a), [fn, args]);

describe(ENGINE, () => {
  test('the page has IndexedDB and Web Locks', async () => {
    const page = await harnessPage();
    assert.deepEqual(await call(page, 'features'), { locks: true, indexedDB: true });
    await page.close();
  });

  test('a client on IndexedDB survives a reload and decrypts a 1000-message queue', async () => {
    const page = await harnessPage();
    const fingerprint = await call(page, 'open', 'bob');
    const alice = await Client.inMemory();
    await alice.createSession('bob', unb64(await call(page, 'prekey', 'bob')));
    assert.equal(await call(page, 'decrypt', 'bob', 'alice', b64(await alice.encrypt('bob', 'hello'))), 'hello');
    assert.equal(text(await alice.decrypt('bob', unb64(await call(page, 'encrypt', 'bob', 'alice', 'hi')))), 'hi');
    const plaintexts = Array.from({ length: 1000 }, (_, i) => `queued message #${i} ${'·'.repeat(i % 50)}`);
    const queue = [];
    for (const p of plaintexts) queue.push({ sessionId: 'alice', envelope: b64(await alice.encrypt('bob', p)) });

    await reload(page);
    assert.equal(await call(page, 'open', 'bob'), fingerprint, 'the identity came back from IndexedDB');
    assert.deepEqual(await call(page, 'sessionIds', 'bob'), ['alice']);
    const { progress, results } = await call(page, 'decryptBatch', 'bob', queue);
    assert.equal(progress, 1000, 'onMessage saw 1, 2, ... 1000 of 1000');
    assert.deepEqual(results.map((r) => r.plaintext), plaintexts);

    await reload(page);
    await call(page, 'open', 'bob');
    const again = await call(page, 'decryptBatch', 'bob', queue.slice(0, 10));
    assert.ok(again.results.every((r) => r.alreadySeen && r.plaintext === null), 'the batch commit survived a reload');
    assert.equal(text(await alice.decrypt('bob', unb64(await call(page, 'encrypt', 'bob', 'alice', 'after reload')))), 'after reload');
    assert.deepEqual(await call(page, 'errorOf', 'bob', 'nobody'), { name: 'ProteusError', code: 104, kind: 'SessionNotFound', isError: true });
    await page.close();
  });

  test('two pages of one client commit at once without losing anything', async () => {
    const [page1, page2] = await Promise.all([harnessPage(), harnessPage()]);
    const [fp1, fp2] = await Promise.all([call(page1, 'open', 'shared'), call(page2, 'open', 'shared')]);
    assert.equal(fp1, fp2, 'both pages opened the same client');
    const carol = await Client.inMemory();
    await carol.createSession('me', unb64(await call(page1, 'prekey', 'shared')));
    assert.equal(await call(page1, 'decrypt', 'shared', 'carol', b64(await carol.encrypt('me', 'hello'))), 'hello');
    assert.deepEqual(await call(page2, 'sessionIds', 'shared'), ['carol'], 'page 2 sees page 1\'s commit');

    // Both pages encrypt 50 messages each, all at once: every envelope must use its own key.
    const texts = (tag) => Array.from({ length: 50 }, (_, i) => `${tag} ${i}`);
    const [out1, out2] = await Promise.all([
      call(page1, 'encryptMany', 'shared', 'carol', texts('page1')),
      call(page2, 'encryptMany', 'shared', 'carol', texts('page2')),
    ]);
    const got = [];
    for (const e of [...out1, ...out2]) got.push(text(await carol.decrypt('me', unb64(e))));
    assert.deepEqual(got, [...texts('page1'), ...texts('page2')]);

    // Both pages decrypt half of a queue at once: both commits must be kept.
    const queue = [];
    for (let i = 0; i < 200; i++) queue.push({ sessionId: 'carol', envelope: b64(await carol.encrypt('me', `q${i}`)) });
    const [r1, r2] = await Promise.all([
      call(page1, 'decryptBatch', 'shared', queue.slice(0, 100)),
      call(page2, 'decryptBatch', 'shared', queue.slice(100)),
    ]);
    assert.deepEqual([...r1.results, ...r2.results].map((r) => r.plaintext), queue.map((_, i) => `q${i}`));
    const page3 = await harnessPage();
    await call(page3, 'open', 'shared');
    const replay = await call(page3, 'decryptBatch', 'shared', queue);
    assert.ok(replay.results.every((r) => r.alreadySeen), 'no commit was lost');
    await Promise.all([page1.close(), page2.close(), page3.close()]);
  });

  test('the demo page: two clients in a Worker chat, then 10,000 queued messages decrypt in one batch, the bar moving', async () => {
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e));
    await page.goto(`${server.url}/examples/web-demo/`);
    await page.locator('#status', { hasText: 'ready' }).waitFor();
    assert.match(await page.locator('#alice-fp').textContent(), /^[0-9a-f]{64}$/);
    assert.deepEqual(page.workers().map((w) => new URL(w.url()).pathname), ['/examples/web-demo/proteus-worker.js'], 'the clients live in a module Worker');
    await page.fill('#alice-input', 'hello Bob');
    await page.click('#alice-send');
    await page.locator('#bob-log li', { hasText: 'hello Bob' }).waitFor();
    await page.fill('#bob-input', 'hi Alice');
    await page.click('#bob-send');
    await page.locator('#alice-log li', { hasText: 'hi Alice' }).waitFor();

    // The values of the bar that the page's frames drew during the batch.
    await page.evaluate(() => {
      window.barSeen = new Set();
      const sample = () => {
        window.barSeen.add(document.getElementById('progress').value);
        requestAnimationFrame(sample);
      };
      requestAnimationFrame(sample);
    });
    await page.click('#queue');
    const result = page.locator('#backlog-result', { hasText: 'messages decrypted in' });
    // A bound against a hang (the batch takes seconds), never a measure of speed.
    await result.waitFor({ timeout: 600_000 });
    assert.match(await result.textContent(), /^10000 messages decrypted in \d+\.\d ms in one batch/);
    assert.equal(await page.locator('#progress').evaluate((p) => p.value), 10_000);
    await page.locator('#bob-log li', { hasText: 'backlog message 10000 of 10000' }).waitFor();
    const drawn = await page.evaluate(() => [...window.barSeen].filter((v) => v > 0 && v < 10_000));
    assert.ok(drawn.length >= 1, `frames drew the bar part-way during the one batch: ${drawn}`);

    // The clients live in IndexedDB: after a reload they carry on.
    const fingerprint = await page.locator('#bob-fp').textContent();
    await page.reload();
    await page.locator('#status', { hasText: 'ready' }).waitFor();
    assert.equal(await page.locator('#bob-fp').textContent(), fingerprint);
    await page.fill('#alice-input', 'still there?');
    await page.click('#alice-send');
    await page.locator('#bob-log li', { hasText: 'still there?' }).waitFor();

    // Start over: the worker closes both clients and deletes their stores; new identities follow.
    await Promise.all([page.waitForEvent('load'), page.click('#reset')]);
    await page.locator('#status', { hasText: 'ready' }).waitFor();
    assert.notEqual(await page.locator('#bob-fp').textContent(), fingerprint);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test('open: { create: false } leaves no database behind; created and persisted', async () => {
    const page = await harnessPage();
    const seen = await page.evaluate(async () => {
      const { Client } = await import('/ffi/web/pkg/index.js');
      let code;
      try {
        await Client.open('never-made', { create: false });
      } catch (e) {
        code = e.code;
      }
      const listed = (await indexedDB.databases()).some((d) => d.name === 'proteus:never-made');
      const made = await Client.open('made-here');
      const created = made.created;
      const persisted = typeof (await made.persisted);
      await made.close();
      const again = await Client.open('made-here', { create: false });
      const createdAgain = again.created;
      await again.close();
      return { code, listed, created, persisted, createdAgain };
    });
    assert.deepEqual(seen, { code: 504, listed: false, created: true, persisted: 'boolean', createdAgain: false });
    await page.close();
  });
  test('the lanes entry of before: initLanes() fetches the package module only, and the API runs on it', async () => {
    const page = await context.newPage();
    page.on('pageerror', (e) => console.error('page error:', e));
    const fetched = [];
    page.on('request', (r) => r.url().endsWith('.wasm') && fetched.push(new URL(r.url()).pathname));
    await page.goto(`${server.url}/ffi/web/README.md`); // a page of the origin that loads nothing
    const texts = await page.evaluate(async () => {
      const { Client } = await import('/ffi/web/pkg/index.js');
      const { initLanes } = await import('/ffi/web/pkg/lanes.js');
      await initLanes();
      const alice = await Client.inMemory();
      const bob = await Client.inMemory();
      const [{ bundle }] = await bob.generatePrekeys(1);
      await alice.createSession('bob', bundle);
      const queue = [];
      for (let i = 0; i < 9; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `m${i}`) });
      return (await bob.decryptBatch(queue)).map((r) => new TextDecoder().decode(r.plaintext));
    });
    assert.deepEqual(texts, Array.from({ length: 9 }, (_, i) => `m${i}`));
    assert.deepEqual(fetched, ['/ffi/web/pkg/proteus_web_bg.wasm']);
    await page.close();
  });
});
