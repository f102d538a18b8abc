// importCryptobox against the real thing: stores that Wire's @wireapp/cryptobox 12.8.0 writes
// (tests/cryptobox/stores.mjs; its packages installed by `npm ci --prefix tests/cryptobox`),
// through @wireapp/store-engine-dexie on IndexedDB (fake-indexeddb here; Chromium in
// tests/browser) and through @wireapp/store-engine-fs in a directory, with sessions to real
// cryptobox peers. After the import every queued message decrypts and every session goes on
// both ways with those peers.
// Run: node --test tests/ (after ./build.sh and that npm ci).
import 'fake-indexeddb/auto';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Client, IMPORT_BAD_RECORDS, IMPORT_IDENTITY_MISMATCH, IMPORT_SOURCE_UNREADABLE, ProteusError, init } from '../pkg/index.js';
import { makeStores } from '../../../tests/cryptobox/stores.mjs';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);

async function rejectsWith(promise, code) {
  await assert.rejects(promise, (e) => e instanceof ProteusError && e.code === code);
}

/** Every queued message decrypts, in one batch, and every session goes on both ways. */
async function continues(client, { expected, peers }) {
  const results = await client.decryptBatch(expected.queue.map(({ sessionId, envelope }) => ({ sessionId, envelope })));
  assert.deepEqual(
    results.map((r) => [r.sessionId, r.errorCode ?? text(r.plaintext)]),
    expected.queue.map((m) => [m.sessionId, m.plaintext]),
  );
  for (const sessionId of peers.sessionIds) {
    const out = await client.encrypt(sessionId, `after the move, to ${sessionId}`);
    assert.equal(await peers.decrypt(sessionId, out), `after the move, to ${sessionId}`);
    const back = await peers.encrypt(sessionId, 'welcome back');
    assert.equal(text(await client.decrypt(sessionId, back)), 'welcome back');
  }
}

function checkReport(report, expected) {
  assert.equal(report.fingerprint, expected.fingerprint);
  assert.equal(report.prekeys, expected.prekeyIds.length);
  assert.equal(report.sessions, expected.sessionIds.length);
  assert.deepEqual(report.skipped, []);
  assert.equal(report.alreadyImported, false);
}

test('an IndexedDB store of cryptobox (store-engine-dexie) imports, and its sessions go on', async () => {
  const stores = await makeStores({ engine: 'dexie', dbName: 'wire-cryptobox-dexie' });
  const client = await Client.inMemory();
  const progress = [];
  const report = await client.importCryptobox(
    { indexedDB: 'wire-cryptobox-dexie' },
    { onProgress: (p) => progress.push(p) },
  );
  checkReport(report, stores.expected);
  assert.equal(await client.fingerprint(), stores.expected.fingerprint);
  assert.deepEqual((await client.sessionIds()).sort(), stores.expected.sessionIds);
  const total = 1 + stores.expected.prekeyIds.length + stores.expected.sessionIds.length;
  assert.deepEqual(progress.at(-1), { done: total, total });
  await continues(client, stores);

  // Again: nothing changes, and the report says so.
  const again = await client.importCryptobox({ indexedDB: 'wire-cryptobox-dexie' });
  assert.equal(again.alreadyImported, true);
  await client.close();
});

test('an IndexedDB database that does not exist is reported and not created', async () => {
  const client = await Client.inMemory();
  await rejectsWith(client.importCryptobox({ indexedDB: 'no-such-cryptobox' }), IMPORT_SOURCE_UNREADABLE);
  const names = (await indexedDB.databases()).map((d) => d.name);
  assert.ok(!names.includes('no-such-cryptobox'), names.join());
  await client.close();
});

test('a store-engine-fs directory imports, and its sessions go on', async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'cryptobox-fs-'));
  try {
    const stores = await makeStores({ engine: 'fs', dir: path.join(dir, 'alice') });
    const client = await Client.inMemory();
    checkReport(await client.importCryptobox({ directory: path.join(dir, 'alice') }), stores.expected);
    await continues(client, stores);
    await client.close();
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
});

test('plain records import; bad ones abort, or are skipped when asked; nothing changes on a refusal', async () => {
  const stores = await makeStores({ engine: 'memory', seed: 7 });
  const old = stores.alice.store.engine;
  const read = async (table) =>
    Promise.all((await old.readAllPrimaryKeys(table)).map(async (id) => ({ id, record: await old.read(table, id) })));
  const bytesOf = (record) => Uint8Array.from(atob(record.serialised), (c) => c.charCodeAt(0));
  const identity = bytesOf((await read('keys')).find((r) => r.id === 'local_identity').record);
  const prekeys = (await read('prekeys')).map((r) => bytesOf(r.record));
  const sessions = (await read('sessions')).map((r) => ({ id: r.id, bytes: bytesOf(r.record) }));

  // A store in use with another identity is refused and left as it was.
  const inUse = await Client.inMemory();
  await inUse.generatePrekeys(1);
  const before = await inUse.fingerprint();
  await rejectsWith(inUse.importCryptobox({ records: { identity, prekeys, sessions } }), IMPORT_IDENTITY_MISMATCH);
  assert.equal(await inUse.fingerprint(), before);
  assert.equal(await inUse.prekeysRemaining(), 1);
  await inUse.close();

  const bad = { identity, prekeys: [...prekeys, new Uint8Array([1, 2, 3])], sessions };
  const client = await Client.inMemory();
  const fresh = await client.fingerprint();
  await rejectsWith(client.importCryptobox({ records: bad }), IMPORT_BAD_RECORDS);
  assert.equal(await client.fingerprint(), fresh);
  assert.deepEqual(await client.sessionIds(), []);

  const report = await client.importCryptobox({ records: bad }, { skipBadRecords: true });
  assert.equal(report.prekeys, prekeys.length);
  assert.deepEqual(
    report.skipped.map((s) => [s.table, s.id]),
    [['prekeys', `#${prekeys.length}`]],
  );
  await continues(client, stores);
  await client.close();
});

test('bad arguments are TypeErrors', async () => {
  const client = await Client.inMemory();
  await assert.rejects(client.importCryptobox(null), TypeError);
  await assert.rejects(client.importCryptobox({ somewhere: 1 }), TypeError);
  await assert.rejects(client.importCryptobox({ records: { identity: 'x' } }), TypeError);
  await assert.rejects(client.importCryptobox({ indexedDB: 'x' }, { onProgress: 1 }), TypeError);
  await client.close();
});
