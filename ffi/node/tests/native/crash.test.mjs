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

test('a process killed in the batch callback commits nothing: the queue decrypts again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-node-crash-'));
  try {
    const path = join(dir, 'store.db');
    const bob = await Client.open(path);
    const { alice } = await pair(Client, { bob });
    await bob.close();
    const envelopes = [];
    for (let i = 0; i < 100; i++) envelopes.push(await alice.encrypt('bob', `m${i}`));
    const job = { path, killAt: 70, queue: envelopes.map((e) => Buffer.from(e).toString('base64')) };
    const outcome = await new Promise((resolve) => {
      execFile(process.execPath, [script, JSON.stringify(job)], (error, stdout) => resolve({ error, stdout }));
    });
    assert.equal(outcome.error?.signal, 'SIGKILL', `the child was not killed: ${outcome.stdout}`);
    const again = await Client.open(path, { create: false });
    const results = await again.decryptBatch(envelopes.map((envelope) => ({ sessionId: 'alice', envelope })));
    assert.deepEqual(results.map((r) => text(r.plaintext)), envelopes.map((_, i) => `m${i}`));
    assert.deepEqual(results.map((r) => r.messageId), envelopes.map((e) => messageId(e)));
    await again.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
