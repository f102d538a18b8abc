// Opening an IndexedDB store: losing an identity is never silent (the `created` flag and
// `{ create: false }`), and persistent storage is asked for. Run: node --test tests/ (after
// ./build.sh).
import assert from 'node:assert/strict';
import { afterEach, describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import * as pkg from '../pkg/index.js';
import { Client, ProteusError, init } from '../pkg/index.js';

await init();

const STORE_NOT_FOUND = 504;
const noLocks = { request: (_name, fn) => fn() };

/** Runs with `globalThis.navigator` set to `navigator` (Node has none). */
const hadNavigator = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
function withNavigator(navigator) {
  Object.defineProperty(globalThis, 'navigator', { value: navigator, configurable: true, writable: true });
}
afterEach(() => {
  if (hadNavigator) Object.defineProperty(globalThis, 'navigator', hadNavigator);
  else delete globalThis.navigator;
});

async function databases(indexedDB) {
  return (await indexedDB.databases()).map((d) => d.name);
}

describe('a new store and an existing one', () => {
  test('`created` tells a new identity from a loaded one', async () => {
    const indexedDB = new IDBFactory();
    const first = await Client.open('me', { indexedDB, locks: noLocks });
    assert.equal(first.created, true);
    const fingerprint = await first.fingerprint();
    await first.close();
    const again = await Client.open('me', { indexedDB, locks: noLocks });
    assert.equal(again.created, false);
    assert.equal(await again.fingerprint(), fingerprint);
    await again.close();
    assert.equal((await Client.inMemory()).created, true);
  });

  test('{ create: false } refuses a missing store with StoreNotFound (504) and creates nothing', async () => {
    const indexedDB = new IDBFactory();
    await assert.rejects(Client.open('gone', { indexedDB, locks: noLocks, create: false }), (e) => {
      assert.ok(e instanceof ProteusError, `${e}`);
      assert.equal(e.code, STORE_NOT_FOUND);
      assert.equal(e.kind, 'StoreNotFound');
      assert.match(e.message, /proteus:gone/);
      return true;
    });
    assert.deepEqual(await databases(indexedDB), [], 'no database was created');

    const made = await Client.open('gone', { indexedDB, locks: noLocks });
    const fingerprint = await made.fingerprint();
    await made.close();
    const reopened = await Client.open('gone', { indexedDB, locks: noLocks, create: false });
    assert.equal(reopened.created, false);
    assert.equal(await reopened.fingerprint(), fingerprint);
    await reopened.close();

    // The browser evicted the store (here: deleted it): an app that knows it had an identity
    // hears about it instead of getting a new one.
    await Client.deleteStore('gone', { indexedDB });
    await assert.rejects(Client.open('gone', { indexedDB, locks: noLocks, create: false }), (e) => e.code === STORE_NOT_FOUND);
    const fresh = await Client.open('gone', { indexedDB, locks: noLocks });
    assert.equal(fresh.created, true);
    assert.notEqual(await fresh.fingerprint(), fingerprint);
    await fresh.close();
  });

  test('{ create: false } refuses an existing database that holds no identity', async () => {
    const indexedDB = new IDBFactory();
    const c = await Client.open('emptied', { indexedDB, locks: noLocks });
    await c.close();
    const db = await new Promise((resolve, reject) => {
      const req = indexedDB.open('proteus:emptied');
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
    });
    const tx = db.transaction([...db.objectStoreNames], 'readwrite');
    for (const name of db.objectStoreNames) tx.objectStore(name).clear();
    await new Promise((resolve) => {
      tx.oncomplete = resolve;
    });
    db.close();
    await assert.rejects(Client.open('emptied', { indexedDB, locks: noLocks, create: false }), (e) => e.code === STORE_NOT_FOUND);
  });
});

describe('persistent storage', () => {
  test('open asks for it and exposes the answer; in memory it does not ask', async () => {
    let asked = 0;
    withNavigator({ locks: noLocks, storage: { persist: async () => (asked++, true) } });
    const c = await Client.open('persist', { indexedDB: new IDBFactory() });
    assert.equal(await c.persisted, true);
    assert.equal(asked, 1);
    await c.close();
    const m = await Client.inMemory();
    assert.equal(await m.persisted, undefined);
    assert.equal(asked, 1);

    withNavigator({ locks: noLocks, storage: { persist: async () => false } });
    const refused = await Client.open('persist', { indexedDB: new IDBFactory() });
    assert.equal(await refused.persisted, false);
    await refused.close();

    withNavigator({ locks: noLocks, storage: { persist: () => Promise.reject(new Error('no')) } });
    const failing = await Client.open('persist', { indexedDB: new IDBFactory() });
    assert.equal(await failing.persisted, undefined, 'a failure is "unknown", and open still works');
    await failing.close();

    withNavigator({ locks: noLocks, storage: { persist: async () => (asked++, true) } });
    const notAsked = await Client.open('persist', { indexedDB: new IDBFactory(), persist: false });
    assert.equal(await notAsked.persisted, undefined);
    assert.equal(asked, 1, '{ persist: false } does not ask');
    await notAsked.close();
  });

  test('without a StorageManager (Node) persisted is undefined', async () => {
    const c = await Client.open('node', { indexedDB: new IDBFactory(), locks: noLocks });
    assert.equal(await c.persisted, undefined);
    await c.close();
  });
});

describe('a runtime without IndexedDB (Node)', () => {
  const unavailable = (e) => {
    assert.ok(e instanceof ProteusError, `a ProteusError, not ${e?.name}: ${e?.message}`);
    assert.equal(e.code, pkg.STORE_UNAVAILABLE);
    assert.equal(e.kind, 'StoreUnavailable');
    assert.equal(e.family, 'System');
    // It says where the durable store is and how to get it.
    assert.match(e.message, /no IndexedDB/);
    assert.match(e.message, /@proteus-engine\/node/);
    assert.match(e.message, /native addon/);
    assert.match(e.message, /Client\.inMemory\(\)/);
    return true;
  };

  test('every store call fails with StoreUnavailable (513), not Web Locks or a TypeError', async () => {
    assert.equal(globalThis.indexedDB, undefined, 'Node has no IndexedDB');
    await assert.rejects(Client.open('node-store'), unavailable);
    // Even where the app made locks available: IndexedDB is what is missing.
    await assert.rejects(Client.open('node-store', { locks: noLocks, create: false }), unavailable);
    await assert.rejects(Client.deleteStore('node-store'), unavailable);
    const key = new Uint8Array(32).fill(7);
    await assert.rejects(Client.sealStore('node-store', key), unavailable);
    await assert.rejects(Client.rekeyStore('node-store', key, new Uint8Array(32)), unavailable);
  });

  test('with an IndexedDB given, the same calls work', async () => {
    const indexedDB = new IDBFactory();
    const c = await Client.open('node-store', { indexedDB, locks: noLocks });
    assert.equal(c.created, true);
    await c.close();
    await Client.deleteStore('node-store', { indexedDB });
  });
});

test('the codes of these conditions are exported', () => {
  assert.equal(pkg.CLIENT_BUSY, 120);
  assert.equal(pkg.STORE_NOT_FOUND, 504);
  assert.equal(pkg.STORE_CONFLICT, 512);
  assert.equal(pkg.STORE_UNAVAILABLE, 513);
});
