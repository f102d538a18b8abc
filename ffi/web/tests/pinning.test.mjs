// Identity pinning: the identityPinning option of open and inMemory, pinnedIdentity and
// acceptIdentity; on IndexedDB (fake-indexeddb), plain and sealed (the pin's session id hashed).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, ProteusError, init } from '../pkg/index.js';

await init();

const noLocks = { request: (_name, fn) => fn() };
const text = (bytes) => new TextDecoder().decode(bytes);

async function rejectsWith(promise, code, kind) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, `expected a ProteusError, got ${e}`);
    assert.equal(e.code, code, e.message);
    assert.equal(e.kind, kind);
    return true;
  });
}

/** A first message from `from` to `to` (a new session from one of `to`'s prekeys). */
async function firstMessage(from, to) {
  const [{ bundle }] = await to.generatePrekeys(1);
  await from.createSession('bob', bundle);
  return from.encrypt('bob', 'hello');
}

test('a new identity under a pinned session id waits for acceptIdentity, in a batch too', async () => {
  const bob = await Client.inMemory({ identityPinning: true });
  const alice = await Client.inMemory();
  assert.equal(await bob.pinnedIdentity('alice'), undefined);
  assert.equal(text(await bob.decrypt('alice', await firstMessage(alice, bob))), 'hello');
  assert.equal(await bob.pinnedIdentity('alice'), await alice.fingerprint());
  await bob.deleteSession('alice');
  assert.equal(await bob.pinnedIdentity('alice'), await alice.fingerprint());

  const other = await Client.inMemory();
  const held = await firstMessage(other, bob);
  await rejectsWith(bob.decrypt('alice', held), 204, 'RemoteIdentityChanged');
  const [refused] = await bob.decryptBatch([{ sessionId: 'alice', envelope: held }]);
  assert.equal(refused.errorCode, 204);
  assert.equal(refused.sender, await other.fingerprint());
  assert.equal(await bob.hasSession('alice'), false);

  await bob.acceptIdentity('alice', await other.fingerprint());
  assert.equal(await bob.pinnedIdentity('alice'), await other.fingerprint());
  const [again] = await bob.decryptBatch([{ sessionId: 'alice', envelope: held }]);
  assert.equal(text(again.plaintext), 'hello');
  assert.equal(again.messageId, refused.messageId);
});

test('a bundle of another identity is refused until accepted; bad input is a typed error', async () => {
  const bob = await Client.inMemory({ identityPinning: true });
  const alice = await Client.inMemory();
  const other = await Client.inMemory();
  await bob.createSession('alice', (await alice.generatePrekeys(1))[0].bundle);
  const [{ bundle }] = await other.generatePrekeys(1);
  await rejectsWith(bob.resetSession('alice', bundle), 204, 'RemoteIdentityChanged');
  assert.equal(await bob.remoteFingerprint('alice'), await alice.fingerprint());
  await bob.acceptIdentity('alice', await other.fingerprint());
  assert.equal(await bob.hasSession('alice'), false);
  await bob.createSession('alice', bundle);
  assert.equal(await bob.remoteFingerprint('alice'), await other.fingerprint());

  await rejectsWith(bob.acceptIdentity('alice', 'abc'), 411, 'InvalidFingerprint');
  await rejectsWith(bob.acceptIdentity('alice', 'z'.repeat(64)), 411, 'InvalidFingerprint');
  await rejectsWith(bob.acceptIdentity('alice', '00'.repeat(32)), 411, 'InvalidFingerprint');
  assert.throws(() => bob.acceptIdentity('alice', 42), TypeError);
  assert.throws(() => bob.pinnedIdentity(7), TypeError);
  await rejectsWith(bob.pinnedIdentity(''), 106, 'InvalidSessionId');
  await rejectsWith(bob.acceptIdentity('', await other.fingerprint()), 106, 'InvalidSessionId');
  await assert.rejects(Client.inMemory({ identityPinning: 'yes' }), TypeError);
});

test('without the option nothing is pinned', async () => {
  const bob = await Client.inMemory();
  const alice = await Client.inMemory();
  await bob.decrypt('alice', await firstMessage(alice, bob));
  assert.equal(await bob.pinnedIdentity('alice'), undefined);
  await bob.deleteSession('alice');
  const other = await Client.inMemory();
  assert.equal(text(await bob.decrypt('alice', await firstMessage(other, bob))), 'hello');
});

for (const sealed of [false, true]) {
  test(`a pin survives reopening an IndexedDB store${sealed ? ', sealed, its session id hashed' : ''}`, async () => {
    const indexedDB = new IDBFactory();
    const options = { indexedDB, locks: noLocks, persist: false, identityPinning: true };
    if (sealed) options.storeKey = new Uint8Array(32).fill(9);
    const id = 'carol-the-session-id';
    const carol = await Client.inMemory();
    const bob = await Client.open('pins', options);
    await bob.createSession(id, (await carol.generatePrekeys(1))[0].bundle);
    await bob.deleteSession(id);
    await bob.close();
    const reopened = await Client.open('pins', options);
    assert.equal(await reopened.pinnedIdentity(id), await carol.fingerprint());
    const other = await Client.inMemory();
    await rejectsWith(reopened.createSession(id, (await other.generatePrekeys(1))[0].bundle), 204, 'RemoteIdentityChanged');
    await reopened.close();
    const clear = new TextEncoder().encode(id);
    assert.equal(await holds(indexedDB, 'pins', clear), !sealed);
  });
}

for (const sealed of [false, true]) {
  test(`forgetSession deletes a session and its pin from an IndexedDB store${sealed ? ', sealed' : ''}`, async () => {
    const indexedDB = new IDBFactory();
    const options = { indexedDB, locks: noLocks, persist: false, identityPinning: true };
    if (sealed) options.storeKey = new Uint8Array(32).fill(9);
    const carol = await Client.inMemory();
    const bob = await Client.open('forget', options);
    assert.equal(text(await bob.decrypt('carol', await firstMessage(carol, bob))), 'hello');
    assert.equal(await bob.pinnedIdentity('carol'), await carol.fingerprint());
    const records = await count(indexedDB, 'forget');
    await bob.forgetSession('carol');
    await bob.forgetSession('nobody');
    assert.throws(() => bob.forgetSession(7), TypeError);
    await rejectsWith(bob.forgetSession(''), 106, 'InvalidSessionId');
    await bob.close();
    assert.equal(await count(indexedDB, 'forget'), records - 2, 'the session and the pin are gone');

    const reopened = await Client.open('forget', options);
    assert.equal(await reopened.hasSession('carol'), false);
    assert.equal(await reopened.pinnedIdentity('carol'), undefined);
    const dave = await Client.inMemory();
    assert.equal(text(await reopened.decrypt('carol', await firstMessage(dave, reopened))), 'hello');
    assert.equal(await reopened.pinnedIdentity('carol'), await dave.fingerprint());
    await reopened.close();
  });
}

/** How many records the tables of store `name` hold (the commit counter's table left out). */
async function count(indexedDB, name) {
  const db = await new Promise((resolve, reject) => {
    const req = indexedDB.open(`proteus:${name}`);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  const tables = ['meta', 'prekeys', 'sessions', 'staged_keys'].filter((t) => db.objectStoreNames.contains(t));
  const tx = db.transaction(tables, 'readonly');
  let n = 0;
  for (const table of tables) {
    n += await new Promise((resolve) => (tx.objectStore(table).count().onsuccess = (e) => resolve(e.target.result)));
  }
  db.close();
  return n;
}

/** Whether any key or value IndexedDB holds for store `name` contains `bytes`. */
async function holds(indexedDB, name, bytes) {
  const db = await new Promise((resolve, reject) => {
    const req = indexedDB.open(`proteus:${name}`);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
  const tables = [...db.objectStoreNames];
  const tx = db.transaction(tables, 'readonly');
  const all = (req) => new Promise((resolve) => (req.onsuccess = () => resolve(req.result)));
  let found = false;
  for (const table of tables) {
    const store = tx.objectStore(table);
    const [keys, values] = await Promise.all([all(store.getAllKeys()), all(store.getAll())]);
    for (const v of [...keys, ...values]) found ||= contains(asBytes(v), bytes);
  }
  db.close();
  return found;
}

function asBytes(v) {
  if (v instanceof Uint8Array) return v;
  if (v instanceof ArrayBuffer) return new Uint8Array(v);
  if (ArrayBuffer.isView(v)) return new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  return new TextEncoder().encode(String(v));
}

function contains(haystack, needle) {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}
