// The addon's soundness does not depend on a convention of the JS layer (issue 31, Low): a batch's
// envelopes are copied when the addon is called, so a buffer overwritten while the batch runs on
// a worker thread changes nothing (the addon used to read the JS buffer there, sound only while
// queue.js left it alone until the call settled). Exported secrets reach JS as JS-owned bytes
// (the Rust copy is wiped), with the same contents.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { loadAddon } from '../../load.js';
import { Client } from '../../index.js';

const addon = loadAddon();

test("a batch's envelopes overwritten right after the call change nothing", async () => {
  const alice = await Client.inMemory();
  const bob = await addon.inMemory(1);
  const [prekey] = await bob.generatePrekeys(1);
  await alice.createSession('bob', prekey.bundle);
  const envelopes = [];
  for (let i = 0; i < 20; i++) envelopes.push(await alice.encrypt('bob', `message ${i}`));
  const lengths = Uint32Array.from(envelopes.map((e) => e.length));
  const packed = Buffer.concat(envelopes);
  const index = new Uint32Array(envelopes.length);
  let chunks = 0;
  const done = bob.decryptBatchTo(['alice'], index, packed, lengths, async () => {
    chunks += 1;
    return true;
  });
  // What the JS layer promised never to do: the worker thread must not see it.
  packed.fill(0);
  await done;
  assert.ok(chunks > 0);
  // Every message was decrypted and committed: each is a duplicate now.
  for (const envelope of envelopes) {
    const again = await bob.decrypt('alice', envelope);
    assert.ok(again instanceof addon.RawFailure, 'a failure, resolved as data');
    assert.equal(again.kind, 'DuplicateMessage');
  }
  await bob.close();
  await alice.close();
});

test('exported secrets arrive whole, in bytes JS owns', async () => {
  const bob = await addon.inMemory(1);
  const a = await bob.exportIdentity();
  const b = await bob.exportIdentity();
  assert.ok(a instanceof Uint8Array);
  assert.ok(a.length > 64);
  assert.deepEqual(a, b);
  // Two exports are two buffers: wiping one (as an app should) leaves the other.
  a.fill(0);
  assert.notDeepEqual(a, b);
  await bob.close();
});
