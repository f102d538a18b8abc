// Errors cross the addon as data: a failure of the library resolves to a RawFailure with the
// registry's code, kind and message (src/error.rs), which the package throws as a ProteusError;
// no message is parsed for them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadAddon } from '../../load.js';
import { Client, ProteusError } from '../../index.js';

const addon = loadAddon();

test('the addon resolves a failure to a RawFailure: code, kind and message as data', async () => {
  const undecodable = addon.bundleFingerprint(new Uint8Array([0xff, 0x00]));
  assert.ok(undecodable instanceof addon.RawFailure);
  assert.equal(typeof undecodable.code, 'number');
  assert.ok(undecodable.code >= 300 && undecodable.code < 400, `a decode code, not ${undecodable.code}`);
  assert.equal(typeof undecodable.kind, 'string');
  assert.ok(!undecodable.message.startsWith('[proteus'), undecodable.message);

  const dir = mkdtempSync(join(tmpdir(), 'proteus-errors-'));
  try {
    const missing = await addon.openStore(join(dir, 'none.db'), undefined, false, null);
    assert.ok(missing instanceof addon.RawFailure);
    assert.equal(missing.code, 504);
    assert.equal(missing.kind, 'StoreNotFound');

    const raw = await addon.inMemory(1);
    assert.ok(!(raw instanceof addon.RawFailure));
    const none = await raw.remoteFingerprint('nobody');
    assert.ok(none instanceof addon.RawFailure);
    assert.deepEqual([none.code, none.kind], [104, 'SessionNotFound']);
    // The message names no session id.
    assert.doesNotMatch(none.message, /nobody/);
    await raw.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the package throws it as a ProteusError with the same code, kind and message', async () => {
  const c = await Client.inMemory();
  await assert.rejects(c.remoteFingerprint('nobody'), (e) => {
    assert.ok(e instanceof ProteusError);
    assert.deepEqual([e.code, e.kind], [104, 'SessionNotFound']);
    return true;
  });
  await c.close();
});
