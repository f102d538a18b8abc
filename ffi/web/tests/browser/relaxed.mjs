// Decrypt-only commits use relaxed IndexedDB durability (the browser may report a commit before it
// is flushed to disk): the crash contract in a real headless Chromium. The browser process is
// killed (SIGKILL) right after a decryptBatch resolved, or while its results were delivered and
// its commit was not yet made; a new browser on the same profile opens the store and decrypts the
// same messages again. Either the commit is there (every message is a duplicate, under the same
// message id) or it is not (every message decrypts again to the same plaintext under the same
// id): nothing is lost and nothing decrypts twice to something else, and a commit is all or
// nothing. encrypt and encryptFor stay strict. Each of these calls is one IndexedDB transaction.
// Run: node --test tests/browser/relaxed.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client, DUPLICATE_MESSAGE } from '../../pkg/index.js';
import { launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

const b64 = (bytes) => Buffer.from(bytes).toString('base64');
const unb64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));

let server;
let profile;

before(async () => {
  server = await serve();
  profile = await mkdtemp(path.join(tmpdir(), 'proteus-relaxed-'));
});

after(async () => {
  await server?.close();
  if (profile) await rm(profile, { recursive: true, force: true });
});

/**
 * A browser on the test's profile and a page of the harness, which records every IndexedDB
 * transaction: a readwrite one by its durability, another by its mode.
 */
async function start() {
  const browser = await launch(undefined, { profile });
  const page = await browser.context.newPage();
  page.on('pageerror', (e) => console.error('page error:', e));
  await page.goto(`${server.url}/ffi/web/tests/browser/harness.html`);
  await page.waitForFunction(() => window.harnessReady === true);
  await page.evaluate(async () => {
    window.durabilities = [];
    const transaction = IDBDatabase.prototype.transaction;
    IDBDatabase.prototype.transaction = function (names, mode, options) {
      window.durabilities.push(mode === 'readwrite' ? options?.durability ?? 'default' : mode ?? 'readonly');
      return transaction.call(this, names, mode, options);
    };
    const { Client } = await import('/ffi/web/pkg/index.js');
    window.bob = await Client.open('bob', { persist: false });
  });
  return { browser, page };
}

/** In the page: decryptBatch of `queue` ([sessionId, envelope b64]); its results as plain data. */
function decryptIn(page, queue, { hold = false } = {}) {
  return page.evaluate(
    async ([queue, hold]) => {
      const unb64 = (s) => Uint8Array.from(atob(s), (c) => c.charCodeAt(0));
      const b64 = (bytes) => btoa(String.fromCharCode(...bytes));
      const plain = (r) => ({ messageId: r.messageId, plaintext: r.plaintext && b64(r.plaintext), errorCode: r.errorCode ?? 0 });
      const messages = queue.map(([sessionId, envelope]) => ({ sessionId, envelope: unb64(envelope) }));
      window.durabilities.length = 0;
      if (!hold) return { results: (await window.bob.decryptBatch(messages)).map(plain), durabilities: window.durabilities };
      // Every result delivered, the commit waiting on a promise that never settles: the crash
      // comes before the commit.
      const delivered = [];
      return new Promise((resolve, reject) => {
        window.bob
          .decryptBatch(messages, (r) => {
            delivered.push(plain(r));
            if (delivered.length === messages.length) resolve({ results: delivered, durabilities: window.durabilities });
            return new Promise(() => {});
          })
          .catch(reject);
      });
    },
    [queue, hold],
  );
}

test('a relaxed decrypt commit survives a browser crash, or its messages decrypt again the same', async () => {
  const alice = await Client.inMemory();
  let { browser, page } = await start();
  const bundle = await page.evaluate(async () => {
    const [{ bundle }] = await window.bob.generatePrekeys(1);
    return btoa(String.fromCharCode(...bundle));
  });
  await alice.createSession('bob', unb64(bundle));
  const outcomes = [];
  let sent = 0;
  try {
    // Round 0 starts with the PreKeyMessage (a lost commit gives the prekey back, too).
    for (const hold of [false, false, true, false, true]) {
      const queue = [];
      for (let i = 0; i < 40; i++) queue.push(['alice', b64(await alice.encrypt('bob', `message ${sent++}`))]);
      const first = await decryptIn(page, queue, { hold });
      assert.equal(first.results.length, queue.length);
      assert.ok(first.results.every((r) => r.errorCode === 0), 'the first decryption of every message succeeds');
      if (!hold) assert.deepEqual(first.durabilities, ['relaxed'], 'a decrypt-only batch is one transaction, relaxed');
      await browser.kill();
      ({ browser, page } = await start());
      const again = await decryptIn(page, queue);
      const kept = again.results.every((r) => r.errorCode === DUPLICATE_MESSAGE);
      const lost = again.results.every((r) => r.errorCode === 0);
      assert.ok(kept || lost, `a commit is all or nothing: ${again.results.map((r) => r.errorCode).join(',')}`);
      if (hold) assert.ok(lost, 'a commit that was never made is not there');
      again.results.forEach((r, i) => {
        const seen = first.results[i];
        assert.equal(r.messageId, seen.messageId, `message ${i} keeps its id`);
        if (lost) assert.equal(r.plaintext, seen.plaintext, `message ${i} decrypts again to the same plaintext`);
      });
      outcomes.push(kept ? 'kept' : 'lost');
    }
    // The conversation goes on from the store the crashes left: bob answers, alice decrypts.
    const reply = await page.evaluate(async () => {
      window.durabilities.length = 0;
      const envelope = await window.bob.encrypt('alice', 'still here');
      const fanout = await window.bob.encryptFor(['alice'], 'to all');
      return { envelope: btoa(String.fromCharCode(...envelope)), fanout: btoa(String.fromCharCode(...fanout[0].envelope)), durabilities: window.durabilities };
    });
    assert.deepEqual(reply.durabilities, ['strict', 'strict'], 'encrypt and encryptFor are one strict transaction each');
    assert.equal(new TextDecoder().decode(await alice.decrypt('bob', unb64(reply.envelope))), 'still here');
    assert.equal(new TextDecoder().decode(await alice.decrypt('bob', unb64(reply.fanout))), 'to all');
  } finally {
    await browser.close();
  }
  console.log(`commits after a crash: ${outcomes.join(', ')}`);
});
