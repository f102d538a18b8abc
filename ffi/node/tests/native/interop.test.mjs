// The native addon and the wasm build in one process: each decrypts what the other encrypted,
// and both raise the same ProteusError class.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { Client as NativeClient, ProteusError, backend } from '../../index.js';
import { Client as WasmClient } from '../../wasm/index.js';
import { pair, text } from '../support/pair.mjs';

test('native and wasm clients talk to each other', async () => {
  assert.equal(backend, 'native');
  const native = await NativeClient.inMemory();
  const wasm = await WasmClient.inMemory();
  const { alice, bob } = await pair(NativeClient, { alice: native, bob: wasm });
  assert.equal(text(await alice.decrypt('bob', await bob.encrypt('alice', 'from wasm'))), 'from wasm');
  assert.equal(text(await bob.decrypt('alice', await alice.encrypt('bob', 'from native'))), 'from native');
  const envelope = await alice.encrypt('bob', 'once');
  await bob.decrypt('alice', envelope);
  await assert.rejects(bob.decrypt('alice', envelope), (e) => e instanceof ProteusError && e.code === 209);
  const back = await bob.encrypt('alice', 'once');
  await alice.decrypt('bob', back);
  await assert.rejects(alice.decrypt('bob', back), (e) => e instanceof ProteusError && e.code === 209);
});
