// The log (setLogger) and each batch's summary on whichever backend index.js chose: the same
// lines and counts as the web package's (ffi/web/tests/log.test.mjs), nothing secret in them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { Client, backend, setLogger } from '../../index.js';

const lines = [];
const collect = (level, message) => lines.push([level, message]);
test.afterEach(() => {
  setLogger(null);
  lines.length = 0;
});

async function queueOfThree(bob) {
  const alice = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob-node-id', bundle);
  const queue = [];
  for (let i = 0; i < 3; i++) {
    queue.push({ sessionId: 'alice-node-id', envelope: await alice.encrypt('bob-node-id', `secret plaintext ${i}`) });
  }
  return { alice, queue };
}

test(`a batch resolves with its summary, with and without a callback (${backend})`, async () => {
  const bob = await Client.inMemory();
  const { queue } = await queueOfThree(bob);
  const results = await bob.decryptBatch([...queue, queue[0], { sessionId: '', envelope: queue[1].envelope }]);
  const s = results.summary;
  assert.deepEqual([s.total, s.decrypted, s.alreadySeen, s.keyEvicted, s.failed], [5, 3, 1, 0, 1]);
  assert.equal(s.failedByCode[106], 1);
  for (const t of [s.decryptMs, s.deliveryMs, s.commitMs]) assert.ok(Number.isFinite(t) && t >= 0, String(t));
  const again = await bob.decryptBatch(queue, () => true);
  assert.deepEqual([again.summary.total, again.summary.alreadySeen], [3, 3]);
});

test(`the log names the events, never an id, a fingerprint or a plaintext (${backend})`, async () => {
  setLogger(collect, 'info');
  const dir = mkdtempSync(join(tmpdir(), 'proteus-log-'));
  try {
    const bob = backend === 'native' ? await Client.open(join(dir, 'bob.db')) : await Client.inMemory();
    const { alice, queue } = await queueOfThree(bob);
    await bob.decryptBatch([...queue, queue[0]]);
    assert.ok(lines.some(([l, m]) => l === 'info' && m === 'client opened: new identity'), JSON.stringify(lines));
    assert.ok(lines.some(([l, m]) => l === 'info' && m.startsWith('batch: 4 messages: 3 decrypted, 1 already seen, 0 key evicted, 0 failed; decrypt ')), JSON.stringify(lines));
    if (backend === 'native') {
      // The engine's own events: the SQLite store, and its prekey stock (the one prekey went).
      assert.ok(lines.some(([l, m]) => l === 'info' && m === 'SQLite store created'), JSON.stringify(lines));
      assert.ok(lines.some(([l, m]) => l === 'warn' && m.includes('one-time prekeys left')), JSON.stringify(lines));
    }
    const secrets = ['alice-node-id', 'bob-node-id', 'secret plaintext', await alice.fingerprint(), await bob.fingerprint(), dir];
    for (const [, line] of lines) {
      for (const secret of secrets) assert.ok(!line.includes(secret), `a log line names a secret or an id: ${line}`);
    }
    await bob.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test(`a level filters, off is silent, bad arguments are refused (${backend})`, async () => {
  setLogger(collect, 'warn');
  await Client.inMemory();
  assert.deepEqual(lines, []);
  setLogger(null);
  await Client.inMemory();
  assert.deepEqual(lines, []);
  assert.throws(() => setLogger('not a function'), TypeError);
  assert.throws(() => setLogger(collect, 'loud'), TypeError);
});
