// Secrets imported into a web client (an identity, a session) are gone from the wasm module's
// memory once the client is closed: its identity, its journal's records and its session cache
// are wiped, and nothing else kept a copy. With the client still open, both tests find the
// secret (checked), so they see what a leak would leave. Run: node --test tests/ (after
// ./build.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
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
