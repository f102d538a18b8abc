// importCryptobox({ directory }) on whichever backend index.js chose (the addon reads the
// directory natively, the wasm fallback in JS): the stores Wire's real @wireapp/cryptobox 12.8.0
// wrote (tests/cryptobox/fixtures: store-engine-fs's directory as written, and the same records
// in the Rust cryptobox's two layouts), imported into a durable store that is then reopened (in
// memory on the wasm fallback, which has no durable store in Node); the
// queue its peers encrypted before the migration decrypts, and every session goes on both ways
// with those real cryptobox peers (tests/cryptobox/peer.mjs; `npm ci --prefix tests/cryptobox`).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client, IMPORT_SOURCE_UNREADABLE, ProteusError, backend } from '../../index.js';
import { openPeers } from '../../../../tests/cryptobox/peer.mjs';

const fixtures = fileURLToPath(new URL('../../../../tests/cryptobox/fixtures/', import.meta.url));
const expected = JSON.parse(readFileSync(join(fixtures, 'expected.json'), 'utf8'));
const text = (bytes) => new TextDecoder().decode(bytes);
const fromBase64 = (s) => Uint8Array.from(Buffer.from(s, 'base64'));

for (const layout of ['fs-store', 'rust-cryptobox', 'rust-cryptobox-legacy']) {
  test(`a cryptobox directory (${layout}) imports into a durable store and its sessions go on`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proteus-import-'));
    const { peers, close } = await openPeers({ fixturesDir: fixtures });
    try {
      const store = join(dir, 'store.db');
      const durable = backend === 'native';
      const client = durable ? await Client.open(store) : await Client.inMemory();
      const seen = [];
      const report = await client.importCryptobox({ directory: join(fixtures, layout) }, { onProgress: (p) => seen.push(p) });
      assert.equal(report.fingerprint, expected.fingerprint);
      assert.equal(report.prekeys, expected.prekeyIds.length);
      assert.equal(report.sessions, expected.sessionIds.length);
      assert.deepEqual(report.skipped, []);
      assert.equal(report.alreadyImported, false);
      if (durable) await client.close();
      const total = 1 + expected.prekeyIds.length + expected.sessionIds.length;
      // The addon queues each report for this thread during the import, so they have all run by
      // the time close()'s round trip comes back (the wasm build reports synchronously).
      assert.deepEqual(seen.at(-1), { done: total, total });

      const reopened = durable ? await Client.open(store, { create: false }) : client;
      assert.equal(await reopened.fingerprint(), expected.fingerprint);
      assert.deepEqual((await reopened.sessionIds()).sort(), [...expected.sessionIds].sort());
      const results = await reopened.decryptBatch(
        expected.queue.map((m) => ({ sessionId: m.sessionId, envelope: fromBase64(m.envelope) })),
      );
      assert.deepEqual(
        results.map((r) => r.errorCode ?? text(r.plaintext)),
        expected.queue.map((m) => m.plaintext),
      );
      for (const sessionId of peers.sessionIds) {
        const out = await reopened.encrypt(sessionId, `after the move (${layout})`);
        assert.equal(await peers.decrypt(sessionId, out), `after the move (${layout})`);
        const back = await peers.encrypt(sessionId, 'welcome back');
        assert.equal(text(await reopened.decrypt(sessionId, back)), 'welcome back');
      }
      assert.equal((await reopened.importCryptobox({ directory: join(fixtures, layout) })).alreadyImported, true);
      await reopened.close();
    } finally {
      close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('a directory that is no cryptobox store is ImportSourceUnreadable', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'proteus-import-'));
  try {
    const client = await Client.inMemory();
    await assert.rejects(
      client.importCryptobox({ directory: dir }),
      (e) => e instanceof ProteusError && e.code === IMPORT_SOURCE_UNREADABLE && e.kind === 'ImportSourceUnreadable',
    );
    await client.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
