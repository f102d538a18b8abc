// The native backend's durable store: one SQLite file, plain or sealed with a store key.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';

import { Client, ProteusError, STORE_BUSY, backend } from '../../index.js';
import { pair, text } from '../support/pair.mjs';

const dir = mkdtempSync(join(tmpdir(), 'proteus-node-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const storePath = (name) => join(dir, `${name}.db`);

test('the native backend runs', () => assert.equal(backend, 'native'));

test('open: created once, then the same identity and sessions from the file', async () => {
  const path = storePath('durable');
  const bob = await Client.open(path);
  assert.equal(bob.created, true);
  const { alice } = await pair(Client, { bob });
  const fingerprint = await bob.fingerprint();
  await bob.close();
  const again = await Client.open(path);
  assert.equal(again.created, false);
  assert.equal(await again.fingerprint(), fingerprint);
  assert.deepEqual(await again.sessionIds(), ['alice']);
  assert.equal(text(await again.decrypt('alice', await alice.encrypt('bob', 'after reopening'))), 'after reopening');
  await again.close();
});

test('open with create: false on a missing store fails with StoreNotFound (504), nothing made', async () => {
  const path = storePath('missing');
  await assert.rejects(Client.open(path, { create: false }), (e) => e instanceof ProteusError && e.code === 504 && e.kind === 'StoreNotFound');
  assert.equal(existsSync(path), false);
});

test('commitCounter: a store restored from an older copy is refused with StoreRolledBack (511)', async () => {
  const path = storePath('rollback');
  let count = 0;
  const counter = { load: async () => count, store: (n) => void (count = n) };
  // store(count) is queued for this thread during the commit, so it has run by the time a later
  // call's round trip (close) comes back.
  let c = await Client.open(path, { commitCounter: counter });
  await c.generatePrekeys(2);
  await c.close();
  assert.ok(count >= 2, `the identity, then the prekeys: ${count}`);
  copyFileSync(path, `${path}.backup`);
  c = await Client.open(path, { commitCounter: counter });
  await c.generatePrekeys(1);
  await c.close();
  copyFileSync(`${path}.backup`, path);
  await assert.rejects(
    Client.open(path, { commitCounter: counter }),
    (e) => e instanceof ProteusError && e.code === 511 && e.kind === 'StoreRolledBack',
  );
  assert.ok(readFileSync(path).equals(readFileSync(`${path}.backup`)), 'left as it was');
  await assert.rejects(Client.open(path, { commitCounter: { load: () => -1, store() {} } }), TypeError);
  await assert.rejects(Client.open(path, { commitCounter: {} }), TypeError);
});

test('a failed decrypt changes nothing stored', async () => {
  const path = storePath('unchanged');
  const bob = await Client.open(path);
  const { alice } = await pair(Client, { bob });
  const envelope = await alice.encrypt('bob', 'kept');
  const tampered = envelope.slice();
  tampered[tampered.length - 1] ^= 1;
  await assert.rejects(bob.decrypt('alice', tampered), ProteusError);
  await bob.close();
  const again = await Client.open(path);
  assert.equal(text(await again.decrypt('alice', envelope)), 'kept');
  await again.close();
});

test('a batch that cannot take the store fails with StoreBusy (502): no result handed over, nothing committed', async () => {
  const path = storePath('locked');
  const bob = await Client.open(path);
  const { alice } = await pair(Client, { bob });
  const plaintexts = Array.from({ length: 600 }, (_, i) => `m${i}`);
  const envelopes = await alice.encryptBatch(plaintexts.map((plaintext) => ({ sessionId: 'bob', plaintext })));
  const queue = envelopes.map((envelope) => ({ sessionId: 'alice', envelope }));
  // Another process holds the store's write lock past the client's busy timeout (5 s): the
  // batch's operation cannot begin (the client holds the lock for a whole call).
  const locker = spawn('sqlite3', [path], { stdio: ['pipe', 'pipe', 'inherit'] });
  const locked = new Promise((resolve, reject) => {
    locker.on('error', reject);
    locker.stdout.on('data', (d) => String(d).includes('locked') && resolve());
  });
  locker.stdin.write("BEGIN IMMEDIATE; SELECT 'locked';\n");
  await locked;
  try {
    await assert.rejects(bob.decryptBatch(queue), (e) => e instanceof ProteusError && e.code === STORE_BUSY);
  } finally {
    locker.stdin.end('ROLLBACK;\n');
    await once(locker, 'exit');
  }
  // Nothing was committed: the queue decrypts again, on this client and from the file.
  const results = await bob.decryptBatch(queue);
  assert.deepEqual(results.map((r) => text(r.plaintext)), plaintexts);
  await bob.close();
});

test('sealed stores: the key is needed, the wrong key and a key on a plain store are refused', async () => {
  const path = storePath('sealed');
  const key = randomBytes(32);
  const c = await Client.open(path, { storeKey: key });
  const fingerprint = await c.fingerprint();
  await c.close();
  await assert.rejects(Client.open(path), (e) => e.code === 510 && e.kind === 'StoreKeyRequired');
  await assert.rejects(Client.open(path, { storeKey: randomBytes(32) }), (e) => e.code === 508 && e.kind === 'WrongStoreKey');
  const reopened = await Client.open(path, { storeKey: key });
  assert.equal(await reopened.fingerprint(), fingerprint);
  await reopened.close();
  await assert.rejects(Client.open(storePath('durable'), { storeKey: key }), (e) => e.code === 509 && e.kind === 'StoreNotSealed');
  await assert.rejects(Client.open(path, { storeKey: new Uint8Array(16) }), TypeError);
});

test('sealStore, rekeyStore and deleteStore', async () => {
  const path = storePath('to-seal');
  const plain = await Client.open(path);
  const fingerprint = await plain.fingerprint();
  await plain.close();
  const key = randomBytes(32);
  await Client.sealStore(path, key);
  await assert.rejects(Client.open(path), (e) => e.code === 510);
  const newKey = randomBytes(32);
  await assert.rejects(Client.rekeyStore(path, randomBytes(32), newKey), (e) => e.code === 508);
  await Client.rekeyStore(path, key, newKey);
  await assert.rejects(Client.open(path, { storeKey: key }), (e) => e.code === 508);
  const sealed = await Client.open(path, { storeKey: newKey });
  assert.equal(await sealed.fingerprint(), fingerprint);
  await sealed.close();
  await Client.deleteStore(path);
  assert.equal(existsSync(path), false);
  await assert.rejects(Client.sealStore(path, key), (e) => e.code === 504);
});
