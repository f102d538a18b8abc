// decryptBatch commits only after the callback accepted every result: a process killed inside
// the callback leaves the store as it was, and the same messages decrypt again, with the same ids.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, messageId } from '../../index.js';
import { pair, text } from '../support/pair.mjs';

const script = fileURLToPath(new URL('../support/crash.mjs', import.meta.url));

/** Runs the child on `job`; resolves once it was killed. */
function killedChild(job) {
  return new Promise((resolve) => {
    execFile(process.execPath, [script, JSON.stringify(job)], (error, stdout) => resolve({ error, stdout }));
  });
}

/**
 * Bob's store, Alice's 100 messages to it, and the child killed by `kill` (`killAt` or
 * `killAfterMs`); then the store opens and the queue decrypts: every message again with the same
 * id if the batch had not committed, or every one as already seen if it had — never a part.
 * Returns which.
 */
async function killedBatch(kill) {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-node-crash-'));
  try {
    const path = join(dir, 'store.db');
    const bob = await Client.open(path);
    const { alice } = await pair(Client, { bob });
    await bob.close();
    const envelopes = [];
    for (let i = 0; i < 100; i++) envelopes.push(await alice.encrypt('bob', `m${i}`));
    const outcome = await killedChild({ path, ...kill, queue: envelopes.map((e) => Buffer.from(e).toString('base64')) });
    assert.equal(outcome.error?.signal, 'SIGKILL', `the child was not killed: ${outcome.stdout}`);
    const again = await Client.open(path, { create: false });
    const results = await again.decryptBatch(envelopes.map((envelope) => ({ sessionId: 'alice', envelope })));
    assert.deepEqual(results.map((r) => r.messageId), envelopes.map((e) => messageId(e)));
    const committed = results[0].alreadySeen;
    if (committed) assert.ok(results.every((r) => r.alreadySeen), 'a part of the batch was committed');
    else assert.deepEqual(results.map((r) => text(r.plaintext)), envelopes.map((_, i) => `m${i}`));
    // The session goes on: Bob's reply decrypts at Alice's, and hers at Bob's.
    assert.equal(text(await alice.decrypt('bob', await again.encrypt('alice', 'still here'))), 'still here');
    assert.equal(text(await again.decrypt('alice', await alice.encrypt('bob', 'and again'))), 'and again');
    await again.close();
    return committed ? 'committed' : 'not committed';
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Every point of the batch: in the callback at its first, middle and last result (before the
// commit), and at delays after the last result, which land in the commit or after it.
for (const killAt of [1, 50, 100]) {
  test(`a process killed in the batch callback at result ${killAt} of 100 commits nothing: the queue decrypts again`, async () => {
    assert.equal(await killedBatch({ killAt }), 'not committed');
  });
}

test('a process killed in or after the commit leaves all of the batch or none of it', async () => {
  const seen = {};
  for (const killAfterMs of [0, 1, 2, 3, 5, 8, 13, 21]) {
    const outcome = await killedBatch({ killAfterMs });
    seen[outcome] = (seen[outcome] ?? 0) + 1;
  }
  // Printed for docs/security.md's table: where the kills landed.
  console.log(`kills after the last result: ${JSON.stringify(seen)}`);
});
