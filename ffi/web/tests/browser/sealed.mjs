// Sealed stores in a real headless Chromium: the raw IndexedDB records of a sealed store hold no
// identity secret and no session id (those of a plain store do: the check can fail), a missing or
// wrong key fails with the native codes and changes nothing, a non-extractable HKDF CryptoKey kept
// in IndexedDB opens the store after a reload, and encryptFor commits to a sealed store.
// Run: node --test tests/browser/sealed.mjs (after ./build.sh).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ENGINE, launch } from '../support/browser.mjs';
import { serve } from '../support/serve.mjs';

let server;
let browser;

before(async () => {
  server = await serve();
  browser = await launch('proteus-sealed-');
});

after(async () => {
  await browser?.close();
  await server?.close();
});

async function page() {
  const p = await browser.context.newPage();
  p.on('pageerror', (e) => console.error('page error:', e));
  await p.goto(`${server.url}/ffi/web/tests/browser/harness.html`);
  await p.waitForFunction(() => window.harnessReady === true);
  return p;
}

/**
 * In the page: makes store `name` (sealed with `sealed`'s key bytes, or plain) with a session to
 * a peer made in the page, then reads every raw IndexedDB record of it and reports whether a
 * 16-byte window of the identity's secret key, or the session id, occurs in them.
 */
function inspect(p, name, sealed) {
  return p.evaluate(
    async ([name, sealed]) => {
      const { Client } = await import('/ffi/web/pkg/index.js');
      const storeKey = sealed ? crypto.getRandomValues(new Uint8Array(32)) : undefined;
      const client = await Client.open(name, { storeKey });
      const peer = await Client.inMemory();
      const [{ bundle }] = await peer.generatePrekeys(1);
      await client.createSession('carol:tablet', bundle);
      await client.generatePrekeys(5);
      await peer.decrypt('me', await client.encrypt('carol:tablet', 'hello'));
      const exported = await client.exportIdentity();
      await client.close();
      // Wire's serialisation holds the secret key as a 64-byte CBOR byte string (0x58 0x40).
      const at = exported.findIndex((b, i) => b === 0x58 && exported[i + 1] === 0x40);
      const secret = exported.subarray(at + 2, at + 66);
      const db = await new Promise((resolve, reject) => {
        const req = indexedDB.open(`proteus:${name}`);
        req.onsuccess = () => resolve(req.result);
        req.onerror = () => reject(req.error);
      });
      const tables = [...db.objectStoreNames];
      const tx = db.transaction(tables, 'readonly');
      const all = (req) => new Promise((resolve) => (req.onsuccess = () => resolve(req.result)));
      const chunks = [];
      let records = 0;
      for (const table of tables) {
        const store = tx.objectStore(table);
        const [keys, values] = await Promise.all([all(store.getAllKeys()), all(store.getAll())]);
        for (const v of [...keys, ...values]) {
          if (typeof v === 'string' || typeof v === 'number') chunks.push(new TextEncoder().encode(String(v)));
          else chunks.push(new Uint8Array(v));
        }
        records += keys.length;
      }
      db.close();
      const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
      const stored = chunks.map(hex).join('|');
      let secretFound = false;
      for (let i = 0; i + 16 <= secret.length && !secretFound; i++) secretFound = stored.includes(hex(secret.subarray(i, i + 16)));
      const idFound = stored.includes(hex(new TextEncoder().encode('carol:tablet')));
      return { records, secretLength: secret.length, secretFound, idFound };
    },
    [name, sealed],
  );
}

describe(`${ENGINE}: sealed stores`, () => {
  test('the raw IndexedDB records of a sealed store hold no identity secret and no session id', async () => {
    const p = await page();
    const plain = await inspect(p, 'plain-store', false);
    assert.equal(plain.secretLength, 64);
    assert.ok(plain.records > 5, `${plain.records} records`);
    assert.deepEqual([plain.secretFound, plain.idFound], [true, true], 'a plain store holds both (the check works)');
    const sealed = await inspect(p, 'sealed-store', true);
    assert.ok(sealed.records > 5, `${sealed.records} records`);
    assert.deepEqual([sealed.secretFound, sealed.idFound], [false, false], 'a sealed store holds neither');
    await p.close();
  });

  test('a CryptoKey kept in IndexedDB opens the store after a reload; wrong or missing keys change nothing', async () => {
    const p = await page();
    const made = await p.evaluate(async () => {
      const { Client } = await import('/ffi/web/pkg/index.js');
      const key = await crypto.subtle.importKey('raw', crypto.getRandomValues(new Uint8Array(32)), 'HKDF', false, ['deriveKey']);
      // The app keeps its non-extractable key in a database of its own.
      const db = await new Promise((resolve) => {
        const req = indexedDB.open('app-keys');
        req.onupgradeneeded = () => req.result.createObjectStore('keys');
        req.onsuccess = () => resolve(req.result);
      });
      await new Promise((resolve) => {
        const tx = db.transaction('keys', 'readwrite');
        tx.objectStore('keys').put(key, 'proteus');
        tx.oncomplete = resolve;
      });
      db.close();
      const client = await Client.open('keyed', { storeKey: key });
      const fingerprint = await client.fingerprint();
      await client.close();
      return { fingerprint, extractable: key.extractable };
    });
    assert.equal(made.extractable, false);
    await p.reload();
    await p.waitForFunction(() => window.harnessReady === true);
    const after = await p.evaluate(async () => {
      const { Client } = await import('/ffi/web/pkg/index.js');
      const db = await new Promise((resolve) => (indexedDB.open('app-keys').onsuccess = (e) => resolve(e.target.result)));
      const key = await new Promise((resolve) => (db.transaction('keys').objectStore('keys').get('proteus').onsuccess = (e) => resolve(e.target.result)));
      db.close();
      const codeOf = (promise) => promise.then(() => 0, (e) => e.code);
      const missing = await codeOf(Client.open('keyed'));
      const wrong = await codeOf(Client.open('keyed', { storeKey: new Uint8Array(32) }));
      const client = await Client.open('keyed', { storeKey: key });
      const fingerprint = await client.fingerprint();
      // Fan-out to a sealed store: one commit, then the envelopes.
      const peers = [];
      for (let i = 0; i < 3; i++) {
        const peer = await Client.inMemory();
        const [{ bundle }] = await peer.generatePrekeys(1);
        await client.createSession(`peer-${i}`, bundle);
        peers.push(peer);
      }
      const results = await client.encryptFor(['peer-0', 'peer-1', 'nobody', 'peer-2'], 'to all of you');
      await client.close();
      const texts = [];
      for (const [i, r] of results.entries()) {
        texts.push(r.envelope ? new TextDecoder().decode(await peers[i > 2 ? 2 : i].decrypt('me', r.envelope)) : r.errorKind);
      }
      const rekeyed = await codeOf(Client.rekeyStore('keyed', key, crypto.getRandomValues(new Uint8Array(32))));
      const oldKey = await codeOf(Client.open('keyed', { storeKey: key }));
      return { missing, wrong, fingerprint, texts, rekeyed, oldKey };
    });
    assert.deepEqual(after, {
      missing: 510,
      wrong: 508,
      fingerprint: made.fingerprint,
      texts: ['to all of you', 'to all of you', 'SessionNotFound', 'to all of you'],
      rekeyed: 0,
      oldKey: 508,
    });
    await p.close();
  });
});

