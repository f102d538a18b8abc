// Secrets imported into a web client (an identity, a session) are gone from the wasm module's
// memory once the client is closed: its identity, its journal's records and its session cache
// are wiped, and no buffer that crossed the module's boundary kept a copy (wasm-bindgen frees a
// borrowed argument's or a returned vector's copy unwiped: the records' buffers cross as owned,
// wiped ones). In memory and on IndexedDB, plain and sealed (whose opening runs every record
// through the module). With the client still open the tests find the secret (checked), so they
// see what a leak would leave. Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, init } from '../pkg/index.js';
import { wasmMemory } from '../pkg/init.js';

await init();

/** Whether the module's memory holds `needle` anywhere. */
function inMemory(needle) {
  const haystack = new Uint8Array(wasmMemory().buffer);
  const first = needle[0];
  outer: for (let i = haystack.indexOf(first); i !== -1 && i + needle.length <= haystack.length; i = haystack.indexOf(first, i + 1)) {
    for (let j = 1; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

test('an imported identity leaves no copy in the module once its client is closed', async () => {
  const alice = await Client.inMemory();
  const identity = await alice.exportIdentity();
  await alice.close();
  assert.equal(inMemory(identity), false, 'the exporting client left a copy');

  const copy = await Client.inMemory();
  await copy.importIdentity(identity);
  await copy.close();
  assert.equal(inMemory(identity), false, 'the imported identity stayed in the module memory');
});

test('an imported session leaves no copy in the module once its client is closed', async () => {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  const identity = await alice.exportIdentity();
  const session = await alice.exportSession('bob');
  await alice.close();
  await bob.close();
  assert.equal(inMemory(session), false, 'the exporting client left a copy');

  const copy = await Client.inMemory();
  await copy.importIdentity(identity);
  await copy.importSession('bob', session);
  await copy.close();
  assert.equal(inMemory(session), false, 'the imported session stayed in the module memory');
});

for (const sealed of [false, true]) {
  test(`an identity imported into an IndexedDB store${sealed ? ', sealed,' : ''} leaves no copy once closed and reopened`, async () => {
    const alice = await Client.inMemory();
    const identity = await alice.exportIdentity();
    await alice.close();
    const options = { indexedDB: new IDBFactory(), locks: { request: (_name, fn) => fn() }, persist: false };
    if (sealed) options.storeKey = new Uint8Array(32).fill(7);
    const copy = await Client.open('secrets', options);
    await copy.importIdentity(identity);
    await copy.close();
    assert.equal(inMemory(identity), false, 'the import left a copy');
    // Opening reads the records back (and opens their sealed bodies) into the module.
    const reopened = await Client.open('secrets', options);
    assert.equal(await reopened.exportIdentity().then((e) => e.length), identity.length);
    await reopened.close();
    assert.equal(inMemory(identity), false, 'opening left a copy');
  });
}
