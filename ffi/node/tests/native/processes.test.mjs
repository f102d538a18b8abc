// Two Node processes on one store file, decrypting and encrypting at the same time: the store's
// cross-process commit protocol (each call reloads what the other committed, under SQLite's
// write lock) means no message key is used twice and no commit is lost.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';

import { Client } from '../../index.js';
import { pair, text } from '../support/pair.mjs';

const run = promisify(execFile);
const worker = fileURLToPath(new URL('../support/worker.mjs', import.meta.url));

test('two processes decrypt and encrypt on one store: every message once, nothing lost', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-node-procs-'));
  try {
    const path = join(dir, 'shared.db');
    const bob = await Client.open(path);
    const { alice } = await pair(Client, { bob });
    await bob.close();
    const n = 40;
    const queue = [];
    for (let i = 0; i < n; i++) queue.push(Buffer.from(await alice.encrypt('bob', `a${i}`)).toString('base64'));
    const startAt = Date.now() + 1500;
    const jobs = [0, 1].map((k) => ({
      path,
      startAt,
      tag: `p${k}-`,
      decrypt: queue.filter((_, i) => i % 2 === k),
      encrypt: n / 2,
    }));
    const outputs = await Promise.all(
      jobs.map((job) => run(process.execPath, [worker, JSON.stringify(job)], { env: process.env })),
    );
    const [first, second] = outputs.map(({ stdout }) => JSON.parse(stdout));
    assert.deepEqual(first.plaintexts, Array.from({ length: n / 2 }, (_, i) => `a${2 * i}`));
    assert.deepEqual(second.plaintexts, Array.from({ length: n / 2 }, (_, i) => `a${2 * i + 1}`));
    // Every envelope of both processes decrypts, each to its own message: no chain step was
    // used twice (that would be a DuplicateMessage here).
    const received = [];
    for (const envelope of [...first.envelopes, ...second.envelopes]) {
      received.push(text(await alice.decrypt('bob', Buffer.from(envelope, 'base64'))));
    }
    assert.equal(new Set(received).size, n);
    // Every decryption of both processes was committed: the whole queue is already seen.
    const stored = await Client.open(path, { create: false });
    const again = await stored.decryptBatch(queue.map((e) => ({ sessionId: 'alice', envelope: Buffer.from(e, 'base64') })));
    assert.ok(again.every((r) => r.alreadySeen), JSON.stringify(again.map((r) => r.errorKind)));
    await stored.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
