// Writes the golden sealed stores of golden.test.mjs (tests/golden/*.json): IndexedDB stores
// sealed by the web package as it was when they were made, with everything needed to use them
// again (the store key, the peers' states, messages whose keys are staged). The sealed format is
// a stored format: a later version must open these files unchanged, so they are made once and
// committed, never regenerated to make a test pass.
//   node tests/golden/make.mjs        (after ./build.sh; writes tests/golden/sealed-v2.json, sealed-v1.json)
import { writeFileSync } from 'node:fs';
import { IDBFactory } from 'fake-indexeddb';
import { Client, init } from '../../pkg/index.js';
import { toFormat1 } from '../support/format1.mjs';

await init();

const noLocks = { request: (_name, fn) => fn() };
const TABLES = ['meta', 'prekeys', 'sessions', 'staged_keys'];
const hex = (bytes) => Buffer.from(bytes).toString('hex');
const request = (req) =>
  new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });

/** Every object store of store `name`: `{table: [[key hex, value hex or number]]}`. */
async function dump(indexedDB, name) {
  const db = await request(indexedDB.open(`proteus:${name}`));
  const tables = [...TABLES, 'sync'];
  const tx = db.transaction(tables, 'readonly');
  const out = {};
  for (const table of tables) {
    const store = tx.objectStore(table);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    out[table] = keys.map((k, i) => [
      typeof k === 'string' ? k : hex(new Uint8Array(k)),
      typeof values[i] === 'number' ? values[i] : hex(new Uint8Array(values[i])),
    ]);
  }
  db.close();
  return out;
}

/** Writes `tables` (a dump) as store `name`. */
async function restore(indexedDB, name, tables) {
  const db = await request(indexedDB.open(`proteus:${name}`));
  const tx = db.transaction(Object.keys(tables), 'readwrite');
  const done = new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  for (const [table, rows] of Object.entries(tables)) {
    const store = tx.objectStore(table);
    store.clear();
    for (const [k, v] of rows) store.put(v, k);
  }
  await done;
  db.close();
}

/**
 * Bob's sealed store with sessions to two peers (each with staged keys: messages skipped), a
 * peer's pinned identity, prekeys made over several commits; the peers stay in memory, and the
 * messages skipped are kept to decrypt from the golden store.
 */
async function make(storeKey) {
  const indexedDB = new IDBFactory();
  const bob = await Client.open('bob', { indexedDB, locks: noLocks, storeKey, identityPinning: true });
  const peers = {};
  const skipped = [];
  for (const name of ['alice', 'carol']) {
    const peer = await Client.inMemory();
    const [{ bundle }] = await bob.generatePrekeys(1);
    await peer.createSession('bob', bundle);
    await bob.decrypt(name, await peer.encrypt('bob', `hello from ${name}`));
    await peer.decrypt('bob', await bob.encrypt(name, `reply to ${name}`));
    const sent = [];
    for (let i = 0; i < 3; i++) sent.push(await peer.encrypt('bob', `${name} ${i}`));
    await bob.decrypt(name, sent[2]);
    for (let i = 0; i < 2; i++) skipped.push({ from: name, envelope: hex(sent[i]), plaintext: `${name} ${i}` });
    await peer.decrypt('bob', await bob.encrypt(name, `again to ${name}`));
    peers[name] = peer;
  }
  await bob.generatePrekeys(3);
  const fingerprint = await bob.fingerprint();
  const pinned = await bob.pinnedIdentity('alice');
  await bob.close();
  return { indexedDB, peers, skipped, fingerprint, pinned };
}

const storeKey = new Uint8Array(32).map((_, i) => 0x30 + i);

// Format 2: the store as the package writes it.
{
  const { indexedDB, skipped, fingerprint, pinned } = await make(storeKey);
  const tables = await dump(indexedDB, 'bob');
  writeFileSync(
    new URL('sealed-v2.json', import.meta.url),
    JSON.stringify({ format: 2, storeKey: hex(storeKey), identityPinning: true, fingerprint, pinned: { alice: pinned }, skipped, tables }, null, 1) + '\n',
  );
}

// Format 1 (records not bound to a commit, no manifest): the store re-sealed record by record
// as the first format sealed it (tests/support/format1.mjs, as bound.test.mjs does), the manifest removed.
{
  const { indexedDB, skipped, fingerprint, pinned } = await make(storeKey);
  const db = await request(indexedDB.open('proteus:bob'));
  const tx = db.transaction([...TABLES, 'sync'], 'readonly');
  const raw = {};
  for (const table of [...TABLES, 'sync']) {
    const store = tx.objectStore(table);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    raw[table] = keys.map((k, i) => [k, values[i]]);
  }
  db.close();
  const legacy = await toFormat1(storeKey, raw);
  await restore(indexedDB, 'bob', legacy);
  const tables = await dump(indexedDB, 'bob');
  writeFileSync(
    new URL('sealed-v1.json', import.meta.url),
    JSON.stringify({ format: 1, storeKey: hex(storeKey), identityPinning: true, fingerprint, pinned: { alice: pinned }, skipped, tables }, null, 1) + '\n',
  );
}
console.log('written tests/golden/sealed-v2.json, sealed-v1.json');
