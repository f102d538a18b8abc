// Client.encryptFor: one plaintext to many sessions, a result per recipient, one commit stored
// before any envelope is returned. Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDBDatabase, IDBFactory } from 'fake-indexeddb';
import { Client, INVALID_SESSION_ID, ProteusError, SESSION_NOT_FOUND, STORAGE_FAILURE, init } from '../pkg/index.js';

await init();

const noLocks = { request: (_name, fn) => fn() };
const text = (bytes) => new TextDecoder().decode(bytes);

/** `n` peers, each with a session from `sender` (ids "peer-i"). */
async function peers(sender, n) {
  const out = [];
  for (let i = 0; i < n; i++) {
    const peer = await Client.inMemory();
    const [{ bundle }] = await peer.generatePrekeys(1);
    await sender.createSession(`peer-${i}`, bundle);
    out.push(peer);
  }
  return out;
}

/** The commit counter of store `name`, read from IndexedDB directly. */
async function commits(indexedDB, name) {
  const db = await new Promise((resolve) => (indexedDB.open(`proteus:${name}`).onsuccess = (e) => resolve(e.target.result)));
  const value = await new Promise((resolve) => (db.transaction('sync').objectStore('sync').get('commits').onsuccess = (e) => resolve(e.target.result)));
  db.close();
  return value;
}

test('a result per recipient, in order; a missing session or a bad id is a result, not a failure', async () => {
  const alice = await Client.inMemory();
  const [bob, carol] = await peers(alice, 2);
  const results = await alice.encryptFor(['peer-0', 'nobody', 'peer-1', ''], 'to the group');
  assert.deepEqual(results.map((r) => r.sessionId), ['peer-0', 'nobody', 'peer-1', '']);
  assert.equal(text(await bob.decrypt('alice', results[0].envelope)), 'to the group');
  assert.equal(text(await carol.decrypt('alice', results[2].envelope)), 'to the group');
  assert.deepEqual(results[1], { sessionId: 'nobody', errorCode: SESSION_NOT_FOUND, errorKind: 'SessionNotFound' });
  assert.equal(results[3].errorCode, INVALID_SESSION_ID);
  assert.equal(results[3].errorKind, 'InvalidSessionId');
  assert.equal(results[3].envelope, undefined);
  // Bytes as well as strings; an empty list is an empty result.
  const bytes = await alice.encryptFor(['peer-1'], new Uint8Array([1, 2, 3]));
  assert.deepEqual([...(await carol.decrypt('alice', bytes[0].envelope))], [1, 2, 3]);
  assert.deepEqual(await alice.encryptFor([], 'nobody'), []);
  assert.throws(() => alice.encryptFor('peer-0', 'x'), TypeError);
  assert.throws(() => alice.encryptFor([7], 'x'), TypeError);
  await alice.close();
});

test('an id listed twice gets two envelopes, which decrypt in order', async () => {
  const alice = await Client.inMemory();
  const [bob] = await peers(alice, 1);
  const [first, second] = await alice.encryptFor(['peer-0', 'peer-0'], 'twice');
  assert.equal(text(await bob.decrypt('alice', first.envelope)), 'twice');
  assert.equal(text(await bob.decrypt('alice', second.envelope)), 'twice');
  await alice.close();
});

test('one commit, stored before the envelopes are returned, for 200 recipients', async () => {
  const indexedDB = new IDBFactory();
  const alice = await Client.open('alice', { indexedDB, locks: noLocks });
  const recipients = await peers(alice, 200);
  const ids = recipients.map((_, i) => `peer-${i}`);
  const before = await commits(indexedDB, 'alice');
  const results = await alice.encryptFor(ids, 'hello, everyone');
  assert.equal(await commits(indexedDB, 'alice'), before + 1, 'exactly one commit, already stored');
  await alice.close();
  // A client opened on the store now continues every chain after these envelopes.
  const reopened = await Client.open('alice', { indexedDB, locks: noLocks });
  const next = await reopened.encryptFor(ids, 'and again');
  for (let i = 0; i < recipients.length; i++) {
    assert.equal(text(await recipients[i].decrypt('alice', results[i].envelope)), 'hello, everyone');
    assert.equal(text(await recipients[i].decrypt('alice', next[i].envelope)), 'and again');
  }
  await reopened.close();
});

test('a sealed store: fan-out commits sealed records', async () => {
  const indexedDB = new IDBFactory();
  const storeKey = crypto.getRandomValues(new Uint8Array(32));
  const alice = await Client.open('sealed', { indexedDB, locks: noLocks, storeKey });
  const [bob, carol] = await peers(alice, 2);
  const results = await alice.encryptFor(['peer-0', 'peer-1'], 'sealed fan-out');
  await alice.close();
  const again = await Client.open('sealed', { indexedDB, locks: noLocks, storeKey });
  const next = await again.encryptFor(['peer-0', 'peer-1'], 'after reopening');
  assert.equal(text(await bob.decrypt('alice', results[0].envelope)), 'sealed fan-out');
  assert.equal(text(await carol.decrypt('alice', results[1].envelope)), 'sealed fan-out');
  assert.equal(text(await bob.decrypt('alice', next[0].envelope)), 'after reopening');
  await again.close();
});

test('a commit that fails returns no envelope, and the next send continues from the stored chains', async () => {
  const indexedDB = new IDBFactory();
  const alice = await Client.open('failing', { indexedDB, locks: noLocks });
  const [bob, carol] = await peers(alice, 2);
  const transaction = IDBDatabase.prototype.transaction;
  IDBDatabase.prototype.transaction = function (names, mode, options) {
    if (mode === 'readwrite') throw new DOMException('the disk is full', 'QuotaExceededError');
    return transaction.call(this, names, mode, options);
  };
  try {
    await assert.rejects(alice.encryptFor(['peer-0', 'peer-1'], 'lost'), (e) => {
      assert.ok(e instanceof ProteusError);
      assert.equal(e.code, STORAGE_FAILURE);
      return true;
    });
  } finally {
    IDBDatabase.prototype.transaction = transaction;
  }
  const [toBob, toCarol] = await alice.encryptFor(['peer-0', 'peer-1'], 'sent');
  assert.equal(text(await bob.decrypt('alice', toBob.envelope)), 'sent');
  assert.equal(text(await carol.decrypt('alice', toCarol.envelope)), 'sent');
  await alice.close();
  const reopened = await Client.open('failing', { indexedDB, locks: noLocks });
  const [again] = await reopened.encryptFor(['peer-0'], 'after reopening');
  assert.equal(text(await bob.decrypt('alice', again.envelope)), 'after reopening');
  await reopened.close();
});
