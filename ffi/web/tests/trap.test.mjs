// A wasm trap in a call (WebAssembly.RuntimeError: a panic or a fault inside the wasm client)
// leaves the wasm client unusable: that call fails with Internal (599), so does every later call
// of the client, and nothing of it is stored; the client still closes, and the store opens again.
// Both ways a call runs are covered: read, run and persist (a memory store), and the whole call
// in one transaction (a plain IndexedDB store, commit-engine.js #attemptInOne).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IDBFactory } from 'fake-indexeddb';
import { Client, INTERNAL, ProteusError, init } from '../pkg/index.js';
import { RawClient } from '../pkg/proteus_web.js';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);

async function rejectsWithInternal(promise) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ProteusError, `expected a ProteusError, got ${e}`);
    assert.equal(e.code, INTERNAL, e.message);
    assert.equal(e.kind, 'Internal');
    assert.ok(e.cause instanceof WebAssembly.RuntimeError);
    return true;
  });
}

/** Runs `call` while the wasm client's encrypt traps, as a real trap does: a RuntimeError. */
async function whileEncryptTraps(call) {
  const encrypt = RawClient.prototype.encrypt;
  RawClient.prototype.encrypt = () => {
    throw new WebAssembly.RuntimeError('unreachable');
  };
  try {
    return await call();
  } finally {
    RawClient.prototype.encrypt = encrypt;
  }
}

describe('a wasm trap fails the client for good', () => {
  for (const [store, open] of [
    ['a memory store', () => Client.inMemory()],
    ['a plain IndexedDB store', (indexedDB) => Client.open('me', { indexedDB, allowWithoutWebLocks: true })],
  ]) {
    test(`on ${store}`, async () => {
      const indexedDB = new IDBFactory();
      const peer = await Client.inMemory();
      const me = await open(indexedDB);
      await me.createSession('peer', (await peer.generatePrekeys(1))[0].bundle);
      // An ordinary failure is the call's own: the client goes on.
      await assert.rejects(me.encrypt('nobody', 'x'), (e) => e instanceof ProteusError && e.kind === 'SessionNotFound');
      assert.equal(text(await peer.decrypt('me', await me.encrypt('peer', 'before'))), 'before');

      await whileEncryptTraps(() => rejectsWithInternal(me.encrypt('peer', 'trapped')));
      await rejectsWithInternal(me.fingerprint());
      await rejectsWithInternal(me.encrypt('peer', 'after'));
      await me.close();

      if (store === 'a memory store') return;
      // Nothing committed is lost: the store opens again and its session goes on.
      const again = await open(indexedDB);
      assert.equal(text(await peer.decrypt('me', await again.encrypt('peer', 'again'))), 'again');
      await again.close();
    });
  }
});
