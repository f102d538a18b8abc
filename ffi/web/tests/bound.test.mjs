// A sealed IndexedDB store cannot be rolled back record by record (issue 31, High), as natively:
// a record deleted, put back from an older commit, swapped with another key's or copied from
// another store sealed with the same key is refused with StoreTampered (514) when the store is
// loaded (opening reads every record), never treated as absent; the commit counter beside the
// records cannot be moved on its own; a store replaced by an older copy while a client has it
// open is refused at the next call (StoreRolledBack, 511); and no envelope comes out of a
// rolled-back ratchet. Stores sealed in the first format (records not bound to a commit) still
// open, and are re-sealed in the bound format.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, ProteusError, STORE_ROLLED_BACK, STORE_TAMPERED, init } from '../pkg/index.js';
import { toFormat1 } from './support/format1.mjs';

await init();

const noLocks = { request: (_name, fn) => fn() };
const storeKey = new Uint8Array(32).fill(0x42);
const TABLES = ['meta', 'prekeys', 'sessions', 'staged_keys'];

function request(req) {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function database(indexedDB, name) {
  return request(indexedDB.open(`proteus:${name}`));
}

/** Every record of `tables` of store `name`: `{table: [[key, value]]}` (values as stored). */
async function dump(indexedDB, name, tables = [...TABLES, 'sync']) {
  const db = await database(indexedDB, name);
  const tx = db.transaction(tables, 'readonly');
  const out = {};
  for (const table of tables) {
    const store = tx.objectStore(table);
    const [keys, values] = await Promise.all([request(store.getAllKeys()), request(store.getAll())]);
    out[table] = keys.map((k, i) => [k, values[i]]);
  }
  db.close();
  return out;
}

/** Applies `edit(tx)` to store `name` in one readwrite transaction, as someone with the database could. */
async function tamper(indexedDB, name, edit) {
  const db = await database(indexedDB, name);
  const tx = db.transaction([...TABLES, 'sync'], 'readwrite');
  const done = new Promise((resolve, reject) => {
    tx.oncomplete = resolve;
    tx.onerror = () => reject(tx.error);
  });
  edit(tx);
  await done;
  db.close();
}

/** Writes `snapshot` (a dump) over store `name`: every table cleared and filled from it. */
async function restore(indexedDB, name, snapshot) {
  await tamper(indexedDB, name, (tx) => {
    for (const [table, rows] of Object.entries(snapshot)) {
      const store = tx.objectStore(table);
      store.clear();
      for (const [k, v] of rows) store.put(v, k);
    }
  });
}

const rejectsWith = (promise, code) =>
  assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, String(e));
    assert.equal(e.code, code, e.message);
    return true;
  });

const open = (indexedDB, name) => Client.open(name, { indexedDB, locks: noLocks, storeKey });

/**
 * Store `name`: a session with a peer (the peer's first message decrypted, two messages whose
 * keys are staged, replies sent), two one-time prekeys made in one commit. Returns the peer and
 * the two messages whose keys are staged.
 */
async function populated(indexedDB, name) {
  const bob = await open(indexedDB, name);
  const alice = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  await bob.decrypt('alice', await alice.encrypt('bob', 'hello'));
  await bob.generatePrekeys(2);
  await alice.decrypt('bob', await bob.encrypt('alice', 'reply'));
  const skipped = [];
  for (let i = 0; i < 3; i++) skipped.push(await alice.encrypt('bob', `m${i}`));
  await bob.decrypt('alice', skipped[2]);
  for (const t of ['again', 'and again']) await alice.decrypt('bob', await bob.encrypt('alice', t));
  await bob.close();
  return { alice, skipped: skipped.slice(0, 2) };
}

/** Opens store `name` and uses it all; resolves to the code of the first refusal, or 0. */
async function probe(indexedDB, name, skipped) {
  let bob;
  try {
    bob = await open(indexedDB, name);
    await bob.encrypt('alice', 'probe');
    await bob.sessionIds();
    await bob.prekeysRemaining();
    for (const m of skipped) await bob.decrypt('alice', m);
    return 0;
  } catch (e) {
    assert.ok(e instanceof ProteusError, String(e));
    return e.code;
  } finally {
    await bob?.close();
  }
}

/** A fresh copy of `snapshot` as store `name` in a new database factory. */
async function copyOf(snapshot, name) {
  const indexedDB = new IDBFactory();
  const c = await open(indexedDB, name);
  await c.close();
  await restore(indexedDB, name, snapshot);
  return indexedDB;
}

describe('a sealed store is bound', () => {
  test('the untouched store is accepted (the control)', async () => {
    const indexedDB = new IDBFactory();
    const { skipped } = await populated(indexedDB, 'bob');
    assert.equal(await probe(indexedDB, 'bob', skipped), 0);
  });

  test('a deleted row of each table is refused', async () => {
    const source = new IDBFactory();
    const { skipped } = await populated(source, 'bob');
    const snapshot = await dump(source, 'bob');
    for (const table of TABLES) {
      for (let i = 0; i < snapshot[table].length; i++) {
        const indexedDB = await copyOf(snapshot, 'bob');
        await tamper(indexedDB, 'bob', (tx) => tx.objectStore(table).delete(snapshot[table][i][0]));
        assert.equal(await probe(indexedDB, 'bob', skipped), STORE_TAMPERED, `${table} #${i} deleted`);
      }
    }
  });

  test('an older row of each table put back is refused, and so is an older counter', async () => {
    const indexedDB = new IDBFactory();
    const { alice, skipped } = await populated(indexedDB, 'bob');
    const old = await dump(indexedDB, 'bob');
    const bob = await open(indexedDB, 'bob');
    await alice.decrypt('bob', await bob.encrypt('alice', 'later'));
    await bob.decrypt('alice', skipped[0]);
    // Carol's session from prekey 1 consumes it.
    const carol = await Client.inMemory();
    await carol.createSession('bob', (await bob.prekeyBundle(1)).bundle);
    await bob.decrypt('carol', await carol.encrypt('bob', 'hi'));
    await bob.generatePrekeys(1);
    await bob.close();
    const now = await dump(indexedDB, 'bob');
    const spliced = new Set();
    for (const table of TABLES) {
      for (const [k, v] of old[table]) {
        const current = now[table].find(([nk]) => Buffer.from(nk).equals(Buffer.from(k)));
        if (current && Buffer.from(current[1]).equals(Buffer.from(v))) continue;
        const copy = await copyOf(now, 'bob');
        await tamper(copy, 'bob', (tx) => tx.objectStore(table).put(v, k));
        assert.equal(await probe(copy, 'bob', skipped.slice(1)), STORE_TAMPERED, `${table}: an older row`);
        spliced.add(table);
      }
    }
    assert.deepEqual([...spliced].sort(), [...TABLES].sort());
    // The commit counter alone, moved back (unsealed, but bound by the manifest).
    const copy = await copyOf(now, 'bob');
    const counter = now.sync.find(([k]) => k === 'commits')[1];
    await tamper(copy, 'bob', (tx) => tx.objectStore('sync').put(counter - 1, 'commits'));
    assert.equal(await probe(copy, 'bob', skipped.slice(1)), STORE_TAMPERED);
  });

  test('rows swapped between keys are refused', async () => {
    const source = new IDBFactory();
    const { skipped } = await populated(source, 'bob');
    const snapshot = await dump(source, 'bob');
    for (const table of TABLES) {
      const rows = snapshot[table];
      if (rows.length < 2) continue;
      const indexedDB = await copyOf(snapshot, 'bob');
      await tamper(indexedDB, 'bob', (tx) => {
        tx.objectStore(table).put(rows[1][1], rows[0][0]);
        tx.objectStore(table).put(rows[0][1], rows[1][0]);
      });
      assert.equal(await probe(indexedDB, 'bob', skipped), STORE_TAMPERED, `${table}: swapped`);
    }
  });

  test('a row from another store sealed with the same key is refused', async () => {
    const a = new IDBFactory();
    const b = new IDBFactory();
    const { skipped } = await populated(a, 'bob');
    await populated(b, 'bob');
    const snapshot = await dump(a, 'bob');
    const other = await dump(b, 'bob');
    let copied = 0;
    for (const table of TABLES) {
      for (const [k, v] of other[table]) {
        if (!snapshot[table].some(([ak]) => Buffer.from(ak).equals(Buffer.from(k)))) continue;
        const indexedDB = await copyOf(snapshot, 'bob');
        await tamper(indexedDB, 'bob', (tx) => tx.objectStore(table).put(v, k));
        assert.equal(await probe(indexedDB, 'bob', skipped), STORE_TAMPERED, `${table}: foreign`);
        copied += 1;
      }
    }
    assert.ok(copied >= 3, `${copied}`);
  });

  test('a store replaced by an older copy under an open client: StoreRolledBack, no envelope', async () => {
    const indexedDB = new IDBFactory();
    const { alice } = await populated(indexedDB, 'bob');
    const older = await dump(indexedDB, 'bob');
    const bob = await open(indexedDB, 'bob');
    await alice.decrypt('bob', await bob.encrypt('alice', 'one'));
    await restore(indexedDB, 'bob', older);
    await rejectsWith(bob.encrypt('alice', 'two'), STORE_ROLLED_BACK);
    await bob.close();
  });

  test('a store sealed in the first format opens, re-sealed bound, and is bound from then on', async () => {
    const indexedDB = new IDBFactory();
    const { alice, skipped } = await populated(indexedDB, 'bob');
    // Back to format 1: every record re-sealed as the first format sealed it, no manifest (by
    // support/format1.mjs, from the format's layouts: the package no longer writes it).
    const legacy = await toFormat1(storeKey, await dump(indexedDB, 'bob'));
    await restore(indexedDB, 'bob', legacy);
    assert.ok((await dump(indexedDB, 'bob')).meta.every(([, v]) => new Uint8Array(v)[0] === 1));

    const bob = await open(indexedDB, 'bob');
    assert.equal(new TextDecoder().decode(await bob.decrypt('alice', skipped[0])), 'm0');
    await alice.decrypt('bob', await bob.encrypt('alice', 'upgraded'));
    await bob.close();
    const upgraded = await dump(indexedDB, 'bob');
    assert.ok(upgraded.sync.some(([k]) => k === 'manifest'));
    assert.ok(upgraded.meta.every(([, v]) => new Uint8Array(v)[0] === 2));
    // Bound now: a deleted row is refused.
    await tamper(indexedDB, 'bob', (tx) => tx.objectStore('prekeys').delete(upgraded.prekeys[0][0]));
    assert.equal(await probe(indexedDB, 'bob', []), STORE_TAMPERED);
  });
});
