// The package's error constants against the native registry of error codes (every layer's,
// assembled in ffi/codes/src/lib.rs, exported as ffi/error-codes.json by the Rust test
// ffi/codes/tests/error_code_files.rs, which fails when the JSON is stale).
// Run: node --test tests/ (after ./build.sh).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import * as proteus from '../pkg/index.js';

const { codes, reserved } = JSON.parse(readFileSync(new URL('../../error-codes.json', import.meta.url), 'utf8'));
const { Client, ERROR_KINDS, ProteusError, init, isAlreadySeen } = proteus;

await init();

/** `PreKeyNotFound` -> `PRE_KEY_NOT_FOUND`, as the generator names the constants. */
const constantName = (name) => name.replace(/(?!^)([A-Z])/g, '_$1').toUpperCase();

test('every registered code is exported under its name, with its kind and already-seen rule', () => {
  assert.ok(codes.length >= 50, `${codes.length} codes`);
  for (const { code, name, kind, alreadySeen } of codes) {
    assert.equal(proteus[constantName(name)], code, constantName(name));
    assert.equal(ERROR_KINDS[code], kind, `kind of ${code}`);
    assert.equal(isAlreadySeen(code), alreadySeen, `isAlreadySeen(${code})`);
  }
  assert.equal(isAlreadySeen(0), false);
  assert.equal(isAlreadySeen(proteus.MESSAGE_KEY_EVICTED), false);
});

test('no constant or kind exists that the registry does not know', () => {
  const names = new Set(codes.map((c) => constantName(c.name)));
  const numeric = Object.entries(proteus).filter(([k, v]) => /^[A-Z][A-Z_]*$/.test(k) && typeof v === 'number');
  for (const [k] of numeric) assert.ok(names.has(k), `${k} is not in the registry`);
  assert.equal(numeric.length, codes.length);
  assert.deepEqual(Object.keys(ERROR_KINDS).map(Number), codes.map((c) => c.code));
  for (const { code } of reserved) assert.equal(ERROR_KINDS[code], undefined, `reserved ${code}`);
});

test('errors raised in wasm and in the package carry registered codes and kinds', async () => {
  const c = await Client.inMemory();
  const seen = [];
  const record = async (promise) => {
    await assert.rejects(promise, (e) => {
      assert.ok(e instanceof ProteusError, String(e));
      seen.push([e.code, e.kind]);
      return true;
    });
  };
  await record(c.prekeyBundle(7));
  await record(c.encrypt('nobody', 'x'));
  await record(c.createSession('peer', new Uint8Array([0xff])));
  await record(c.decryptBatch([{ sessionId: 'x', envelope: new Uint8Array([1]) }], () => false));
  assert.deepEqual(seen[0], [101, 'PreKeyNotFound']);
  assert.deepEqual(seen[3], [proteus.BATCH_ABORTED, 'BatchAborted']);
  for (const [code, kind] of seen) assert.equal(ERROR_KINDS[code], kind, `${code} ${kind}`);
  await c.close();
});

test('error messages do not contain session ids', async () => {
  const c = await Client.inMemory();
  await assert.rejects(c.encrypt('bob:laptop-7f3a', 'x'), (e) => {
    assert.equal(e.code, proteus.SESSION_NOT_FOUND);
    assert.ok(!e.message.includes('laptop-7f3a'), e.message);
    return true;
  });
  await c.close();
});

test('every error has the family of its code, and one type guard per family recognises it', async () => {
  const families = Object.fromEntries(codes.map((c) => [c.code, c.family]));
  const guards = {
    Engine: proteus.isEngineError,
    Decrypt: proteus.isDecryptError,
    Decode: proteus.isDecodeError,
    Input: proteus.isInputError,
    System: proteus.isSystemError,
  };
  for (const { code, family } of codes) assert.equal(proteus.ERROR_FAMILIES[code], family, `family of ${code}`);
  const c = await Client.inMemory();
  const peer = await Client.inMemory();
  const [{ bundle }] = await peer.generatePrekeys(1);
  await c.createSession('peer', bundle);
  const envelope = await c.encrypt('peer', 'x');
  await peer.decrypt('c', envelope);
  const errors = [];
  const collect = (promise) => promise.then(() => assert.fail('resolved'), (e) => errors.push(e));
  await collect(c.encrypt('nobody', 'x')); // Engine: SessionNotFound (from wasm)
  await collect(peer.decrypt('c', envelope)); // Decrypt: DuplicateMessage
  await collect(c.createSession('other', new Uint8Array([0xff]))); // Decode
  await collect(c.decryptBatch([{ sessionId: 'x', envelope: new Uint8Array([1]) }], () => false)); // Engine: BatchAborted (from JS)
  const seen = new Set();
  for (const e of errors) {
    assert.ok(e instanceof ProteusError);
    assert.equal(e.family, families[e.code], `${e.code}`);
    const matching = Object.entries(guards).filter(([, guard]) => guard(e)).map(([f]) => f);
    assert.deepEqual(matching, [e.family], `only the ${e.family} guard matches ${e.kind}`);
    seen.add(e.family);
  }
  assert.deepEqual([...seen].sort(), ['Decode', 'Decrypt', 'Engine']);
  for (const guard of Object.values(guards)) {
    assert.equal(guard(new Error('plain')), false);
    assert.equal(guard({ family: 'Engine', code: 104 }), false, 'only ProteusErrors');
  }
  await c.close();
  await peer.close();
});
