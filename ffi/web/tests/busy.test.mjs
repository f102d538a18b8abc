// A client is busy while a decryptBatch delivers its results: a call on the same client from
// the batch callback (or from anywhere while the batch waits for the callback's promises) fails
// at once with ClientBusy (120) instead of waiting for the batch, which waits for it: a deadlock.
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CALLBACK_FAILED, Client, ProteusError, init } from '../pkg/index.js';

await init();

const CLIENT_BUSY = 120;
const text = (bytes) => new TextDecoder().decode(bytes);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How long a call may take before it counts as a deadlock: a bound against a hang (the calls
 * here take milliseconds), generous enough for a machine ten times slower than ours.
 */
const DEADLOCK_MS = 60_000;

/** `promise`, or a failure after `ms`: a deadlock fails the test instead of hanging it. */
function within(ms, promise, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms (deadlock)`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const isBusy = (e) => e instanceof ProteusError && e.code === CLIENT_BUSY && e.kind === 'ClientBusy';

/** Bob with a session with Alice and `n` messages from her queued. */
async function queued(n) {
  const alice = await Client.inMemory();
  const bob = await Client.inMemory();
  const [{ bundle }] = await bob.generatePrekeys(1);
  await alice.createSession('bob', bundle);
  const queue = [];
  for (let i = 0; i < n; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `m${i}`) });
  return { alice, bob, queue };
}

describe('re-entrant calls from a batch callback', () => {
  for (const [what, callback] of [
    ['awaited in an async callback', (bob) => async () => {
      await bob.encrypt('alice', 'read receipt');
    }],
    ['after an await in the callback', (bob) => async () => {
      await sleep(1);
      await bob.sessionIds();
    }],
    ['returned by a plain callback', (bob) => () => bob.fingerprint()],
  ]) {
    test(`fail fast with ClientBusy (120): ${what}`, async () => {
      const { bob, queue } = await queued(3);
      await within(
        DEADLOCK_MS,
        assert.rejects(bob.decryptBatch(queue, callback(bob)), (e) => {
          assert.ok(e instanceof ProteusError && e.code === CALLBACK_FAILED, `${e}`);
          assert.ok(isBusy(e.cause), `the cause is ClientBusy: ${e.cause}`);
          return true;
        }),
        'decryptBatch with a re-entrant call',
      );
      // Nothing of the batch was committed, and the client works again.
      const again = await within(DEADLOCK_MS, bob.decryptBatch(queue), 'the next batch');
      assert.deepEqual(again.map((r) => text(r.plaintext)), ['m0', 'm1', 'm2']);
      assert.deepEqual(await bob.sessionIds(), ['alice']);
    });
  }

  test('a call not waited for by the callback fails with ClientBusy and the batch commits', async () => {
    const { bob, queue } = await queued(2);
    const calls = [];
    const results = await within(
      DEADLOCK_MS,
      bob.decryptBatch(queue, (r) => {
        calls.push(bob.encrypt('alice', 'x').then(() => 'resolved', (e) => e));
      }),
      'decryptBatch',
    );
    assert.equal(results.length, 2);
    const outcomes = await Promise.all(calls);
    assert.ok(outcomes.every(isBusy), `${outcomes}`);
    assert.ok((await bob.decryptBatch(queue)).every((r) => r.alreadySeen), 'committed');
    assert.ok((await bob.encrypt('alice', 'after')) instanceof Uint8Array, 'not busy after the batch');
  });

  test('close from the callback fails with ClientBusy too', async () => {
    const { bob, queue } = await queued(1);
    let closing;
    await within(
      DEADLOCK_MS,
      bob.decryptBatch(queue, () => {
        closing = bob.close().then(() => 'closed', (e) => e);
      }),
      'decryptBatch',
    );
    assert.ok(isBusy(await closing));
    assert.deepEqual(await bob.sessionIds(), ['alice'], 'still open');
    await bob.close();
  });
});
