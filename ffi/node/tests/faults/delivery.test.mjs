// A decryptBatch without a callback hands its results to JS after the commit (src/feed.rs).
// When that fails (Node cannot make their JS values, or reading them throws), the promise
// rejects with Internal (599), saying the batch was committed, rather than never settling; the
// client goes on, and the messages come back as duplicates.
// Runs on the addon built with the cargo feature `fault-injection` into tests/faults/addon/
// (scripts/suites/node.sh), which exports injectDeliveryFault; the package's addon must not.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { platformTriple } from '../../load.js';
import * as native from '../../native.js';
import { ProteusError } from '../../wasm/index.js';
import { pair, text } from '../support/pair.mjs';

const require = createRequire(import.meta.url);
const addon = (path) => require(fileURLToPath(new URL(`${path}/proteus.${platformTriple()}.node`, import.meta.url)));
const faulty = addon('./addon');
native.useAddon(faulty);
const { Client } = native;

/** `promise`, or a failure if it has not settled within `ms`. */
function within(promise, ms = 10_000) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

test("the package's addon has no fault hook; the test build has", () => {
  assert.equal(addon('../..').injectDeliveryFault, undefined);
  assert.equal(typeof faulty.injectDeliveryFault, 'function');
});

for (const fault of ['conversion', 'unreadable']) {
  test(`results that fail to reach JS (${fault}): Internal (599), the batch committed, the client goes on`, async () => {
    const { alice, bob } = await pair(Client);
    const queue = [];
    for (let i = 0; i < 5; i++) queue.push({ sessionId: 'alice', envelope: await alice.encrypt('bob', `m${i}`) });
    faulty.injectDeliveryFault(fault);
    await assert.rejects(within(bob.decryptBatch(queue)), (e) => {
      assert.ok(e instanceof ProteusError, `not a ProteusError: ${e}`);
      assert.equal(e.code, 599);
      assert.equal(e.kind, 'Internal');
      assert.match(e.message, /committed/);
      assert.ok(e.cause instanceof Error);
      return true;
    });
    // Committed: the same messages are duplicates now.
    const again = await within(bob.decryptBatch(queue));
    assert.deepEqual(again.map((r) => [r.errorKind, r.alreadySeen]), queue.map(() => ['DuplicateMessage', true]));
    assert.equal(text(await within(bob.decrypt('alice', await alice.encrypt('bob', 'after')))), 'after');
    await bob.close();
    await alice.close();
  });
}
