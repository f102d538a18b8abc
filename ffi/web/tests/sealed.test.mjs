// Sealed IndexedDB stores (js/sealing.js, js/idb.js): every record sealed with the application's
// key, the native codes for a missing or wrong key (510, 508) or a key for a plain store (509)
// with nothing changed, sealing a plain store and changing the key. The raw IndexedDB records
// are read back to check that no identity secret and no session id is in them.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, ProteusError, STORE_CORRUPT, STORE_KEY_REQUIRED, STORE_NOT_FOUND, STORE_NOT_SEALED, STORE_TAMPERED, WRONG_STORE_KEY, init } from '../pkg/index.js';
import { openStoreDatabase } from './support/idb.mjs';

await init();

const noLocks = { request: (_name, fn) => fn() };
const tick = () => new Promise((resolve) => setImmediate(resolve));
const key = (fill) => new Uint8Array(32).fill(fill);
const text = (bytes) => new TextDecoder().decode(bytes);
const utf8 = (s) => new TextEncoder().encode(s);

/** Every record of store `name` as IndexedDB holds it: `[{table, key, value}]`, plus `sync`. */
async function raw(indexedDB, name) {
  const db = await new Promise((resolve, reject) => {
    const req = indexedDB.open(`proteus:${name}`);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  const tables = [...db.objectStoreNames];
  const tx = db.transaction(tables, 'readonly');
  const all = (req) => new Promise((resolve) => (req.onsuccess = () => resolve(req.result)));
  const records = [];
  for (const table of tables) {
    const store = tx.objectStore(table);
    const [keys, values] = await Promise.all([all(store.getAllKeys()), all(store.getAll())]);
    keys.forEach((k, i) => records.push({ table, key: bytesOf(k), value: bytesOf(values[i]) }));
  }
  db.close();
  return records;
}

function bytesOf(v) {
  if (typeof v === 'string') return utf8(v);
  if (typeof v === 'number') return utf8(String(v));
  return new Uint8Array(v);
}

/** Creates store `name` with no record, its `sync` table holding `sync` ({key: value}). */
async function bare(indexedDB, name, sync = {}) {
  const db = await openStoreDatabase(indexedDB, name);
  const tx = db.transaction('sync', 'readwrite');
  for (const [k, v] of Object.entries(sync)) tx.objectStore('sync').put(v, k);
  await new Promise((resolve) => (tx.oncomplete = resolve));
  db.close();
}

/** The value of `key` in store `name`'s `sync` table, as raw() reads it. */
async function syncValue(indexedDB, name, key) {
  const row = (await raw(indexedDB, name)).find((r) => r.table === 'sync' && text(r.key) === key);
  return row?.value;
}

/** All the stored bytes, keys and values, back to back. */
const haystack = (records) => Buffer.concat(records.flatMap((r) => [r.key, r.value]));

/** Whether any 16-byte window of `secret` occurs in `bytes`. */
function leaks(bytes, secret) {
  for (let i = 0; i + 16 <= secret.length; i++) {
    if (bytes.indexOf(Buffer.from(secret.subarray(i, i + 16))) >= 0) return true;
  }
  return false;
}

/** The identity's secret key bytes: in Wire's serialisation, the 64-byte byte string. */
function secretKey(exported) {
  // CBOR: a byte string of 64 bytes is 0x58 0x40 followed by the bytes.
  for (let i = 0; i + 66 <= exported.length; i++) {
    if (exported[i] === 0x58 && exported[i + 1] === 0x40) return exported.subarray(i + 2, i + 66);
  }
  throw new Error('no 64-byte secret key in the exported identity');
}

const rejectsWith = (promise, code) =>
  assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, String(e));
    assert.equal(e.code, code, e.message);
    assert.equal(e.family, 'System');
    return true;
  });

/** A store `name` with an identity, a session with a peer and a sent message. */
async function populated(indexedDB, name, options = {}) {
  const client = await Client.open(name, { indexedDB, locks: noLocks, ...options });
  const peer = await Client.inMemory();
  const [{ bundle }] = await peer.generatePrekeys(1);
  await client.createSession('bob:laptop', bundle);
  await client.generatePrekeys(3);
  const hello = await client.encrypt('bob:laptop', 'hello');
  assert.equal(text(await peer.decrypt('alice:phone', hello)), 'hello');
  const secret = secretKey(await client.exportIdentity());
  const fingerprint = await client.fingerprint();
  await client.close();
  return { peer, secret, fingerprint };
}

describe('a sealed store', () => {
  test('keeps no identity secret and no session id in IndexedDB, and opens again with its key', async () => {
    const indexedDB = new IDBFactory();
    const { peer, secret, fingerprint } = await populated(indexedDB, 'sealed', { storeKey: key(7) });
    const records = await raw(indexedDB, 'sealed');
    const stored = haystack(records);
    assert.equal(leaks(stored, secret), false, 'the identity secret is not stored in the clear');
    assert.equal(stored.indexOf(Buffer.from('bob:laptop')), -1, 'the session id is not stored in the clear');
    for (const r of records.filter((r) => r.table !== 'sync')) {
      assert.equal(r.value[0], 2, `${r.table}: a sealed record starts with its format version`);
    }

    const again = await Client.open('sealed', { indexedDB, locks: noLocks, storeKey: key(7) });
    assert.equal(again.created, false);
    assert.equal(await again.fingerprint(), fingerprint);
    assert.deepEqual(await again.sessionIds(), ['bob:laptop']);
    assert.equal(text(await peer.decrypt('alice:phone', await again.encrypt('bob:laptop', 'again'))), 'again');
    await again.deleteSession('bob:laptop');
    assert.deepEqual(await again.sessionIds(), []);
    await again.close();
  });

  test('the control: a plain store does hold the secret and the session id (the check above can fail)', async () => {
    const indexedDB = new IDBFactory();
    const { secret } = await populated(indexedDB, 'plain');
    const stored = haystack(await raw(indexedDB, 'plain'));
    assert.equal(leaks(stored, secret), true);
    assert.notEqual(stored.indexOf(Buffer.from('bob:laptop')), -1);
  });

  test('without its key: StoreKeyRequired (510); another key: WrongStoreKey (508); nothing changes', async () => {
    const indexedDB = new IDBFactory();
    await populated(indexedDB, 'locked', { storeKey: key(1) });
    const before = await raw(indexedDB, 'locked');
    await rejectsWith(Client.open('locked', { indexedDB, locks: noLocks }), STORE_KEY_REQUIRED);
    await rejectsWith(Client.open('locked', { indexedDB, locks: noLocks, storeKey: key(2) }), WRONG_STORE_KEY);
    await rejectsWith(Client.open('locked', { indexedDB, locks: noLocks, storeKey: key(2), create: false }), WRONG_STORE_KEY);
    assert.deepEqual(await raw(indexedDB, 'locked'), before);
  });

  test('a key for a plain store: StoreNotSealed (509), nothing changes', async () => {
    const indexedDB = new IDBFactory();
    await populated(indexedDB, 'plain');
    const before = await raw(indexedDB, 'plain');
    await rejectsWith(Client.open('plain', { indexedDB, locks: noLocks, storeKey: key(1) }), STORE_NOT_SEALED);
    assert.deepEqual(await raw(indexedDB, 'plain'), before);
    const c = await Client.open('plain', { indexedDB, locks: noLocks });
    assert.equal(c.created, false);
    await c.close();
  });

  test('a non-extractable HKDF CryptoKey is a store key; other keys are refused', async () => {
    const indexedDB = new IDBFactory();
    const bytes = key(9);
    const hkdf = await crypto.subtle.importKey('raw', bytes, 'HKDF', false, ['deriveKey']);
    const { fingerprint } = await populated(indexedDB, 'hkdf', { storeKey: hkdf });
    // The same bytes, given as bytes, are the same key.
    const c = await Client.open('hkdf', { indexedDB, locks: noLocks, storeKey: bytes });
    assert.equal(await c.fingerprint(), fingerprint);
    await c.close();
    const aes = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt']);
    await assert.rejects(Client.open('hkdf', { indexedDB, locks: noLocks, storeKey: aes }), TypeError);
    await assert.rejects(Client.open('hkdf', { indexedDB, locks: noLocks, storeKey: new Uint8Array(31) }), TypeError);
    await assert.rejects(Client.open('hkdf', { indexedDB, locks: noLocks, storeKey: 'secret' }), TypeError);
  });

  // Damage cannot be told from a record put back or moved: StoreTampered (tests/bound.test.mjs).
  test('a damaged record: StoreTampered (514), nothing changes', async () => {
    const indexedDB = new IDBFactory();
    await populated(indexedDB, 'damaged', { storeKey: key(3) });
    const db = await new Promise((resolve) => (indexedDB.open('proteus:damaged').onsuccess = (e) => resolve(e.target.result)));
    const tx = db.transaction('meta', 'readwrite');
    const store = tx.objectStore('meta');
    const keys = await new Promise((resolve) => (store.getAllKeys().onsuccess = (e) => resolve(e.target.result)));
    const value = await new Promise((resolve) => (store.get(keys[0]).onsuccess = (e) => resolve(e.target.result)));
    const flipped = new Uint8Array(value);
    flipped[flipped.length - 1] ^= 1;
    store.put(flipped, keys[0]);
    await new Promise((resolve) => (tx.oncomplete = resolve));
    db.close();
    const before = await raw(indexedDB, 'damaged');
    await rejectsWith(Client.open('damaged', { indexedDB, locks: noLocks, storeKey: key(3) }), STORE_TAMPERED);
    assert.deepEqual(await raw(indexedDB, 'damaged'), before);
  });
});

describe('sealStore and rekeyStore', () => {
  test('sealStore seals every record of a plain store; its sessions go on', async () => {
    const indexedDB = new IDBFactory();
    const { peer, secret, fingerprint } = await populated(indexedDB, 'to-seal');
    await Client.sealStore('to-seal', key(4), { indexedDB, locks: noLocks });
    const stored = haystack(await raw(indexedDB, 'to-seal'));
    assert.equal(leaks(stored, secret), false, 'no plain record remains');
    assert.equal(stored.indexOf(Buffer.from('bob:laptop')), -1);
    await rejectsWith(Client.open('to-seal', { indexedDB, locks: noLocks }), STORE_KEY_REQUIRED);
    const c = await Client.open('to-seal', { indexedDB, locks: noLocks, storeKey: key(4) });
    assert.equal(await c.fingerprint(), fingerprint);
    assert.equal(await c.prekeysRemaining(), 3);
    assert.equal(text(await peer.decrypt('alice:phone', await c.encrypt('bob:laptop', 'sealed now'))), 'sealed now');
    await c.close();
    // Sealed already: as natively, StoreCorrupt; nothing changes.
    const before = await raw(indexedDB, 'to-seal');
    await rejectsWith(Client.sealStore('to-seal', key(5), { indexedDB, locks: noLocks }), STORE_CORRUPT);
    assert.deepEqual(await raw(indexedDB, 'to-seal'), before);
    await rejectsWith(Client.sealStore('missing', key(5), { indexedDB, locks: noLocks }), STORE_NOT_FOUND);
    assert.deepEqual((await indexedDB.databases()).map((d) => d.name), ['proteus:to-seal']);
  });

  test('rekeyStore moves a store to a new key; a wrong old key or a plain store changes nothing', async () => {
    const indexedDB = new IDBFactory();
    const { peer, fingerprint } = await populated(indexedDB, 'rekey', { storeKey: key(1) });
    const before = await raw(indexedDB, 'rekey');
    await rejectsWith(Client.rekeyStore('rekey', key(2), key(3), { indexedDB, locks: noLocks }), WRONG_STORE_KEY);
    assert.deepEqual(await raw(indexedDB, 'rekey'), before);

    await Client.rekeyStore('rekey', key(1), key(3), { indexedDB, locks: noLocks });
    const after = await raw(indexedDB, 'rekey');
    for (const r of after.filter((r) => r.table !== 'sync')) {
      assert.ok(!before.some((b) => Buffer.from(b.value).equals(Buffer.from(r.value))), 'every record sealed anew');
    }
    await rejectsWith(Client.open('rekey', { indexedDB, locks: noLocks, storeKey: key(1) }), WRONG_STORE_KEY);
    const c = await Client.open('rekey', { indexedDB, locks: noLocks, storeKey: key(3) });
    assert.equal(await c.fingerprint(), fingerprint);
    assert.equal(text(await peer.decrypt('alice:phone', await c.encrypt('bob:laptop', 'new key'))), 'new key');
    await c.close();

    await populated(indexedDB, 'plain');
    const plain = await raw(indexedDB, 'plain');
    await rejectsWith(Client.rekeyStore('plain', key(1), key(3), { indexedDB, locks: noLocks }), STORE_NOT_SEALED);
    assert.deepEqual(await raw(indexedDB, 'plain'), plain);
  });

  test('a client left open on a store that gets sealed or rekeyed fails (510, 508) and writes nothing', async () => {
    const indexedDB = new IDBFactory();
    await populated(indexedDB, 'open-plain');
    const plainClient = await Client.open('open-plain', { indexedDB, locks: noLocks });
    await Client.sealStore('open-plain', key(6), { indexedDB, locks: noLocks });
    const sealed = await raw(indexedDB, 'open-plain');
    await rejectsWith(plainClient.generatePrekeys(2), STORE_KEY_REQUIRED);
    await rejectsWith(plainClient.encrypt('bob:laptop', 'leak?'), STORE_KEY_REQUIRED);
    assert.deepEqual(await raw(indexedDB, 'open-plain'), sealed, 'no plain record was written');
    await plainClient.close();

    const oldKeyClient = await Client.open('open-plain', { indexedDB, locks: noLocks, storeKey: key(6) });
    await Client.rekeyStore('open-plain', key(6), key(8), { indexedDB, locks: noLocks });
    const rekeyed = await raw(indexedDB, 'open-plain');
    await rejectsWith(oldKeyClient.generatePrekeys(1), WRONG_STORE_KEY);
    assert.deepEqual(await raw(indexedDB, 'open-plain'), rekeyed, 'nothing sealed with the old key was written');
    await oldKeyClient.close();
  });
});

describe('opening a store step by step (proteus-client decides each step)', () => {
  test('two tabs opening a new store with a key at once both open it, sealed once', async () => {
    for (const delay of [0, 1, 2, 3, 5, 8, 13, 21]) {
      const indexedDB = new IDBFactory();
      // One lock manager for both tabs, as Web Locks are: the re-sealing takes turns.
      const open = () => Client.open('both', { indexedDB, allowWithoutWebLocks: true, storeKey: key(3) });
      const first = open();
      for (let i = 0; i < delay; i++) await tick();
      const [tab1, tab2] = await Promise.all([first, open()]);
      const where = `tab 2 ${delay} ticks after tab 1`;
      assert.equal(await tab2.fingerprint(), await tab1.fingerprint(), where);
      // One seal, one re-sealing (commit 1) and one identity (commit 2).
      assert.equal(text(await syncValue(indexedDB, 'both', 'commits')), '2', where);
      // Each tab holds the store's check value: a stale one would fail with WrongStoreKey.
      await tab1.generatePrekeys(1);
      await tab2.generatePrekeys(1);
      await Promise.all([tab1.close(), tab2.close()]);
      await rejectsWith(Client.open('both', { indexedDB, locks: noLocks }), STORE_KEY_REQUIRED);
      const again = await Client.open('both', { indexedDB, locks: noLocks, storeKey: key(3) });
      assert.equal(again.created, false);
      assert.equal(await again.prekeysRemaining(), 2, where);
      await again.close();
    }
  });

  test('a store sealed while empty (closed before its re-sealing) opens with its key only', async () => {
    const indexedDB = new IDBFactory();
    await populated(indexedDB, 'keyed', { storeKey: key(2) });
    // A check value is not bound to its store: one made with key 2 marks an empty store.
    await bare(indexedDB, 'empty', { seal: await syncValue(indexedDB, 'keyed', 'seal') });
    const before = await raw(indexedDB, 'empty');
    await rejectsWith(Client.open('empty', { indexedDB, locks: noLocks }), STORE_KEY_REQUIRED);
    await rejectsWith(Client.open('empty', { indexedDB, locks: noLocks, storeKey: key(5) }), WRONG_STORE_KEY);
    await rejectsWith(Client.sealStore('empty', key(5), { indexedDB, locks: noLocks }), STORE_CORRUPT);
    assert.deepEqual(await raw(indexedDB, 'empty'), before);
    const c = await Client.open('empty', { indexedDB, locks: noLocks, storeKey: key(2) });
    assert.equal(c.created, true);
    const fingerprint = await c.fingerprint();
    await c.close();
    assert.notEqual(await syncValue(indexedDB, 'empty', 'manifest'), undefined, 're-sealed with a manifest');
    const again = await Client.open('empty', { indexedDB, locks: noLocks, storeKey: key(2) });
    assert.equal(await again.fingerprint(), fingerprint);
    await again.close();
  });

  test('an empty plain store: rekeyStore refuses it (509), sealStore seals it', async () => {
    const indexedDB = new IDBFactory();
    await bare(indexedDB, 'empty');
    const before = await raw(indexedDB, 'empty');
    await rejectsWith(Client.rekeyStore('empty', key(1), key(2), { indexedDB, locks: noLocks }), STORE_NOT_SEALED);
    assert.deepEqual(await raw(indexedDB, 'empty'), before, 'converting never seals as opening does');
    await Client.sealStore('empty', key(2), { indexedDB, locks: noLocks });
    await rejectsWith(Client.open('empty', { indexedDB, locks: noLocks }), STORE_KEY_REQUIRED);
    const c = await Client.open('empty', { indexedDB, locks: noLocks, storeKey: key(2) });
    assert.equal(c.created, true);
    await c.close();
  });
});
