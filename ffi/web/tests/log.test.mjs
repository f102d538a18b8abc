// The log (setLogger) and each batch's summary (issue 35): the events at their levels, nothing
// secret in a line, off by default and when set off, bad arguments refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, init, setLogger } from '../pkg/index.js';

await init();

const lines = [];
const collect = (level, message) => lines.push([level, message]);
test.afterEach(() => {
  setLogger(null);
  lines.length = 0;
});

async function queueOfThree() {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob-web-id', bundle);
  const queue = [];
  for (let i = 0; i < 3; i++) {
    queue.push({ sessionId: 'alice-web-id', envelope: await alice.encrypt('bob-web-id', `secret plaintext ${i}`) });
  }
  return { alice, bob, queue };
}

test('a batch resolves with its summary: outcomes counted, times measured', async () => {
  const { bob, queue } = await queueOfThree();
  const garbage = new Uint8Array([1, 2, 3]);
  const results = await bob.decryptBatch([...queue, queue[0], { sessionId: 'alice-web-id', envelope: garbage }, { sessionId: '', envelope: queue[2].envelope }]);
  const s = results.summary;
  assert.deepEqual([s.total, s.decrypted, s.alreadySeen, s.keyEvicted, s.failed], [6, 3, 1, 0, 2]);
  // Bytes that are no envelope fail to decode (3xx); the empty session id is 106.
  assert.equal(s.failedByCode[106], 1);
  assert.deepEqual(Object.keys(s.failedByCode).map((c) => Math.floor(c / 100)).sort(), [1, 3]);
  for (const t of [s.decryptMs, s.deliveryMs, s.commitMs]) assert.ok(Number.isFinite(t) && t >= 0, String(t));
  // With a callback, its time is the delivery's.
  const again = await bob.decryptBatch(queue, () => {});
  assert.equal(again.summary.alreadySeen, 3);
});

test('the log names the events at their levels, never an id, a fingerprint or a plaintext', async () => {
  setLogger(collect, 'info');
  const { alice, bob, queue } = await queueOfThree();
  await bob.decryptBatch([...queue, queue[0]]);
  assert.ok(lines.some(([l, m]) => l === 'info' && m === 'client opened: new identity'), JSON.stringify(lines));
  assert.ok(lines.some(([l, m]) => l === 'info' && m.startsWith('batch: 4 messages: 3 decrypted, 1 already seen, 0 key evicted, 0 failed; decrypt ')), JSON.stringify(lines));
  const secrets = ['alice-web-id', 'bob-web-id', 'secret plaintext', await alice.fingerprint(), await bob.fingerprint()];
  for (const [, line] of lines) {
    for (const secret of secrets) assert.ok(!line.includes(secret), `a log line names a secret or an id: ${line}`);
  }
});

test('a level filters; off and null are silent; a throwing logger breaks nothing', async () => {
  setLogger(collect, 'warn');
  await Client.inMemory();
  assert.deepEqual(lines, []);
  setLogger(collect, 'off');
  await Client.inMemory();
  setLogger(null);
  await Client.inMemory();
  assert.deepEqual(lines, []);
  setLogger(() => {
    throw new Error('the app\'s logger broke');
  }, 'info');
  await Client.inMemory();
});

test('bad arguments are refused', () => {
  assert.throws(() => setLogger('not a function', 'info'), TypeError);
  assert.throws(() => setLogger(collect, 'loud'), TypeError);
});
