// Sealed stores written by earlier versions of the package open with this one (tests/golden/,
// made by tests/golden/make.mjs and committed): the sealed format is a stored format, so a
// change to a record layout or to the sealing must still read them, byte for byte as stored.
// Each file holds every IndexedDB object store of a store (hex), its key, messages whose keys
// it staged and what the store knows (its fingerprint, a pinned identity). Format 2 (bound to
// the commit, with a manifest) and format 1 (re-sealed in format 2 when first opened).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, ProteusError, STORE_TAMPERED, WRONG_STORE_KEY, init } from '../pkg/index.js';
import { TABLES, openStoreDatabase } from './support/idb.mjs';

await init();

const noLocks = { request: (_name, fn) => fn() };
const bytes = (hex) => new Uint8Array(Buffer.from(hex, 'hex'));
const golden = (file) => JSON.parse(readFileSync(new URL(`golden/${file}`, import.meta.url), 'utf8'));

const request = (req) =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

/** A new IndexedDB holding store `name` as `tables` (a golden dump) has it. */
async function load(tables, name = 'bob') {
  const indexedDB = new IDBFactory();
  const db = await openStoreDatabase(indexedDB, name);
  const tx = db.transaction([...TABLES, 'sync'], 'readwrite');
  const done = new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  for (const [table, rows] of Object.entries(tables)) {
    const store = tx.objectStore(table);
    for (const [k, v] of rows) store.put(typeof v === 'number' ? v : bytes(v), table === 'sync' ? k : bytes(k));
  }
  await done;
  db.close();
  return indexedDB;
}

async function count(indexedDB, table, name = 'bob') {
  const db = await request(indexedDB.open(`proteus:${name}`));
  const n = await request(db.transaction(table, 'readonly').objectStore(table).count());
  db.close();
  return n;
}

const codeOf = async (promise) => {
  try {
    await promise;
    return 0;
  } catch (e) {
    assert.ok(e instanceof ProteusError, String(e));
    return e.code;
  }
};

for (const file of ['sealed-v2.json', 'sealed-v1.json']) {
  describe(`the golden store ${file}`, () => {
    const g = golden(file);
    const storeKey = bytes(g.storeKey);
    const open = (indexedDB) => Client.open('bob', { indexedDB, locks: noLocks, storeKey, identityPinning: g.identityPinning });

    test('opens with its key: its identity, pins, sessions and prekeys, its staged keys decrypt', async () => {
      const indexedDB = await load(g.tables);
      const bob = await open(indexedDB);
      assert.equal(await bob.fingerprint(), g.fingerprint);
      assert.equal(await bob.pinnedIdentity('alice'), g.pinned.alice);
      assert.deepEqual((await bob.sessionIds()).sort(), ['alice', 'carol']);
      assert.equal(await bob.prekeysRemaining(), g.tables.prekeys.length - 1);
      for (const { from, envelope, plaintext } of g.skipped) {
        assert.equal(new TextDecoder().decode(await bob.decrypt(from, bytes(envelope))), plaintext);
      }
      // Each staged key is used once: the same message again is refused.
      assert.notEqual(await codeOf(bob.decrypt(g.skipped[0].from, bytes(g.skipped[0].envelope))), 0);
      const out = await bob.encrypt('alice', 'after the golden store');
      assert.ok(out.length > 0);
      await bob.close();
      // What it committed opens again (sealed in the current format).
      const again = await open(indexedDB);
      assert.equal(await again.fingerprint(), g.fingerprint);
      assert.equal(await again.encryptFor(['alice', 'carol'], 'to both').then((r) => r.length), 2);
      await again.close();
    });

    test('rekeyStore moves it to a new key (format 1: its records read without a manifest)', async () => {
      const indexedDB = await load(g.tables);
      const newKey = new Uint8Array(32).fill(8);
      await Client.rekeyStore('bob', storeKey, newKey, { indexedDB, locks: noLocks });
      assert.equal(await codeOf(open(indexedDB)), WRONG_STORE_KEY);
      const bob = await Client.open('bob', { indexedDB, locks: noLocks, storeKey: newKey, identityPinning: g.identityPinning });
      assert.equal(await bob.fingerprint(), g.fingerprint);
      assert.deepEqual((await bob.sessionIds()).sort(), ['alice', 'carol']);
      const { from, envelope, plaintext } = g.skipped[0];
      assert.equal(new TextDecoder().decode(await bob.decrypt(from, bytes(envelope))), plaintext);
      await bob.close();
    });

    test('refused with another key (WrongStoreKey), and when a record is deleted (StoreTampered)', async () => {
      const wrong = Client.open('bob', { indexedDB: await load(g.tables), locks: noLocks, storeKey: new Uint8Array(32).fill(7) });
      assert.equal(await codeOf(wrong), WRONG_STORE_KEY);
      if (g.format === 2) {
        const tables = { ...g.tables, prekeys: g.tables.prekeys.slice(1) };
        const indexedDB = await load(tables);
        assert.equal(await count(indexedDB, 'prekeys'), g.tables.prekeys.length - 1);
        assert.equal(await codeOf(open(indexedDB).then((c) => c.close())), STORE_TAMPERED);
      }
    });
  });
}
