// Long absences: a chain may be fast-forwarded far past the staged-key limit, and a message whose
// key was evicted is reported as such (MessageKeyEvicted, 214), never as already seen.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, init } from '../pkg/index.js';

await init();

const text = (bytes) => new TextDecoder().decode(bytes);

async function pair() {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  await bob.decrypt('alice', await alice.encrypt('bob', 'hello'));
  await alice.decrypt('bob', await bob.encrypt('alice', 'hi'));
  return { alice, bob };
}

test('back after 20,000 lost messages: the next one decrypts; evicted ones are not already seen', async () => {
  const { alice, bob } = await pair();
  const lost = [];
  for (let sent = 0; sent < 20_000; sent += 5_000) {
    lost.push(...(await alice.encryptBatch(Array.from({ length: 5_000 }, (_, i) => ({ sessionId: 'bob', plaintext: `m${sent + i}` })))));
  }
  const next = await alice.encrypt('bob', 'I am back');
  assert.equal(text(await bob.decrypt('alice', next)), 'I am back');
  const results = await bob.decryptBatch([
    { sessionId: 'alice', envelope: lost[0] }, // its key was never staged: evicted
    { sessionId: 'alice', envelope: lost[19_999] }, // among the newest 1000: staged
    { sessionId: 'alice', envelope: next }, // decrypted above
  ]);
  assert.equal(results[0].errorCode, 214);
  assert.equal(results[0].errorKind, 'MessageKeyEvicted');
  assert.equal(results[0].alreadySeen, false);
  assert.equal(text(results[1].plaintext), 'm19999');
  assert.equal(results[2].errorCode, 209);
  assert.equal(results[2].alreadySeen, true);
});
